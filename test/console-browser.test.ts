// The console in a real browser (issue 29, "Tested in a real browser"): Chromium, driven by
// playwright-core, uses the built console (dist/console) served by a gateway with the development
// identity provider and the mock vendor playing every upstream and Stripe.
// - At desktop and phone size: /console signed out, sign in through the provider's real login and
//   consent forms, back on /console signed in (the session cookie HttpOnly and Secure over
//   http://127.0.0.1, nothing in Web Storage), sign out; no script error, nothing refused by the
//   console's content security policy.
// - The whole flow: top up through the mock's card checkout and see the credit; create a key and read
//   its secret from the page; a chat call with the official `openai` client and that key; the call in
//   the request log with its cost, its detail, the usage totals and the balance moved by it; a video
//   task run and cancelled from the Tasks page; the key revoked, and the next call refused.
import t from 'tap';
import OpenAI from 'openai';
import type { Browser, Page } from 'playwright-core';
import { startGateway, freePort, type Gateway } from './helpers/harness.js';
import { browserContext, browserUnavailable, launchBrowser, testPage, VIEWPORTS, type ViewportName } from './helpers/browser.js';
import { eventually } from './helpers/http-tools.js';

const skip = browserUnavailable();
let gateway: Gateway;
let browser: Browser;

t.before(async () => {
  if (skip) return;
  gateway = await startGateway({
    env: {
      DEV_IDENTITY_PROVIDER: 'on', DEV_IDENTITY_PROVIDER_PORT: String(await freePort()),
      // The built-in mock plays Stripe (the harness's own mock plays every vendor).
      MOCK_VENDOR: 'auto', MOCK_VENDOR_PORT: String(await freePort()),
      FETCH_ALLOW_LOOPBACK: 'true', TASK_POLL_MS: '50', TASK_TIMER_TICK_MS: '20',
    },
  });
  browser = await launchBrowser();
});
t.teardown(async () => {
  await browser?.close();
  await gateway?.close();
});

/** Signs in as `login` from the console's sign-in page, through the provider's own forms, as a person would. */
async function signIn(page: Page, login: string): Promise<void> {
  await page.goto(`${gateway.url}/console`);
  await page.getByRole('heading', { name: 'Sign in' }).waitFor();
  await page.getByRole('link', { name: 'Sign in' }).click();
  await page.locator('input[name="login"]').fill(login);
  await page.locator('input[name="password"]').fill('any password');
  await page.locator('button[type="submit"]').click();
  await page.getByRole('button', { name: 'Continue' }).click();
  await page.getByRole('button', { name: 'Sign out' }).waitFor();
}

/** Goes to a console page through its navigation link. */
async function open(page: Page, name: string): Promise<void> {
  await page.getByRole('navigation').getByRole('link', { name, exact: true }).click();
  await page.getByRole('heading', { level: 1, name }).waitFor();
}

/**
 * Problems on the gateway's own pages: script errors and refusals of the content security policy. An API
 * answer of 4xx that the console shows (401 from /auth/session while signed out, 409 `task_starting`)
 * is logged by Chromium as a failed load, and is no problem.
 */
const ownProblems = (problems: string[]) =>
  problems.filter((problem) => problem.startsWith(gateway.url) && !/Failed to load resource: the server responded with a status of 4\d\d/.test(problem));

for (const size of Object.keys(VIEWPORTS) as ViewportName[]) {
  t.test(`${size}: signed out, sign in through the provider's login form, back on /console signed in, sign out`, { skip }, async (t) => {
    const login = `person-${size}@example.test`;
    const context = await browserContext(browser, size);
    t.teardown(() => context.close());
    const { page, problems } = await testPage(t, context, `console-signin-${size}`);

    await signIn(page, login);
    t.equal(new URL(page.url()).pathname.startsWith('/console'), true, 'back on the console');
    // Attached, not visible: a phone-width header leaves the name out.
    await page.getByText(login).first().waitFor({ state: 'attached' });
    t.pass('signed in: the console knows who');
    const session = (await context.cookies(`${gateway.url}/auth`)).find((cookie) => cookie.name === 'gw_session');
    t.match(session, { httpOnly: true, secure: true, sameSite: 'Strict', path: '/auth' }, 'the browser keeps the Secure session cookie over http://127.0.0.1');
    t.same(await page.evaluate('[Object.keys(localStorage), Object.keys(sessionStorage)]'), [[], []], 'nothing in Web Storage');

    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByRole('heading', { name: 'Sign in' }).waitFor();
    t.pass('signed out');
    await page.reload();
    await page.getByRole('heading', { name: 'Sign in' }).waitFor();
    t.pass('still signed out after a reload: the session ended');
    t.same(ownProblems(problems), [], 'no script error on the console\'s pages, nothing refused by its content security policy');
  });
}

t.test('the whole flow: top up, a key, a call, its cost everywhere, a task cancelled, the key revoked', { skip }, async (t) => {
  const login = 'e2e-person@example.test';
  const context = await browserContext(browser, 'desktop');
  t.teardown(() => context.close());
  const { page, problems } = await testPage(t, context, 'console-whole-flow');
  await signIn(page, login);

  // Top up through the card processor (the mock's hosted checkout page), back on Billing with the credit.
  await open(page, 'Billing');
  await page.getByLabel('Amount (USD)').fill('20');
  await page.getByRole('button', { name: 'Top up with a card' }).click();
  await page.getByRole('button', { name: 'Pay $20.00' }).click();
  await page.getByText('Payment received').waitFor();
  await t.resolves(page.getByTestId('balance-credits').getByText('$20.00').waitFor(), 'the credit is shown');

  // A key: its secret read from the page, once.
  await open(page, 'API keys');
  await page.getByLabel('Name').first().fill('browser test key');
  await page.getByRole('button', { name: 'Create key' }).click();
  const secret = (await page.getByTestId('new-key-secret').textContent())?.trim() ?? '';
  t.match(secret, /^sk-gw-[A-Za-z0-9]{12}-[A-Za-z0-9]{48}$/, 'the new key\'s secret is on the page');
  await page.getByRole('button', { name: 'I have stored it' }).click();
  t.equal(await page.getByText(secret).count(), 0, 'and gone once dismissed');

  // A chat call with the official client and that key.
  const client = new OpenAI({ apiKey: secret, baseURL: gateway.v1, maxRetries: 0 });
  const { data: completion, response } = await client.chat.completions
    .create({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'Hello from the browser test [[mock chunks=3]]' }] }).withResponse();
  const requestId = response.headers.get('x-request-id')!;
  const cost = Number(response.headers.get('x-gateway-cost'));
  t.ok(completion.choices[0]?.message.content, 'the call answers');
  t.ok(cost > 0, `it cost something (${cost} USD)`);
  const costText = new Intl.NumberFormat('en-US', { style: 'currency', currency: 'USD', minimumFractionDigits: 2, maximumFractionDigits: 9 }).format(cost);

  // The request log shows it with its cost (within moments: the ledger writer records it), and its detail.
  await open(page, 'Requests');
  t.ok(await eventually(async () => {
    await page.reload();
    await page.getByRole('heading', { level: 1, name: 'Requests' }).waitFor();
    return (await page.getByRole('row').filter({ hasText: 'openai/gpt-4o-mini' }).filter({ hasText: costText }).count()) === 1;
  }, 10_000, 300), `the call is in the request log with its cost ${costText}`);
  await page.getByRole('row').filter({ hasText: 'openai/gpt-4o-mini' }).getByRole('link').click();
  await page.getByText(requestId).waitFor();
  t.ok(await page.getByText(costText).count() > 0, 'its detail shows the request id and the cost');

  // Usage totals and the balance moved by exactly that cost.
  await open(page, 'Usage');
  await page.getByTestId('usage-total-requests').getByText('1', { exact: true }).waitFor();
  t.equal(await page.getByTestId('usage-total-cost').textContent(), costText, 'the usage total is the call\'s cost');
  await t.resolves(page.locator('canvas').first().waitFor(), 'the usage chart is drawn');
  await open(page, 'Billing');
  const available = new Intl.NumberFormat('en-US', { style: 'currency', currency: 'USD', minimumFractionDigits: 2, maximumFractionDigits: 9 }).format((20_000_000_000 - Math.round(cost * 1e9)) / 1e9);
  await t.resolves(page.getByTestId('balance-available').getByText(available, { exact: true }).waitFor(), `the available balance moved to ${available}`);

  // A video task, run and cancelled from the Tasks page.
  const task = await client.post<{ id: string; status: string }>('/videos/generations', {
    body: { model: 'alibaba/wan2.6-r2v', prompt: 'a cat turns its head [[mock job_ms=600000]]', video_urls: ['https://localhost/r.mp4'] },
  });
  t.equal(task.status, 'pending', 'a video task is running');
  await open(page, 'Tasks');
  await page.getByText(task.id).waitFor();
  // Cancel may meet the moment the task is handed to its vendor (409 task_starting): the page says so, and a second press works.
  t.ok(await eventually(async () => {
    const cancel = page.getByRole('button', { name: /^Cancel Video task/ });
    if (await cancel.count() === 1) await cancel.click();
    return (await page.locator('.status', { hasText: 'failed' }).count()) === 1;
  }, 15_000, 500), 'Cancel ends it: failed');
  const [row] = await gateway.sql<{ status: string; error_code: string }[]>`select status, error_code from tasks where id = ${task.id}`;
  t.same(row, { status: 'failed', error_code: 'cancelled' }, 'the task is cancelled');

  // Revoke the key (after its confirmation): the next call is refused.
  await open(page, 'API keys');
  await page.getByRole('button', { name: 'Revoke browser test key' }).click();
  await page.getByRole('dialog').getByRole('button', { name: 'Revoke key' }).click();
  await page.getByRole('row').filter({ hasText: 'browser test key' }).waitFor({ state: 'detached' });
  const refused = await client.chat.completions.create({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'again' }] }).then(() => undefined, (error: unknown) => error);
  t.ok(refused instanceof OpenAI.AuthenticationError, 'the revoked key\'s next call is refused: 401');
  t.same(ownProblems(problems), [], 'no script error on the console\'s pages, nothing refused by its content security policy');
});
