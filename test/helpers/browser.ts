/**
 * A real browser for end-to-end tests: Debian's Chromium (`/usr/bin/chromium`, installed by .ci/run)
 * driven by `playwright-core`, which downloads no browser of its own. Each launch gets a fresh profile
 * (Playwright makes a temporary user-data-dir and deletes it at close); pages open at a desktop
 * (1280×800) or phone (375×740) size; requests anywhere but this machine are refused; a page of a
 * failed test is saved as a screenshot (its path printed with the failure).
 */
import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { Test } from 'tap';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';

export const CHROMIUM_PATH = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
/** Where screenshots of failed tests go (.tap/ is ignored by git). */
export const SCREENSHOT_DIR = join(process.cwd(), '.tap', 'screenshots');

export const VIEWPORTS = Object.freeze({
  desktop: { viewport: { width: 1280, height: 800 } },
  phone: { viewport: { width: 375, height: 740 }, isMobile: true, hasTouch: true },
});
export type ViewportName = keyof typeof VIEWPORTS;

const CHROMIUM_ARGS = [
  '--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
  '--disable-component-update', '--disable-sync',
];

/**
 * Why this machine cannot run browser tests (a `skip` reason for t.test), or false when it can.
 * Under CI=true a missing Chromium is an error, never a skip: CI must run them.
 */
export function browserUnavailable(): string | false {
  if (existsSync(CHROMIUM_PATH)) return false;
  const reason = `${CHROMIUM_PATH} is not installed (Debian: apt-get install chromium; or set CHROMIUM_PATH)`;
  if (process.env.CI === 'true') throw new Error(`browser tests must run in CI: ${reason}`);
  return `browser tests skipped: ${reason}`;
}

export async function launchBrowser(): Promise<Browser> {
  return chromium.launch({ executablePath: CHROMIUM_PATH, headless: true, args: CHROMIUM_ARGS, timeout: 60_000 });
}

/** A fresh context (its own cookies and storage) at one of the two sizes, reaching only loopback addresses. */
export async function browserContext(browser: Browser, size: ViewportName): Promise<BrowserContext> {
  const context = await browser.newContext({ ...VIEWPORTS[size], locale: 'en-US', timezoneId: 'UTC' });
  context.setDefaultTimeout(15_000);
  await context.route('**/*', (route) => {
    const { hostname } = new URL(route.request().url());
    return ['127.0.0.1', 'localhost', '[::1]'].includes(hostname) ? route.continue() : route.abort('blockedbyclient');
  });
  return context;
}

/**
 * A page of `context` for test `t`: what its scripts log as errors (a refused content security
 * policy, an exception) is kept in `problems`, each after the address of the page it happened on; if `t` has failed when it ends, a screenshot of the
 * page is saved and its path, with the problems, printed.
 */
export async function testPage(t: Test, context: BrowserContext, label: string): Promise<{ page: Page; problems: string[] }> {
  const page = await context.newPage();
  const problems: string[] = [];
  // Each prefixed with the page's address, so a test can pick its own pages' out of a provider's.
  page.on('console', (message) => { if (message.type() === 'error') problems.push(`${page.url()} console: ${message.text()}`); });
  page.on('pageerror', (error) => problems.push(`${page.url()} page error: ${error.message}`));
  t.teardown(async () => {
    if (!t.passing()) {
      mkdirSync(SCREENSHOT_DIR, { recursive: true });
      const path = join(SCREENSHOT_DIR, `${label.replace(/[^A-Za-z0-9_-]+/g, '-')}-${Date.now()}.png`);
      const saved = await page.screenshot({ path, fullPage: true }).then(() => true, () => false);
      process.stderr.write(`${saved ? `screenshot of the failed test "${label}": ${path}` : `no screenshot of "${label}" could be taken`} (page ${page.url()})\n`);
      if (problems.length > 0) process.stderr.write(`its page reported:\n  ${problems.join('\n  ')}\n`);
    }
    await page.close().catch(() => {});
  });
  return { page, problems };
}
