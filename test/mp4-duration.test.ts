// mp4DurationSeconds: the length `moov/mvhd` gives, on the mock's MP4s (version 0 and 1 headers), on
// MP4s ffmpeg made (the movie header after the media data, and before it with +faststart), and
// undefined, never an exception or a hang, for what is not an MP4 or lies about its box sizes.
import t from 'tap';
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { isMp4, mp4DurationSeconds } from '../src/media/mp4-duration.js';
import { mockMp4 } from '../src/mock-vendor/mp4.js';
import { mockPng } from '../src/mock-vendor/png.js';

/** A box of `type` around `payload`, its size field as given or the true one. */
function box(type: string, payload: Buffer, size?: number): Buffer {
  const head = Buffer.alloc(8);
  head.writeUInt32BE(size ?? 8 + payload.length, 0);
  head.write(type, 4, 'latin1');
  return Buffer.concat([head, payload]);
}
const FTYP = box('ftyp', Buffer.from('isom\0\0\x02\0isomiso2mp41', 'latin1'));

/** A version 0 `mvhd` payload with this timescale and duration. */
function mvhd0(timescale: number, duration: number): Buffer {
  const body = Buffer.alloc(100);
  body.writeUInt32BE(timescale, 12);
  body.writeUInt32BE(duration, 16);
  return body;
}

t.test('the mock MP4s, version 0 and version 1 movie headers', async (t) => {
  for (const seconds of [0.5, 3, 4.2, 5, 7.999, 120]) {
    t.equal(mp4DurationSeconds(mockMp4(seconds, 'v0')), seconds, `version 0, ${seconds} s`);
    t.equal(mp4DurationSeconds(mockMp4(seconds, 'v1', 1)), seconds, `version 1, ${seconds} s`);
  }
  t.ok(isMp4(mockMp4(1, 'x')));
});

t.test('a 64-bit duration and a large box size', async (t) => {
  const body = Buffer.alloc(112);
  body[0] = 1;
  body.writeUInt32BE(90_000, 20); // a 90 kHz timescale
  body.writeBigUInt64BE(90_000n * 3n + 45_000n, 24);
  const large = Buffer.alloc(16);
  large.writeUInt32BE(1, 0);
  large.write('mvhd', 4, 'latin1');
  large.writeBigUInt64BE(BigInt(16 + body.length), 8);
  const bytes = Buffer.concat([FTYP, box('moov', Buffer.concat([large, body]))]);
  t.equal(mp4DurationSeconds(bytes), 3.5);
});

t.test('the movie header found among other boxes, and a last box running to the end (size 0)', async (t) => {
  const moov = box('moov', Buffer.concat([box('udta', Buffer.alloc(20)), box('mvhd', mvhd0(600, 1500))]), 0);
  t.equal(mp4DurationSeconds(Buffer.concat([FTYP, box('free', Buffer.alloc(9)), box('mdat', Buffer.alloc(300)), moov])), 2.5);
});

t.test('not an MP4, or no readable duration: undefined', async (t) => {
  const cases: [string, Buffer][] = [
    ['empty', Buffer.alloc(0)],
    ['a PNG', mockPng('x')],
    ['text', Buffer.from('<html>not a video</html>')],
    ['ftyp only', FTYP],
    ['no ftyp first', Buffer.concat([box('moov', box('mvhd', mvhd0(1000, 5000)))])],
    ['moov without mvhd', Buffer.concat([FTYP, box('moov', box('trak', Buffer.alloc(40)))])],
    ['timescale 0', Buffer.concat([FTYP, box('moov', box('mvhd', mvhd0(0, 5000)))])],
    ['duration unknown (all ones)', Buffer.concat([FTYP, box('moov', box('mvhd', mvhd0(1000, 0xffff_ffff)))])],
    ['version 2 header', Buffer.concat([FTYP, box('moov', box('mvhd', Buffer.concat([Buffer.from([2]), mvhd0(1000, 5000).subarray(1)])))])],
    ['mvhd too short for its fields', Buffer.concat([FTYP, box('moov', box('mvhd', Buffer.alloc(10)))])],
    ['truncated in the mvhd', mockMp4(5, 'cut').subarray(0, 60)],
    ['truncated in the first header', mockMp4(5, 'cut').subarray(0, 6)],
  ];
  for (const [name, bytes] of cases) t.equal(mp4DurationSeconds(bytes), undefined, name);
  t.notOk(isMp4(mockPng('x')));
});

t.test('hostile box sizes: undefined at once, never a loop or an exception', async (t) => {
  const largeOverflow = Buffer.alloc(16);
  largeOverflow.writeUInt32BE(1, 0);
  largeOverflow.write('moov', 4, 'latin1');
  largeOverflow.writeBigUInt64BE(0xffff_ffff_ffff_fff0n, 8);
  const cases: [string, Buffer][] = [
    ['a box larger than the file', Buffer.concat([FTYP, box('moov', box('mvhd', mvhd0(1000, 5000)), 0xffff_fff0)])],
    ['a 64-bit size beyond any buffer', Buffer.concat([FTYP, largeOverflow, box('mvhd', mvhd0(1000, 5000))])],
    ['a 64-bit size under its own header', Buffer.concat([FTYP, Buffer.from([0, 0, 0, 1, 0x6d, 0x6f, 0x6f, 0x76, 0, 0, 0, 0, 0, 0, 0, 4])])],
    ['a size under the header (would not move on)', Buffer.concat([FTYP, box('free', Buffer.alloc(0), 4), box('moov', box('mvhd', mvhd0(1000, 5000)))])],
    ['a child larger than its parent', Buffer.concat([FTYP, box('moov', box('mvhd', mvhd0(1000, 5000), 4096))])],
    ['an mvhd running past its moov', Buffer.concat([FTYP, box('moov', box('mvhd', mvhd0(1000, 5000)).subarray(0, 40), 48), Buffer.alloc(80)])],
  ];
  for (const [name, bytes] of cases) t.equal(mp4DurationSeconds(bytes), undefined, name);
  // A million empty `free` boxes before the movie: the walk gives up after a bounded number of boxes.
  const many = Buffer.concat([FTYP, Buffer.alloc(8 * 1_000_000), box('moov', box('mvhd', mvhd0(1000, 5000)))]);
  for (let at = FTYP.length; at < FTYP.length + 8 * 1_000_000; at += 8) {
    many.writeUInt32BE(8, at);
    many.write('free', at + 4, 'latin1');
  }
  const started = process.hrtime.bigint();
  t.equal(mp4DurationSeconds(many), undefined, 'too many boxes');
  t.ok(process.hrtime.bigint() - started < 1_000_000_000n, 'within a second');
  for (let i = 0; i < 2000; i++) {
    const bytes = randomBytes(1 + (i % 300));
    if (i % 2 === 0) FTYP.copy(bytes, 0, 0, Math.min(FTYP.length, bytes.length));
    const seconds = mp4DurationSeconds(bytes);
    if (seconds !== undefined && !(Number.isFinite(seconds) && seconds >= 0)) t.fail(`random bytes gave ${seconds}`);
  }
  t.pass('random bytes: no exception');
});

const hasFfmpeg = (() => {
  try {
    execFileSync('ffmpeg', ['-version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
})();

t.test('MP4s ffmpeg made agree with ffprobe', { skip: hasFfmpeg ? false : (process.env.CI ? false : 'ffmpeg not installed') }, async (t) => {
  t.ok(hasFfmpeg, 'ffmpeg is required under CI (.ci/run installs it)');
  if (!hasFfmpeg) return;
  const dir = await mkdtemp(join(tmpdir(), 'mp4-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  for (const [name, seconds, args] of [
    ['moov-at-end.mp4', 2.4, []],
    ['faststart.mp4', 3.2, ['-movflags', '+faststart']],
    ['mov.mov', 1.5, []],
  ] as const) {
    const path = join(dir, name);
    execFileSync('ffmpeg', ['-v', 'error', '-y', '-f', 'lavfi', '-i', `testsrc=size=64x48:rate=10:duration=${seconds}`, '-pix_fmt', 'yuv420p', ...args, path]);
    const probed = Number(execFileSync('ffprobe', ['-v', 'error', '-show_entries', 'format=duration', '-of', 'csv=p=0', path]).toString().trim());
    const parsed = mp4DurationSeconds(await readFile(path));
    t.ok(parsed !== undefined && Math.abs(parsed - probed) <= 0.05, `${name}: ${parsed} s, ffprobe ${probed} s`);
  }
});
