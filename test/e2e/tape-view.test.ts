// The trade tape answered by the gateways from shared memory (core/tape-view.ts) over
// real HTTP: every page equal to what the storage query answers (the read thread's,
// persistence/market-data.ts readTape), pages within the view answered while
// runtime.trades is locked (no query), pages older than the view answered by storage;
// after a kill -9 and a start on the same database the view is loaded from storage, the
// next trades continue the sequence, and the identity column's sequence stays in step; a
// start whose view holds fewer instruments than storage leaves the others to storage.

import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import pg from 'pg';
import { readTape } from '../../persistence/market-data.ts';
import { TestDatabase } from '../support/database.ts';
import { submitBody, TOKENS, TRADER_B, stopAfter, VenueProcess } from '../support/venue-process.ts';

const T1 = '7a000000-0000-4000-8000-000000000001';
const T2 = '7a000000-0000-4000-8000-000000000002';
const ROWS = 8;
const B = { participantId: TRADER_B.participantId, accountId: TRADER_B.accountId };
let database: TestDatabase;
let url: string;
let dataDir: string;

before(async () => {
  database = await TestDatabase.start();
  url = await database.freshDatabase();
  dataDir = VenueProcess.makeDataDir();
});
after(async () => {
  await database.remove();
  VenueProcess.removeDataDir(dataDir);
});

const start = (env: Record<string, string> = {}) => VenueProcess.start({ DATABASE_URL: url, DATA_DIR: dataDir, MARKET_DATA_TAPE_ROWS: String(ROWS), ...env });

/** `count` trades on `instrument`: trader B rests a sell, trader A lifts it. */
async function trade(venue: VenueProcess, instrument: string, count: number, from = 100): Promise<void> {
  for (let k = 0; k < count; k++) {
    const price = String(from + k);
    const quantity = String(1 + (k % 3));
    const sell = await venue.order('/api/v1/orders/submit', submitBody({ instrumentId: instrument, side: 'SELL', price, quantity, ...B }), { token: TOKENS.traderB, mode: 'sync-result' });
    assert.equal(sell.status, 200, sell.text);
    const buy = await venue.order('/api/v1/orders/submit', submitBody({ instrumentId: instrument, side: 'BUY', price, quantity }), { mode: 'sync-result' });
    assert.equal(buy.status, 200, buy.text);
    assert.equal(buy.json.trades.length, 1, buy.text);
  }
}

const path = (instrument: string, limit: number, before: number | null) => `/api/v1/market-data/trades/${instrument}?limit=${limit}${before === null ? '' : `&before=${before}`}`;

/** Every page in a grid of limits and cursors: the HTTP answer equals storage's. Returns the instrument's sequences, newest first. */
async function assertEqualToStorage(venue: VenueProcess, client: pg.Client, instrument: string): Promise<number[]> {
  await venue.untilProjected(); // storage holds every trade made (the HTTP read waits for that itself)
  const all = JSON.parse((await readTape(client, instrument, 500, null)).body).rows.map((row: { sequence: number }) => row.sequence) as number[];
  const cursors = [null, all[0]! + 1, ...all, 1];
  for (const limit of [1, 3, ROWS - 1, ROWS, ROWS + 1, 100, 500]) {
    for (const before of cursors) {
      const answer = await venue.get(path(instrument, limit, before), TOKENS.viewer);
      assert.equal(answer.status, 200, answer.text);
      assert.deepEqual(answer.json, JSON.parse((await readTape(client, instrument, limit, before)).body), `limit ${limit}, before ${before}`);
    }
  }
  return all;
}

/**
 * With runtime.trades locked: a page the view holds is answered (no query). A page older
 * than the view waits for the lock and is then answered as storage has it, unless the
 * view holds the instrument's whole history (`whole`): then it is answered at once too.
 */
async function assertViewAnswersWithoutStorage(venue: VenueProcess, client: pg.Client, locker: pg.Client, instrument: string, whole: boolean): Promise<void> {
  const held = JSON.parse((await readTape(client, instrument, ROWS, null)).body);
  const older = JSON.parse((await readTape(client, instrument, ROWS + 1, null)).body);
  await locker.query('BEGIN');
  await locker.query('LOCK TABLE runtime.trades IN ACCESS EXCLUSIVE MODE');
  let waiting: Promise<{ status: number; json: unknown }> | undefined;
  try {
    const answer = await venue.get(path(instrument, ROWS, null), TOKENS.viewer);
    assert.equal(answer.status, 200, answer.text);
    assert.deepEqual(answer.json, held, 'answered from the view while storage is locked');
    let answered: string | null = null;
    waiting = venue.get(path(instrument, ROWS + 1, null), TOKENS.viewer).then((result) => {
      answered = `${result.status}`;
      return result;
    });
    await new Promise((resolve) => setTimeout(resolve, 700));
    if (whole) assert.equal(answered, '200', 'the whole history is in the view: answered from it');
    else assert.equal(answered, null, "a page older than the view is storage's: it waits for the lock");
  } finally {
    await locker.query('ROLLBACK');
  }
  const late = await waiting!;
  assert.equal(late.status, 200);
  assert.deepEqual(late.json, older);
}

test("tape pages from the view equal storage's, before and after a kill -9, a start that loads the view from storage, and one whose view holds fewer instruments", async () => {
  const client = new pg.Client({ connectionString: url });
  const locker = new pg.Client({ connectionString: url });
  let venue = await start();
  await stopAfter(
    () => venue,
    async () => {
      await client.connect();
      await locker.connect();
      await trade(venue, T1, 2 * ROWS + 3);
      await trade(venue, T2, 3, 50);
      const first = await assertEqualToStorage(venue, client, T1);
      assert.equal(first.length, 2 * ROWS + 3);
      const firstT2 = await assertEqualToStorage(venue, client, T2);
      assert.equal(firstT2.length, 3);
      // A fresh venue numbers its tape from 1, without gaps, across instruments.
      const all = [...first, ...firstT2].sort((a, b) => a - b);
      assert.deepEqual(
        all,
        Array.from({ length: all.length }, (_, k) => k + 1),
        'the tape numbered 1, 2, 3, … from the first trade',
      );
      await assertViewAnswersWithoutStorage(venue, client, locker, T1, false);
      assert.deepEqual((await venue.get(path('7a000000-0000-4000-8000-0000000000ff', 5, null), TOKENS.viewer)).json.rows, [], 'an instrument without trades');

      await venue.kill();
      venue = await start();
      assert.deepEqual(await assertEqualToStorage(venue, client, T1), first, 'loaded from storage: the same tape');
      await assertEqualToStorage(venue, client, T2);
      await assertViewAnswersWithoutStorage(venue, client, locker, T1, false);
      await assertViewAnswersWithoutStorage(venue, client, locker, T2, true);

      await trade(venue, T1, 2, 200);
      const next = await assertEqualToStorage(venue, client, T1);
      assert.deepEqual(next.slice(2), first);
      assert.deepEqual(next.slice(0, 2), [all.length + 2, all.length + 1], 'after the kill -9 the sequence goes on from the last one stored');
      const identity = await client.query<{ last: string; max: string }>(
        'SELECT (SELECT last_value FROM runtime.trades_tape_sequence_seq)::text AS last, (SELECT max(tape_sequence) FROM runtime.trades)::text AS max',
      );
      assert.deepEqual(identity.rows[0], { last: identity.rows[0]!.max, max: String(Math.max(...next)) }, "the identity column's sequence in step with the assigned ones");

      // A view that holds fewer instruments than storage has: the start loads the first (T1)
      // and marks the view full, so T2's tape is read from storage, not answered empty.
      assert.equal(await venue.stop(), 0);
      venue = await start({ MARKET_DATA_INSTRUMENTS: '1' });
      await assertEqualToStorage(venue, client, T1);
      await assertEqualToStorage(venue, client, T2);
      await assertViewAnswersWithoutStorage(venue, client, locker, T1, false);
    },
    {
      after: async () => {
        await client.end().catch(() => undefined);
        await locker.end().catch(() => undefined);
      },
    },
  );
});
