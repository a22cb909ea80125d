// Fixes to installed dependencies whose maintainers have not released them yet. `npm install` and
// `npm ci` run this (package.json's postinstall); deploy/Dockerfile, which installs with
// --ignore-scripts, runs it itself. It is idempotent, and it fails the install when a patched file no
// longer holds the text it expects (the dependency changed: look again whether the fix is still needed).
import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');

const PATCHES = [
  {
    // porsager/postgres#1208 (also #1066, #1154; unreleased as of 3.4.9): a connection whose socket
    // closed while no query was in flight (a reset between a transaction's statements, say while the
    // ledger writer awaits Redis inside its transaction) still takes the next statement (the COMMIT).
    // Its write is deferred to an immediate that then calls `socket.write` on null, an uncaught
    // TypeError that ends the whole process. Patched: the statement fails with CONNECTION_CLOSED, as
    // one in flight at the close does, and the caller's transaction rolls back.
    name: 'postgres: a write after the socket closed fails its query instead of the process',
    files: ['node_modules/postgres/src/connection.js', 'node_modules/postgres/cjs/src/connection.js'],
    find: '  function nextWrite(fn) {\n    const x = socket.write(chunk, fn)\n',
    replace: [
      '  function nextWrite(fn) {',
      '    if (socket === null) { // model-gateway: scripts/patch-dependencies.mjs',
      '      nextWriteTimer !== null && clearImmediate(nextWriteTimer)',
      '      chunk = nextWriteTimer = null',
      "      const closed = Errors.connection('CONNECTION_CLOSED', options)",
      '      error(closed)',
      '      fn && fn(closed)',
      '      return false',
      '    }',
      '    const x = socket.write(chunk, fn)',
      '',
    ].join('\n'),
  },
];

let failed = false;
for (const patch of PATCHES) {
  for (const file of patch.files) {
    const path = join(root, file);
    let text;
    try {
      text = readFileSync(path, 'utf8');
    } catch {
      console.error(`patch-dependencies: ${file} is missing (${patch.name})`);
      failed = true;
      continue;
    }
    if (text.includes(patch.replace)) continue;
    if (!text.includes(patch.find)) {
      console.error(`patch-dependencies: ${file} no longer holds the text this patch replaces (${patch.name})`);
      failed = true;
      continue;
    }
    writeFileSync(path, text.replace(patch.find, patch.replace));
    console.log(`patch-dependencies: ${file}: ${patch.name}`);
  }
}
if (failed) process.exit(1);
