// The routing pool of the bench gateway: one catalog model served by two keys of the mock vendor
// (docs/routing.md), so a scenario can make one key fail while the other serves. Every other model
// keeps its vendor's one target, so the other scenarios measure the path they always did.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { onCleanup } from './cleanup.js';

/** The pooled model: an OpenAI model the other scenarios do not use. */
export const POOLED_MODEL = 'openai/gpt-4.1';
/** The target whose key the routing scenario makes fail, and the one that always serves. */
export const FAULTY_TARGET = { name: 'bench-pool-a', key: 'bench-pool-a-key' } as const;
export const HEALTHY_TARGET = { name: 'bench-pool-b', key: 'bench-pool-b-key' } as const;

/**
 * Writes the routing file (removed at the end of the run) and returns its path. Both targets are of
 * one priority and weight, so each takes half of the first attempts; their base URL is the vendor's
 * (`OPENAI_BASE_URL`, the mock).
 */
export function writeRoutingFile(): string {
  const dir = mkdtempSync(join(tmpdir(), 'gateway-bench-routing-'));
  onCleanup(() => rmSync(dir, { recursive: true, force: true }));
  const file = join(dir, 'routing.yaml');
  writeFileSync(file, [
    'models:',
    `  ${POOLED_MODEL}:`,
    '    targets:',
    `      - { name: ${FAULTY_TARGET.name}, vendor: openai, api_key: ${FAULTY_TARGET.key} }`,
    `      - { name: ${HEALTHY_TARGET.name}, vendor: openai, api_key: ${HEALTHY_TARGET.key} }`,
    '',
  ].join('\n'));
  return file;
}
