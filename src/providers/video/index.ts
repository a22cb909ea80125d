import type { VideoAdapter } from './adapter.js';
import { ARK_VIDEO } from './ark.js';
import { DASHSCOPE_VIDEO } from './dashscope.js';
import { KLING_VIDEO } from './kling.js';
import { LUMA_VIDEO } from './luma.js';
import { RUNWAY_VIDEO } from './runway.js';
import { MINIMAX_VIDEO } from './minimax.js';
import { VIDU_VIDEO } from './vidu.js';
import { VEO_VIDEO } from './veo.js';

/**
 * The video task adapters by catalog `family`: the only place that knows which families are served.
 * No prototype, so a family spelled like an Object method (`constructor`) finds no adapter.
 */
export const VIDEO_ADAPTERS: Readonly<Record<string, VideoAdapter>> = Object.freeze(
  Object.assign(Object.create(null) as Record<string, VideoAdapter>, ...[DASHSCOPE_VIDEO, VIDU_VIDEO, ARK_VIDEO, VEO_VIDEO, MINIMAX_VIDEO, KLING_VIDEO, RUNWAY_VIDEO, LUMA_VIDEO].map((adapter) => ({ [adapter.family]: adapter }))),
);
