// Builds the console into dist/console: index.html plus content-hashed assets under assets/.
// The chart library is its own file, loaded only by the pages that draw charts.
import * as esbuild from 'esbuild';
import { createRequire } from 'node:module';
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { brotliCompressSync, constants as zlib, gzipSync } from 'node:zlib';
import { basename, dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const HERE = dirname(fileURLToPath(import.meta.url));
const OUT = resolve(HERE, '..', 'dist', 'console');
const ASSETS = join(OUT, 'assets');
const PUBLIC_ASSETS = '/console/assets';
const require = createRequire(import.meta.url);

rmSync(OUT, { recursive: true, force: true });
mkdirSync(ASSETS, { recursive: true });

const common = { bundle: true, format: 'esm', minify: true, target: 'es2022', outdir: ASSETS, metafile: true, logLevel: 'warning', legalComments: 'none' };

/** The names esbuild wrote, by extension, relative to assets/. */
function outputs(result) {
  return Object.keys(result.metafile.outputs).map((file) => basename(file));
}

const chartBuild = await esbuild.build({ ...common, entryPoints: { uplot: require.resolve('uplot/dist/uPlot.esm.js') }, entryNames: '[name]-[hash]' });
const chartFile = outputs(chartBuild).find((name) => name.endsWith('.js'));

// `import('uplot')` in the app becomes an import of the hashed file built above.
const chartLibrary = {
  name: 'chart-library',
  setup(build) {
    build.onResolve({ filter: /^uplot$/ }, () => ({ path: `${PUBLIC_ASSETS}/${chartFile}`, external: true }));
  },
};

const appBuild = await esbuild.build({
  ...common,
  entryPoints: { app: join(HERE, 'src', 'main.tsx') },
  entryNames: '[name]-[hash]',
  assetNames: '[name]-[hash]',
  jsx: 'automatic',
  jsxImportSource: 'preact',
  plugins: [chartLibrary],
});
const appFiles = outputs(appBuild);
const appJs = appFiles.find((name) => name.endsWith('.js'));
const appCss = appFiles.find((name) => name.endsWith('.css'));
if (!appJs || !appCss || !chartFile) throw new Error(`console build: missing outputs (${[...appFiles, chartFile].join(', ')})`);

const html = readFileSync(join(HERE, 'index.html'), 'utf8')
  .replace('{{css}}', `${PUBLIC_ASSETS}/${appCss}`)
  .replace('{{js}}', `${PUBLIC_ASSETS}/${appJs}`);
writeFileSync(join(OUT, 'index.html'), html);

// Each text file's gzip and Brotli forms beside it (`.gz`, `.br`), made once here at the highest
// levels, so the gateway serves them compressed without compressing at start or per request.
for (const folder of [OUT, ASSETS]) {
  for (const name of readdirSync(folder)) {
    if (!/\.(html|js|css|svg|json)$/.test(name)) continue;
    const body = readFileSync(join(folder, name));
    const gzip = gzipSync(body, { level: 9 });
    const br = brotliCompressSync(body, { params: { [zlib.BROTLI_PARAM_QUALITY]: 11, [zlib.BROTLI_PARAM_SIZE_HINT]: body.length } });
    if (gzip.length < body.length) writeFileSync(join(folder, `${name}.gz`), gzip);
    if (br.length < body.length) writeFileSync(join(folder, `${name}.br`), br);
  }
}
console.log(`console: dist/console/index.html, assets ${[appJs, appCss, chartFile].join(', ')}`);
