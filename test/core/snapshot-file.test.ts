// The files saved for the next start (core/snapshot-file.ts): what is written reads back
// whole, and a save while running hands its bytes to the disk as it goes (a MiB at a time)
// instead of leaving tens of MiB dirty for the kernel to write back in one burst later,
// which PostgreSQL's WAL flushes would queue behind.

import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { open } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { SeededRandom } from '../../bench/lib/seeded-random.ts';
import { SnapshotFileReader, writeSnapshotFileAsync } from '../../core/snapshot-file.ts';

/** Seeded bytes, so that a mix-up of sections or offsets shows. */
function bytes(length: number, seed: number): Uint8Array {
  const random = new SeededRandom(seed);
  const out = new Uint8Array(length);
  for (let k = 0; k < length; k++) out[k] = random.below(256);
  return out;
}

/** Counts FileHandle.datasync calls while `run` runs (the prototype of every handle `open` gives). */
async function countingDatasyncs(dir: string, run: () => Promise<void>): Promise<number> {
  const probe = await open(path.join(dir, 'probe'), 'w');
  const proto = Object.getPrototypeOf(probe) as { datasync: () => Promise<void> };
  await probe.close();
  const original = proto.datasync;
  let calls = 0;
  proto.datasync = function (this: unknown) {
    calls++;
    return original.call(this);
  };
  try {
    await run();
  } finally {
    proto.datasync = original;
  }
  return calls;
}

for (const changing of [false, true]) {
  test(`a save while running (${changing ? 'sections written meanwhile' : 'still sections'}) reads back whole and is flushed a MiB at a time as it is written`, async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'venue-snapshot-file-'));
    try {
      const file = path.join(dir, 'saved.bin');
      // 3.5 MiB in three sections that straddle the MiB boundaries.
      const sections = [bytes(1_500_000, 1), bytes(7, 2), bytes(2_170_000, 3)];
      const total = sections.reduce((sum, section) => sum + section.byteLength, 0);
      let written = 0;
      const flushes = await countingDatasyncs(dir, async () => {
        written = await writeSnapshotFileAsync(file, 'TEST', { shape: 'three sections' }, sections, changing);
      });
      assert.ok(flushes >= Math.floor(total / (1 << 20)) && flushes <= Math.ceil(total / (1 << 20)) + 1, `${flushes} flushes for ${total} bytes`);
      const reader = SnapshotFileReader.open(file, 'TEST', 'a test file', 1024);
      assert.ok(typeof reader !== 'string', String(reader));
      try {
        assert.deepEqual(reader.header, { shape: 'three sections' });
        assert.ok(reader.holds(total));
        for (const section of sections) {
          const back = new Uint8Array(section.byteLength);
          assert.ok(reader.read(back));
          assert.deepEqual(back, section);
        }
        assert.ok(reader.verify(), 'the crc at the end is of what was written');
      } finally {
        reader.close();
      }
      assert.ok(written > total, `${written} bytes written in all, prefix and crc included`);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
}
