import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import type * as UwsTypes from '@trufflesuite/uws-js-unofficial';

export type { HttpRequest, HttpResponse, TemplatedApp, us_listen_socket } from '@trufflesuite/uws-js-unofficial';
export type Uws = typeof UwsTypes;

/**
 * Loads the native uWebSockets.js binary directly. The package's own entry point silently falls
 * back to a slow `ws`-based implementation when the binary does not load; we refuse to start instead.
 */
export function loadUws(): Uws {
  const require = createRequire(import.meta.url);
  const packageDir = dirname(require.resolve('@trufflesuite/uws-js-unofficial/package.json'));
  const binary = join(packageDir, 'binaries', `uws_${process.platform}_${process.arch}_${process.versions.modules}.node`);
  try {
    return require(binary) as Uws;
  } catch (error) {
    throw new Error(`uWebSockets.js native binary did not load (${binary}): ${(error as Error).message}. ` +
      'The gateway does not run on the slow fallback; use Node 20 on linux-x64/arm64 with glibc >= 2.36.');
  }
}
