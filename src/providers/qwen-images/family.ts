/**
 * Alibaba's Qwen-Image models on DashScope's native multimodal-generation API, synchronous:
 * `POST {api}/services/aigc/multimodal-generation/generation` with one user message whose content is
 * the input images (`{image}`, edited or combined) then the prompt (`{text}`), and `parameters` (`n`,
 * `size` as `W*H`, `negative_prompt`, `watermark`); the answer's `output.choices[0].message.content`
 * holds one `{image: url}` item per image (URLs kept 24 h; the route rehosts them). Errors are flat
 * `{code, message}` bodies with a 4xx. Sources and sureness: docs/vendors/wan-vidu-seedance.md.
 */
import type { ImageFamily, ImageJob, ImageResult, GeneratedImage } from '../image-family.js';
import type { UpstreamTarget } from '../family.js';
import { ApiError } from '../../http/errors.js';
import { dashscopeApiBase } from '../video/dashscope.js';

export interface QwenImageBody {
  model: string;
  input: { messages: { role: 'user'; content: ({ image: string } | { text: string })[] }[] };
  parameters: { n: number; size?: string; negative_prompt?: string; watermark: boolean };
}

export function qwenImageBody(job: ImageJob): QwenImageBody {
  return {
    model: job.model.upstreamModel,
    input: { messages: [{ role: 'user', content: [...job.inputImages.map((image) => ({ image })), { text: job.prompt }] }] },
    parameters: {
      n: job.n,
      // The gateway's sizes are `WxH`; DashScope writes `W*H`.
      ...(job.size !== undefined && job.size !== 'auto' ? { size: job.size.replace('x', '*') } : {}),
      ...(job.negativePrompt !== undefined ? { negative_prompt: job.negativePrompt } : {}),
      watermark: false,
    },
  };
}

const invalid = () => new ApiError(502, 'upstream_invalid_response', 'The upstream vendor alibaba answered with a body that is not a multimodal-generation result.');

/** The image URLs of an answer, in order; no image is left to the route (502, nothing charged). */
export function qwenImagesOf(text: string): ImageResult {
  let answer: { output?: { choices?: { message?: { content?: unknown } }[] } };
  try {
    answer = JSON.parse(text) as typeof answer;
  } catch {
    throw invalid();
  }
  if (typeof answer !== 'object' || answer === null) throw invalid();
  const choices = Array.isArray(answer.output?.choices) ? answer.output.choices : [];
  const images: GeneratedImage[] = [];
  for (const choice of choices) {
    const content = choice?.message?.content;
    for (const item of Array.isArray(content) ? content as unknown[] : []) {
      const url = typeof item === 'object' && item !== null ? (item as { image?: unknown }).image : undefined;
      if (typeof url === 'string' && /^https?:\/\//i.test(url)) images.push({ url });
    }
  }
  return { images };
}

export const QWEN_IMAGES: ImageFamily = Object.freeze({
  async generate(job: ImageJob, target: UpstreamTarget, io): Promise<ImageResult> {
    const url = `${dashscopeApiBase(target.baseUrl)}/services/aigc/multimodal-generation/generation`;
    const response = await io.post(url, { authorization: `Bearer ${target.apiKey}`, 'content-type': 'application/json' }, JSON.stringify(qwenImageBody(job)));
    if (response.status !== 200) throw await io.refused(response);
    return qwenImagesOf(await response.text());
  },
} satisfies ImageFamily);
