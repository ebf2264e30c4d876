import assert from 'node:assert/strict';
import { test } from 'node:test';
import { depth, topOfBook } from '../../core/book-queries.ts';
import { Side } from '../../core/codes.ts';
import { EngineDriver, idOf } from '../support/engine-driver.ts';

const id = (n: number) => idOf(0xd, n);

test('top of book shows the best displayed price and its visible quantity on each side', () => {
  const d = new EngineDriver({ orderCapacity: 64 });
  d.submit({ orderId: id(1), side: 'BUY', price: 99, quantity: 3 });
  d.submit({ orderId: id(2), side: 'BUY', price: 100, quantity: 4 });
  d.submit({ orderId: id(3), side: 'BUY', price: 100, quantity: 6 });
  d.submit({ orderId: id(4), side: 'SELL', price: 102, quantity: 7 });
  assert.deepEqual(topOfBook(d.engine, d.bookIndex()), {
    bid: { priceNanos: 100, quantityUnits: 10, orderCount: 2 },
    ask: { priceNanos: 102, quantityUnits: 7, orderCount: 1 },
  });
});

test('hidden quantity never shows, and a level holding only hidden orders is skipped', () => {
  const d = new EngineDriver({ orderCapacity: 64 });
  d.submit({ orderId: id(1), side: 'SELL', price: 100, quantity: 5, hidden: true });
  d.submit({ orderId: id(2), side: 'SELL', price: 101, quantity: 2, hidden: true });
  d.submit({ orderId: id(3), side: 'SELL', price: 101, quantity: 3 });
  d.submit({ orderId: id(4), side: 'SELL', price: 102, quantity: 4 });
  const book = d.bookIndex();
  assert.deepEqual(topOfBook(d.engine, book).ask, { priceNanos: 101, quantityUnits: 3, orderCount: 1 });
  assert.deepEqual(depth(d.engine, book, Side.SELL, 5), [
    { priceNanos: 101, quantityUnits: 3, orderCount: 1 },
    { priceNanos: 102, quantityUnits: 4, orderCount: 1 },
  ]);
  assert.equal(topOfBook(d.engine, book).bid, null);
});

test('depth aggregates per level best first and stops at the requested number of levels', () => {
  const d = new EngineDriver({ orderCapacity: 256 });
  let n = 0;
  for (let price = 90; price < 100; price++) {
    for (let k = 0; k < 3; k++) d.submit({ orderId: id(++n), side: 'BUY', price, quantity: price - 80 + k });
  }
  const levels = depth(d.engine, d.bookIndex(), Side.BUY, 4);
  assert.deepEqual(
    levels,
    [99, 98, 97, 96].map((price) => ({
      priceNanos: price,
      quantityUnits: 3 * (price - 80) + 3,
      orderCount: 3,
    })),
  );
  assert.equal(depth(d.engine, d.bookIndex(), Side.BUY, 50).length, 10);
});

test('depth follows fills, partial fills and cancels', () => {
  const d = new EngineDriver({ orderCapacity: 64 });
  d.submit({ orderId: id(1), side: 'SELL', price: 100, quantity: 5 });
  d.submit({ orderId: id(2), side: 'SELL', price: 100, quantity: 5 });
  d.submit({ orderId: id(3), side: 'SELL', price: 101, quantity: 5 });
  d.submit({ orderId: id(9), side: 'BUY', price: 100, quantity: 7 });
  d.cancel({ orderId: id(3) });
  assert.deepEqual(depth(d.engine, d.bookIndex(), Side.SELL, 5), [{ priceNanos: 100, quantityUnits: 3, orderCount: 1 }]);
});

test('depth refuses a level count outside 1..50', () => {
  const d = new EngineDriver({ orderCapacity: 8 });
  d.submit({ orderId: id(1), side: 'SELL', price: 100, quantity: 5 });
  assert.throws(() => depth(d.engine, d.bookIndex(), Side.SELL, 0), RangeError);
  assert.throws(() => depth(d.engine, d.bookIndex(), Side.SELL, 51), RangeError);
});
