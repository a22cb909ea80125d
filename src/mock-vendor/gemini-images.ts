// The mock's Gemini image models: a generateContent request whose `generationConfig.responseModalities`
// holds IMAGE answers one PNG as an `inlineData` part of the first candidate, as the Nano Banana models
// do. `imageConfig.aspectRatio` and `imageSize` are checked against the values Google documents (a
// Pro model takes no `512`), input images (`inlineData` or `fileData` parts) are counted against the
// limit of 14 and recorded. Directive `images=0`: the image is withheld (finishReason IMAGE_SAFETY,
// a text part only), as Google's filters do.
import { mockPng } from './png.js';
import type { Directives } from './directives.js';
import type { MockRequestRecord } from './records.js';

type Part = Record<string, any>;
interface ImageBody {
  contents?: { role?: string; parts?: Part[] }[];
  generationConfig?: { responseModalities?: unknown; imageConfig?: { aspectRatio?: unknown; imageSize?: unknown } };
}

const RATIOS = ['1:1', '2:3', '3:2', '3:4', '4:3', '4:5', '5:4', '9:16', '16:9', '21:9', '1:4', '4:1', '1:8', '8:1'];
const SIZES = ['512', '1K', '2K', '4K'];
const MAX_INPUT_IMAGES = 14;

/** Whether a generateContent body asks for images. */
export const asksForImages = (body: ImageBody): boolean =>
  Array.isArray(body.generationConfig?.responseModalities) && (body.generationConfig!.responseModalities as unknown[]).includes('IMAGE');

/** Google's message for a bad request, or undefined when the image request is one the API takes. */
export function imageRequestError(body: ImageBody, model: string): string | undefined {
  const config = body.generationConfig?.imageConfig ?? {};
  if (config.aspectRatio !== undefined && !RATIOS.includes(String(config.aspectRatio))) {
    return `* GenerateContentRequest.generation_config.image_config.aspect_ratio: unsupported aspect ratio '${String(config.aspectRatio)}'.`;
  }
  const sizes = model.includes('pro') ? SIZES.filter((size) => size !== '512') : SIZES;
  if (config.imageSize !== undefined && !sizes.includes(String(config.imageSize))) {
    return `* GenerateContentRequest.generation_config.image_config.image_size: unsupported image size '${String(config.imageSize)}' for ${model}.`;
  }
  if (inputImages(body).length > MAX_INPUT_IMAGES) return `* GenerateContentRequest.contents: at most ${MAX_INPUT_IMAGES} input images are supported.`;
  return undefined;
}

/** The input images of the request, as the record shows them: a file URI, or `inline:<mime type>`. */
function inputImages(body: ImageBody): string[] {
  const parts = (body.contents ?? []).flatMap((content) => (Array.isArray(content.parts) ? content.parts : []));
  return parts.flatMap((part): string[] => {
    if (part.fileData && typeof part.fileData.fileUri === 'string') return [part.fileData.fileUri];
    if (part.inlineData && typeof part.inlineData.data === 'string') return [`inline:${String(part.inlineData.mimeType)}`];
    return [];
  });
}

/** The 200 answer of an image request. */
export function imageAnswerJson(body: ImageBody, model: string, responseId: string, directives: Directives, record: MockRequestRecord): string {
  const references = inputImages(body);
  if (references.length > 0) record.referenceImages = references;
  const withheld = directives.images === 0;
  const parts: Part[] = withheld
    ? [{ text: 'I could not make that image.' }]
    : [{ inlineData: { mimeType: 'image/png', data: mockPng(`${responseId}:0`).toString('base64') } }];
  const imageTokens = withheld ? 0 : 1120;
  return JSON.stringify({
    candidates: [{ content: { parts, role: 'model' }, finishReason: withheld ? 'IMAGE_SAFETY' : 'STOP', index: 0 }],
    usageMetadata: {
      promptTokenCount: 8 + references.length * 258, candidatesTokenCount: imageTokens, totalTokenCount: 8 + references.length * 258 + imageTokens,
      ...(withheld ? {} : { candidatesTokensDetails: [{ modality: 'IMAGE', tokenCount: imageTokens }] }),
    },
    modelVersion: model, responseId,
  });
}
