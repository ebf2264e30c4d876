// The persistence thread's displayed books (persistence/book-model.ts): after any
// sequence of level changes, the depth it returns and publishes is the one a full sort
// of the open levels gives. Its sides are kept sorted incrementally, so the test drives
// levels in and out of existence, on both sides, around and far from the best prices.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { DepthView } from '../../core/market-view.ts';
import { BookModel, type DepthLevel } from '../../persistence/book-model.ts';
import type { BookUpdate } from '../../persistence/projector.ts';
import { uuidWords } from '../../core/uuid.ts';
import { SeededRandom } from '../../bench/lib/seeded-random.ts';
import { migratedDatabase, withClient } from '../support/database.ts';

const A = '0a0a0a0a-0000-4000-8000-00000000000a';
const B = '0b0b0b0b-0000-4000-8000-00000000000b';

type Reference = Map<string, Map<number, { quantity: bigint; count: number }>>;

function expectedDepth(reference: Reference, key: string, descending: boolean, levels: number): DepthLevel[] {
  const side = reference.get(key) ?? new Map();
  return [...side.entries()]
    .sort(([a], [b]) => (descending ? b - a : a - b))
    .slice(0, levels)
    .map(([priceNanos, level]) => ({ priceNanos, quantity: level.quantity, count: level.count }));
}

test('depth equals a full sort of the open levels after random level changes on both sides', () => {
  for (const seed of [1, 2, 3]) {
    const random = new SeededRandom(seed);
    const next = () => random.nextUint32() / 2 ** 32;
    const model = new BookModel(2);
    const reference: Reference = new Map();
    const orders: { id: string; side: string; price: number; quantity: number }[] = [];
    let sequence = 0;
    model.apply({
      instruments: [
        [A, 'USD', 0],
        [B, 'EUR', 1],
      ],
      levels: [],
      watermarks: [[0, ++sequence]],
    });
    for (let step = 0; step < 3000; step++) {
      const levels: BookUpdate['levels'] = [];
      const changes = 1 + Math.floor(next() * 4);
      for (let c = 0; c < changes; c++) {
        const cancel = orders.length > 0 && next() < 0.4;
        let order;
        if (cancel) {
          order = orders.splice(Math.floor(next() * orders.length), 1)[0]!;
          levels.push([order.id, order.side, order.price, -order.quantity, -1]);
        } else {
          const side = next() < 0.5 ? 'BUY' : 'SELL';
          // Mostly near the touch, sometimes far away: levels appear and go at every rank.
          const ticks = next() < 0.9 ? Math.floor(next() * 80) : Math.floor(next() * 5000);
          const price = side === 'BUY' ? 100_000_000_000 - ticks * 10_000_000 : 100_010_000_000 + ticks * 10_000_000;
          order = { id: next() < 0.5 ? A : B, side, price, quantity: 1 + Math.floor(next() * 1000) };
          orders.push(order);
          levels.push([order.id, order.side, order.price, order.quantity, 1]);
        }
        const key = `${order.id}/${order.side}`;
        const side = reference.get(key) ?? new Map();
        reference.set(key, side);
        const level = side.get(order.price) ?? { quantity: 0n, count: 0 };
        level.quantity += BigInt(cancel ? -order.quantity : order.quantity);
        level.count += cancel ? -1 : 1;
        if (level.count === 0) side.delete(order.price);
        else side.set(order.price, level);
      }
      model.apply({ instruments: [], levels, watermarks: [[step % 2, ++sequence]] });
      if (step % 97 === 0 || step === 2999) {
        for (const id of [A, B]) {
          for (const shown of [1, 5, 50]) {
            const depth = model.depth(id, shown)!;
            assert.deepEqual(depth.bids, expectedDepth(reference, `${id}/BUY`, true, shown), `seed ${seed} step ${step} ${id} bids`);
            assert.deepEqual(depth.asks, expectedDepth(reference, `${id}/SELL`, false, shown), `seed ${seed} step ${step} ${id} asks`);
          }
        }
      }
    }
    assert.ok(reference.get(`${A}/BUY`)!.size > 80, 'the books grew wide enough to test deep ranks');
    // What the gateways read is the same depth.
    const view = new DepthView(DepthView.create(8));
    assert.equal(model.publish(view, null, model.watermarkEntries()), true);
    const read = view.read(uuidWords(A), 50)!;
    assert.deepEqual(read.bids, expectedDepth(reference, `${A}/BUY`, true, 50));
    assert.deepEqual(read.asks, expectedDepth(reference, `${A}/SELL`, false, 50));
    // Each whole side's open quantity (the snapshot's), every level and not only the best 50.
    const whole = (key: string) => [...(reference.get(key)?.values() ?? [])].reduce((sum, level) => sum + level.quantity, 0n);
    for (const id of [A, B]) assert.deepEqual(view.read(uuidWords(id), 1)!.open, { bid: whole(`${id}/BUY`), ask: whole(`${id}/SELL`) }, `seed ${seed} ${id} open`);
    assert.equal(view.watermark(0), model.watermark(0));
  }
});

test('a level that empties is gone from the depth, and one that comes back takes its rank again', () => {
  const model = new BookModel(1);
  const p = (ticks: number) => 100_000_000_000 + ticks * 10_000_000;
  model.apply({
    instruments: [[A, 'USD', 0]],
    levels: [
      [A, 'SELL', p(3), 5, 1],
      [A, 'SELL', p(1), 7, 1],
      [A, 'SELL', p(2), 9, 2],
    ],
    watermarks: [[0, 1]],
  });
  assert.deepEqual(
    model.depth(A, 5)!.asks.map((l) => l.priceNanos),
    [p(1), p(2), p(3)],
  );
  model.apply({ instruments: [], levels: [[A, 'SELL', p(1), -7, -1]], watermarks: [[0, 2]] });
  assert.deepEqual(
    model.depth(A, 5)!.asks.map((l) => l.priceNanos),
    [p(2), p(3)],
  );
  model.apply({
    instruments: [],
    levels: [
      [A, 'SELL', p(1), 4, 1],
      [A, 'SELL', p(2), -3, -1],
    ],
    watermarks: [[0, 3]],
  });
  assert.deepEqual(model.depth(A, 5)!.asks, [
    { priceNanos: p(1), quantity: 4n, count: 1 },
    { priceNanos: p(2), quantity: 6n, count: 1 },
    { priceNanos: p(3), quantity: 5n, count: 1 },
  ]);
  // An update the model already holds (its watermark is not past the model's) changes nothing.
  model.apply({ instruments: [], levels: [[A, 'SELL', p(3), -5, -1]], watermarks: [[0, 3]] });
  assert.equal(model.depth(A, 5)!.asks.length, 3);
  assert.throws(() => model.apply({ instruments: [], levels: [[A, 'SELL', p(9), -1, -1]], watermarks: [[0, 4]] }), /went negative/);
});

test('loaded from storage, each side holds its open displayed quantity: every price, hidden and closed orders left out', async () => {
  const { database, url } = await migratedDatabase();
  try {
    await withClient(url, async (client) => {
      await client.query(`INSERT INTO runtime.instruments (instrument_id, currency, shard_id, first_sequence) VALUES ($1, 'USD', 0, 1), ($2, 'EUR', 1, 1)`, [A, B]);
      // 3,000 orders over both instruments: a tenth hidden, a fifth closed, 300 prices a side.
      await client.query(
        `INSERT INTO runtime.order_lifecycle_state (order_id, run_id, venue_session_id, instrument_id, participant_id, account_id, side, order_type, time_in_force, state,
           limit_price_nanos, currency, original_quantity_units, remaining_quantity_units, filled_quantity_units, engine_order_id, shard_id, last_sequence, created_at, updated_at)
         SELECT md5('o' || g)::uuid, 'r', 's', CASE WHEN g % 2 = 0 THEN $1::uuid ELSE $2::uuid END, $1, $1, CASE WHEN g % 4 < 2 THEN 'BUY' ELSE 'SELL' END,
                CASE WHEN g % 10 = 3 THEN 'LIMIT_HIDDEN' ELSE 'LIMIT' END, 'DAY', CASE WHEN g % 5 = 4 THEN 'FILLED' WHEN g % 7 = 0 THEN 'PARTIALLY_FILLED' ELSE 'OPEN' END,
                1000000000 + (g % 300) * 1000000, 'USD', 100, CASE WHEN g % 5 = 4 THEN 0 ELSE 1 + g % 97 END, 0, g::text, g % 2, g, now(), now()
           FROM generate_series(1, 3000) g`,
        [A, B],
      );
      const sums = await client.query<{ id: string; side: string; q: string }>(
        `SELECT instrument_id::text AS id, side, sum(remaining_quantity_units)::text AS q FROM runtime.order_lifecycle_state
          WHERE state IN ('OPEN', 'PARTIALLY_FILLED') AND order_type = 'LIMIT' GROUP BY 1, 2`,
      );
      const model = new BookModel(2);
      await model.load(client);
      const view = new DepthView(DepthView.create(8));
      assert.equal(model.publish(view, null, model.watermarkEntries()), true);
      for (const id of [A, B]) {
        const sum = (side: string) => BigInt(sums.rows.find((row) => row.id === id && row.side === side)?.q ?? '0');
        assert.ok(sum('BUY') > 0n && sum('SELL') > 0n);
        assert.deepEqual(view.read(uuidWords(id), 1)!.open, { bid: sum('BUY'), ask: sum('SELL') }, id);
      }
    });
  } finally {
    await database.remove();
  }
});
