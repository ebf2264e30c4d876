// The settlement pool (persistence/settlement-pool.ts) over real PostgreSQL and real piscina
// threads running the built worker entry, as the read thread starts it: the work runs on
// the pool's thread (its task count rises, its thread and read cache are not the caller's),
// every view of a realistic run (the instant chain, cash breaks and a repair, a clearing
// rejection settled by force, a reversal) equals what the store answers in the caller's
// thread, a full queue answers OVERLOADED, and a failing task rejects without taking the
// pool down.

import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { threadId } from 'node:worker_threads';
import { after, before, test } from 'node:test';
import pg from 'pg';
import type { ReadPlaneAnswer, SettlementAdmin, SettlementRead } from '../../core/storage-protocol.ts';
import { FACT, PROFILE_INSTANT } from '../../core/settlement/facts.ts';
import { readCacheSize, settlementRead } from '../../persistence/settlement-store.ts';
import { SettlementPool } from '../../persistence/settlement-pool.ts';
import { WORKER_ENTRIES } from '../../runtime/venue.ts';
import { buildWorkers } from '../../runtime/worker-build.ts';
import { WORKER_BOOTSTRAP } from '../../runtime/worker-spawn.ts';
import { migratedDatabase, type TestDatabase, withClient } from '../support/database.ts';

const RUN = 'pool-run-1';
const AT_US = 1_795_413_600_000_000;
let database: TestDatabase;
let url: string;
let local: pg.Pool;
let entryUrl: string;
const pools: SettlementPool[] = [];

function startPool(options: { maxQueue?: number; databaseUrl?: string } = {}): SettlementPool {
  const pool = new SettlementPool({ databaseUrl: options.databaseUrl ?? url, bootstrap: WORKER_BOOTSTRAP.href, entryUrl, threads: 1, maxQueue: options.maxQueue ?? 64 });
  pools.push(pool);
  return pool;
}

/** A 200's body as text: a read's comes from the pool as UTF-8 bytes. */
const body = (answer: ReadPlaneAnswer): string => {
  assert.equal(answer.ok, true, JSON.stringify(answer.error));
  return typeof answer.body === 'string' ? answer.body : new TextDecoder().decode(answer.body!);
};
const fact = (factType: string, payload: Record<string, unknown>) => ({ factId: randomUUID(), factType, occurredAtUs: AT_US, causationId: null, payload });

before(async () => {
  const fixture = await migratedDatabase();
  database = fixture.database;
  url = fixture.url;
  await withClient(url, (client) =>
    client.query(
      `INSERT INTO runtime.trades (trade_id, shard_id, stream_sequence, command_id, execution_id, run_id, venue_session_id, instrument_id, buy_order_id, sell_order_id,
         buy_participant_id, buy_account_id, sell_participant_id, sell_account_id, aggressor_side, quantity_units, price_nanos, currency, occurred_at)
       SELECT gen_random_uuid(), 0, g, gen_random_uuid(), gen_random_uuid(), $1, 's', '10000000-0000-4000-8000-000000000001',
              gen_random_uuid(), gen_random_uuid(), md5('p' || g % 3)::uuid, md5('p' || g % 3)::uuid, md5('q' || g % 2)::uuid, md5('q' || g % 2)::uuid, 'BUY',
              1 + g % 7, 100000000000 + (g % 50) * 1000000, 'USD', timestamptz '2026-11-23 10:00:00+00' + g * interval '1 ms'
         FROM generate_series(1, 400) g`,
      [RUN],
    ),
  );
  local = new pg.Pool({ connectionString: url, max: 2 });
  local.on('error', () => undefined);
  entryUrl = (await buildWorkers([WORKER_ENTRIES.settlement])).get(WORKER_ENTRIES.settlement.href)!.href;
});

after(async () => {
  await Promise.all(pools.map((pool) => pool.destroy()));
  await local.end();
  await database.remove();
});

test('a realistic run built and read through the pool: the work runs on its thread and every view equals the store answering in this thread', async () => {
  const pool = startPool();
  const before = pool.completed;
  const { rows } = await local.query<{ trade_id: string; buy_participant_id: string; buy_account_id: string }>(
    'SELECT trade_id, buy_participant_id, buy_account_id FROM runtime.trades WHERE run_id = $1 ORDER BY stream_sequence',
    [RUN],
  );
  const broke = rows[0]!; // its buyer has no cash: every trade it buys breaks on the cash leg
  const rejected = rows.find((row) => row.buy_participant_id !== broke.buy_participant_id)!;
  const admin = (request: SettlementAdmin) =>
    pool
      .admin(request)
      .then(body)
      .then((text) => JSON.parse(text));
  await admin({
    action: 'facts',
    scenarioRunId: RUN,
    facts: [
      fact(FACT.RESOURCE_POSITION_SEEDED, { participantId: broke.buy_participant_id, accountId: broke.buy_account_id, assetType: 'CASH', asset: 'USD', amount: '0' }),
      fact(FACT.FAILURE_INJECTED, { tradeId: rejected.trade_id, step: 'CLEARING' }),
    ],
  });
  const made = await admin({ action: 'materialize', scenarioRunId: RUN, profile: PROFILE_INSTANT });
  assert.equal(made.obligations, 400);
  assert.ok(made.factsAppended > 400 * 10, `${made.factsAppended} facts`);

  const read = (view: SettlementRead['view'], participants: string[] | null = null): SettlementRead => ({
    view,
    scenarioRunId: RUN,
    participants,
    asOfUs: AT_US + 7_200_000_000,
    agedFailAfterSeconds: 60,
  });
  const exceptions = JSON.parse(body(await pool.read(read('exceptions'), 'cup'))) as { exceptions: { obligationId: string; exceptionType: string }[] };
  const cashBreak = exceptions.exceptions.find((e) => e.exceptionType === 'CASH_LEG_BREAK')!;
  const clearing = exceptions.exceptions.find((e) => e.exceptionType === 'CLEARING_REJECTED')!;
  assert.ok(cashBreak !== undefined && clearing !== undefined, 'the run has a cash break and a clearing rejection');
  assert.equal(
    (await admin({ action: 'repair-cash', scenarioRunId: RUN, obligationId: cashBreak.obligationId, amountNanos: '100000000000000', currency: 'USD' })).state,
    'RESOLVED',
    'settled, its break resolved',
  );
  assert.equal(
    (await admin({ action: 'force-settle', scenarioRunId: RUN, obligationId: clearing.obligationId, reason: 'agreed bilaterally' })).state,
    'RESOLVED',
    'settled by force, its rejection resolved',
  );
  const ledger = JSON.parse(body(await pool.read(read('ledger'), 'cup'))) as { entries: { ledgerEntryId: string }[] };
  await admin({ action: 'reverse-ledger-entry', scenarioRunId: RUN, ledgerEntryId: ledger.entries[0]!.ledgerEntryId, reason: 'booked twice' });

  // The pool's thread did the work and keeps the run replayed; this thread replayed nothing.
  const probe = await pool.probe();
  assert.notEqual(probe.threadId, threadId);
  assert.ok(probe.cachedRuns.includes(RUN));
  assert.ok(!readCacheSize().names.includes(RUN), "the caller's thread replayed the run");
  assert.equal(pool.completed - before, 7 + 1, 'each request (and the probe) was one task of the pool');

  // Every view, for the operator and for a trader, equals the store's answer computed here.
  const trader = [broke.buy_participant_id];
  const views: SettlementRead['view'][] = ['facts', 'obligations', 'ledger', 'exceptions', 'proof', 'score', 'leaderboard'];
  for (const view of views) {
    for (const participants of view === 'leaderboard' ? [null] : [null, trader]) {
      const pooled = await pool.read(read(view, participants), 'cup');
      const here = await settlementRead(local, read(view, participants), 'cup');
      assert.ok(pooled.body instanceof Uint8Array, "a read's answer is moved as bytes");
      assert.equal(body(pooled), body(here), `${view} for ${participants === null ? 'the operator' : 'a trader'}`);
    }
  }
  const proof = JSON.parse(body(await pool.read(read('proof'), 'cup'))) as { status: string; checksum: string; settlementProofRows: { finality: string | null }[] };
  assert.equal(proof.status, 'GAPPED', 'a forced settlement is no valid proof');
  assert.match(proof.checksum, /^[0-9a-f]{64}$/);
  assert.ok(proof.settlementProofRows.some((row) => row.finality === 'LEDGER_PROOF'));
});

test('past SETTLEMENT_QUEUE waiting requests the pool answers OVERLOADED; the others are answered in full', async () => {
  const pool = startPool({ maxQueue: 1 });
  await pool.probe(); // its thread is up: one request runs, one waits, the rest find the queue full
  const request: SettlementRead = { view: 'facts', scenarioRunId: RUN, participants: null, asOfUs: null, agedFailAfterSeconds: 60 };
  const answers = await Promise.all(Array.from({ length: 4 }, () => pool.read(request, '')));
  const overloaded = answers.filter((answer) => !answer.ok);
  assert.equal(overloaded.length, 2, JSON.stringify(answers.map((answer) => answer.error)));
  for (const answer of overloaded) assert.equal(answer.error!.code, 'OVERLOADED');
  const expected = body(await settlementRead(local, request, ''));
  for (const answer of answers.filter((a) => a.ok)) assert.equal(body(answer), expected);
  assert.equal(body(await pool.read(request, '')), expected, 'a request after the flood is answered');
});

test('a task that fails rejects its request; the pool answers the next one', async () => {
  const pool = startPool({ databaseUrl: url.replace(/\/[^/?]+(\?|$)/, '/no_such_database$1') });
  const request: SettlementRead = { view: 'proof', scenarioRunId: RUN, participants: null, asOfUs: null, agedFailAfterSeconds: 60 };
  await assert.rejects(pool.read(request, ''), /no_such_database/);
  await assert.rejects(pool.read(request, ''), /no_such_database/);
  const probe = await pool.probe();
  assert.notEqual(probe.threadId, threadId);
  assert.equal(pool.threads, 1);
});
