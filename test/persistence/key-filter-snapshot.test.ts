// The key filters saved at a storage mark (persistence/key-filter-snapshot.ts: a graceful
// stop, or a checkpoint while running) are used by a start when the database names them,
// and they are whole and of the same shape, whatever storage took after the mark (its
// keys are read from the intake records after it: intakeKeysSince); in every other case
// the start scans storage. A real PostgreSQL.

import assert from 'node:assert/strict';
import { existsSync, readFileSync, renameSync, rmSync, writeFileSync, mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import type pg from 'pg';
import { createKeyFilter, KeyFilter } from '../../core/key-filter.ts';
import { intakeCommit, KeyFilterCheckpoints, loadKeyFilters, nextSnapshotPath, savedFilterBits, saveKeyFilters, snapshotPath } from '../../persistence/key-filter-snapshot.ts';
import { intakeKeysSince, type IntakeKeys } from '../../persistence/recovery.ts';
import { INTAKE_RECORD_BYTES, writeIntake } from '../../core/intake-record.ts';
import { COMMAND_PARTICIPANT_ID_WORD, COMMAND_SLOT_WORDS } from '../../core/command-slot.ts';
import { formatUuid, uuidWords } from '../../core/uuid.ts';
import { crc32 } from 'node:zlib';
import { randomUUID } from 'node:crypto';
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

/** saveKeyFilters with no table keys to add (the tables are the venue's: tested end to end). */
const save = (dataDir: string, client: pg.ClientBase, filters: Record<string, SharedArrayBuffer>, addTableKeys = async () => 0) => saveKeyFilters(dataDir, client, SHARDS, filters, addTableKeys);

test('saved at a mark, loaded by every start after it: the same bits and count, the mark; the note stays while storage grows', async () => {
  await withClient(url, async (client) => {
    await commit(client, 1);
    const saved = filledFilters();
    const { mark } = await save(dir, client, saved);
    assert.equal(mark, 'intake 1; journal 0,0');
    assert.equal(intakeCommit(mark), 1);
    const loaded = emptyFilters();
    assert.deepEqual(await loadKeyFilters(dir, client, loaded), { mark });
    assert.deepEqual(bytesOf(loaded), bytesOf(saved));
    assert.equal(new KeyFilter(loaded.orderDirectory).added, 100);
    for (let n = 200; n < 300; n++) assert.ok(new KeyFilter(loaded.orderDirectory).mightContain(key(n), 0));
    // Storage took more after the save (a crash, then another): the file still holds every key up to its mark.
    await commit(client, 2);
    const again = emptyFilters();
    assert.deepEqual(await loadKeyFilters(dir, client, again), { mark });
    assert.deepEqual(bytesOf(again), bytesOf(saved));
  });
});

test('a crash in the middle of a save leaves a file the database names: the last one before the new one is noted, the new one after', async () => {
  await withClient(url, async (client) => {
    const note = async () => (await client.query<{ value: string }>("SELECT value FROM runtime.venue_settings WHERE name = 'key_filter_snapshot'")).rows[0]!.value;
    const max = Number((await client.query<{ n: string }>('SELECT coalesce(max(commit_no), 0)::text AS n FROM runtime.intake_batches')).rows[0]!.n);
    await commit(client, max + 1);
    const last = await save(dir, client, filledFilters());
    const lastNote = await note();
    const lastBytes = readFileSync(snapshotPath(dir));
    await commit(client, max + 2);
    const fresh = filledFilters();
    new KeyFilter(fresh.commandIds).add(key(999), 0);
    const next = await save(dir, client, fresh);
    assert.notEqual(next.mark, last.mark);
    assert.ok(!existsSync(nextSnapshotPath(dir)), 'a finished save renamed its file over the last one');
    const nextBytes = readFileSync(snapshotPath(dir));
    // Killed after the note, before the rename: the last file in place, the new one beside it, the new one noted.
    writeFileSync(nextSnapshotPath(dir), nextBytes);
    writeFileSync(snapshotPath(dir), lastBytes);
    const loaded = emptyFilters();
    assert.deepEqual(await loadKeyFilters(dir, client, loaded), { mark: next.mark });
    assert.deepEqual(bytesOf(loaded), bytesOf(fresh));
    // Killed after the new file was written, before the note: the last one noted still, and loaded.
    await client.query("UPDATE runtime.venue_settings SET value = $1 WHERE name = 'key_filter_snapshot'", [lastNote]);
    const before = emptyFilters();
    assert.deepEqual(await loadKeyFilters(dir, client, before), { mark: last.mark });
    assert.deepEqual(bytesOf(before), bytesOf(filledFilters()));
    // The next save goes on from there: its file replaces both.
    const after = await save(dir, client, filledFilters());
    assert.ok(!existsSync(nextSnapshotPath(dir)));
    assert.deepEqual(await loadKeyFilters(dir, client, emptyFilters()), { mark: after.mark });
    renameSync(snapshotPath(dir), nextSnapshotPath(dir));
    assert.deepEqual(await loadKeyFilters(dir, client, emptyFilters()), { mark: after.mark }, 'found beside, under the next name');
    renameSync(nextSnapshotPath(dir), snapshotPath(dir));
  });
});

test("the mark is read before the tables' keys are added: a commit made meanwhile is after the mark (its keys come from its intake record)", async () => {
  await withClient(url, async (client) => {
    const before = Number((await client.query<{ n: string }>('SELECT coalesce(max(commit_no), 0)::text AS n FROM runtime.intake_batches')).rows[0]!.n);
    const { mark, tableKeys } = await save(dir, client, filledFilters(), async () => {
      await commit(client, before + 1); // a gateway's command committed while the tables are read
      return 7;
    });
    assert.equal(tableKeys, 7);
    assert.equal(intakeCommit(mark), before, 'the mark the save began with');
    assert.deepEqual(await loadKeyFilters(dir, client, emptyFilters()), { mark });
  });
});

test('a file written while the filters change: each chunk as copied, its checksum of those bytes (the start loads it)', async () => {
  await withClient(url, async (client) => {
    const big = { idempotency: createKeyFilter(1 << 26), commandIds: createKeyFilter(1 << 26), orderDirectory: createKeyFilter(1 << 26) }; // 8 MiB each: several chunks
    const filter = new KeyFilter(big.commandIds);
    let n = 0;
    const writer = setInterval(() => {
      for (let k = 0; k < 2000; k++) filter.add(key(n++), 0); // bits set between the chunks' copies, checksums and writes
    }, 0);
    try {
      await save(dir, client, big);
    } finally {
      clearInterval(writer);
    }
    assert.ok(n > 0, 'keys were added during the write');
    const loaded = { idempotency: createKeyFilter(1 << 26), commandIds: createKeyFilter(1 << 26), orderDirectory: createKeyFilter(1 << 26) };
    assert.equal(typeof (await loadKeyFilters(dir, client, loaded)), 'object', 'whole and checked');
  });
});

test('refused, filters left empty: no note, a damaged note, a damaged, foreign or other file, another shape', async () => {
  await withClient(url, async (client) => {
    const refused = async (damage: () => Promise<void> | void, reason: RegExp, filters = emptyFilters()) => {
      await save(dir, client, filledFilters());
      await damage();
      const why = await loadKeyFilters(dir, client, filters);
      assert.match(typeof why === 'string' ? why : 'loaded', reason);
      assert.ok(isEmpty(filters), `${reason}: nothing loaded`);
    };
    await refused(() => void client.query("DELETE FROM runtime.venue_settings WHERE name = 'key_filter_snapshot'"), /^no saved key filters noted in the database$/);
    await refused(
      () => void client.query("UPDATE runtime.venue_settings SET value = 'token intake x; journal 0,0' WHERE name = 'key_filter_snapshot'"),
      /^a damaged note in the database: "token intake x; journal 0,0"$/,
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
    // A file of another save (of this or another database, or written and not yet noted when the venue crashed): its token is not the noted one.
    const other = mkdtempSync(path.join(os.tmpdir(), 'venue-filters-other-'));
    try {
      await refused(async () => {
        const noted = await client.query<{ value: string }>("SELECT value FROM runtime.venue_settings WHERE name = 'key_filter_snapshot'");
        await save(other, client, filledFilters());
        writeFileSync(file, readFileSync(snapshotPath(other)));
        await client.query("UPDATE runtime.venue_settings SET value = $1 WHERE name = 'key_filter_snapshot'", [noted.rows[0]!.value]);
      }, /^the file is not the one the database names$/);
    } finally {
      rmSync(other, { recursive: true, force: true });
    }
    const larger = { idempotency: createKeyFilter(BITS * 2), commandIds: createKeyFilter(BITS * 2), orderDirectory: createKeyFilter(BITS * 2) };
    await refused(() => undefined, /^the filters' shape changed \(sized for the stored keys: KEY_FILTER_BITS, KEY_FILTER_BITS_MAX\): 3 of 576 bytes saved, 3 of 1088 now$/, larger);
    // And after all of that, a good file still loads.
    await save(dir, client, filledFilters());
    assert.equal(typeof (await loadKeyFilters(dir, client, emptyFilters())), 'object');
  });
});

test('savedFilterBits: the size of the filters the last save wrote (the start sizes them no smaller), or null without a readable file', async () => {
  await withClient(url, async (client) => {
    const sized = (bits: number) => ({ idempotency: createKeyFilter(bits), commandIds: createKeyFilter(bits), orderDirectory: createKeyFilter(bits) });
    await save(dir, client, sized(BITS * 4));
    assert.equal(savedFilterBits(dir), BITS * 4);
    await save(dir, client, sized(BITS));
    assert.equal(savedFilterBits(dir), BITS);
    writeFileSync(snapshotPath(dir), Buffer.alloc(4096));
    assert.equal(savedFilterBits(dir), null, 'not a key filter file');
    rmSync(snapshotPath(dir));
    assert.equal(savedFilterBits(dir), null, 'no file');
  });
});

/** An intake batch of real records (core/intake-record.ts) as the journal writer stores it. */
async function intakeBatch(
  client: pg.ClientBase,
  commitNo: number,
  gatewayId: number,
  commands: { commandId: string; scope: Buffer; orderId: string | null; participantId: string; clientOrderId: string | null }[],
  checksum?: number,
): Promise<void> {
  const buffer = new ArrayBuffer(commands.length * INTAKE_RECORD_BYTES);
  const views = { words: new Int32Array(buffer), floats: new Float64Array(buffer), bytes: new Uint8Array(buffer) };
  commands.forEach((command, k) => {
    const slot = new Int32Array(COMMAND_SLOT_WORDS);
    slot.set(uuidWords(command.participantId), COMMAND_PARTICIPANT_ID_WORD);
    writeIntake(views, k * INTAKE_RECORD_BYTES, {
      processingMode: 0,
      route: command.orderId === null ? 3 : 0,
      shard: 0,
      principal: 0,
      receivedAtUs: 1,
      commandId: uuidWords(command.commandId),
      scopeDigest: command.scope,
      payloadHash: new Uint8Array(32),
      orderId: command.orderId === null ? null : uuidWords(command.orderId),
      instrumentId: null,
      slot: new Uint8Array(slot.buffer),
      clientId: 'desk',
      idempotencyKey: `key-${k}`,
      clientOrderId: command.clientOrderId,
      bodyLength: 0,
    });
  });
  const payload = Buffer.from(buffer);
  await client.query('INSERT INTO runtime.intake_batches (commit_no, gateway_id, record_count, checksum, payload) VALUES ($1, $2, $3, $4, $5)', [
    commitNo,
    gatewayId,
    commands.length,
    checksum ?? crc32(payload),
    payload,
  ]);
}

test('intakeKeysSince: every key of the commands in commits after the mark (scope, commandId, orderId, participant and clientOrderId), none before; a damaged batch fails', async () => {
  const { database: own, url: ownUrl } = await migratedDatabase();
  try {
    await withClient(ownUrl, async (client) => {
      const command = (k: number, withOrder: boolean, clientOrderId: string | null) => ({
        commandId: randomUUID(),
        scope: Buffer.alloc(16, k + 1),
        orderId: withOrder ? randomUUID() : null,
        participantId: randomUUID(),
        clientOrderId,
      });
      const before = [command(0, true, 'old-order')];
      const after = [[command(1, true, null), command(2, true, 'cö-☃'), command(3, false, null)], [command(4, true, 'c'.repeat(64))], [command(5, false, 'by-client-order')]];
      await intakeBatch(client, 5, 0, before);
      await intakeBatch(client, 6, 0, after[0]!);
      await intakeBatch(client, 6, 1, after[1]!); // two gateways in one commit
      await intakeBatch(client, 9, 0, after[2]!);
      const seen: { scope: string; commandId: string; orderId: string | null; clientOrder: IntakeKeys['clientOrder'] }[] = [];
      const hex = (words: Int32Array) => formatUuid(words, 0);
      const bytesOfWords = (words: Int32Array) => {
        const bytes = Buffer.alloc(16);
        words.forEach((word, k) => bytes.writeInt32BE(word, k * 4));
        return bytes.toString('hex');
      };
      const records = await intakeKeysSince(client, 5, (keys) =>
        seen.push({
          scope: bytesOfWords(keys.scope),
          commandId: hex(keys.commandId),
          orderId: keys.orderId === null ? null : hex(keys.orderId),
          clientOrder: keys.clientOrder === null ? null : { ...keys.clientOrder },
        }),
      );
      const expected = after.flat();
      assert.equal(records, expected.length);
      const byId = new Map(seen.map((entry) => [entry.commandId, entry]));
      assert.equal(byId.size, expected.length, 'each command once');
      for (const want of expected) {
        const got = byId.get(want.commandId);
        assert.ok(got !== undefined, `command ${want.commandId}`);
        assert.equal(got.scope, want.scope.toString('hex'), 'the scope digest, as its words (most significant byte first)');
        assert.equal(got.orderId, want.orderId);
        assert.deepEqual(got.clientOrder, want.clientOrderId === null ? null : { participantId: want.participantId, clientOrderId: want.clientOrderId });
      }
      assert.equal(byId.has(before[0]!.commandId), false, 'a commit at the mark is in the file, not read again');
      assert.equal(await intakeKeysSince(client, 9, () => assert.fail('nothing after the last commit')), 0);
      await intakeBatch(client, 10, 0, [command(6, true, null)], 12345);
      await assert.rejects(
        intakeKeysSince(client, 9, () => undefined),
        /the intake batch of commit 10 fails its checksum/,
      );
      assert.equal((await client.query('SELECT 1 AS one')).rows[0].one, 1, 'the connection answers after the failure');
    });
  } finally {
    await own.remove();
  }
});

test('KeyFilterCheckpoints: a start that left every/8 commands or more uncovered saves at the first poll, then every `every` commands', async () => {
  let taken = 500;
  const saves: number[] = [];
  const checkpoints = new KeyFilterCheckpoints({ every: 100, taken: () => taken, uncovered: 13, save: async () => void saves.push(taken), onFailure: () => undefined });
  checkpoints.poll();
  assert.deepEqual(saves, [500], 'the tail of 13 commands (every/8 is 12.5) is saved at once');
  await new Promise((resolve) => setImmediate(resolve)); // that save settled
  taken = 599;
  checkpoints.poll();
  assert.deepEqual(saves, [500], 'then counted from that save');
  taken = 600;
  checkpoints.poll();
  assert.deepEqual(saves, [500, 600]);
  const none = new KeyFilterCheckpoints({ every: 0, taken: () => taken, uncovered: 5_000, save: async () => void saves.push(-1), onFailure: () => undefined });
  none.poll();
  assert.deepEqual(saves, [500, 600], 'every = 0: never, whatever the start left');
});

test('KeyFilterCheckpoints: a save every `every` commands taken (counting what the start left uncovered), one at a time, retried after a failure, none after close', async () => {
  let taken = 1000;
  const saves: { resolve: () => void; reject: (error: Error) => void }[] = [];
  const failures: string[] = [];
  const checkpoints = new KeyFilterCheckpoints({
    every: 100,
    taken: () => taken,
    uncovered: 12, // the tail the start read, under every/8: 88 more commands make a save
    save: () => new Promise<void>((resolve, reject) => saves.push({ resolve, reject })),
    onFailure: (error) => failures.push(error.message),
  });
  const settle = () => new Promise((resolve) => setImmediate(resolve));
  taken = 1087;
  checkpoints.poll();
  assert.equal(saves.length, 0, '99 uncovered commands: no save');
  taken = 1088;
  checkpoints.poll();
  assert.equal(saves.length, 1);
  taken = 1500;
  checkpoints.poll();
  assert.equal(saves.length, 1, 'one save at a time');
  saves[0]!.reject(new Error('disk full'));
  await settle();
  assert.deepEqual(failures, ['disk full']);
  checkpoints.poll();
  assert.equal(saves.length, 2, 'the next poll tries again (412 commands since the last save began)');
  saves[1]!.resolve();
  await settle();
  taken = 1599;
  checkpoints.poll();
  assert.equal(saves.length, 2, 'counted from where the last save began');
  taken = 1600;
  checkpoints.poll();
  assert.equal(saves.length, 3);
  let closed = false;
  const closing = checkpoints.close().then(() => (closed = true));
  await settle();
  assert.equal(closed, false, 'close waits for the save in flight');
  saves[2]!.resolve();
  await closing;
  taken = 5000;
  checkpoints.poll();
  assert.equal(saves.length, 3, 'no save after close');
});
