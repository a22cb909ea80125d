import type { TaskApi } from '../providers/video/adapter.js';
import { VIDEO_ADAPTERS } from '../providers/video/index.js';
import { AUDIO_ADAPTERS } from '../providers/audio/index.js';
import type { AudioJob } from './audio-job.js';
import type { VideoJob } from './video-job.js';

/** Any job a vendor task runs. */
export type TaskJob = VideoJob | AudioJob;

/** The vendor task API of a catalog family (video vendors, MiniMax speech), or undefined. */
export function taskApiOf(family: string): TaskApi<TaskJob> | undefined {
  if (Object.hasOwn(VIDEO_ADAPTERS, family)) return VIDEO_ADAPTERS[family] as TaskApi<TaskJob>;
  return Object.hasOwn(AUDIO_ADAPTERS, family) ? AUDIO_ADAPTERS[family]!.tasks as TaskApi<TaskJob> | undefined : undefined;
}
