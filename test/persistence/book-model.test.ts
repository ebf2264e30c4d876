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
    model.apply({ instruments: [[A, 'USD', 0], [B, 'EUR', 1]], levels: [], watermarks: [[0, ++sequence]] });
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
    assert.equal(view.watermark(0), model.watermark(0));
  }
});

test('a level that empties is gone from the depth, and one that comes back takes its rank again', () => {
  const model = new BookModel(1);
  const p = (ticks: number) => 100_000_000_000 + ticks * 10_000_000;
  model.apply({ instruments: [[A, 'USD', 0]], levels: [[A, 'SELL', p(3), 5, 1], [A, 'SELL', p(1), 7, 1], [A, 'SELL', p(2), 9, 2]], watermarks: [[0, 1]] });
  assert.deepEqual(model.depth(A, 5)!.asks.map((l) => l.priceNanos), [p(1), p(2), p(3)]);
  model.apply({ instruments: [], levels: [[A, 'SELL', p(1), -7, -1]], watermarks: [[0, 2]] });
  assert.deepEqual(model.depth(A, 5)!.asks.map((l) => l.priceNanos), [p(2), p(3)]);
  model.apply({ instruments: [], levels: [[A, 'SELL', p(1), 4, 1], [A, 'SELL', p(2), -3, -1]], watermarks: [[0, 3]] });
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
