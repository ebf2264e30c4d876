// Settlement reads (persistence/settlement-store.ts settlementRead) keep replayed runs and
// bring them up to date with the facts appended since: every answer must equal the view
// of a full replay of the trail stored at that moment, after appends, while reads of the
// same run overlap, across runs, and the kept runs stay within their bound.

import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, test } from 'node:test';
import pg from 'pg';
import type { SettlementRead } from '../../core/storage-protocol.ts';
import { replay } from '../../core/settlement/state.ts';
import { obligationsView, proofView } from '../../core/settlement/views.ts';
import { loadFacts, readCacheSize, settlementAdmin, settlementRead } from '../../persistence/settlement-store.ts';
import { migratedDatabase, type TestDatabase, withClient } from '../support/database.ts';

let database: TestDatabase;
let pool: pg.Pool;

/** `count` trades of run `runId` between a few participants. */
async function trades(client: pg.ClientBase, runId: string, count: number): Promise<void> {
  await client.query(
    `INSERT INTO runtime.trades (trade_id, shard_id, stream_sequence, command_id, execution_id, run_id, venue_session_id, instrument_id, buy_order_id, sell_order_id,
       buy_participant_id, buy_account_id, sell_participant_id, sell_account_id, aggressor_side, quantity_units, price_nanos, currency, occurred_at)
     SELECT gen_random_uuid(), 0, g + (SELECT count(*) FROM runtime.trades), gen_random_uuid(), gen_random_uuid(), $1, 's', '10000000-0000-4000-8000-000000000001',
            gen_random_uuid(), gen_random_uuid(), md5('p' || g % 3)::uuid, md5('p' || g % 3)::uuid, md5('q' || g % 2)::uuid, md5('q' || g % 2)::uuid, 'BUY',
            1 + g % 7, 100000000000 + (g % 50) * 1000000, 'USD', timestamptz '2026-11-23 10:00:00+00' + g * interval '1 ms'
       FROM generate_series(1, $2::int) g`,
    [runId, count],
  );
}

before(async () => {
  const fixture = await migratedDatabase();
  database = fixture.database;
  const url = fixture.url;
  await withClient(url, async (client) => {
    await trades(client, 'run-1', 300);
    for (let k = 0; k < 10; k++) await trades(client, `other-${k}`, 5);
  });
  pool = new pg.Pool({ connectionString: url, max: 4 });
  pool.on('error', () => undefined); // as the read thread's pool: an idle connection the server ends is replaced, not fatal
  const materialized = await settlementAdmin(pool, { action: 'materialize', scenarioRunId: 'run-1', profile: null });
  assert.equal(materialized.ok, true, JSON.stringify(materialized.error));
});

after(async () => {
  await pool.end();
  await database.remove();
});

const read = (view: SettlementRead['view'], scenarioRunId = 'run-1') => settlementRead(pool, { view, scenarioRunId, participants: null, asOfUs: null, agedFailAfterSeconds: 60 }, '');

/** What a read must answer: the view of a full replay of the facts stored now. */
async function fresh(view: 'proof' | 'obligations', scenarioRunId = 'run-1'): Promise<string> {
  const state = replay(scenarioRunId, await loadFacts(pool as unknown as pg.ClientBase, scenarioRunId));
  return JSON.stringify(view === 'proof' ? proofView(state, null) : obligationsView(state, null));
}

/** Appends one operator fact (a type the venue keeps and counts) to the run. */
async function note(scenarioRunId = 'run-1'): Promise<void> {
  const answer = await settlementAdmin(pool, {
    action: 'facts',
    scenarioRunId,
    facts: [{ factId: randomUUID(), factType: 'SettlementOperatorNote', occurredAtUs: 1_795_413_600_000_000, causationId: null, payload: { text: 'checked' } }],
  });
  assert.equal(answer.ok, true, JSON.stringify(answer.error));
}

test('a settlement read equals a full replay, also after facts are appended since the last read of the run', async () => {
  const first = await read('proof');
  assert.equal(first.ok, true);
  assert.equal(first.body, await fresh('proof'));
  assert.equal((await read('obligations')).body, await fresh('obligations'));
  const before = JSON.parse(first.body) as { checksum: string; factCounts: Record<string, number> };
  assert.equal(before.factCounts.SettlementOperatorNote, undefined);

  await note();
  await note();
  const second = await read('proof');
  assert.equal(second.body, await fresh('proof'), 'the kept run took the two new facts');
  const after = JSON.parse(second.body) as { checksum: string; factCounts: Record<string, number> };
  assert.equal(after.factCounts.SettlementOperatorNote, 2);
  assert.notEqual(after.checksum, before.checksum);
  assert.equal((await read('obligations')).body, await fresh('obligations'));
});

test('overlapping reads of one run while facts are appended: every answer is a replay of some stored trail, the last one of all of it', async () => {
  const answers: string[] = [];
  for (let round = 0; round < 5; round++) {
    const batch = await Promise.all([read('proof'), read('proof'), note(), read('proof')]);
    for (const answer of batch) if (answer !== undefined) answers.push(answer.body);
  }
  // Each answer is the proof of the trail before or after one of the five appends, never a
  // mix (a fact applied twice, or one missing, gives a proof no stored trail has).
  const all = await loadFacts(pool as unknown as pg.ClientBase, 'run-1');
  const prefixes = new Set<string>();
  for (let end = all.length - 5; end <= all.length; end++) prefixes.add(JSON.stringify(proofView(replay('run-1', all.slice(0, end)), null)));
  for (const answer of answers) assert.ok(prefixes.has(answer), "an answer that is no stored trail's proof");
  assert.equal((await read('proof')).body, await fresh('proof'));
});

test('reads of run names with no facts take no place from the runs kept', async () => {
  await read('proof');
  const before = readCacheSize();
  assert.ok(before.names.includes('run-1'));
  for (let k = 0; k < 20; k++) {
    const answer = await read('proof', `made-up-${k}`);
    assert.equal(answer.ok, true);
    assert.deepEqual(JSON.parse(answer.body).tradeIds, []);
  }
  assert.deepEqual(readCacheSize(), before, 'the made-up names evicted nothing and were not kept');
});

test('the reads keep at most 8 runs', async () => {
  for (let k = 0; k < 10; k++) {
    const materialized = await settlementAdmin(pool, { action: 'materialize', scenarioRunId: `other-${k}`, profile: null });
    assert.equal(materialized.ok, true, JSON.stringify(materialized.error));
    assert.equal((await read('obligations', `other-${k}`)).body, await fresh('obligations', `other-${k}`));
  }
  const kept = readCacheSize();
  assert.ok(kept.runs <= 8, `${kept.runs} runs kept`);
  assert.ok(kept.runs >= 1);
  // An evicted run is replayed again, and still right.
  assert.equal((await read('proof', 'other-0')).body, await fresh('proof', 'other-0'));
  assert.equal((await read('proof')).body, await fresh('proof'));
});
