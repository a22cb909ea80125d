// The console as `npm run build` leaves it in dist/console: an index.html that loads only hashed
// assets under /console/assets/ and holds nothing inline (the console's content security policy
// allows no inline script or style), and a bundle within its size budget, 150 KB gzipped without the
// chart library. Read from the built files, so it runs after the build like every other test.
import t from 'tap';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { brotliDecompressSync, gunzipSync, gzipSync } from 'node:zlib';

const CONSOLE = fileURLToPath(new URL('../console/', import.meta.url)); // dist/test/ -> dist/console/
const ASSETS = join(CONSOLE, 'assets');
const BUDGET_BYTES = 150 * 1024;
/** `<name>-<hash>.<ext>` as the build names its outputs (esbuild's content hash). */
const HASHED = /^[a-z][a-z0-9_-]*-[A-Z0-9]{8}\.(js|css)$/;
/** The chart library's file: outside the budget, loaded only by the pages that draw charts. */
const CHART_LIBRARY = /^uplot-/;
/** The gzip and Brotli forms the build writes beside each file, served as its encodings. */
const COMPRESSED_FORM = /\.(gz|br)$/;
/** The bundle's own files, without their compressed forms. */
const assetNames = () => readdirSync(ASSETS).filter((name) => !COMPRESSED_FORM.test(name));

const built = existsSync(join(CONSOLE, 'index.html'));

t.test('the build wrote the console', async (t) => {
  t.ok(built, `dist/console/index.html exists (run npm run build first)`);
  t.ok(existsSync(ASSETS) && readdirSync(ASSETS).length > 0, 'dist/console/assets holds the bundle');
});

t.test('every asset has a content-hashed name', { skip: !built && 'not built' }, async (t) => {
  const names = assetNames();
  for (const name of names) t.match(name, HASHED, `${name} is <name>-<hash>.<ext>`);
  t.ok(names.some((name) => name.startsWith('app-') && name.endsWith('.js')), 'an app-<hash>.js');
  t.ok(names.some((name) => name.startsWith('app-') && name.endsWith('.css')), 'an app-<hash>.css');
  t.ok(names.some((name) => CHART_LIBRARY.test(name)), 'the chart library in a file of its own');
});

t.test('each text file has its gzip and Brotli forms beside it, holding the same bytes', { skip: !built && 'not built' }, async (t) => {
  for (const [folder, name] of [[CONSOLE, 'index.html'], ...assetNames().map((each) => [ASSETS, each])] as const) {
    const body = readFileSync(join(folder, name));
    t.same(gunzipSync(readFileSync(join(folder, `${name}.gz`))), body, `${name}.gz`);
    t.same(brotliDecompressSync(readFileSync(join(folder, `${name}.br`))), body, `${name}.br`);
  }
});

t.test('index.html loads only hashed assets from /console/assets/ and holds nothing inline', { skip: !built && 'not built' }, async (t) => {
  const html = readFileSync(join(CONSOLE, 'index.html'), 'utf8');
  const references = [...html.matchAll(/\s(?:src|href)="([^"]*)"/g)].map((match) => match[1]!);
  t.ok(references.length >= 2, 'it references the script and the stylesheet');
  for (const reference of references) {
    t.match(reference, /^\/console\/assets\//, `${reference} is under /console/assets/`);
    const name = reference.slice('/console/assets/'.length);
    t.match(name, HASHED, `${name} is hashed`);
    t.ok(existsSync(join(ASSETS, name)), `${name} exists`);
  }
  for (const script of html.matchAll(/<script\b([^>]*)>([\s\S]*?)<\/script>/gi)) {
    t.match(script[1], /\ssrc="/, 'every script is a file');
    t.equal(script[2]!.trim(), '', 'no script has an inline body');
  }
  t.notMatch(html, /<style\b/i, 'no <style> element');
  t.notMatch(html, /\sstyle\s*=/i, 'no style attribute');
  t.notMatch(html, /\son[a-z]+\s*=/i, 'no inline event handler');
  t.notMatch(html, /javascript:/i, 'no javascript: URL');
});

t.test('the bundle fits its budget: 150 KB gzipped without the chart library', { skip: !built && 'not built' }, async (t) => {
  const counted = assetNames().filter((name) => !CHART_LIBRARY.test(name));
  const gzipped = counted.reduce((sum, name) => sum + gzipSync(readFileSync(join(ASSETS, name)), { level: 9 }).length, 0);
  t.ok(gzipped > 0, 'it measured something');
  t.ok(gzipped < BUDGET_BYTES, `${counted.join(', ')}: ${gzipped} bytes gzipped, under ${BUDGET_BYTES}`);
});

t.test('the app keeps no session in Web Storage', { skip: !built && 'not built' }, async (t) => {
  for (const name of assetNames().filter((each) => each.endsWith('.js') && !CHART_LIBRARY.test(each))) {
    const code = readFileSync(join(ASSETS, name), 'utf8');
    t.notMatch(code, /localStorage|sessionStorage/, `${name} never touches localStorage or sessionStorage`);
  }
});
