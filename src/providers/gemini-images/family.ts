/**
 * Google's Gemini image models ("Nano Banana") through the Gemini API's `generateContent`: the prompt
 * and the input images as parts of one user turn, `generationConfig.responseModalities: ["IMAGE"]`
 * and `imageConfig` (`aspectRatio`, `imageSize`); the images come back inline (base64) as
 * `inlineData` parts of the first candidate. Synchronous: one exchange. Sources: docs/vendors/google-media.md.
 */
import type { ImageConfig, Part } from '@google/genai';
import type { ImageFamily, ImageJob, ImageResult, GeneratedImage } from '../image-family.js';
import type { UpstreamTarget } from '../family.js';
import { ApiError } from '../../http/errors.js';
import { MEDIA_TYPES } from '../../media/sniff.js';

/** The body of `POST models/{model}:generateContent` for an image. */
export interface GeminiImageBody {
  contents: { role: 'user'; parts: Part[] }[];
  // The SDK's `Modality` enum is nominal: its literal value here.
  generationConfig: { responseModalities: ['IMAGE']; imageConfig?: Pick<ImageConfig, 'aspectRatio' | 'imageSize'> };
}

const DATA_URI = /^data:([a-z]+\/[a-z0-9.+-]+);base64,(.*)$/is;

/**
 * One input image as a part: a data URI inline (`inlineData`), a hosted address by reference
 * (`fileData`: the Gemini API fetches public https URLs itself), its type from the hosted name's extension.
 */
export function imagePart(image: string): Part {
  const inline = DATA_URI.exec(image);
  if (inline) return { inlineData: { mimeType: inline[1]!.toLowerCase(), data: inline[2]! } };
  const extension = /\.([a-z0-9]{1,5})$/i.exec(new URL(image).pathname)?.[1]?.toLowerCase();
  const mimeType = (extension !== undefined ? MEDIA_TYPES[extension]?.contentType : undefined) ?? 'image/png';
  return { fileData: { mimeType, fileUri: image } };
}

export function geminiImageBody(job: ImageJob): GeminiImageBody {
  const imageConfig: Pick<ImageConfig, 'aspectRatio' | 'imageSize'> = {};
  if (job.aspectRatio !== undefined) imageConfig.aspectRatio = job.aspectRatio;
  if (job.resolution !== undefined) imageConfig.imageSize = job.resolution;
  return {
    contents: [{ role: 'user', parts: [{ text: job.prompt }, ...job.inputImages.map(imagePart)] }],
    generationConfig: { responseModalities: ['IMAGE'], ...(Object.keys(imageConfig).length > 0 ? { imageConfig } : {}) },
  };
}

/** Finish reasons that mean the vendor's filters withheld the image: the caller's prompt or images, a 400. */
const REFUSED = new Set(['SAFETY', 'IMAGE_SAFETY', 'PROHIBITED_CONTENT', 'IMAGE_PROHIBITED_CONTENT', 'BLOCKLIST', 'SPII', 'RECITATION', 'IMAGE_RECITATION']);

const invalid = () => new ApiError(502, 'upstream_invalid_response', 'The upstream vendor gemini answered with a body that is not a generateContent result.');

interface ImageAnswer {
  candidates?: { content?: { parts?: Part[] }; finishReason?: string; finishMessage?: string }[];
  promptFeedback?: { blockReason?: string; blockReasonMessage?: string };
}

/**
 * The images of a generateContent answer: the first candidate's `inlineData` image parts, thought
 * parts left out (Gemini 3 image models may show interim "thought" images). A blocked prompt or a
 * withheld image is the caller's 400; no image otherwise is left to the route (502, nothing charged).
 */
export function geminiImagesOf(text: string): ImageResult {
  let answer: ImageAnswer;
  try {
    answer = JSON.parse(text) as ImageAnswer;
  } catch {
    throw invalid();
  }
  if (typeof answer !== 'object' || answer === null) throw invalid();
  const blocked = answer.promptFeedback?.blockReason;
  if (typeof blocked === 'string') {
    throw new ApiError(400, 'content_policy_violation', `The upstream vendor gemini refused the prompt: ${blocked}.`, 'prompt');
  }
  const candidate = Array.isArray(answer.candidates) ? answer.candidates[0] : undefined;
  const parts = Array.isArray(candidate?.content?.parts) ? candidate.content.parts : [];
  const images: GeneratedImage[] = [];
  for (const part of parts) {
    const data = part?.inlineData?.data;
    if (part?.thought === true || typeof data !== 'string' || data === '') continue;
    if (typeof part.inlineData?.mimeType === 'string' && !part.inlineData.mimeType.startsWith('image/')) continue;
    images.push({ b64: data });
  }
  const reason = candidate?.finishReason;
  if (images.length === 0 && typeof reason === 'string' && REFUSED.has(reason)) {
    throw new ApiError(400, 'content_policy_violation', `The upstream vendor gemini withheld the image: ${reason}.`, 'prompt');
  }
  return { images };
}

export const GEMINI_IMAGES: ImageFamily = Object.freeze({
  async generate(job: ImageJob, target: UpstreamTarget, io): Promise<ImageResult> {
    const url = `${target.baseUrl}/models/${encodeURIComponent(job.model.upstreamModel)}:generateContent`;
    const response = await io.post(url, { 'x-goog-api-key': target.apiKey, 'content-type': 'application/json' }, JSON.stringify(geminiImageBody(job)));
    if (response.status !== 200) throw await io.refused(response);
    return geminiImagesOf(await response.text());
  },
} satisfies ImageFamily);
