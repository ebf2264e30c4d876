// Own-order reads from storage (persistence/market-data.ts readOwnOrders, for what the
// in-memory model does not hold: persistence/own-reads.ts) on a real PostgreSQL: the
// rows of the principal's participants, most recently updated first (order_id breaks
// ties), equal to a plain sort of every row.

import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type pg from 'pg';
import { readOwnOrders } from '../../persistence/market-data.ts';
import { migratedDatabase, type TestDatabase, withClient } from '../support/database.ts';

const A = 'a1000000-0000-4000-8000-00000000000a';
const B = 'b1000000-0000-4000-8000-00000000000b';
const C = 'c1000000-0000-4000-8000-00000000000c';
const INSTRUMENTS = ['10000000-0000-4000-8000-000000000001', '10000000-0000-4000-8000-000000000002', '10000000-0000-4000-8000-000000000003'];

let database: TestDatabase;
let url: string;

before(async () => {
  ({ database, url } = await migratedDatabase());
  await withClient(url, async (client) => {
    // A: 20,000 orders (one in ten open), B: 500, C: 5,000; update times repeat (ties).
    for (const [participant, count, offset] of [
      [A, 20_000, 0],
      [B, 500, 20_000],
      [C, 5_000, 20_500],
    ] as const) {
      await client.query(
        `INSERT INTO runtime.order_lifecycle_state (order_id, run_id, venue_session_id, instrument_id, participant_id, account_id, side, order_type, time_in_force, state,
           limit_price_nanos, currency, original_quantity_units, remaining_quantity_units, filled_quantity_units, engine_order_id, shard_id, last_sequence, created_at, updated_at)
         SELECT md5('order' || (g + $3))::uuid, 'r', 's', ($4::uuid[])[1 + g % 3], $1, $1, 'BUY', 'LIMIT', 'DAY',
                CASE WHEN g % 10 = 0 THEN 'OPEN' WHEN g % 10 = 1 THEN 'PARTIALLY_FILLED' ELSE 'FILLED' END,
                100, 'USD', 10, CASE WHEN g % 10 = 0 THEN 10 WHEN g % 10 = 1 THEN 4 ELSE 0 END, CASE WHEN g % 10 = 0 THEN 0 WHEN g % 10 = 1 THEN 6 ELSE 10 END,
                '0-' || g, 0, g + $3, timestamptz '2026-11-23 10:00:00+00', timestamptz '2026-11-23 10:00:00+00' + ((g * 7919) % 5000) * interval '1 millisecond'
           FROM generate_series(1, $2::int) g`,
        [participant, count, offset, INSTRUMENTS],
      );
    }
    await client.query('ANALYZE runtime.order_lifecycle_state');
  });
});

after(async () => {
  await database.remove();
});

/** The oracle: every row of the participants sorted, then cut. */
async function sortedAll(client: pg.ClientBase, view: 'current' | 'history', participants: string[], instrumentId: string | null, limit: number): Promise<string[]> {
  const rows = await client.query<{ order_id: string }>(
    `SELECT order_id FROM runtime.order_lifecycle_state
      WHERE participant_id = ANY($1::uuid[]) AND ($2::uuid IS NULL OR instrument_id = $2) ${view === 'current' ? "AND state IN ('OPEN', 'PARTIALLY_FILLED')" : ''}
      ORDER BY updated_at DESC, order_id LIMIT $3`,
    [participants, instrumentId, limit],
  );
  return rows.rows.map((row) => row.order_id);
}

const CASES: Array<{ view: 'current' | 'history'; participants: string[]; instrumentId: string | null; limit: number }> = [
  { view: 'history', participants: [A], instrumentId: null, limit: 100 },
  { view: 'current', participants: [A], instrumentId: null, limit: 100 },
  { view: 'history', participants: [A, B], instrumentId: null, limit: 1000 },
  { view: 'current', participants: [B, A], instrumentId: null, limit: 1000 },
  { view: 'history', participants: [A, B], instrumentId: INSTRUMENTS[1]!, limit: 50 },
  { view: 'current', participants: [A], instrumentId: INSTRUMENTS[2]!, limit: 7 },
  { view: 'history', participants: [B], instrumentId: null, limit: 1000 }, // fewer than the limit
];

test('own orders: most recently updated first (ties by orderId), only the given participants, equal to a sort of every row', async () => {
  await withClient(url, async (client) => {
    for (const c of CASES) {
      const answer = await readOwnOrders(client, c.view, c.participants, c.instrumentId, c.limit);
      assert.equal(answer.ok, true);
      const rows = JSON.parse(answer.body as string).rows as Array<{ orderId: string; participantId: string; state: string; instrumentId: string }>;
      const expected = await sortedAll(client, c.view, c.participants, c.instrumentId, c.limit);
      assert.equal(rows.length, Math.min(c.limit, expected.length), JSON.stringify(c));
      assert.deepEqual(
        rows.map((row) => row.orderId),
        expected,
        JSON.stringify(c),
      );
      for (const row of rows) {
        assert.ok(c.participants.includes(row.participantId), "another participant's order");
        if (c.view === 'current') assert.match(row.state, /^(OPEN|PARTIALLY_FILLED)$/);
        if (c.instrumentId !== null) assert.equal(row.instrumentId, c.instrumentId);
      }
    }
    // A participant named twice is read once.
    const twice = await readOwnOrders(client, 'history', [A, A], null, 300);
    assert.deepEqual(
      JSON.parse(twice.body as string).rows.map((row: { orderId: string }) => row.orderId),
      await sortedAll(client, 'history', [A], null, 300),
    );
  });
});
