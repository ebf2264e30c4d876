// The key filters saved at a graceful stop (persistence/key-filter-snapshot.ts) are
// used by the next start only when they are still true of storage, whole and of the
// same shape; in every other case the start scans storage. A real PostgreSQL.

import assert from 'node:assert/strict';
import { readFileSync, rmSync, writeFileSync, mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import type pg from 'pg';
import { createKeyFilter, KeyFilter } from '../../core/key-filter.ts';
import { loadKeyFilters, savedFilterBits, saveKeyFilters, snapshotPath } from '../../persistence/key-filter-snapshot.ts';
import { migratedDatabase, withClient, type TestDatabase } from '../support/database.ts';

const BITS = 1 << 12;
const SHARDS = 2;
let database: TestDatabase;
let url: string;
const dir = mkdtempSync(path.join(os.tmpdir(), 'venue-filters-'));

before(async () => ({ database, url } = await migratedDatabase()));
after(async () => {
  await database.remove();
  rmSync(dir, { recursive: true, force: true });
});

const emptyFilters = () => ({ idempotency: createKeyFilter(BITS), commandIds: createKeyFilter(BITS), orderDirectory: createKeyFilter(BITS) });
const key = (n: number) => Int32Array.of(n, n * 7 + 1, n ^ 0x5a5a, -n);

/** Filters holding keys 0..99 (idempotency), 100..199 (commandIds), 200..299 (orders). */
function filledFilters() {
  const filters = emptyFilters();
  Object.values(filters).forEach((buffer, k) => {
    const filter = new KeyFilter(buffer);
    for (let n = k * 100; n < (k + 1) * 100; n++) filter.add(key(n), 0);
  });
  return filters;
}

const bytesOf = (filters: Record<string, SharedArrayBuffer>) => Object.values(filters).map((buffer) => Buffer.from(new Uint8Array(buffer)));
const isEmpty = (filters: Record<string, SharedArrayBuffer>) => bytesOf(filters).every((bytes) => bytes.every((byte) => byte === 0));

async function commit(client: pg.ClientBase, commitNo: number): Promise<void> {
  await client.query('INSERT INTO runtime.intake_batches (commit_no, gateway_id, record_count, checksum, payload) VALUES ($1, 0, 1, 0, $2)', [commitNo, Buffer.alloc(8)]);
}

test('saved at a stop, loaded at the next start: the same bits and count; the note serves one start', async () => {
  await withClient(url, async (client) => {
    await commit(client, 1);
    const saved = filledFilters();
    const { mark } = await saveKeyFilters(dir, client, SHARDS, saved);
    assert.equal(mark, 'intake 1; journal 0,0');
    const loaded = emptyFilters();
    assert.equal(await loadKeyFilters(dir, client, SHARDS, loaded), null);
    assert.deepEqual(bytesOf(loaded), bytesOf(saved));
    assert.equal(new KeyFilter(loaded.orderDirectory).added, 100);
    for (let n = 200; n < 300; n++) assert.ok(new KeyFilter(loaded.orderDirectory).mightContain(key(n), 0));
    // The same file, a second start: the database's note was consumed.
    const again = emptyFilters();
    assert.equal(await loadKeyFilters(dir, client, SHARDS, again), 'no graceful stop noted in the database');
    assert.ok(isEmpty(again));
  });
});

test('refused, filters left empty: storage changed since, a damaged, foreign or other file, another shape', async () => {
  await withClient(url, async (client) => {
    const refused = async (damage: () => Promise<void> | void, reason: RegExp, filters = emptyFilters()) => {
      await saveKeyFilters(dir, client, SHARDS, filledFilters());
      await damage();
      const why = await loadKeyFilters(dir, client, SHARDS, filters);
      assert.match(why ?? 'loaded', reason);
      assert.ok(isEmpty(filters), `${reason}: nothing loaded`);
    };
    await refused(() => commit(client, 2), /^storage changed since the stop \(intake 1; journal 0,0 then, intake 2; journal 0,0 now\)$/);
    await refused(
      async () => void (await client.query("INSERT INTO runtime.journal_batches (shard_id, first_sequence, last_sequence, command_count, event_count, checksum, payload, commit_no) VALUES (1, 1, 3, 1, 3, 0, '\\x00', 2)")),
      /^storage changed since the stop \(intake 2; journal 0,0 then, intake 2; journal 0,3 now\)$/,
    );
    const file = snapshotPath(dir);
    await refused(() => {
      const bytes = readFileSync(file);
      bytes[bytes.length - 100]! ^= 1; // one bit of the last filter
      writeFileSync(file, bytes);
    }, /^a checksum mismatch$/);
    await refused(() => writeFileSync(file, readFileSync(file).subarray(0, 1000)), /^a file of the wrong length$/);
    await refused(() => {
      const bytes = readFileSync(file);
      bytes.write('null'.padEnd(bytes.readUInt32LE(4)), 8); // valid JSON of another shape, same length
      writeFileSync(file, bytes);
    }, /^a damaged header$/);
    await refused(() => writeFileSync(file, Buffer.alloc(4096)), /^not a key filter file$/);
    await refused(() => rmSync(file), /^no file: ENOENT/);
    // A file saved by another stop (of this or another database): its token is not the noted one.
    const other = mkdtempSync(path.join(os.tmpdir(), 'venue-filters-other-'));
    try {
      await refused(async () => {
        const noted = await client.query<{ value: string }>("SELECT value FROM runtime.venue_settings WHERE name = 'key_filter_snapshot'");
        await saveKeyFilters(other, client, SHARDS, filledFilters());
        writeFileSync(file, readFileSync(snapshotPath(other)));
        await client.query("UPDATE runtime.venue_settings SET value = $1 WHERE name = 'key_filter_snapshot'", [noted.rows[0]!.value]);
      }, /^the file is not the one the database names$/);
    } finally {
      rmSync(other, { recursive: true, force: true });
    }
    const larger = { idempotency: createKeyFilter(BITS * 2), commandIds: createKeyFilter(BITS * 2), orderDirectory: createKeyFilter(BITS * 2) };
    await refused(() => undefined, /^the filters' shape changed \(sized for the stored keys: KEY_FILTER_BITS, KEY_FILTER_BITS_MAX\): 3 of 576 bytes saved, 3 of 1088 now$/, larger);
    // And after all of that, a good file still loads.
    await saveKeyFilters(dir, client, SHARDS, filledFilters());
    assert.equal(await loadKeyFilters(dir, client, SHARDS, emptyFilters()), null);
  });
});

test('savedFilterBits: the size of the filters the last stop saved (the start sizes them no smaller), or null without a readable file', async () => {
  await withClient(url, async (client) => {
    const sized = (bits: number) => ({ idempotency: createKeyFilter(bits), commandIds: createKeyFilter(bits), orderDirectory: createKeyFilter(bits) });
    await saveKeyFilters(dir, client, SHARDS, sized(BITS * 4));
    assert.equal(savedFilterBits(dir), BITS * 4);
    await saveKeyFilters(dir, client, SHARDS, sized(BITS));
    assert.equal(savedFilterBits(dir), BITS);
    writeFileSync(snapshotPath(dir), Buffer.alloc(4096));
    assert.equal(savedFilterBits(dir), null, 'not a key filter file');
    rmSync(snapshotPath(dir));
    assert.equal(savedFilterBits(dir), null, 'no file');
  });
});
