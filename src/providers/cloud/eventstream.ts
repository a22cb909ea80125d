import { crc32 } from 'node:zlib';

/**
 * The AWS event-stream framing (`application/vnd.amazon.eventstream`), as Bedrock streams with it:
 * each message is a 12-byte prelude (total length, headers length, CRC32 of those 8 bytes, all
 * big-endian), the headers, the payload, and a CRC32 of everything before it. Header values are typed;
 * Bedrock's are strings (type 7). Both CRCs are verified: a corrupt frame is an error, never guessed at.
 */
export interface EventStreamMessage {
  readonly headers: Readonly<Record<string, string | number | boolean | Buffer>>;
  readonly payload: Buffer;
}

const PRELUDE = 12;
const TRAILER = 4;
/** AWS caps a message at 16 MB. */
const MAX_MESSAGE = 16 * 1024 * 1024;

export class EventStreamError extends Error {
  override name = 'EventStreamError';
}

/** Decodes messages as their bytes arrive (a message may split anywhere across chunks). */
export class EventStreamDecoder {
  /** An incomplete message's bytes, as they came: joined once the message is whole (linear, not a copy per chunk). */
  private readonly pending: Buffer[] = [];
  private pendingBytes = 0;
  /** The incomplete message's length, once its prelude is in (else 0). */
  private awaited = 0;

  /** The messages completed by `chunk`; throws EventStreamError on a corrupt frame. */
  push(chunk: Buffer): EventStreamMessage[] {
    if (this.awaited > 0 && this.pendingBytes + chunk.length < this.awaited) {
      this.pending.push(chunk);
      this.pendingBytes += chunk.length;
      return [];
    }
    let data = chunk;
    if (this.pendingBytes > 0) {
      this.pending.push(chunk);
      data = Buffer.concat(this.pending, this.pendingBytes + chunk.length);
    }
    const messages: EventStreamMessage[] = [];
    this.awaited = 0;
    while (data.length >= PRELUDE) {
      const total = data.readUInt32BE(0);
      const headersLength = data.readUInt32BE(4);
      if (crc32(data.subarray(0, 8)) !== data.readUInt32BE(8)) throw new EventStreamError('event stream prelude CRC mismatch');
      if (total < PRELUDE + TRAILER + headersLength || total > MAX_MESSAGE) throw new EventStreamError(`event stream message of impossible length ${total}`);
      if (data.length < total) {
        this.awaited = total;
        break;
      }
      if (crc32(data.subarray(0, total - TRAILER)) !== data.readUInt32BE(total - TRAILER)) throw new EventStreamError('event stream message CRC mismatch');
      messages.push({ headers: decodeHeaders(data.subarray(PRELUDE, PRELUDE + headersLength)), payload: Buffer.from(data.subarray(PRELUDE + headersLength, total - TRAILER)) });
      data = data.subarray(total);
    }
    this.pending.length = 0;
    this.pendingBytes = data.length;
    if (data.length > 0) this.pending.push(Buffer.from(data));
    return messages;
  }

  /** Bytes of an incomplete message still held (a stream that ends with some was cut). */
  get buffered(): number {
    return this.pendingBytes;
  }
}

function decodeHeaders(bytes: Buffer): Record<string, string | number | boolean | Buffer> {
  const headers: Record<string, string | number | boolean | Buffer> = {};
  let at = 0;
  const need = (n: number) => {
    if (at + n > bytes.length) throw new EventStreamError('event stream header runs past its block');
  };
  while (at < bytes.length) {
    need(1);
    const nameLength = bytes[at]!;
    need(1 + nameLength + 1);
    const name = bytes.toString('utf8', at + 1, at + 1 + nameLength);
    at += 1 + nameLength;
    const type = bytes[at++]!;
    switch (type) {
      case 0: headers[name] = true; break;
      case 1: headers[name] = false; break;
      case 2: need(1); headers[name] = bytes.readInt8(at); at += 1; break;
      case 3: need(2); headers[name] = bytes.readInt16BE(at); at += 2; break;
      case 4: need(4); headers[name] = bytes.readInt32BE(at); at += 4; break;
      case 5: need(8); headers[name] = Number(bytes.readBigInt64BE(at)); at += 8; break;
      case 6: case 7: {
        need(2);
        const length = bytes.readUInt16BE(at);
        need(2 + length);
        headers[name] = type === 7 ? bytes.toString('utf8', at + 2, at + 2 + length) : Buffer.from(bytes.subarray(at + 2, at + 2 + length));
        at += 2 + length;
        break;
      }
      case 8: need(8); headers[name] = Number(bytes.readBigInt64BE(at)); at += 8; break;
      case 9: need(16); headers[name] = bytes.subarray(at, at + 16).toString('hex'); at += 16; break;
      default: throw new EventStreamError(`event stream header ${name} has unknown type ${type}`);
    }
  }
  return headers;
}

/** One message with string headers (what Bedrock sends); the mock vendor and tests use it. */
export function encodeEventStreamMessage(headers: Readonly<Record<string, string>>, payload: Buffer): Buffer {
  const headerParts: Buffer[] = [];
  for (const [name, value] of Object.entries(headers)) {
    const nameBytes = Buffer.from(name, 'utf8');
    const valueBytes = Buffer.from(value, 'utf8');
    const head = Buffer.alloc(1 + nameBytes.length + 1 + 2);
    head[0] = nameBytes.length;
    nameBytes.copy(head, 1);
    head[1 + nameBytes.length] = 7;
    head.writeUInt16BE(valueBytes.length, 2 + nameBytes.length);
    headerParts.push(head, valueBytes);
  }
  const headerBytes = Buffer.concat(headerParts);
  const total = PRELUDE + headerBytes.length + payload.length + TRAILER;
  const message = Buffer.alloc(total);
  message.writeUInt32BE(total, 0);
  message.writeUInt32BE(headerBytes.length, 4);
  message.writeUInt32BE(crc32(message.subarray(0, 8)), 8);
  headerBytes.copy(message, PRELUDE);
  payload.copy(message, PRELUDE + headerBytes.length);
  message.writeUInt32BE(crc32(message.subarray(0, total - TRAILER)), total - TRAILER);
  return message;
}
