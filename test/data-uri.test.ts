// data: URI decoding in the worker pool: a round trip with the hash, the declared type, strict base64
// (whitespace tolerated, garbage and bad padding refused), and the size refusal made before the worker.
import t from 'tap';
import { createHash } from 'node:crypto';
import { closeDataUriDecoder, DataUriError, decodeDataUri } from '../src/media/data-uri.js';

const PNG = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==', 'base64');
const PNG_URI = `data:image/png;base64,${PNG.toString('base64')}`;
const MAX = 64 * 1024;

t.teardown(closeDataUriDecoder);

async function failure(uri: string, maxBytes = MAX): Promise<DataUriError> {
  try {
    await decodeDataUri(uri, maxBytes);
  } catch (error) {
    if (error instanceof DataUriError) return error;
    throw error;
  }
  throw new Error(`${uri.slice(0, 60)} was decoded`);
}

t.test('a PNG round trip: the bytes, the declared type, the hash node:crypto gives', async (t) => {
  const decoded = await decodeDataUri(PNG_URI, MAX);
  t.ok(Buffer.isBuffer(decoded.bytes));
  t.same(decoded.bytes, PNG);
  t.equal(decoded.mediaType, 'image/png');
  t.equal(decoded.sha256, createHash('sha256').update(PNG).digest('hex'));
});

t.test('the declared type is returned lowercased, without parameters; the prefix is case-insensitive', async (t) => {
  const decoded = await decodeDataUri(`DATA:Image/JPEG;name=photo.jpg;BASE64,${PNG.toString('base64')}`, MAX);
  t.equal(decoded.mediaType, 'image/jpeg');
  t.same(decoded.bytes, PNG);
});

t.test('every padding length, and bytes of every value', async (t) => {
  for (const length of [1, 2, 3, 4, 255, 256, 257]) {
    const bytes = Buffer.from(Array.from({ length }, (_, i) => (i * 97) % 256));
    const decoded = await decodeDataUri(`data:application/octet-stream;base64,${bytes.toString('base64')}`, MAX);
    t.same(decoded.bytes, bytes, `${length} bytes`);
    t.equal(decoded.sha256, createHash('sha256').update(bytes).digest('hex'));
  }
});

t.test('whitespace and line breaks in the payload are tolerated', async (t) => {
  const wrapped = PNG.toString('base64').replace(/(.{16})/g, '$1\r\n').replace(/(.{7})/, '$1 \t');
  const decoded = await decodeDataUri(`data:image/png;base64,\n${wrapped}\n`, MAX);
  t.same(decoded.bytes, PNG);
});

t.test('malformed URIs are refused', async (t) => {
  const payload = PNG.toString('base64');
  const cases: [label: string, uri: string][] = [
    ['not a data: URI', 'https://example.com/image.png'],
    ['no comma', 'data:image/png;base64'],
    ['no base64 marker', `data:image/png,${payload}`],
    ['percent-encoded data', 'data:text/plain,hello%20world'],
    ['no media type', `data:;base64,${payload}`],
    ['a type without subtype', `data:image;base64,${payload}`],
    ['a parameter without value', `data:image/png;charset;base64,${payload}`],
    ['garbage characters', `data:image/png;base64,${payload.slice(0, 8)}*!${payload.slice(10)}`],
    ['base64url alphabet', 'data:image/png;base64,ab-_'],
    ['a length not a multiple of 4', 'data:image/png;base64,QUJDR'],
    ['padding in the middle', 'data:image/png;base64,QQ==QUJD'],
    ['three padding characters', 'data:image/png;base64,Q==='],
    ['padding only', 'data:image/png;base64,===='],
    ['an empty payload', 'data:image/png;base64,'],
    ['a payload of whitespace', 'data:image/png;base64, \r\n '],
    ['a NUL byte', 'data:image/png;base64,QUJD\0'],
  ];
  for (const [label, uri] of cases) {
    const error = await failure(uri);
    t.equal(error.reason, 'malformed', label);
  }
});

t.test('too large is decided on the calling thread, before the worker', async (t) => {
  // Garbage a worker would call malformed: only the size check can have answered.
  const error = await failure(`data:image/png;base64,${'*'.repeat(4000)}`, 2999);
  t.equal(error.reason, 'too_large');
  const exact = Buffer.alloc(3000, 7);
  t.equal((await decodeDataUri(`data:image/png;base64,${exact.toString('base64')}`, 3000)).bytes.length, 3000, 'exactly the limit is fine');
  t.equal((await failure(`data:image/png;base64,${exact.toString('base64')}`, 2999)).reason, 'too_large');
});

t.test('a large payload round trips', async (t) => {
  const bytes = Buffer.alloc(4 * 1024 * 1024, 0xab);
  const decoded = await decodeDataUri(`data:video/mp4;base64,${bytes.toString('base64')}`, bytes.length);
  t.equal(decoded.bytes.length, bytes.length);
  t.equal(decoded.sha256, createHash('sha256').update(bytes).digest('hex'));
});
