/**
 * `npm run console:screenshots`: pictures of every console page for docs/console.md, made from the real
 * console. Starts a gateway of its own (its own database and Redis prefix, the mock vendor for every
 * upstream, the development identity provider), signs in through the provider's login form in
 * Chromium, makes a few calls so the pages have data (keys, chat calls, a top-up, tasks, a BYOK
 * credential, an alert), then saves each page at desktop (1280×800) and phone (375×740) width as
 * docs/console/<page>-<width>.png. Needs the console built (`npm run build`) and Chromium.
 */
import { mkdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { BrowserContext, Page } from 'playwright-core';
import { startGateway, freePort, postJson, type Gateway } from '../test/helpers/harness.js';
import { browserContext, browserUnavailable, launchBrowser, type ViewportName } from '../test/helpers/browser.js';

const OUT = resolve(process.env.SCREENSHOT_DIR ?? 'docs/console');
const ACCOUNT = 'ada@example.test';

/** Each page: its name in the file, its address under /console (a function of the data made). */
const PAGES: readonly { readonly name: string; readonly path: (data: Data) => string }[] = [
  { name: 'keys', path: () => '/keys' },
  { name: 'usage', path: () => '/usage' },
  { name: 'requests', path: () => '/requests' },
  { name: 'request-detail', path: (data) => `/requests/${data.requestId}` },
  { name: 'billing', path: () => '/billing' },
  { name: 'tasks', path: () => '/tasks' },
  { name: 'byok', path: () => '/byok' },
  { name: 'webhook', path: () => '/webhook' },
  { name: 'models', path: () => '/models' },
];

interface Data {
  readonly requestId: string;
}

async function main(): Promise<void> {
  const unavailable = browserUnavailable();
  if (unavailable) throw new Error(unavailable);
  mkdirSync(OUT, { recursive: true });
  const gateway = await startGateway({ env: { DEV_IDENTITY_PROVIDER: 'on', DEV_IDENTITY_PROVIDER_PORT: String(await freePort()), FETCH_ALLOW_LOOPBACK: 'true' } });
  const browser = await launchBrowser();
  try {
    const desktop = await browserContext(browser, 'desktop');
    const page = await desktop.newPage();
    await shoot(page, gateway, 'signin', '/', 'desktop');
    await signIn(page, gateway);
    const data = await makeData(desktop, gateway);
    for (const entry of PAGES) await shoot(page, gateway, entry.name, entry.path(data), 'desktop');
    // The phone: its own context, signed in again (the provider remembers nobody across contexts).
    const phone = await browserContext(browser, 'phone');
    const small = await phone.newPage();
    await shoot(small, gateway, 'signin', '/', 'phone');
    await signIn(small, gateway);
    for (const entry of PAGES) await shoot(small, gateway, entry.name, entry.path(data), 'phone');
    process.stdout.write(`${(PAGES.length + 1) * 2} screenshots in ${OUT}\n`);
  } finally {
    await browser.close();
    await gateway.close();
  }
}

/** Signs in as ACCOUNT through the development provider's login and consent forms, back on /console. */
async function signIn(page: Page, gateway: Gateway): Promise<void> {
  await page.goto(`${gateway.url}/auth/login`);
  await page.locator('input[name="login"]').fill(ACCOUNT);
  await page.locator('input[name="password"]').fill('any password');
  await page.locator('button[type="submit"]').click();
  await page.getByRole('button', { name: 'Continue' }).click();
  await page.waitForURL(`${gateway.url}/console**`);
}

/** What the pages show: credit, two keys, chat calls on two vendors, tasks, a BYOK row and an alert. */
async function makeData(context: BrowserContext, gateway: Gateway): Promise<Data> {
  const session = await context.request.post(`${gateway.url}/auth/session`, { headers: { origin: gateway.url } });
  if (!session.ok()) throw new Error(`session: ${session.status()} ${await session.text()}`);
  const { token } = await session.json() as { token: string };
  await gateway.topup(ACCOUNT, '25');
  const api = async (method: string, path: string, body: unknown) => {
    const response = await fetch(`${gateway.url}${path}`, { method, headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: JSON.stringify(body) });
    if (!response.ok) throw new Error(`${method} ${path}: ${response.status} ${await response.text()}`);
    return response.json() as Promise<any>;
  };
  const { key } = await api('POST', '/api/v1/api-keys', { name: 'production app', rate_limit_rpm: 600, credit_limit: 50, credit_reset_interval: 'monthly' });
  await api('POST', '/api/v1/api-keys', { name: 'ops automation', is_provisioning: true });
  let requestId = '';
  for (const [model, prompt] of [['openai/gpt-4o-mini', 'Hello'], ['anthropic/claude-sonnet-4-5', 'Summarise'], ['openai/gpt-4o-mini', 'Translate'], ['deepseek/deepseek-v4-flash', 'Plan']] as const) {
    const answer = await postJson(`${gateway.v1}/chat/completions`, key, { model, messages: [{ role: 'user', content: `${prompt} [[mock chunks=3]]` }] });
    if (answer.status !== 200) throw new Error(`chat ${model}: ${answer.status} ${JSON.stringify(answer.body)}`);
    requestId = answer.headers.get('x-request-id') ?? requestId;
  }
  // Before any task: a pending task's hold keeps the account's reservations open.
  await gateway.ledgerSettled(ACCOUNT);
  await postJson(`${gateway.v1}/audio/speech`, key, { model: 'openai/tts-1-hd', input: 'Welcome to the console.', voice: 'alloy' });
  await postJson(`${gateway.v1}/videos/generations`, key, { model: 'alibaba/wan2.6-r2v', prompt: 'a cat turns its head [[mock job_ms=600000]]', video_urls: ['https://localhost/r.mp4'] });
  await api('POST', '/api/v1/byok', { provider: 'openai', label: 'team OpenAI key', api_key: 'sk-test-screenshot-placeholder-0000000000' });
  await api('POST', '/api/v1/billing/alerts', { threshold: 5 });
  // The speech task ends (charged), and its charge reaches the request log.
  await new Promise((resolveWait) => setTimeout(resolveWait, 4000));
  return { requestId };
}

/** Opens /console<path>, waits until its data is shown, and saves it as <name>-<size>.png. */
async function shoot(page: Page, gateway: Gateway, name: string, path: string, size: ViewportName): Promise<void> {
  await page.goto(`${gateway.url}/console${path === '/' ? '' : path}`);
  await page.locator('h1').first().waitFor();
  // Pages with pending tasks keep refreshing: the network need not fall idle.
  await page.waitForLoadState('networkidle', { timeout: 5000 }).catch(() => {});
  await page.waitForTimeout(300);
  await page.screenshot({ path: join(OUT, `${name}-${size}.png`) });
}

main().catch((error) => {
  process.stderr.write(`console screenshots failed: ${error instanceof Error ? error.stack : String(error)}\n`);
  process.exit(1);
});
