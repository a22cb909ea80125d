import { isIP } from 'node:net';
import { UrlGuardError, vetAddresses } from '../media/url-guard.js';
import { withinTime } from '../within-time.js';
import { isLoopbackAddress } from '../media/public-address.js';
import type { CloudForm, FormProblem } from './cloud/forms.js';
import { AZURE_OPENAI_HOSTS, BEDROCK_HOSTS, GOOGLE_TOKEN_URIS, VERTEX_HOSTS, type KnownHosts } from './cloud/known-hosts.js';

/**
 * An address a user chose for a BYOK row, with the field that holds it: the gateway connects there
 * on the user's behalf, so it must be on the public internet (and, for a cloud form, on the cloud's
 * own hosts).
 */
export interface ChosenAddress {
  /** As a 422 names it: `base_url`, `config_json.endpoint_url`, `config_json.service_account.token_uri`. */
  readonly field: string;
  readonly url: string;
  /** The hosts the field is held to; none for a plain `base_url` (any OpenAI-compatible proxy). */
  readonly known?: KnownHosts;
}

/** The addresses a row connects to that its user chose: none for a plain key on the platform's vendor URL. */
export function chosenAddresses(baseUrl: string | null | undefined, form: CloudForm | undefined): ChosenAddress[] {
  if (!form) return baseUrl ? [{ field: 'base_url', url: baseUrl }] : [];
  const endpoint = 'config_json.endpoint_url';
  switch (form.kind) {
    case 'azure': return [{ field: endpoint, url: form.endpointUrl, known: AZURE_OPENAI_HOSTS }];
    case 'bedrock': return [{ field: endpoint, url: form.endpointUrl, known: BEDROCK_HOSTS }];
    case 'vertex': return [
      { field: endpoint, url: form.endpointUrl, known: VERTEX_HOSTS },
      { field: 'config_json.service_account.token_uri', url: form.account.tokenUri, known: GOOGLE_TOKEN_URIS },
    ];
  }
}

/** `localhost` or a loopback literal: the only host off a cloud's list, and only when loopback is allowed (tests, the offline demo). */
function isLoopbackHost(url: URL): boolean {
  const host = url.hostname.replace(/^\[(.*)\]$/, '$1');
  return host === 'localhost' || (isIP(host) !== 0 && isLoopbackAddress(host));
}

/** Off the cloud's own hosts (a loopback host passes when loopback is allowed); decided without resolving anything. */
export function offKnownHosts(url: URL, known: KnownHosts, allowLoopback: boolean): boolean {
  return !known.matches(url) && !(allowLoopback && isLoopbackHost(url));
}

/**
 * What is wrong with an address, if anything: off its cloud's hosts, or (a host on no list) not
 * resolving to public addresses only. A cloud's own host is not resolved here: every connection to
 * it is vetted anyway, and the cloud, not the user, answers for its DNS.
 */
export async function addressProblem(address: ChosenAddress, allowLoopback: boolean): Promise<FormProblem | undefined> {
  let url: URL;
  try {
    url = new URL(address.url);
  } catch {
    return { field: address.field, message: 'must be an absolute URL' };
  }
  if (address.known) {
    if (address.known.matches(url)) return undefined;
    if (offKnownHosts(url, address.known, allowLoopback)) return { field: address.field, message: `must be ${address.known.description}` };
  }
  try {
    await withinTime(vetAddresses(url, allowLoopback), RESOLVE_TIMEOUT_MS, () => new UrlGuardError('timeout', `The host ${url.hostname} did not resolve in time.`));
    return undefined;
  } catch (error) {
    if (!(error instanceof UrlGuardError)) throw error;
    return { field: address.field, message: vetMessage(error, url.hostname) };
  }
}

/** A stalling resolver holds a create, or a read of the user's rows, this long at most. */
export const RESOLVE_TIMEOUT_MS = 5_000;


function vetMessage(error: UrlGuardError, host: string): string {
  switch (error.reason) {
    case 'address': return `the host ${host} is not a public address (the gateway connects only to the public internet)`;
    case 'dns': return `the host ${host} does not resolve`;
    case 'timeout': return `the host ${host} does not resolve within ${RESOLVE_TIMEOUT_MS} ms`;
    case 'scheme': return 'must be an https:// URL';
    default: return error.message.replace(/\.$/, '');
  }
}

/** The first problem of the addresses, in their order (vetted at once). */
export async function firstAddressProblem(addresses: readonly ChosenAddress[], allowLoopback: boolean): Promise<FormProblem | undefined> {
  const problems = await Promise.all(addresses.map((address) => addressProblem(address, allowLoopback)));
  return problems.find((problem) => problem !== undefined);
}
