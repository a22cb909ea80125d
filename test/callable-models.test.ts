// An active model is a callable model: every active model of every modality the catalog lists gets
// one valid call through the mock vendor and answers it (chat and images at once, video and audio
// tasks polled to success). A model that cannot be called fails with its id. The catalog's list of
// served media families is kept equal to the adapters that serve them.
import t from 'tap';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startGateway, postJson, type Gateway } from './helpers/harness.js';
import { TEST_JWT_SECRET, eventually, fastUser } from './helpers/http-tools.js';
import { NOT_SERVED_TAG, SERVED_EMBEDDING_FAMILIES, SERVED_MEDIA_FAMILIES } from '../src/catalog/seed/index.js';
import { EMBEDDING_FAMILIES } from '../src/providers/embeddings/index.js';
import { IMAGE_FAMILIES } from '../src/providers/image-families.js';
import { VIDEO_ADAPTERS } from '../src/providers/video/index.js';
import { AUDIO_ADAPTERS } from '../src/providers/audio/index.js';

const PNG_URI = 'data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==';
const REF = 'https://localhost/reference.png';

/** A valid body of each video profile (the mock ends the job quickly); a video to edit is the mock's sample clip. */
const VIDEO_BODIES = (mockUrl: string): Readonly<Record<string, object>> => ({
  'R2V-A': { prompt: 'x [[mock job_ms=50]]', video_urls: ['https://localhost/ref.mp4'] },
  'R2V-B': { prompt: 'x [[mock job_ms=50]]', image_urls: [REF] },
  'R2V-C': { prompt: '@1 waves [[mock job_ms=50]]', image_urls: [PNG_URI] },
  'R2V-D': { prompt: '@1 waves [[mock job_ms=50]]', image_urls: [PNG_URI] },
  'I2V-A': { prompt: 'x [[mock job_ms=50]]', image_urls: [PNG_URI], duration: 2 },
  'I2V-B': { prompt: 'x [[mock job_ms=50]]', image_urls: [REF], duration: 3 },
  VEO: { prompt: 'x [[mock job_ms=50]]', duration: 4 },
  'VEO-LITE': { prompt: 'x [[mock job_ms=50]]', duration: 4 },
  'WAN-R2V-FLASH': { prompt: 'x [[mock job_ms=50]]', image_urls: [REF], audio: false },
  'VIDU-Q3-R2V': { prompt: '@1 waves [[mock job_ms=50]]', image_urls: [PNG_URI], duration: 3 },
  'VIDU-Q3-I2V': { prompt: 'x [[mock job_ms=50]]', image_urls: [PNG_URI], duration: 2 },
  'SEEDANCE-1.0-PRO': { prompt: 'x [[mock job_ms=50]]', duration: 2 },
  'SEEDANCE-1.5-PRO': { prompt: 'x [[mock job_ms=50]]', image_urls: [REF], duration: 4 },
  HAILUO: { prompt: 'x [[mock job_ms=50]]' },
  KLING: { prompt: 'x [[mock job_ms=50]]' },
  'RUNWAY-I2V': { prompt: 'x [[mock job_ms=50]]', image_urls: [PNG_URI] },
  'RUNWAY-V2V': { prompt: 'x [[mock job_ms=50]]', video_urls: [`${mockUrl}/samples/clip-3.mp4`] },
  'LUMA-RAY': { prompt: 'x [[mock job_ms=50]]' },
});

interface ModelRecord { id: string; modality: string; is_active: boolean; alias_of: string | null; capabilities: Record<string, unknown>; tags: string[] }

let gateway: Gateway;
let mediaDir: string;

t.before(async () => {
  mediaDir = await mkdtemp(join(tmpdir(), 'callable-'));
  gateway = await startGateway({
    env: { JWT_SECRET: TEST_JWT_SECRET, MEDIA_DIR: mediaDir, RATE_LIMIT_DEFAULT: '1000/10', FETCH_ALLOW_LOOPBACK: 'true', TASK_POLL_MS: '40', TASK_TIMER_TICK_MS: '20' },
  });
});
t.teardown(async () => {
  await gateway.close();
  await rm(mediaDir, { recursive: true, force: true });
});

t.test("the catalog's served media families are the adapters'", async (t) => {
  t.same([...SERVED_MEDIA_FAMILIES.image].sort(), Object.keys(IMAGE_FAMILIES).sort(), 'image');
  t.same([...SERVED_MEDIA_FAMILIES.video].sort(), Object.keys(VIDEO_ADAPTERS).sort(), 'video');
  t.same([...SERVED_MEDIA_FAMILIES.audio].sort(), Object.keys(AUDIO_ADAPTERS).sort(), 'audio');
  t.same([...SERVED_EMBEDDING_FAMILIES].sort(), Object.keys(EMBEDDING_FAMILIES).sort(), 'embedding');
});

/** One valid call of `model` (its capabilities as the API shows them, snake_case): its path and body, and the task path to poll for tasks. */
function callOf(model: ModelRecord): { path: string; body: object; poll?: string } {
  const caps = model.capabilities;
  switch (model.modality) {
    case 'chat':
      return { path: 'chat/completions', body: { model: model.id, messages: [{ role: 'user', content: 'hi' }], max_tokens: 8 } };
    case 'image':
      return { path: 'images/generations', body: { model: model.id, prompt: 'a red square', ...(caps.requires_image === true ? { image_urls: [PNG_URI] } : {}) } };
    case 'embedding':
      return { path: 'embeddings', body: { model: model.id, input: 'hi' } };
    case 'video':
      return { path: 'videos/generations', body: { model: model.id, ...VIDEO_BODIES(gateway.mock.url)[String(caps.profile)] }, poll: 'videos/generations' };
    default: {
      if (caps.task === 'speech') {
        const voice = Array.isArray(caps.voices) ? { voice: caps.voices[0] } : {};
        return { path: 'audio/speech', body: { model: model.id, input: 'Hello there.', ...voice }, poll: 'audio/speech' };
      }
      const words = caps.lyrics === true ? { lyrics: '[Verse]\nla la' } : {};
      const length = Array.isArray(caps.duration_seconds) ? { duration: caps.duration_seconds[0] } : {};
      return { path: 'audio/generations', body: { model: model.id, prompt: 'a short tune', ...words, ...length }, poll: 'audio/generations' };
    }
  }
}

t.test('every active model answers one valid call', async (t) => {
  const { token, key } = await fastUser(gateway, 'callable-user', '100');
  const models: ModelRecord[] = [];
  for (let page = 1; ; page++) {
    const response = await fetch(`${gateway.url}/api/v1/models?per_page=100&page=${page}`, { headers: { authorization: `Bearer ${token}` } });
    const body = await response.json() as { data: ModelRecord[]; total: number };
    models.push(...body.data);
    if (body.data.length === 0 || models.length >= body.total) break;
  }
  const active = models.filter((model) => model.is_active && model.alias_of === null);
  for (const modality of ['chat', 'image', 'video', 'audio', 'embedding']) t.ok(active.some((model) => model.modality === modality), `some ${modality} model is active`);
  t.notOk(active.some((model) => model.tags.includes(NOT_SERVED_TAG)), 'no active model is tagged as not served');

  const failures: string[] = [];
  await Promise.all(active.map(async (model) => {
    const call = callOf(model);
    const answer = await postJson(`${gateway.v1}/${call.path}`, key, call.body);
    if (answer.status !== 200) {
      failures.push(`${model.id}: ${answer.status} ${JSON.stringify(answer.body).slice(0, 200)}`);
      return;
    }
    if (!call.poll) return;
    let status = 'pending';
    let last: unknown;
    await eventually(async () => {
      last = await (await fetch(`${gateway.v1}/${call.poll}/${answer.body.id}`, { headers: { authorization: `Bearer ${key}` } })).json();
      status = (last as { status: string }).status;
      return status !== 'pending';
    }, 20_000, 50);
    if (status !== 'success') failures.push(`${model.id}: task ${status} ${JSON.stringify(last).slice(0, 200)}`);
  }));
  t.same(failures, [], `${active.length} active models, each called once`);
});
