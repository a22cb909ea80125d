// The Gemini REST wire shapes, typed against @google/genai (type-only: the SDK is not loaded).
// The SDK's enums are nominal, so string fields use their literal values.
import type {
  Content, FunctionCallingConfig, FunctionCallingConfigMode, FunctionDeclaration, GenerationConfig, Part, ThinkingConfig, Tool,
} from '@google/genai';

export type GeminiPart = Part;
export type GeminiContent = Content & { role: 'user' | 'model' };
export type GeminiFunctionDeclaration = FunctionDeclaration;

export interface GeminiToolConfig {
  functionCallingConfig: Omit<FunctionCallingConfig, 'mode'> & { mode: `${FunctionCallingConfigMode}` };
}

export type GeminiGenerationConfig = Omit<GenerationConfig, 'thinkingConfig'> & { thinkingConfig?: ThinkingConfig };

/** The body of `POST models/{model}:generateContent` (and `:streamGenerateContent`). */
export interface GeminiRequestBody {
  contents: GeminiContent[];
  systemInstruction?: Content;
  tools?: Tool[];
  toolConfig?: GeminiToolConfig;
  generationConfig: GeminiGenerationConfig;
}

/** What a GenerateContentResponse (whole, or one streamed chunk) is read as: untrusted input, every field optional. */
export interface GeminiResponse {
  candidates?: GeminiCandidate[];
  promptFeedback?: { blockReason?: string; blockReasonMessage?: string };
  usageMetadata?: GeminiUsageMetadata;
  modelVersion?: string;
  responseId?: string;
}

export interface GeminiCandidate {
  index?: number;
  content?: { role?: string; parts?: GeminiPart[] };
  finishReason?: string;
}

export interface GeminiUsageMetadata {
  promptTokenCount?: number;
  cachedContentTokenCount?: number;
  candidatesTokenCount?: number;
  thoughtsTokenCount?: number;
  toolUsePromptTokenCount?: number;
  totalTokenCount?: number;
}
