// Fills from storage (persistence/market-data.ts readFills, for what the in-memory model
// does not hold: persistence/own-reads.ts) on a real PostgreSQL: the executions of the
// principal's participants, most recent first (shard, then sequence descending, break
// ties), each with its order's side, equal to a plain sort of every row; each row's order
// is looked up by its primary key after the LIMIT (EXPLAIN ANALYZE's actual row counts),
// not joined before it.

import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type pg from 'pg';
import { fillsQuery, readFills } from '../../persistence/market-data.ts';
import { migratedDatabase, rowsRead, type TestDatabase, withClient } from '../support/database.ts';

const A = 'a1000000-0000-4000-8000-00000000000a';
const B = 'b1000000-0000-4000-8000-00000000000b';
const C = 'c1000000-0000-4000-8000-00000000000c';
const INSTRUMENTS = ['10000000-0000-4000-8000-000000000001', '10000000-0000-4000-8000-000000000002', '10000000-0000-4000-8000-000000000003'];
/** Orders of A, B and C; each order filled twice (two executions). */
const ORDERS = { [A]: 10_000, [B]: 250, [C]: 2_500 } as const;

let database: TestDatabase;
let url: string;

before(async () => {
  ({ database, url } = await migratedDatabase());
  await withClient(url, async (client) => {
    let offset = 0;
    for (const [participant, count] of Object.entries(ORDERS)) {
      await client.query(
        `INSERT INTO runtime.order_lifecycle_state (order_id, run_id, venue_session_id, instrument_id, participant_id, account_id, side, order_type, time_in_force, state,
           limit_price_nanos, currency, original_quantity_units, remaining_quantity_units, filled_quantity_units, engine_order_id, shard_id, last_sequence, created_at, updated_at)
         SELECT md5('order' || (g + $3))::uuid, 'r', 's', ($4::uuid[])[1 + g % 3], $1, $1, CASE WHEN g % 2 = 0 THEN 'BUY' ELSE 'SELL' END, 'LIMIT', 'DAY', 'FILLED',
                100, 'USD', 10, 0, 10, '0-' || g, g % 2, g + $3, timestamptz '2026-11-23 10:00:00+00', timestamptz '2026-11-23 10:00:00+00'
           FROM generate_series(1, $2::int) g`,
        [participant, count, offset, INSTRUMENTS],
      );
      // Two executions per order, on the order's shard (g % 2); orders 2m and 2m + 1 fill
      // at the same times, on both shards, and times repeat every 3,000 orders on one
      // shard: ties are broken by shard, then sequence descending. Sequences are not in
      // time order.
      await client.query(
        `INSERT INTO runtime.executions (execution_id, shard_id, stream_sequence, command_id, trade_id, order_id, counterparty_order_id, instrument_id,
           participant_id, account_id, side, liquidity, quantity_units, price_nanos, currency, occurred_at)
         SELECT md5('execution' || (g + $3) || '/' || k)::uuid, g % 2, 2 * (g + $3) + k, md5('command' || (g + $3))::uuid, md5('trade' || (g + $3) || '/' || k)::uuid,
                md5('order' || (g + $3))::uuid, md5('other' || g)::uuid, ($4::uuid[])[1 + g % 3], $1, $1, 'BUY', 'MAKER', 1 + k, 100 + g, 'USD',
                timestamptz '2026-11-23 10:00:00+00' + ((((g / 2) * 7919) % 3000) + k * 500) * interval '1 millisecond'
           FROM generate_series(1, $2::int) g, generate_series(0, 1) k`,
        [participant, count, offset, INSTRUMENTS],
      );
      offset += count;
    }
    await client.query('ANALYZE runtime.executions');
    await client.query('ANALYZE runtime.order_lifecycle_state');
  });
});

after(async () => {
  await database.remove();
});

/** The oracle: every execution of the participants sorted, then cut. */
async function sortedAll(client: pg.ClientBase, participants: string[], instrumentId: string | null, limit: number): Promise<string[]> {
  const rows = await client.query<{ execution_id: string }>(
    `SELECT execution_id FROM runtime.executions
      WHERE participant_id = ANY($1::uuid[]) AND ($2::uuid IS NULL OR instrument_id = $2)
      ORDER BY occurred_at DESC, shard_id, stream_sequence DESC LIMIT $3`,
    [participants, instrumentId, limit],
  );
  return rows.rows.map((row) => row.execution_id);
}

const CASES: Array<{ participants: string[]; instrumentId: string | null; limit: number }> = [
  { participants: [A], instrumentId: null, limit: 100 },
  { participants: [A, B], instrumentId: null, limit: 1000 },
  { participants: [C, A], instrumentId: null, limit: 250 },
  { participants: [A, B], instrumentId: INSTRUMENTS[1]!, limit: 50 },
  { participants: [A], instrumentId: INSTRUMENTS[2]!, limit: 7 },
  { participants: [B], instrumentId: null, limit: 1000 }, // fewer than the limit
];

test("fills: most recent first (ties by shard, then sequence descending), only the given participants, each with its order's side, equal to a sort of every row", async () => {
  await withClient(url, async (client) => {
    for (const c of CASES) {
      const answer = await readFills(client, c.participants, c.instrumentId, c.limit);
      assert.equal(answer.ok, true);
      const rows = JSON.parse(answer.body as string).rows as Array<{ executionId: string; orderId: string; instrumentId: string; side: string; quantity: { units: string } }>;
      const expected = await sortedAll(client, c.participants, c.instrumentId, c.limit);
      assert.equal(rows.length, Math.min(c.limit, expected.length), JSON.stringify(c));
      assert.deepEqual(
        rows.map((row) => row.executionId),
        expected,
        JSON.stringify(c),
      );
      const orders = new Map(
        (await client.query('SELECT order_id, participant_id, side FROM runtime.order_lifecycle_state WHERE order_id = ANY($1::uuid[])', [rows.map((row) => row.orderId)])).rows.map((order) => [
          order.order_id,
          order,
        ]),
      );
      for (const row of rows) {
        const order = orders.get(row.orderId);
        assert.ok(order !== undefined && c.participants.includes(order.participant_id), "another participant's fill");
        assert.equal(row.side, order.side);
        if (c.instrumentId !== null) assert.equal(row.instrumentId, c.instrumentId);
      }
    }
    // A participant named twice is read once.
    const twice = await readFills(client, [A, A], null, 300);
    assert.deepEqual(
      JSON.parse(twice.body as string).rows.map((row: { executionId: string }) => row.executionId),
      await sortedAll(client, [A], null, 300),
    );
  });
});

test('fills: a read looks up one order per row it returns, not every order', async () => {
  await withClient(url, async (client) => {
    for (const c of CASES) {
      const read = await rowsRead(client, fillsQuery(c.instrumentId !== null), c.instrumentId === null ? [c.participants, c.limit] : [c.participants, c.limit, c.instrumentId]);
      const touched = { orders: read.get('order_lifecycle_state') ?? 0 };
      // One order looked up per row returned (12,750 orders in the table).
      assert.ok(touched.orders <= c.limit, `${JSON.stringify(c)}: ${touched.orders} orders touched (bound ${c.limit})`);
    }
  });
});
