// A small MP4 the mock's video vendors hand out: an `ftyp` box, a `moov` whose `mvhd` says how long
// the clip is, and an `mdat` holding a tag (so every task's file, and its hash, differs). Enough for
// a media sniffer and a duration parser; no player would show a picture.

function box(type: string, ...payload: Buffer[]): Buffer {
  const body = Buffer.concat(payload);
  const head = Buffer.alloc(8);
  head.writeUInt32BE(8 + body.length, 0);
  head.write(type, 4, 'latin1');
  return Buffer.concat([head, body]);
}

/** An MP4 of `seconds` (timescale 1000) whose media data is `tag`. */
export function mockMp4(seconds: number, tag: string): Buffer {
  const ftyp = box('ftyp', Buffer.from('isom', 'latin1'), Buffer.from([0, 0, 2, 0]), Buffer.from('isomiso2mp41', 'latin1'));
  const mvhd = Buffer.alloc(100);
  // version 0, flags 0, creation and modification times 0
  mvhd.writeUInt32BE(1000, 12); // timescale
  mvhd.writeUInt32BE(Math.round(seconds * 1000), 16); // duration
  mvhd.writeUInt32BE(0x00010000, 20); // rate 1.0
  mvhd.writeUInt16BE(0x0100, 24); // volume 1.0
  for (const [at, value] of [[36, 0x00010000], [52, 0x00010000], [68, 0x40000000]] as const) mvhd.writeUInt32BE(value, at); // unity matrix
  mvhd.writeUInt32BE(2, 96); // next track id
  return Buffer.concat([ftyp, box('moov', box('mvhd', mvhd)), box('mdat', Buffer.from(tag, 'utf8'))]);
}

/** The duration an MP4's `mvhd` gives, in seconds; undefined when there is none. */
export function mp4DurationSeconds(bytes: Buffer): number | undefined {
  const find = (from: number, to: number, type: string): number | undefined => {
    for (let at = from; at + 8 <= to;) {
      const size = bytes.readUInt32BE(at);
      if (size < 8) return undefined;
      if (bytes.toString('latin1', at + 4, at + 8) === type) return at;
      at += size;
    }
    return undefined;
  };
  const moov = find(0, bytes.length, 'moov');
  if (moov === undefined) return undefined;
  const mvhd = find(moov + 8, moov + bytes.readUInt32BE(moov), 'mvhd');
  if (mvhd === undefined) return undefined;
  const version = bytes[mvhd + 8];
  const timescale = bytes.readUInt32BE(mvhd + (version === 1 ? 28 : 20));
  const duration = version === 1 ? Number(bytes.readBigUInt64BE(mvhd + 32)) : bytes.readUInt32BE(mvhd + 24);
  return timescale > 0 ? duration / timescale : undefined;
}
