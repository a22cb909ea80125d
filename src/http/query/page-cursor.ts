import { badRequest } from '../errors.js';
import { UUID } from '../../store/ids.js';
import type { PageCursor } from '../../store/page-cursor.js';

/** Opaque to clients: base64url of `<created_at in µs>.<id>` of the last row of a page (src/store/page-cursor.ts). */
export const encodePageCursor = (row: { readonly created_us: string; readonly id: string }) => Buffer.from(`${row.created_us}.${row.id}`).toString('base64url');

/** A `cursor` query parameter back to its position; anything an earlier page did not give is a 400. */
export function decodePageCursor(text: string): PageCursor {
  const [us, id, extra] = Buffer.from(text, 'base64url').toString('utf8').split('.');
  if (extra !== undefined || us === undefined || id === undefined || !/^\d{1,17}$/.test(us) || !UUID.test(id) || !/^[A-Za-z0-9_-]+$/.test(text)) {
    throw badRequest(`Invalid value for 'cursor': pass back a next_cursor exactly as an earlier page gave it.`, 'cursor');
  }
  return { createdUs: BigInt(us), id };
}
