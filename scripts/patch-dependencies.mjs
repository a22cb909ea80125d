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
  {
    // The same teardown (closed(), terminate()) cancels a deferred write but keeps its bytes and its
    // timer handle. By the code (not reproduced here: in the tests the close never found a write
    // waiting), the next socket of the connection would receive the dead socket's unsent statements
    // before its own, and with the stale handle no write would be deferred again. Both are dropped with
    // the socket: the queries they belonged to fail.
    name: 'postgres: a closed socket takes its unsent bytes with it',
    files: ['node_modules/postgres/src/connection.js', 'node_modules/postgres/cjs/src/connection.js'],
    find: '    incomings = null\n    clearImmediate(nextWriteTimer)\n',
    replace: '    incomings = null\n    clearImmediate(nextWriteTimer)\n    chunk = nextWriteTimer = null // model-gateway: scripts/patch-dependencies.mjs\n',
  },
  {
    name: 'postgres: a terminated connection takes its unsent bytes with it',
    files: ['node_modules/postgres/src/connection.js', 'node_modules/postgres/cjs/src/connection.js'],
    find: '    clearImmediate(nextWriteTimer)\n    if (socket) {\n',
    replace: '    clearImmediate(nextWriteTimer)\n    chunk = nextWriteTimer = null // model-gateway: scripts/patch-dependencies.mjs\n    if (socket) {\n',
  },
  {
    // porsager/postgres#1216 and #1186 (unreleased as of 3.4.9): when a transaction's connection closes,
    // begin() rejects at once but its callback runs on. Once the pool has reconnected that connection
    // (for anyone), the callback's later statements and its automatic COMMIT or ROLLBACK ran there: in
    // autocommit, or inside another caller's transaction, which the stray COMMIT then committed. And
    // statements queued in the transaction never settled. Now the close is kept on the transaction:
    // its queued statements and every later one, COMMIT and ROLLBACK included, fail with it unsent.
    name: 'postgres: a transaction whose connection closed sends nothing more',
    files: ['node_modules/postgres/src/index.js', 'node_modules/postgres/cjs/src/index.js'],
    find: [
      '      , prepare = null',
      '',
      '    try {',
      "      await sql.unsafe('begin ' + options.replace(/[^a-z ]/ig, ''), [], { onexecute }).execute()",
      '      return await Promise.race([',
      '        scope(connection, fn),',
      '        new Promise((_, reject) => connection.onclose = reject)',
      '',
    ].join('\n'),
    replace: [
      '      , prepare = null',
      '      , closedBy = null // model-gateway: scripts/patch-dependencies.mjs',
      '',
      '    try {',
      "      await sql.unsafe('begin ' + options.replace(/[^a-z ]/ig, ''), [], { onexecute }).execute()",
      '      return await Promise.race([',
      '        scope(connection, fn),',
      '        new Promise((_, reject) => connection.onclose = (error) => {',
      "          closedBy = error || Errors.connection('CONNECTION_CLOSED', options)",
      '          while (queries.length) queries.shift().reject(closedBy)',
      '          reject(closedBy)',
      '        })',
      '',
    ].join('\n'),
  },
  {
    name: 'postgres: a transaction whose connection closed sends nothing more (its statements)',
    files: ['node_modules/postgres/src/index.js', 'node_modules/postgres/cjs/src/index.js'],
    find: '        q.catch(e => uncaughtError || (uncaughtError = e))\n        c.queue === full\n',
    replace: '        q.catch(e => uncaughtError || (uncaughtError = e))\n        if (closedBy) return q.reject(closedBy) // model-gateway: scripts/patch-dependencies.mjs\n        c.queue === full\n',
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
