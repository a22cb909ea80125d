// A Postgres server of the bench's own (initdb in a temporary folder, a spare port), for figures that
// are server-wide in Postgres: the WAL written and the server's CPU. On the shared server other
// work's writes would be counted too. Debian's postgresql package provides the binaries
// (/usr/lib/postgresql/<version>/bin; POSTGRES_BIN_DIR names another folder). Postgres refuses to run
// as root, so as root the server runs as the `postgres` user (setpriv, which execs: the pid started is
// the server's). Settings are initdb's defaults (fsync and synchronous_commit on, wal_level replica).
import { execFileSync, spawn } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import postgres from 'postgres';
import { Child, freePort, waitUntil } from './child.js';
import { onCleanup, trackChild } from './cleanup.js';

const DEBIAN_VERSIONS = '/usr/lib/postgresql';

function binDir(): string {
  if (process.env.POSTGRES_BIN_DIR) return process.env.POSTGRES_BIN_DIR;
  const versions = existsSync(DEBIAN_VERSIONS) ? readdirSync(DEBIAN_VERSIONS).filter((v) => /^\d+$/.test(v)).sort((a, b) => Number(b) - Number(a)) : [];
  const found = versions.map((v) => join(DEBIAN_VERSIONS, v, 'bin')).find((dir) => existsSync(join(dir, 'initdb')));
  if (!found) throw new Error(`no initdb under ${DEBIAN_VERSIONS}/<version>/bin; POSTGRES_BIN_DIR names the folder of initdb and postgres`);
  return found;
}

/** The command line that runs `argv` as the postgres user when this process is root. */
function asServerUser(argv: string[]): string[] {
  if (process.getuid?.() !== 0) return argv;
  const uid = Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).trim());
  const gid = Number(execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8' }).trim());
  return ['setpriv', `--reuid=${uid}`, `--regid=${gid}`, '--clear-groups', '--', ...argv];
}

export interface PostgresServer {
  readonly child: Child;
  /** postgres://postgres@127.0.0.1:PORT (no database: append one). */
  readonly url: string;
}

export async function startPostgresServer(): Promise<PostgresServer> {
  const bin = binDir();
  const dir = mkdtempSync(join(tmpdir(), 'bench-postgres-'));
  if (process.getuid?.() === 0) chownSync(dir, Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).trim()), Number(execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8' }).trim()));
  onCleanup(() => rmSync(dir, { recursive: true, force: true }));
  const data = join(dir, 'data');
  const [initdb, ...initArgs] = asServerUser([join(bin, 'initdb'), '-D', data, '-U', 'postgres', '--auth=trust', '-E', 'UTF8', '--no-sync']);
  execFileSync(initdb!, initArgs, { stdio: 'ignore' });
  const port = await freePort();
  const [server, ...serverArgs] = asServerUser([join(bin, 'postgres'), '-D', data, '-p', String(port), '-k', dir, '-c', 'listen_addresses=127.0.0.1']);
  const child = new Child('postgres', spawn(server!, serverArgs, { stdio: ['ignore', 'pipe', 'pipe'] }));
  trackChild(child.process);
  // SIGINT is Postgres's fast shutdown: it ends the sessions still open.
  onCleanup(async () => {
    if (child.exited) return;
    child.process.kill('SIGINT');
    await child.stop();
  });
  const url = `postgres://postgres@127.0.0.1:${port}`;
  await waitUntil(child, 'accepting connections', async () => {
    const sql = postgres(`${url}/postgres`, { max: 1, connect_timeout: 2, onnotice: () => {} });
    try {
      await sql`select 1`;
      return true;
    } finally {
      await sql.end();
    }
  });
  return { child, url };
}
