// The gateway's audio timer (src/media/audio-duration.ts) against ffprobe on files a real encoder
// made (LAME MP3 at constant and variable bit rates, with ID3 tags, WAV, FLAC), and on the mock
// vendor's files: what a per-second price charges is the length a player reads. Needs ffmpeg
// (`.ci/run` installs it); without it the test is skipped locally and fails under CI.
import t from 'tap';
import { execFileSync } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { audioInfo } from '../src/media/audio-duration.js';
import { mockMp3, mockWav } from '../src/mock-vendor/audio-files.js';

const has = (tool: string) => {
  try {
    execFileSync(tool, ['-version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
};

if (!has('ffmpeg') || !has('ffprobe')) {
  if (process.env.CI) t.fail('ffmpeg and ffprobe are required under CI (.ci/run installs them)');
  else t.pass('skipped: ffmpeg/ffprobe not installed');
} else {
  t.test('durations agree with ffprobe', async (t) => {
    const dir = await mkdtemp(join(tmpdir(), 'ffprobe-'));
    t.teardown(() => rm(dir, { recursive: true, force: true }));
    const encode = (name: string, seconds: number, args: string[]) => {
      execFileSync('ffmpeg', ['-v', 'error', '-y', '-f', 'lavfi', '-i', `sine=frequency=330:duration=${seconds}`, ...args, join(dir, name)]);
      return name;
    };
    const files = [
      encode('cbr.mp3', 2.3, ['-codec:a', 'libmp3lame', '-b:a', '64k']),
      encode('vbr.mp3', 4.7, ['-codec:a', 'libmp3lame', '-q:a', '4']),
      encode('tagged.mp3', 1.1, ['-codec:a', 'libmp3lame', '-b:a', '128k', '-metadata', 'title=gateway', '-id3v2_version', '3', '-write_id3v1', '1']),
      encode('mono22k.mp3', 3.3, ['-ar', '22050', '-codec:a', 'libmp3lame', '-b:a', '32k']),
      encode('pcm16.wav', 1.7, ['-ar', '22050']),
      encode('stereo.wav', 0.9, ['-ac', '2', '-ar', '44100']),
      encode('sine.flac', 3.1, ['-ar', '44100']),
    ];
    await writeFile(join(dir, 'mock.mp3'), mockMp3(7.5, 'a'));
    await writeFile(join(dir, 'mock.wav'), mockWav(3.25, 'b'));
    for (const name of [...files, 'mock.mp3', 'mock.wav']) {
      const path = join(dir, name);
      const probed = Number(execFileSync('ffprobe', ['-v', 'error', '-show_entries', 'format=duration', '-of', 'csv=p=0', path]).toString().trim());
      const info = audioInfo(await readFile(path));
      t.ok(info, `${name}: parsed`);
      t.ok(Math.abs(info!.seconds - probed) <= 0.002, `${name}: ${info!.seconds} s, ffprobe ${probed} s`);
    }
  });
}
