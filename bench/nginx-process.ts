// nginx as a plain reverse proxy in front of the mock: the external floor `ab.js --floor` measures
// beside the bare proxy. Debian's nginx-light, installed here when it is missing (apt-get, as root),
// run in the foreground from a folder of its own with one worker per core, no buffering of answers
// (SSE passes through as it comes) and kept-alive connections to the upstream, as a careful
// operator would run it in front of an SSE service.
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { onCleanup, trackChild } from './cleanup.js';
import { Child, freePort, waitUntil } from './child.js';

const NGINX = process.env.NGINX_BIN ?? '/usr/sbin/nginx';

/** The nginx binary, installed from Debian's packages if it is not there (the machine reaches them). */
function nginxBinary(note: (message: string) => void): string {
  if (existsSync(NGINX)) return NGINX;
  note(`${NGINX} not found: installing Debian's nginx-light`);
  try {
    execFileSync('apt-get', ['install', '-y', '--no-install-recommends', 'nginx-light'], { stdio: 'ignore' });
  } catch {
    execFileSync('apt-get', ['update'], { stdio: 'ignore' });
    execFileSync('apt-get', ['install', '-y', '--no-install-recommends', 'nginx-light'], { stdio: 'ignore' });
  }
  if (!existsSync(NGINX)) throw new Error(`nginx is not installed (apt-get install nginx-light) and could not be installed here; NGINX_BIN names another binary`);
  return NGINX;
}

function config(dir: string, port: number, upstreamPort: number, workers: number): string {
  return `worker_processes ${workers};
daemon off;
pid ${dir}/nginx.pid;
error_log ${dir}/error.log warn;
events { worker_connections 4096; }
http {
  access_log off;
  client_body_temp_path ${dir}/body;
  proxy_temp_path ${dir}/proxy;
  keepalive_requests 1000000;
  upstream mock { server 127.0.0.1:${upstreamPort}; keepalive 256; }
  server {
    listen 127.0.0.1:${port} reuseport backlog=4096;
    location / {
      proxy_pass http://mock;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_buffering off;
      proxy_request_buffering off;
    }
  }
}
`;
}

const listening = (port: number) => new Promise<boolean>((resolve) => {
  const socket = connect(port, '127.0.0.1');
  socket.once('connect', () => { socket.destroy(); resolve(true); });
  socket.once('error', () => resolve(false));
});

/** nginx proxying to `upstreamUrl` (http://127.0.0.1:PORT) with `workers` worker processes. */
export async function startNginxProcess(upstreamUrl: string, workers: number, note: (message: string) => void): Promise<{ child: Child; url: string }> {
  const binary = nginxBinary(note);
  const dir = mkdtempSync(join(tmpdir(), 'bench-nginx-'));
  const port = await freePort();
  writeFileSync(join(dir, 'nginx.conf'), config(dir, port, Number(new URL(upstreamUrl).port), workers));
  const child = new Child('nginx', spawn(binary, ['-p', dir, '-c', join(dir, 'nginx.conf')], { stdio: ['ignore', 'pipe', 'pipe'] }));
  trackChild(child.process);
  onCleanup(async () => {
    await child.stop();
    rmSync(dir, { recursive: true, force: true });
  });
  await waitUntil(child, 'listening', () => listening(port));
  return { child, url: `http://127.0.0.1:${port}` };
}
