// A small MP4 the mock's video vendors hand out: an `ftyp` box, a `moov` whose `mvhd` says how long
// the clip is, and an `mdat` holding a tag (so every task's file, and its hash, differs). Enough for
// a media sniffer and a duration parser; no player would show a picture.

import { mockPng } from './png.js';

function box(type: string, ...payload: Buffer[]): Buffer {
  const body = Buffer.concat(payload);
  const head = Buffer.alloc(8);
  head.writeUInt32BE(8 + body.length, 0);
  head.write(type, 4, 'latin1');
  return Buffer.concat([head, body]);
}

/**
 * An MP4 of `seconds` (timescale 1000) whose media data is `tag`; `version` 1 writes the movie header
 * with 64-bit times and duration, as long or high-rate recordings have it.
 */
export function mockMp4(seconds: number, tag: string, version: 0 | 1 = 0): Buffer {
  const ftyp = box('ftyp', Buffer.from('isom', 'latin1'), Buffer.from([0, 0, 2, 0]), Buffer.from('isomiso2mp41', 'latin1'));
  const wide = version === 1 ? 12 : 0; // the three 64-bit fields of version 1
  const mvhd = Buffer.alloc(100 + wide);
  mvhd[0] = version; // flags 0, creation and modification times 0
  mvhd.writeUInt32BE(1000, 12 + (wide ? 8 : 0)); // timescale
  if (version === 1) mvhd.writeBigUInt64BE(BigInt(Math.round(seconds * 1000)), 24);
  else mvhd.writeUInt32BE(Math.round(seconds * 1000), 16); // duration
  mvhd.writeUInt32BE(0x00010000, 20 + wide); // rate 1.0
  mvhd.writeUInt16BE(0x0100, 24 + wide); // volume 1.0
  for (const [at, value] of [[36, 0x00010000], [52, 0x00010000], [68, 0x40000000]] as const) mvhd.writeUInt32BE(value, at + wide); // unity matrix
  mvhd.writeUInt32BE(2, 96 + wide); // next track id
  return Buffer.concat([ftyp, box('moov', box('mvhd', mvhd)), box('mdat', Buffer.from(tag, 'utf8'))]);
}

/** Read back with the gateway's own parser. */
export { mp4DurationSeconds } from '../media/mp4-duration.js';

/** Where the mock serves sample inputs (the caller's video of a video-to-video call, in tests). */
export const SAMPLES_PREFIX = '/samples/';

/**
 * A sample input by path: `clip-<seconds>.mp4` an MP4 of that length (at most an hour),
 * `clip-<seconds>-v1.mp4` the same with a version 1 movie header, `big-clip.mp4` a 3-second MP4 of
 * 2 MiB, `picture` a PNG and `movie` a 4-second MP4 (no extension: what a caller's URL may look like).
 */
export function sampleMedia(path: string): { bytes: Buffer; contentType: string } | undefined {
  const name = path.slice(SAMPLES_PREFIX.length);
  if (name === 'picture') return { bytes: mockPng(name), contentType: 'image/png' };
  if (name === 'movie') return { bytes: mockMp4(4, name), contentType: 'video/mp4' };
  if (name === 'big-clip.mp4') return { bytes: mockMp4(3, 'x'.repeat(2 * 1024 * 1024)), contentType: 'video/mp4' };
  const clip = /^clip-(\d{1,4}(?:\.\d{1,3})?)(-v1)?\.mp4$/.exec(name);
  if (!clip || Number(clip[1]) > 3600) return undefined;
  return { bytes: mockMp4(Number(clip[1]), name, clip[2] ? 1 : 0), contentType: 'video/mp4' };
}
