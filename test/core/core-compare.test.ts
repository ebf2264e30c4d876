import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Side } from '../../core/codes.ts';
import { ReplayOp, type ReplayOps } from '../../bench/lib/core-stream.ts';
import {
  buildCompareStream,
  firstBookDifference,
  newOurEngine,
  newTheirBook,
  readOurBook,
  readTheirBook,
  runOurs,
  runOursTallied,
  runTheirsTallied,
  SHARD_PREFETCH_BATCH,
  theirOrderIds,
} from '../../bench/lib/engine-compare.ts';

const CAPACITY = 1 << 15;

test('our engine and nodejs-order-book leave the same book, level by level, and make the same trades', () => {
  const stream = buildCompareStream({ seed: 424242, restingOrders: 2000, commands: 20_000, orderCapacity: CAPACITY });
  assert.deepEqual([stream.counts.modify, stream.ops.kind.filter((k) => k === ReplayOp.REST_HIDDEN).length], [0, 0]);

  const engine = newOurEngine(CAPACITY);
  const ourWarmup = runOursTallied(engine, stream, 0, stream.warmup);
  const ours = runOursTallied(engine, stream, stream.warmup, stream.total);
  const book = newTheirBook();
  const ids = theirOrderIds(stream.ops);
  const theirWarmup = runTheirsTallied(book, stream.ops, ids, 0, stream.warmup);
  const theirs = runTheirsTallied(book, stream.ops, ids, stream.warmup, stream.total);

  const ourBook = readOurBook(engine, stream.ops.tickNanos);
  const theirBook = readTheirBook(book);
  assert.equal(firstBookDifference(ourBook, theirBook), null);
  assert.deepEqual(theirBook, ourBook);
  assert.ok(ourBook.bids.length > 50 && ourBook.asks.length > 50, 'both sides hold many levels');
  assert.equal(engine.orders.restingCount, stream.expected.restingOrders);

  assert.deepEqual(theirs, ours);
  assert.deepEqual(theirWarmup, ourWarmup);
  assert.equal(ourWarmup.trades + ours.trades, stream.expected.trades);
  assert.ok(ours.trades > 1000, 'the crossing orders traded');
  assert.equal(ours.refused, 0, 'every cancel named a resting order');
});

test('fed as a shard drains its rings (prefetch, then each command), our engine leaves the book it leaves one command at a time', () => {
  const stream = buildCompareStream({ seed: 777, restingOrders: 1000, commands: 10_003, orderCapacity: CAPACITY });
  const single = newOurEngine(CAPACITY);
  runOurs(single, stream, 0, stream.total);
  const batched = newOurEngine(CAPACITY);
  runOurs(batched, stream, 0, stream.warmup, SHARD_PREFETCH_BATCH);
  runOurs(batched, stream, stream.warmup, stream.total, SHARD_PREFETCH_BATCH);
  assert.equal(batched.sequence, stream.expected.lastSequence);
  assert.equal(single.sequence, stream.expected.lastSequence);
  assert.equal(batched.orders.restingCount, stream.expected.restingOrders);
  assert.deepEqual(readOurBook(batched, stream.ops.tickNanos), readOurBook(single, stream.ops.tickNanos));
});

test('the nodejs-order-book tally counts one trade per maker fill', () => {
  // Makers 1, 2 (100) and 3 (101); taker 4 fills 1 and 2 and part of 3, taker 5
  // takes what is left of 3 and loses its remainder (IOC), taker 6 fills maker 7 exactly.
  const rows: [number, number, number, number, number][] = [
    [ReplayOp.REST, 1, Side.SELL, 100, 5],
    [ReplayOp.REST, 2, Side.SELL, 100, 3],
    [ReplayOp.REST, 3, Side.SELL, 101, 4],
    [ReplayOp.CROSS_IOC, 4, Side.BUY, 101, 10],
    [ReplayOp.CROSS_IOC, 5, Side.BUY, 101, 10],
    [ReplayOp.REST, 7, Side.BUY, 99, 6],
    [ReplayOp.CROSS_IOC, 6, Side.SELL, 99, 6],
    [ReplayOp.REST, 8, Side.BUY, 98, 1],
  ];
  const ops: ReplayOps = {
    tickNanos: 1,
    kind: Uint8Array.from(rows.map((r) => r[0])),
    orderNo: Int32Array.from(rows.map((r) => r[1])),
    side: Uint8Array.from(rows.map((r) => r[2])),
    priceTicks: Int32Array.from(rows.map((r) => r[3])),
    quantity: Int32Array.from(rows.map((r) => r[4])),
  };
  const book = newTheirBook();
  const ids = theirOrderIds(ops);
  assert.deepEqual(runTheirsTallied(book, ops, ids, 0, 4), { trades: 3, tradedQuantity: 10, refused: 0 });
  assert.deepEqual(runTheirsTallied(book, ops, ids, 4, 5), { trades: 1, tradedQuantity: 2, refused: 0 });
  assert.deepEqual(runTheirsTallied(book, ops, ids, 5, 8), { trades: 1, tradedQuantity: 6, refused: 0 });
  assert.deepEqual(readTheirBook(book), { bids: [{ priceTicks: 98, quantity: 1, orders: 1 }], asks: [] });
});
