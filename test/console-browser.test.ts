// Sign-in to the console in a real browser (issue 29, "Tested in a real browser"): Chromium, driven by
// playwright-core, visits /console signed out, signs in through the development identity provider's
// real login and consent forms, comes back to /console signed in (the session cookie HttpOnly and
// Secure over http://127.0.0.1, the session JWT fetched with the gateway's own Origin, an API call made
// with it), and signs out; at desktop and at phone size, under the console's content security policy
// with nothing refused. The console here is a small fixture app built by the test.
import t from 'tap';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser } from 'playwright-core';
import { startGateway, freePort, type Gateway } from './helpers/harness.js';
import { browserContext, browserUnavailable, launchBrowser, testPage, VIEWPORTS, type ViewportName } from './helpers/browser.js';

/** A console as small as the flow needs: who is signed in (asked of the API), or a sign-in link. */
const APP = `
const status = document.getElementById('status');
const session = await fetch('/auth/session', { method: 'POST' });
if (session.ok) {
  const { token, user } = await session.json();
  const balance = await (await fetch('/api/v1/billing/balance', { headers: { authorization: 'Bearer ' + token } })).json();
  status.textContent = 'Signed in as ' + user.id + ', available ' + balance.available + ' USD';
  const out = document.createElement('button');
  out.textContent = 'Sign out';
  out.addEventListener('click', async () => {
    await fetch('/auth/logout', { method: 'POST' });
    location.reload();
  });
  document.body.append(out);
} else {
  status.textContent = 'Signed out';
  const link = document.createElement('a');
  link.href = '/auth/login';
  link.textContent = 'Sign in';
  document.body.append(link);
}
`;
const INDEX = '<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Console</title>'
  + '<link rel="stylesheet" href="/console/assets/app-5e1f.css"><script type="module" src="/console/assets/app-5e1f.js"></script></head>'
  + '<body><p id="status">Loading</p></body></html>';

const skip = browserUnavailable();
const root = mkdtempSync(join(tmpdir(), 'console-browser-'));
t.teardown(() => rmSync(root, { recursive: true, force: true }));
mkdirSync(join(root, 'assets'), { recursive: true });
writeFileSync(join(root, 'index.html'), INDEX);
writeFileSync(join(root, 'assets', 'app-5e1f.js'), APP);
writeFileSync(join(root, 'assets', 'app-5e1f.css'), 'body { font-family: sans-serif }\n');

let gateway: Gateway;
let browser: Browser;

t.before(async () => {
  if (skip) return;
  gateway = await startGateway({
    vendors: ['openai'], env: { CONSOLE_DIR: root, DEV_IDENTITY_PROVIDER: 'on', DEV_IDENTITY_PROVIDER_PORT: String(await freePort()) },
  });
  browser = await launchBrowser();
});
t.teardown(async () => {
  await browser?.close();
  await gateway?.close();
});

for (const size of Object.keys(VIEWPORTS) as ViewportName[]) {
  t.test(`${size}: signed out, sign in through the provider's login form, back on /console signed in, sign out`, { skip }, async (t) => {
    const login = `console-${size}`;
    await gateway.topup(login, '3');
    const context = await browserContext(browser, size);
    t.teardown(() => context.close());
    const { page, problems } = await testPage(t, context, `console-browser-${size}`);

    await page.goto(`${gateway.url}/console`);
    await page.getByText('Signed out').waitFor();
    t.pass('/console, signed out');
    await page.getByRole('link', { name: 'Sign in' }).click();

    // The development provider's own pages, as a person fills them in.
    await page.locator('input[name="login"]').fill(login);
    await page.locator('input[name="password"]').fill('any password');
    await page.locator('button[type="submit"]').click();
    await page.getByRole('button', { name: 'Continue' }).click();

    await page.getByText(`Signed in as ${login}, available 3 USD`).waitFor();
    t.equal(new URL(page.url()).pathname, '/console', 'back on /console, signed in: the API answered for the account');
    const cookies = await context.cookies(gateway.url + '/auth');
    const session = cookies.find((cookie) => cookie.name === 'gw_session');
    t.match(session, { httpOnly: true, secure: true, sameSite: 'Strict', path: '/auth' }, 'the browser keeps the Secure session cookie over http://127.0.0.1');
    t.same(await page.evaluate('Object.keys(localStorage)'), [], 'nothing in localStorage');

    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByText('Signed out').waitFor();
    t.pass('signed out again');
    // The one error expected: /auth/session's 401 while signed out, which Chromium logs as a failed load.
    const unexpected = problems.filter((problem) => problem.startsWith(gateway.url) && !problem.includes('status of 401'));
    t.same(unexpected, [], 'no other error on the console\'s pages: its content security policy refused nothing, no script failed');
  });
}
