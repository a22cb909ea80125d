import type { RequestContext } from '../router.js';
import type { Services } from '../../services.js';
import type { MediaModel } from '../../catalog/model.js';
import { badRequest, requireJson } from '../errors.js';
import { parseJsonObject } from '../schemas/issues.js';
import { parseMusicRequest, parseSpeechRequest } from '../schemas/audio.js';
import { PricingError, worstCaseNano } from '../../billing/media-pricing.js';
import { countTexts } from '../../billing/token-count.js';
import { AUDIO_ADAPTERS } from '../../providers/audio/index.js';
import { audioCallOf, characterCount, speechSecondsBound, type AudioJob, type SpeechJob } from '../../tasks/audio-job.js';
import { mediaModelFor } from './media-model.js';
import { callbackUrlOf, taskRoutes } from './tasks.js';

type AudioTask = 'speech' | 'music';
const ENDPOINT: Readonly<Record<AudioTask, string>> = { speech: 'POST /v1/audio/speech', music: 'POST /v1/audio/generations' };

/**
 * `POST /v1/audio/speech` (OpenAI's speech body) and `POST /v1/audio/generations` (music and sound):
 * asynchronous like video, on the same actors; polled at `GET /v1/audio/speech/{id}` and
 * `GET /v1/audio/generations/{id}`. A submit is validated from the model's catalog capabilities,
 * priced (per character, per second asked for, per request, or by tokens), held and handed over.
 */
export function audioRoutes(services: Services) {
  const { auth } = services;
  const speechTasks = taskRoutes(services, 'audio.speech', 'speech task');
  const musicTasks = taskRoutes(services, 'audio.generation', 'audio generation task');

  /** The audio model the body names, for this endpoint's task, served by an adapter here. */
  const modelFor = (body: Record<string, unknown>, task: AudioTask): MediaModel => {
    if (typeof body.model !== 'string' || body.model === '') throw badRequest("'model' is required and must be a string.", 'model');
    const model = mediaModelFor(services, body.model, 'audio');
    const made = model.capabilities.task === 'speech' ? 'speech' : 'music';
    if (made !== task) {
      throw badRequest(`The model '${model.id}' makes ${made}: use ${ENDPOINT[made]}.`, 'model', 'model_not_supported');
    }
    if (!Object.hasOwn(AUDIO_ADAPTERS, model.family) || !services.routing.mediaTargetsOf(model)) {
      throw badRequest(`The model '${model.id}' is served through the ${model.family} audio API, which this gateway does not serve yet.`, 'model', 'model_not_supported');
    }
    return model;
  };

  const costOf = (model: MediaModel, job: AudioJob): bigint => {
    try {
      return worstCaseNano(model.sheet, audioCallOf(job));
    } catch (error) {
      if (!(error instanceof PricingError)) throw error;
      throw badRequest(`${error.message}.`, error.field === 'seconds' ? 'duration' : error.field === 'characters' ? 'input' : error.field, error.field === 'model' ? 'model_not_supported' : 'invalid_request');
    }
  };

  /**
   * A token-billed speech model's bounds: its text's tokens, and the audio tokens of the longest speech
   * the text can plausibly make (the charge counts the tokens of the speech actually made).
   */
  const withTokens = async (model: MediaModel, job: SpeechJob): Promise<SpeechJob> => {
    const perSecond = model.capabilities.audioTokensPerSecond;
    if (typeof perSecond !== 'number') return job;
    const [input = 0, instructions = 0] = await countTexts(job.instructions === undefined ? [job.input] : [job.input, job.instructions]);
    return { ...job, inputTokens: input + instructions, maxOutputTokens: Math.ceil(speechSecondsBound(characterCount(job.input), job.speed) * perSecond) };
  };

  const submit = (task: AudioTask) => async (ctx: RequestContext): Promise<void> => {
    const key = await auth.apiKey(ctx);
    requireJson(ctx.headers.contentType);
    const body = parseJsonObject(await ctx.body());
    const model = modelFor(body, task);
    const job = task === 'speech' ? await withTokens(model, parseSpeechRequest(body, model)) : parseMusicRequest(body, model);
    const costNano = costOf(model, job);
    const callbackUrl = callbackUrlOf(body);
    await (task === 'speech' ? speechTasks : musicTasks).accept(ctx, key, { model, job, costNano, callbackUrl });
  };

  return {
    speech: { submit: submit('speech'), get: speechTasks.get, list: speechTasks.list, cancel: speechTasks.cancel, cancelOwned: speechTasks.cancelOwned },
    music: { submit: submit('music'), get: musicTasks.get, list: musicTasks.list, cancel: musicTasks.cancel, cancelOwned: musicTasks.cancelOwned },
  };
}
