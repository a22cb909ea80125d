import { createHmac, timingSafeEqual } from 'node:crypto';

/**
 * The address a vendor calls back when a task's status changes (Vidu and Ark take one). Such a call
 * is only a hint to poll now: the gateway asks the vendor itself before acting, so the body is never
 * trusted. The token (an HMAC of the task id under KEY_SECRET) keeps strangers from waking tasks.
 */
export const VENDOR_HINT_PATH = '/hooks/vendor-task/';

const tokenOf = (keySecret: string, taskId: string) => createHmac('sha256', `vendor-hint:${keySecret}`).update(taskId).digest('base64url');

export function vendorHintUrl(publicUrl: string, keySecret: string, taskId: string): string {
  return `${publicUrl}${VENDOR_HINT_PATH}${taskId}?token=${tokenOf(keySecret, taskId)}`;
}

export function vendorHintValid(keySecret: string, taskId: string, token: string): boolean {
  const expected = Buffer.from(tokenOf(keySecret, taskId));
  const given = Buffer.from(token);
  return given.length === expected.length && timingSafeEqual(given, expected);
}
