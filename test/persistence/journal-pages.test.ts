// The shards' journal replay as the main thread reads it (persistence/recovery.ts
// readJournal) on a real PostgreSQL: every batch after a sequence once, in order, joined
// in pages; the pages' buffers reused when given back (a new buffer per page took the
// page faults of fresh memory for the whole journal); a gap and a damaged checksum refused.

import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { crc32 } from 'node:zlib';
import type pg from 'pg';
import { migrate } from '../../persistence/migrations.ts';
import { readJournal } from '../../persistence/recovery.ts';
import { TestDatabase, withClient } from '../support/database.ts';

let database: TestDatabase;

before(async () => {
  database = await TestDatabase.start();
});
after(async () => {
  await database.remove();
});

/** Batch n (from 1) of `shard`: one event per command, 8·(n mod 5 + 1) bytes of payload marked with n. */
const payloadOf = (shard: number, n: number) => new Uint8Array(8 * ((n % 5) + 1)).fill((n * 7 + shard) & 0xff);

async function insertBatches(client: pg.ClientBase, shard: number, count: number, damaged = -1): Promise<void> {
  for (let n = 1; n <= count; n++) {
    const payload = payloadOf(shard, n);
    await client.query(`INSERT INTO runtime.journal_batches (shard_id, first_sequence, last_sequence, command_count, event_count, checksum, payload) VALUES ($1, $2, $2, 1, 1, $3, $4)`, [
      shard,
      n,
      n === damaged ? crc32(payload) ^ 1 : crc32(payload),
      Buffer.from(payload),
    ]);
  }
}

test("the journal after a sequence comes in pages of whole batches, in order, and the pages' buffers are reused when given back", async () => {
  const url = await database.freshDatabase();
  await withClient(url, async (client) => {
    await migrate(client);
    await insertBatches(client, 0, 60);
    await insertBatches(client, 1, 5);
    const expected = (from: number, to: number) => Buffer.concat(Array.from({ length: to - from + 1 }, (_, i) => payloadOf(0, from + i)));

    for (const giveBack of [true, false]) {
      const pages: Buffer[] = [];
      const lasts: number[] = [];
      const buffers = new Set<ArrayBuffer>();
      let waiting = 0;
      let mostWaiting = 0;
      const last = await readJournal(
        client,
        0,
        10,
        async (buffer, bytes, lastSequence) => {
          buffers.add(buffer);
          waiting++;
          mostWaiting = Math.max(mostWaiting, waiting);
          pages.push(Buffer.from(new Uint8Array(buffer, 0, bytes))); // a copy: the buffer is filled again once given back
          lasts.push(lastSequence);
          await new Promise((resolve) => setTimeout(resolve, 2)); // as a shard applies it, while the next page is read
          waiting--;
          return giveBack ? buffer : undefined;
        },
        64,
      );
      assert.equal(last, 60);
      assert.deepEqual(Buffer.concat(pages), expected(11, 60), 'batches 11 to 60, each once, in order');
      // Pages end on whole batches at or past 64 bytes (the last may be shorter): the sequence each names is the last batch in it.
      let at = 10;
      for (const [i, page] of pages.entries()) {
        const next = lasts[i]!;
        assert.deepEqual(page, expected(at + 1, next), `page ${i} holds batches ${at + 1} to ${next}`);
        if (i < pages.length - 1) assert.ok(page.byteLength >= 64 && page.byteLength - payloadOf(0, next).byteLength < 64, `page ${i}: ${page.byteLength} bytes`);
        at = next;
      }
      assert.ok(pages.length >= 10, `${pages.length} pages`);
      assert.ok(mostWaiting <= 2, `at most two pages in flight, ${mostWaiting} seen`);
      if (giveBack) assert.ok(buffers.size <= 3, `the buffers given back are filled again: ${buffers.size} for ${pages.length} pages`);
      else assert.equal(buffers.size, pages.length, 'each page a buffer of its own when none is given back');
    }

    // Shard 1 from its start; past its end, nothing.
    const whole: Buffer[] = [];
    assert.equal(await readJournal(client, 1, 0, async (buffer, bytes) => void whole.push(Buffer.from(new Uint8Array(buffer, 0, bytes)))), 5);
    assert.deepEqual(Buffer.concat(whole), Buffer.concat([1, 2, 3, 4, 5].map((n) => payloadOf(1, n))));
    assert.equal(await readJournal(client, 1, 5, async () => assert.fail('no page past the end')), 5);
  });
});

test('a gap in the journal and a batch that fails its checksum are refused', async () => {
  const url = await database.freshDatabase();
  await withClient(url, async (client) => {
    await migrate(client);
    await insertBatches(client, 0, 20, 15);
    await assert.rejects(
      readJournal(client, 0, 0, async (buffer) => buffer, 64),
      /shard 0 journal batch at sequence 15 fails its checksum/,
    );
    await insertBatches(client, 1, 8);
    await client.query('DELETE FROM runtime.journal_batches WHERE shard_id = 1 AND first_sequence = 4');
    await assert.rejects(
      readJournal(client, 1, 0, async (buffer) => buffer, 64),
      /shard 1 journal has a gap: the batch after sequence 3 starts at 5/,
    );
  });
});
