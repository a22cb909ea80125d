/**
 * The ledger id of a processor payment, derived from the processor's own id (a name-based UUID,
 * RFC 9562 version 5): every delivery or replay of the same payment names the same transaction, so
 * the insert (`on conflict do nothing`) lets exactly one of them credit.
 */
import { createHash } from 'node:crypto';

/** This gateway's namespace for payment ids (a fixed random UUID). */
const NAMESPACE = Buffer.from('6f1c2a7e4b9d4e0a9c3f5d8b2e7a1c64', 'hex');

export function paymentTransactionId(processor: string, paymentId: string): string {
  const hash = createHash('sha1').update(NAMESPACE).update(`${processor}:${paymentId}`).digest();
  hash[6] = (hash[6]! & 0x0f) | 0x50; // version 5
  hash[8] = (hash[8]! & 0x3f) | 0x80; // RFC variant
  const hex = hash.subarray(0, 16).toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}
