// The model catalog over real HTTP: GET /api/v1/models (filters, search, pages), one model (ids with
// '/', aliases), popular, pricing records (chat, image, video, all), the OpenAI-compatible /v1/models
// (also through the official client), every bad query, and authentication.
import t from 'tap';
import OpenAI from 'openai';
import { startGateway, type Gateway } from './helpers/harness.js';
import { TEST_JWT_SECRET, assertEnvelope, fastUser, rawRequest } from './helpers/http-tools.js';
import { PROVIDER_NAMES } from '../src/catalog/vendors.js';
import { CHAT_MODELS } from '../src/catalog/seed/chat.js';
import { catalogRows } from '../src/catalog/seed/index.js';
import { VENDORS } from '../src/config.js';
import { databaseBefore } from './helpers/migrations.js';
import { migrate } from '../src/store/migrate.js';

let gateway: Gateway;
let key: string;
let token: string;

t.before(async () => {
  gateway = await startGateway({ env: { JWT_SECRET: TEST_JWT_SECRET, RATE_LIMIT_DEFAULT: '1000/10' } });
  ({ key, token } = await fastUser(gateway, 'catalog-user', '0'));
});
t.teardown(() => gateway?.close());

const get = (path: string, credential: string | null = key) =>
  rawRequest(`${gateway.url}${path}`, { headers: credential ? { authorization: `Bearer ${credential}` } : {} });

const ids = (body: any): string[] => body.data.map((m: any) => m.id);

t.test('the seed: 18 providers, every active chat model servable, every modality present', async (t) => {
  t.equal(PROVIDER_NAMES.length, 18);
  const { models, prices } = catalogRows();
  for (const m of models.filter((m) => m.modality === 'chat' && m.is_active && m.alias_of === null)) {
    t.ok(['openai', 'anthropic', 'gemini'].includes(m.family), `${m.id} family ${m.family}`);
    t.ok((VENDORS as readonly string[]).includes(m.upstream_vendor), `${m.id} vendor ${m.upstream_vendor}`);
    t.ok(prices.some((p) => p.model_id === m.id && p.component === 'input_token'), `${m.id} priced`);
  }
  for (const modality of ['chat', 'image', 'video', 'audio', 'embedding']) t.ok(models.some((m) => m.modality === modality && m.is_active), modality);
  t.ok(new Set(models.map((m) => m.provider)).size >= 17, 'providers are spread across the catalog');
});

t.test('every vendor the catalog names has an active model (Suno gave way to Stability AI), and no model waits for an adapter', async (t) => {
  const active = new Set<string>();
  const waiting: string[] = [];
  for (let page = 1; ; page++) {
    const res = await get(`/api/v1/models?per_page=100&page=${page}&include_inactive=true`);
    for (const model of res.body.data) {
      if (model.is_active) active.add(model.provider);
      if (model.tags.includes('not-served-yet')) waiting.push(model.id);
    }
    if (page >= res.body.total_pages) break;
  }
  t.same(PROVIDER_NAMES.filter((name) => !active.has(name)), [], 'no vendor the gateway cannot serve');
  t.same(waiting, [], 'no model tagged not-served-yet');
  t.notOk(PROVIDER_NAMES.includes('Suno'), 'Suno is not a catalog vendor');
  const stability = await get('/api/v1/models?provider=Stability%20AI');
  t.same(ids(stability.body), ['stability/stable-audio-2.5']);
  t.match(stability.body.data[0], { modality: 'audio', is_active: true, capabilities: { task: 'music', duration_seconds: [1, 190] } });
  const suno = await get('/api/v1/models/suno/suno-v5.5');
  assertEnvelope(t, suno, 404, 'not_found', 'the Suno model is gone from the catalog');
});

t.test('a database that listed Suno loses its row (and price) when migrated; nothing else changes', async (t) => {
  const sql = await databaseBefore(t, '0015');
  await sql`insert into models (id, name, provider, modality, family, upstream_vendor, upstream_model, is_active, status)
            values ('suno/suno-v5.5', 'Suno v5.5', 'Suno', 'audio', 'suno-wrapper', 'suno', 'v5.5', false, 'retired'),
                   ('openai/kept', 'Kept', 'OpenAI', 'chat', 'openai', 'openai', 'kept', true, 'active')`;
  await sql`insert into model_prices (model_id, component, nano_usd_per_million) values ('suno/suno-v5.5', 'request', 111000000000000)`;
  await migrate(sql);
  t.same((await sql<{ id: string }[]>`select id from models order by id`).map((row) => row.id), ['openai/kept'], 'only the Suno row is gone');
  t.same(await sql`select * from model_prices`, [], 'its price went with it');
});

t.test('list: envelope, default order (popular first), only active by default', async (t) => {
  const res = await get('/api/v1/models');
  t.equal(res.status, 200);
  t.same(Object.keys(res.body).sort(), ['data', 'page', 'per_page', 'total', 'total_pages']);
  t.equal(res.body.page, 1);
  t.equal(res.body.per_page, 20);
  t.equal(res.body.data.length, 20);
  t.equal(res.body.total_pages, Math.ceil(res.body.total / 20));
  t.ok(res.body.data.every((m: any) => m.is_active), 'only active models');
  t.ok(res.body.data[0].is_popular, 'popular first');
  const all = await get('/api/v1/models?include_inactive=true&per_page=100');
  t.ok(all.body.total > res.body.total, 'include_inactive shows more');
  const last = all.body.data.at(-1);
  t.notOk(last.is_active, 'inactive models come last');
  const imagen = all.body.data.find((m: any) => m.id === 'google/imagen-4');
  t.match(imagen, { is_active: false, status: 'retired', retirement_date: '2026-08-17', deprecated: true });
  t.notOk(ids(res.body).includes('google/imagen-4'));
  const seedance2 = all.body.data.find((m: any) => m.id === 'bytedance/seedance-2.0');
  t.match(seedance2, { is_active: false, capabilities: { profile: 'SEEDANCE-2.0' } }, 'Seedance 2.0: servable, inactive for want of a price');
  t.ok(seedance2.tags.includes('price-unverified') && !seedance2.tags.includes('not-served-yet'), 'Seedance 2.0: tagged price-unverified only');
  // Gone upstream, so listed for the record as retired, never as waiting for an adapter.
  for (const [id, date] of [['openai/sora-2', '2026-09-24'], ['openai/sora-2-pro', '2026-09-24']] as const) {
    const model = all.body.data.find((m: any) => m.id === id);
    t.match(model, { is_active: false, status: 'retired', retirement_date: date }, `${id} retired`);
    t.notOk(model.tags.includes('not-served-yet'), `${id} is not tagged as waiting for an adapter`);
    t.match(model.description, /Retired/, `${id}: the reason in the description`);
  }
});

t.test('filters: task and provider are OR within, AND across', async (t) => {
  const video = await get('/api/v1/models?task=video&per_page=100');
  t.ok(video.body.total > 5);
  t.ok(video.body.data.every((m: any) => m.modality === 'video'));
  const videoOrAudio = await get('/api/v1/models?task=video&task=audio&per_page=100');
  const audio = await get('/api/v1/models?task=audio&per_page=100');
  t.equal(videoOrAudio.body.total, video.body.total + audio.body.total, 'task OR');
  t.same(new Set(videoOrAudio.body.data.map((m: any) => m.modality)), new Set(['video', 'audio']));
  const google = await get('/api/v1/models?provider=Google&per_page=100&include_inactive=true');
  const openai = await get('/api/v1/models?provider=OpenAI&per_page=100&include_inactive=true');
  const both = await get('/api/v1/models?provider=Google&provider=OpenAI&per_page=100&include_inactive=true');
  t.equal(both.body.total, google.body.total + openai.body.total, 'provider OR');
  const googleVideo = await get('/api/v1/models?provider=Google&task=video&per_page=100&include_inactive=true');
  t.ok(googleVideo.body.total > 0);
  t.ok(googleVideo.body.data.every((m: any) => m.provider === 'Google' && m.modality === 'video'), 'AND across');
  t.equal(googleVideo.body.total, google.body.data.filter((m: any) => m.modality === 'video').length);
  const combo = await get('/api/v1/models?provider=Google&provider=OpenAI&task=image&task=video&per_page=100&include_inactive=true');
  t.ok(combo.body.data.every((m: any) => ['Google', 'OpenAI'].includes(m.provider) && ['image', 'video'].includes(m.modality)));
  t.ok(ids(combo.body).includes('openai/sora-2') && ids(combo.body).includes('google/gemini-3-pro-image'));
  const multiWord = await get(`/api/v1/models?provider=${encodeURIComponent('Black Forest Labs')}`);
  t.ok(multiWord.body.total >= 3, 'a display name with spaces');
});

t.test("the issue's Done-when query answers from the real catalog", async (t) => {
  const res = await get('/api/v1/models?task=video&provider=Alibaba&search=reference');
  t.equal(res.status, 200);
  t.equal(res.body.data[0].id, 'alibaba/wan2.6-r2v', 'the R2V-A model first');
  t.ok(ids(res.body).includes('alibaba/wan2.6-r2v-flash'), 'Wan 2.6 R2V Flash is served and listed');
  t.ok(res.body.data.every((m: any) => m.provider === 'Alibaba' && m.modality === 'video'));
  const alias = res.body.data.find((m: any) => m.id === 'video_generate.wan26_r2v');
  t.match(alias, { deprecated: true, alias_of: 'alibaba/wan2.6-r2v' }, 'the deprecated id is listed, marked, after current ids');
  t.equal(ids(res.body).at(-1), 'video_generate.wan26_r2v');
});

t.test('search: ranked, prefix words, ids, no match is an empty page', async (t) => {
  const res = await get('/api/v1/models?search=reference&task=video&per_page=100');
  const current = res.body.data.filter((m: any) => m.alias_of === null);
  t.ok(current.length >= 4);
  const firstWithout = current.findIndex((m: any) => !/reference/i.test(m.name));
  const lastWith = current.map((m: any) => /reference/i.test(m.name)).lastIndexOf(true);
  t.ok(firstWithout === -1 || lastWith < firstWithout, 'a match in the name ranks above a match in the description only');
  const sonnet = await get('/api/v1/models?search=claude%20sonnet');
  t.ok(sonnet.body.data.length >= 2 && sonnet.body.data.every((m: any) => /sonnet/i.test(m.name)), 'all words must match');
  const prefix = await get('/api/v1/models?search=seeda');
  t.ok(prefix.body.total >= 3 && prefix.body.data.every((m: any) => /seedance/i.test(m.id)), 'prefix of a word');
  const byId = await get('/api/v1/models?search=viduq1');
  t.ok(ids(byId.body).includes('shengshu/viduq1-r2v'), 'an id fragment');
  const deprecatedForm = await get('/api/v1/models?search=wan26_r2v');
  t.ok(ids(deprecatedForm.body).includes('video_generate.wan26_r2v'), 'the deprecated id form');
  for (const q of ['zzzqqqxx', '!!!', 'the', "'&|:*()"]) {
    const none = await get(`/api/v1/models?search=${encodeURIComponent(q)}`);
    t.equal(none.status, 200, `${q}: not an error`);
    t.same({ data: none.body.data, total: none.body.total, total_pages: none.body.total_pages }, { data: [], total: 0, total_pages: 0 }, `${q}: empty page`);
  }
});

t.test('pagination: bounds and totals', async (t) => {
  const first = await get('/api/v1/models?per_page=7&page=1');
  const second = await get('/api/v1/models?per_page=7&page=2');
  t.equal(first.body.data.length, 7);
  t.equal(first.body.total_pages, Math.ceil(first.body.total / 7));
  t.same(ids(second.body).filter((id) => ids(first.body).includes(id)), [], 'pages do not overlap');
  const all = await get('/api/v1/models?per_page=100');
  t.equal(all.body.data.length, Math.min(100, all.body.total));
  t.same([...ids(first.body), ...ids(second.body)], ids(all.body).slice(0, 14), 'pages follow the same order');
  const beyond = await get(`/api/v1/models?per_page=7&page=${first.body.total_pages + 1}`);
  t.same(beyond.body.data, []);
  t.equal(beyond.body.total, first.body.total, 'total still given beyond the last page');
});

t.test('bad queries are 400s naming the parameter', async (t) => {
  const cases: [string, string, RegExp][] = [
    ['task=music', 'task', /'music'.*chat, image, video, audio, embedding/],
    ['task=video&task=Video', 'task', /'Video'/],
    ['provider=Acme', 'provider', /'Acme'.*OpenAI.*Stability AI/],
    ['provider=openai', 'provider', /'openai'/],
    ['page=0', 'page', /page/],
    ['page=abc', 'page', /page/],
    ['per_page=0', 'per_page', /per_page/],
    ['per_page=101', 'per_page', /per_page/],
    ['per_page=-1', 'per_page', /per_page/],
    ['per_page=2.5', 'per_page', /per_page/],
    ['include_inactive=yes', 'include_inactive', /include_inactive/],
    [`search=${'a'.repeat(201)}`, 'search', /search/],
  ];
  for (const [query, param, message] of cases) {
    const res = await get(`/api/v1/models?${query}`);
    assertEnvelope(t, res, 400, 'invalid_request', query);
    t.equal(res.body.error.param, param, `${query}: names ${param}`);
    t.match(res.body.msg, message, `${query}: message`);
  }
  const providers = await get('/api/v1/models?provider=Acme');
  for (const name of PROVIDER_NAMES) t.ok(providers.body.msg.includes(name), `lists ${name}`);
});

t.test('one model: ids with "/", percent-encoded ids, aliases, 404', async (t) => {
  const res = await get('/api/v1/models/openai/gpt-4o-mini');
  t.equal(res.status, 200);
  t.match(res.body, { id: 'openai/gpt-4o-mini', name: 'GPT-4o mini', provider: 'OpenAI', modality: 'chat', is_active: true, alias_of: null });
  t.match(res.body.capabilities, { reasoning: false, vision: true, tools: true, prompt_cache: 'key', context_tokens: 128_000 });
  t.type(res.body.created_at, 'string');
  const encoded = await get('/api/v1/models/black-forest-labs%2Fflux-2-pro');
  t.equal(encoded.body.id, 'black-forest-labs/flux-2-pro', '%2F works too');
  const video = await get('/api/v1/models/alibaba/wan2.6-r2v');
  t.match(video.body.capabilities, { profile: 'R2V-A', durations: { min: 2, max: 10 }, sizes: { '1920*1080': '1080p', '1280*720': '720p' } });
  const alias = await get('/api/v1/models/video_generate.vidu_q2_reference');
  t.match(alias.body, { id: 'video_generate.vidu_q2_reference', alias_of: 'shengshu/viduq2-r2v', deprecated: true, modality: 'video', provider: 'ShengShu' });
  for (const missing of ['/api/v1/models/openai/nope', '/api/v1/models/openai', '/api/v1/models/openai/gpt-4o-mini/extra', '/api/v1/models/%E0%A4%A']) {
    assertEnvelope(t, await get(missing), 404, 'not_found', missing);
  }
});

t.test('popular', async (t) => {
  const res = await get('/api/v1/models/popular');
  t.equal(res.status, 200);
  t.ok(res.body.data.length >= 10);
  t.ok(res.body.data.every((m: any) => m.is_popular && m.is_active && m.alias_of === null));
  t.same(new Set(res.body.data.map((m: any) => m.modality)), new Set(['chat', 'image', 'video', 'audio', 'embedding']));
});

const line = (record: any, component: string, tier = '') => record.prices.find((p: any) => p.component === component && p.tier === tier);

t.test('pricing of a chat model: exact values from the seed, long-context tier', async (t) => {
  const res = await get('/api/v1/models/openai/gpt-4o-mini/pricing');
  t.equal(res.status, 200);
  t.match(res.body, { model_id: 'openai/gpt-4o-mini', priced_as: 'openai/gpt-4o-mini', currency: 'USD' });
  const seed = CHAT_MODELS.find((m) => m.id === 'openai/gpt-4o-mini')!;
  t.equal(seed.usdPerMillion.cachedInput, '0.075');
  t.same(line(res.body, 'input_token'), { component: 'input_token', unit: 'token', tier: '', conditions: {}, usd_per_unit: '0.00000015', usd_per_million: '0.15', confidence: 'A' });
  t.equal(line(res.body, 'cached_input_token').usd_per_million, '0.075');
  t.equal(line(res.body, 'cache_write_token').usd_per_million, '0');
  t.equal(line(res.body, 'output_token').usd_per_million, '0.6');
  const pro = await get('/api/v1/models/google/gemini-2.5-pro/pricing');
  t.equal(line(pro.body, 'input_token').usd_per_million, '1.25');
  t.match(line(pro.body, 'input_token', 'prompt>200000'), { usd_per_million: '2.5', conditions: { prompt_tokens_above: 200000 } });
  t.equal(line(pro.body, 'output_token', 'prompt>200000').usd_per_million, '15');
  const deepseek = await get('/api/v1/models/deepseek/deepseek-v4-pro/pricing');
  t.equal(line(deepseek.body, 'cached_input_token').usd_per_million, '0.003625', 'many decimals stay exact');
});

t.test('pricing of image and video models; flat list vs charged price; alias priced as its model', async (t) => {
  const image = await get('/api/v1/models/openai/gpt-image-2/pricing');
  t.same(line(image.body, 'image', 'quality=high,size=1024x1024'), {
    component: 'image', unit: 'image', tier: 'quality=high,size=1024x1024', conditions: { quality: 'high', size: '1024x1024' },
    usd_per_unit: '0.211', usd_per_million: '211000', confidence: 'B',
  });
  t.equal(image.body.prices.length, 9);
  const video = await get('/api/v1/models/alibaba/wan2.6-r2v/pricing');
  t.same(video.body.prices.map((p: any) => [p.component, p.unit, p.tier, p.usd_per_unit]),
    [['video_second', 'second', 'resolution=1080p', '0.15'], ['video_second', 'second', 'resolution=720p', '0.1']]);
  const flat = await get('/api/v1/models/shengshu/viduq1-r2v/pricing');
  t.match(flat.body.prices, [{ component: 'video', unit: 'video', conditions: { duration: '5', resolution: '1080p' }, usd_per_unit: '0.34', list_usd_per_unit: '0.4' }]);
  const addOn = await get('/api/v1/models/shengshu/viduq2-r2v/pricing');
  t.match(line(addOn.body, 'audio'), { unit: 'video', usd_per_unit: '0.064' });
  t.equal(line(addOn.body, 'video_second', 'resolution=720p').confidence, 'unverified', 'an unverified figure says so');
  const tts = await get('/api/v1/models/elevenlabs/eleven-v3/pricing');
  t.match(line(tts.body, 'audio_character'), { unit: 'character', usd_per_unit: '0.0001', usd_per_million: '100' });
  const alias = await get('/api/v1/models/video_generate.wan26_r2v/pricing');
  t.match(alias.body, { model_id: 'video_generate.wan26_r2v', priced_as: 'alibaba/wan2.6-r2v' });
  t.same(alias.body.prices, video.body.prices);
  assertEnvelope(t, await get('/api/v1/models/openai/nope/pricing'), 404, 'not_found');
});

t.test('GET /api/v1/pricing: every active current model', async (t) => {
  const res = await get('/api/v1/pricing');
  t.equal(res.status, 200);
  t.equal(res.body.currency, 'USD');
  const list = await get('/api/v1/models?per_page=100');
  const current = list.body.data.filter((m: any) => m.alias_of === null).map((m: any) => m.id).sort();
  t.same(res.body.data.map((r: any) => r.model_id).sort(), current);
  t.equal(res.body.total, current.length);
  const wan = res.body.data.find((r: any) => r.model_id === 'alibaba/wan2.6-r2v');
  t.equal(line(wan, 'video_second', 'resolution=720p').usd_per_unit, '0.1');
  t.notOk(res.body.data.some((r: any) => r.model_id === 'openai/sora-2'), 'a retired model is not priced for calling');
  t.ok(res.body.data.filter((r: any) => r.modality === 'chat').every((r: any) => r.prices.length >= 4), 'every chat model priced');
});

t.test('OpenAI-compatible /v1/models, also through the official client', async (t) => {
  const res = await get('/v1/models');
  t.equal(res.status, 200);
  t.equal(res.body.object, 'list');
  t.ok(res.body.data.length > 50);
  t.match(res.body.data.find((m: any) => m.id === 'anthropic/claude-sonnet-4-5'), { object: 'model', owned_by: 'anthropic' });
  t.type(res.body.data[0].created, 'number');
  t.notOk(res.body.data.some((m: any) => m.id === 'google/imagen-4'), 'no inactive model');
  const client = new OpenAI({ baseURL: gateway.v1, apiKey: key, maxRetries: 0 });
  const listed: string[] = [];
  for await (const model of client.models.list()) listed.push(model.id);
  t.same(listed, ids(res.body));
  const one = await client.models.retrieve('openai/gpt-4o-mini');
  t.match(one, { id: 'openai/gpt-4o-mini', object: 'model', owned_by: 'openai' });
  const raw = await get('/v1/models/openai/gpt-4o-mini');
  t.equal(raw.body.id, 'openai/gpt-4o-mini', 'unencoded slash');
  const failure = await client.models.retrieve('openai/nope').then(() => null, (error: { status?: number }) => error);
  t.equal(failure?.status, 404, 'the client sees a 404');
  assertEnvelope(t, await get('/v1/models/openai/nope'), 404, 'model_not_found');
  assertEnvelope(t, await get('/v1/models/google/imagen-4'), 404, 'model_not_found', 'inactive');
});

t.test('authentication: API key or JWT on /api/v1, API key on /v1', async (t) => {
  for (const path of ['/api/v1/models', '/api/v1/models/popular', '/api/v1/models/openai/gpt-4o-mini', '/api/v1/models/openai/gpt-4o-mini/pricing', '/api/v1/pricing', '/v1/models', '/v1/models/openai/gpt-4o-mini']) {
    assertEnvelope(t, await get(path, null), 401, undefined, `${path} without credentials`);
    assertEnvelope(t, await get(path, 'garbage'), 401, undefined, `${path} with garbage`);
    t.equal((await get(path, key)).status, 200, `${path} with an API key`);
  }
  for (const path of ['/api/v1/models', '/api/v1/models/popular', '/api/v1/models/openai/gpt-4o-mini', '/api/v1/models/openai/gpt-4o-mini/pricing', '/api/v1/pricing']) {
    t.equal((await get(path, token)).status, 200, `${path} with a JWT`);
  }
  assertEnvelope(t, await get('/v1/models', token), 401, undefined, '/v1/models refuses a JWT');
});

t.test('a deprecated chat id is served as its current model: its upstream, its prices, its id in the answer', async (t) => {
  const user = 'catalog-alias-caller';
  const { key: paying } = await fastUser(gateway, user, '1');
  const mark = gateway.mock.requests().length;
  const client = new OpenAI({ apiKey: paying, baseURL: gateway.v1, maxRetries: 0 });
  const completion = await client.chat.completions.create({ model: 'chat_generate.deepseek_reasoner', messages: [{ role: 'user', content: 'hi [[mock chunks=4]]' }], max_tokens: 50 });
  t.equal(completion.model, 'deepseek/deepseek-v4-flash', 'answered as the current model');
  const upstream = gateway.mock.requests().slice(mark).find((r) => r.path.endsWith('/chat/completions'));
  t.equal(upstream?.path, '/deepseek/v1/chat/completions', 'sent to the current model\'s vendor');
  t.equal((upstream?.body as { model?: string }).model, 'deepseek-v4-flash', 'under its upstream name');
  const { prompt_tokens: prompt, completion_tokens: output } = completion.usage!;
  // deepseek-v4-flash: 0.14 USD per 1M input tokens, 0.28 per 1M output tokens.
  const expected = BigInt(prompt) * 140n + BigInt(output) * 280n;
  let charged = 0n;
  for (let tries = 0; tries < 200 && charged === 0n; tries++) {
    const [row] = await gateway.sql<{ sum: bigint }[]>`select coalesce(-sum(credits_nano), 0)::bigint as sum from transactions where user_id = ${user} and payment_method = 'usage'`;
    charged = row!.sum;
    if (charged === 0n) await new Promise((r) => setTimeout(r, 50));
  }
  t.equal(charged, expected, 'charged at the current model\'s prices');
  const retired = await rawRequest(`${gateway.v1}/chat/completions`, {
    method: 'POST', headers: { authorization: `Bearer ${paying}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'deepseek/deepseek-reasoner', messages: [{ role: 'user', content: 'hi' }] }),
  });
  assertEnvelope(t, retired, 404, 'model_not_found', 'a retired model is still a 404');
});
