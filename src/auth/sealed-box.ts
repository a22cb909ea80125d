import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';

/** AES-256-GCM for values that must be shown again (a key's full text); stored as iv(12) | tag(16) | ciphertext. */
export class SealedBox {
  private readonly key: Buffer;
  constructor(secret: string) {
    this.key = createHash('sha256').update(`sealed-box:${secret}`).digest();
  }
  seal(plaintext: string): Buffer {
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.key, iv);
    const body = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
    return Buffer.concat([iv, cipher.getAuthTag(), body]);
  }
  open(sealed: Uint8Array): string {
    const buf = Buffer.from(sealed);
    const decipher = createDecipheriv('aes-256-gcm', this.key, buf.subarray(0, 12));
    decipher.setAuthTag(buf.subarray(12, 28));
    return Buffer.concat([decipher.update(buf.subarray(28)), decipher.final()]).toString('utf8');
  }
}
