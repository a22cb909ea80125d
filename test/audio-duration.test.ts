// audioInfo: WAV, MP3 and FLAC durations from the mock's generators and from hand-built files, and
// refusal (undefined, never an exception) for everything else, random bytes included.
import t from 'tap';
import { randomBytes } from 'node:crypto';
import { audioInfo } from '../src/media/audio-duration.js';
import { sniffMediaType } from '../src/media/sniff.js';
import { mockMp3, mockWav } from '../src/mock-vendor/audio-files.js';

const FRAME = 0.05;

/** A WAV of the given chunks after `RIFF…WAVE` (each [id, body]), sizes as given or the body's. */
function riff(chunks: [string, Buffer, number?][]): Buffer {
  const parts = chunks.map(([id, body, size]) => {
    const head = Buffer.alloc(8);
    head.write(id, 0, 'latin1');
    head.writeUInt32LE(size ?? body.length, 4);
    return Buffer.concat(body.length % 2 ? [head, body, Buffer.alloc(1)] : [head, body]);
  });
  const body = Buffer.concat([Buffer.from('WAVE'), ...parts]);
  const head = Buffer.alloc(8);
  head.write('RIFF', 0, 'latin1');
  head.writeUInt32LE(body.length, 4);
  return Buffer.concat([head, body]);
}

function fmt(rate: number, channels: number, bits: number): Buffer {
  const b = Buffer.alloc(16);
  b.writeUInt16LE(1, 0);
  b.writeUInt16LE(channels, 2);
  b.writeUInt32LE(rate, 4);
  b.writeUInt32LE((rate * channels * bits) / 8, 8);
  b.writeUInt16LE((channels * bits) / 8, 12);
  b.writeUInt16LE(bits, 14);
  return b;
}

/** `count` MPEG frames with this 4-byte header, each `length` bytes, payload zero (or `first` for frame 0). */
function frames(header: number[], length: number, count: number, first?: Buffer): Buffer {
  const out = Buffer.alloc(length * count);
  for (let i = 0; i < count; i++) out.set(header, i * length);
  if (first) first.copy(out, 4);
  return out;
}

// MPEG-1 Layer III, 128 kbps, 44100 Hz, stereo, no padding: 417 bytes, 1152 samples.
const V1_128_44 = [0xff, 0xfb, 0x90, 0x04];
// MPEG-2 Layer III, 64 kbps, 22050 Hz, mono: 72 * 64000 / 22050 = 208 bytes, 576 samples.
const V2_64_22_MONO = [0xff, 0xf3, 0x80, 0xc4];

t.test('mock WAVs: sniffed as audio/wav, length to the sample, tag changes the hash', async (t) => {
  for (const seconds of [0.5, 1, 2.345, 30, 61.2]) {
    const wav = mockWav(seconds, 'x');
    t.same(audioInfo(wav), { format: 'wav', seconds }, `${seconds} s`);
    t.equal(sniffMediaType(wav)?.contentType, 'audio/wav');
  }
  t.notSame(mockWav(1, 'a'), mockWav(1, 'b'));
  t.ok(mockWav(1, 'odd-length tag').includes(Buffer.from('odd-length tag')));
});

t.test('mock MP3s: sniffed as audio/mpeg, 36 ms frames, ID3 tag in front', async (t) => {
  for (const seconds of [0.5, 1, 2.345, 30, 600]) {
    const mp3 = mockMp3(seconds, 'y');
    const info = audioInfo(mp3);
    t.equal(info?.format, 'mp3');
    t.ok(Math.abs(info!.seconds - seconds) <= FRAME, `${seconds} s ≈ ${info?.seconds}`);
    t.equal(sniffMediaType(mp3)?.contentType, 'audio/mpeg');
    t.equal(mp3.subarray(0, 3).toString(), 'ID3');
  }
  t.equal(audioInfo(mockMp3(0.036 * 10, 'z'))?.seconds, 0.36, 'exactly 10 frames');
  t.notSame(mockMp3(1, 'a'), mockMp3(1, 'b'));
  t.equal(audioInfo(mockMp3(0, 'short'))?.seconds, 0.072, 'at least 2 frames, so it is still an MP3');
});

t.test('WAV: chunks in any order, odd padding, extra chunks, stereo 16-bit', async (t) => {
  const pcm = Buffer.alloc(44100 * 4); // 1 s of 16-bit stereo at 44.1 kHz
  t.same(audioInfo(riff([['fmt ', fmt(44100, 2, 16)], ['data', pcm]])), { format: 'wav', seconds: 1 });
  t.same(audioInfo(riff([['data', pcm], ['fmt ', fmt(44100, 2, 16)]])), { format: 'wav', seconds: 1 }, 'data before fmt');
  t.same(audioInfo(riff([['junk', Buffer.alloc(3)], ['fmt ', fmt(44100, 2, 16)], ['LIST', Buffer.from('INFOabc')], ['data', pcm]])), { format: 'wav', seconds: 1 }, 'odd-sized chunks are padded');
  t.equal(audioInfo(riff([['fmt ', fmt(8000, 1, 8)], ['data', Buffer.alloc(12_345)]]))?.seconds, 1.543, 'rounded to ms');
  t.equal(audioInfo(riff([['fmt ', fmt(8000, 1, 8)]])), undefined, 'no data chunk');
  t.equal(audioInfo(riff([['data', pcm]])), undefined, 'no fmt chunk');
});

t.test('WAV: truncated files and the streaming placeholder size count the bytes present', async (t) => {
  const whole = mockWav(2, 't');
  t.equal(audioInfo(whole.subarray(0, whole.length - 8000))?.seconds, 1, 'a truncated data chunk');
  const streaming = riff([['fmt ', fmt(8000, 1, 8)], ['data', Buffer.alloc(4000), 0xffffffff]]);
  t.equal(audioInfo(streaming)?.seconds, 0.5, 'data size 0xFFFFFFFF');
  const stereo = riff([['fmt ', fmt(8000, 2, 16)], ['data', Buffer.alloc(8001)]]);
  t.equal(audioInfo(stereo)?.seconds, 0.25, 'a partial last block does not count');
});

t.test('MP3: plain frames, MPEG-2, ID3v2 with footer, resync past garbage, ID3v1 trailer', async (t) => {
  const plain = frames(V1_128_44, 417, 100);
  t.equal(audioInfo(plain)?.seconds, Math.round((100 * 1152 / 44100) * 1000) / 1000);
  t.equal(sniffMediaType(plain)?.contentType, 'audio/mpeg');
  t.equal(audioInfo(frames(V2_64_22_MONO, 208, 50))?.seconds, Math.round((50 * 576 / 22050) * 1000) / 1000, 'MPEG-2: 576 samples a frame');

  const id3v24 = Buffer.concat([Buffer.from([0x49, 0x44, 0x33, 4, 0, 0x10, 0, 0, 0x01, 0x00]), Buffer.alloc(128), Buffer.from('3DI'), Buffer.alloc(7), plain]);
  t.equal(audioInfo(id3v24)?.seconds, audioInfo(plain)?.seconds, 'ID3v2.4 with a footer (syncsafe size 128)');

  const garbage = Buffer.concat([plain.subarray(0, 417 * 40), Buffer.from('garbage bytes in the middle of the stream'), plain.subarray(417 * 40)]);
  t.equal(audioInfo(garbage)?.seconds, audioInfo(plain)?.seconds, 'resynced past garbage');

  const id3v1 = Buffer.concat([plain, Buffer.from('TAG'), Buffer.alloc(125, 0x41)]);
  t.equal(audioInfo(id3v1)?.seconds, audioInfo(plain)?.seconds, 'stops at the ID3v1 trailer');

  const truncated = plain.subarray(0, 417 * 10 + 200);
  t.ok(Math.abs(audioInfo(truncated)!.seconds - 10 * 1152 / 44100) <= FRAME, 'a truncated last frame is dropped');

  t.equal(audioInfo(frames(V1_128_44, 417, 1)), undefined, 'one frame is not enough to call it MP3');
  t.equal(audioInfo(Buffer.concat([Buffer.from([0xff, 0xfb, 0x90, 0x04]), Buffer.alloc(500, 0x11)])), undefined, 'a header not followed by a frame');
});

t.test('MP3: a Xing/Info header gives the frame count; the Xing frame itself is not audio', async (t) => {
  // Stereo MPEG-1: the tag sits 32 bytes of side info after the header.
  const xing = Buffer.alloc(32 + 12);
  xing.write('Xing', 32, 'latin1');
  xing.writeUInt32BE(0x1, 36); // frames field present
  xing.writeUInt32BE(1000, 40);
  const vbr = frames(V1_128_44, 417, 20, xing); // only 19 audio frames present, the header says 1000
  t.equal(audioInfo(vbr)?.seconds, Math.round((1000 * 1152 / 44100) * 1000) / 1000, 'the frame count wins');

  const info = Buffer.alloc(32 + 8);
  info.write('Info', 32, 'latin1'); // no frames flag: walk, skipping the Info frame
  t.equal(audioInfo(frames(V1_128_44, 417, 20, info))?.seconds, Math.round((19 * 1152 / 44100) * 1000) / 1000);

  const monoV2 = Buffer.alloc(9 + 12); // MPEG-2 mono: 9 bytes of side info
  monoV2.write('Xing', 9, 'latin1');
  monoV2.writeUInt32BE(0xf, 13);
  monoV2.writeUInt32BE(500, 17);
  t.equal(audioInfo(frames(V2_64_22_MONO, 208, 3, monoV2))?.seconds, Math.round((500 * 576 / 22050) * 1000) / 1000);
});

t.test('FLAC: STREAMINFO total samples over the rate; unknown total is undefined', async (t) => {
  const flac = (rate: number, total: number) => {
    const info = Buffer.alloc(34);
    info.writeUInt16BE(4096, 0);
    info.writeUInt16BE(4096, 2);
    info[10] = (rate >> 12) & 0xff;
    info[11] = (rate >> 4) & 0xff;
    info[12] = ((rate & 0xf) << 4) | (1 << 1) | 0; // 2 channels, bps high bit 0
    info[13] = (15 << 4) | Math.floor(total / 2 ** 32); // bps 16, top 4 bits of the total
    info.writeUInt32BE(total % 2 ** 32, 14);
    return Buffer.concat([Buffer.from('fLaC'), Buffer.from([0x80, 0, 0, 34]), info]);
  };
  t.same(audioInfo(flac(44100, 44100 * 3)), { format: 'flac', seconds: 3 });
  t.same(audioInfo(flac(96000, 96000 * 3600 * 13)), { format: 'flac', seconds: 46800 }, 'a total above 2^32 samples');
  t.equal(audioInfo(flac(44100, 0)), undefined);
  t.equal(audioInfo(Buffer.from('fLaC')), undefined);
});

t.test('not audio: garbage, empty, PNG, other RIFF, bare ID3', async (t) => {
  const png = Buffer.from('89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c4890000000d4944415478da63f8ff1f000302010000ffff03000001', 'hex');
  for (const [name, bytes] of [
    ['empty', Buffer.alloc(0)],
    ['garbage', Buffer.from('this is not an audio file at all, just some text')],
    ['png', png],
    ['webp', Buffer.concat([Buffer.from('RIFF\x10\x00\x00\x00WEBPVP8 '), Buffer.alloc(8)])],
    ['html', Buffer.from('<!DOCTYPE html><html><body>502</body></html>')],
    ['bare ID3', Buffer.from([0x49, 0x44, 0x33, 3, 0, 0, 0, 0, 0, 0])],
    ['broken ID3 size', Buffer.from([0x49, 0x44, 0x33, 3, 0, 0, 0x80, 0, 0, 0, 0xff, 0xfb])],
    ['zeros', Buffer.alloc(4096)],
  ] as const) t.equal(audioInfo(bytes), undefined, name);
});

t.test('fuzz: random and mutated bytes never throw', async (t) => {
  const seeds = [mockWav(0.3, 'f'), mockMp3(0.3, 'f'), frames(V1_128_44, 417, 5), Buffer.from('fLaC\x00\x00\x00\x22'), Buffer.from('RIFF\xff\xff\xff\xffWAVEfmt ')];
  let answered = 0;
  for (let i = 0; i < 4000; i++) {
    let bytes: Buffer;
    if (i % 2 === 0) {
      bytes = randomBytes(Math.floor(Math.random() * 2048));
      // Give some random buffers a real magic so the deeper paths run on junk.
      const magic = [Buffer.from('RIFF\0\0\0\0WAVE'), Buffer.from('fLaC'), Buffer.from('ID3\x03\x00\x00\x00\x00\x00\x10'), Buffer.from([0xff, 0xfb]), Buffer.alloc(0)][i % 5]!;
      magic.copy(bytes, 0, 0, Math.min(magic.length, bytes.length));
    } else {
      const seed = seeds[i % seeds.length]!;
      bytes = Buffer.from(seed.subarray(0, Math.floor(Math.random() * (seed.length + 1))));
      for (let flips = Math.floor(Math.random() * 8); flips > 0 && bytes.length > 0; flips--) bytes[Math.floor(Math.random() * bytes.length)] = Math.floor(Math.random() * 256);
    }
    const info = audioInfo(bytes);
    if (info !== undefined) {
      answered++;
      if (!(Number.isFinite(info.seconds) && info.seconds >= 0)) t.fail(`bad seconds ${info.seconds} for ${bytes.toString('hex').slice(0, 64)}`);
    }
  }
  t.pass(`4000 buffers, ${answered} parsed as audio, none threw`);
});
