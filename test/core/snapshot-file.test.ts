// The files saved for the next start (persistence/snapshot-file.ts): what is written reads back
// whole, and a save while running hands its bytes to the disk as it goes (8 MiB at a time)
// instead of leaving tens of MiB dirty for the kernel to write back in one burst later,
// which PostgreSQL's WAL flushes would queue behind.

import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { open } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { SeededRandom } from '../../bench/lib/seeded-random.ts';
import { SNAPSHOT_FLUSH_BYTES, SnapshotFileReader, writeSnapshotFileAsync } from '../../persistence/snapshot-file.ts';

/** Seeded bytes, so that a mix-up of sections or offsets shows. */
function bytes(length: number, seed: number): Uint8Array {
  const random = new SeededRandom(seed);
  const out = new Uint8Array(length);
  for (let k = 0; k < length; k++) out[k] = random.below(256);
  return out;
}

/** The file's size at each FileHandle.datasync call while `run` runs (patched on the prototype of every handle `open` gives). */
async function sizesAtDatasyncs(dir: string, run: () => Promise<void>): Promise<number[]> {
  const probe = await open(path.join(dir, 'probe'), 'w');
  const proto = Object.getPrototypeOf(probe) as { datasync: () => Promise<void>; stat: () => Promise<{ size: number }> };
  await probe.close();
  const original = proto.datasync;
  const sizes: number[] = [];
  proto.datasync = async function (this: typeof proto) {
    sizes.push((await this.stat()).size);
    return original.call(this);
  };
  try {
    await run();
  } finally {
    proto.datasync = original;
  }
  return sizes;
}

for (const changing of [false, true]) {
  test(`a save while running (${changing ? 'sections written meanwhile' : 'still sections'}) reads back whole and is flushed ${SNAPSHOT_FLUSH_BYTES >> 20} MiB at a time as it is written`, async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'venue-snapshot-file-'));
    try {
      const file = path.join(dir, 'saved.bin');
      // 3.5 flushes' worth in three sections that straddle the flush boundaries.
      const flush = SNAPSHOT_FLUSH_BYTES;
      const sections = [bytes(Math.round(1.43 * flush), 1), bytes(7, 2), bytes(Math.round(2.07 * flush), 3)];
      const total = sections.reduce((sum, section) => sum + section.byteLength, 0);
      let written = 0;
      const sizes = await sizesAtDatasyncs(dir, async () => {
        written = await writeSnapshotFileAsync(file, 'TEST', { shape: 'three sections' }, sections, changing);
      });
      const flushes = sizes.length;
      assert.ok(flushes >= Math.floor(total / flush) && flushes <= Math.ceil(total / flush) + 1, `${flushes} flushes for ${total} bytes`);
      // As it is written: each flush comes after about `flush` bytes more, never the whole file at the end.
      const steps = sizes.map((size, k) => size - (k === 0 ? 0 : sizes[k - 1]!));
      assert.ok(
        steps.every((step) => step >= flush && step < 2 * flush),
        `sizes at the flushes: ${sizes.join(', ')}`,
      );
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
