// Market data in shared memory (core/market-view.ts): what the writer stores is what a
// reader gets, a reader never sees a half-written book, and "full" is an answer.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { DepthView, SnapshotView } from '../../core/market-view.ts';
import { readBesideWriter } from '../support/reader-beside-writer.ts';

const id = (n: number) => Int32Array.of(n, ~n, n * 7, 0x5eed);

test('a depth book reads back as written, best levels first, cut at the levels asked', () => {
  const view = new DepthView(DepthView.create(8));
  const bids = [
    { priceNanos: 101_000_000_000, quantity: 2n ** 60n, count: 3 },
    { priceNanos: 100_000_000_000, quantity: 5n, count: 1 },
  ];
  // Each side's open quantity is the whole side's (more than the best levels show), exact past 2^63 - 1 would not fit: near it.
  const open = { bid: 9_223_372_036_854_775_807n, ask: 0n };
  const marks = { depthSeq: 7, topSeq: 3, position: 2 ** 40 };
  assert.equal(view.write(id(1), 0x555344, 1, bids, [], open, marks), true);
  view.setWatermark(1, 42);
  assert.deepEqual(view.read(id(1), 5), { currency: 0x555344, shard: 1, bids, asks: [], open, marks });
  assert.deepEqual(view.read(id(1), 1)!.bids, bids.slice(0, 1));
  assert.equal(view.read(id(2), 5), null, 'an instrument never written');
  assert.equal(view.watermark(1), 42);
  assert.equal(view.watermark(0), 0);
  assert.equal(view.write(id(1), 0x555344, 1, [], bids, { bid: 0n, ask: 7n }), true, 'a rewrite of the same instrument');
  assert.deepEqual(view.read(id(1), 5)!.asks, bids);
  assert.deepEqual(view.read(id(1), 5)!.open, { bid: 0n, ask: 7n });
  assert.deepEqual(view.read(id(1), 5)!.marks, { depthSeq: 0, topSeq: 0, position: 0 }, 'the stream marks as written again');
  assert.equal(view.used, 1);
  assert.equal(view.write(id(3), 0x555344, 0, [], [], { bid: 0n, ask: 0n }), true);
  assert.deepEqual(
    view
      .instruments()
      .map((words) => [...words])
      .sort(),
    [[...id(1)], [...id(3)]].sort(),
    'every instrument it holds',
  );
});

test('past its room the depth view refuses new instruments and says it is full; the ones it holds stay', () => {
  const view = new DepthView(DepthView.create(4)); // 8 entries, at most half used
  for (let n = 0; n < 4; n++) assert.equal(view.write(id(n), 1, 0, [], [], { bid: 0n, ask: 0n }), true);
  assert.equal(view.full, false);
  assert.equal(view.write(id(99), 1, 0, [], [], { bid: 0n, ask: 0n }), false);
  assert.equal(view.full, true);
  for (let n = 0; n < 4; n++) assert.notEqual(view.read(id(n), 1), null);
});

test('snapshots are keyed by instrument and projection name; missing sides read as null; open quantities read back exact past 2^53', () => {
  const view = new SnapshotView(SnapshotView.create(8));
  // An open quantity past 2^53 (and near 2^63) reads back exactly.
  const openQuantity = { bid: 9_007_199_254_740_993n, ask: 9_223_372_036_854_775_807n };
  const snapshot = { currency: 0x455552, bid: { priceNanos: 5, quantity: 7n }, ask: null, openQuantity, sourceWatermark: 9, refreshedAtUs: 1_763_800_000_000_001 };
  assert.equal(view.write(id(1), 'market-data-top-of-book', snapshot), true);
  assert.equal(view.write(id(1), 'other.name', { ...snapshot, bid: null, ask: { priceNanos: 6, quantity: 1n } }), true);
  assert.deepEqual(view.read(id(1), 'market-data-top-of-book'), snapshot);
  assert.deepEqual(view.read(id(1), 'other.name')!.ask, { priceNanos: 6, quantity: 1n });
  assert.deepEqual(view.read(id(1), 'other.name')!.openQuantity, openQuantity);
  assert.equal(view.read(id(1), 'other.nam'), null);
  assert.equal(view.read(id(2), 'market-data-top-of-book'), null);
  assert.throws(() => view.write(id(1), 'x'.repeat(65), snapshot), /longer than 64 bytes/);
});

test('a reader beside a writer thread never sees a half-written book', async () => {
  const buffer = DepthView.create(4);
  const view = new DepthView(buffer);
  const count = 200_000;
  const { reads, exitCode } = await readBesideWriter(new URL('./fixtures/depth-writer.worker.ts', import.meta.url), { view: buffer, count }, () => {
    const book = view.read(Int32Array.of(1, 2, 3, 4), 50);
    if (book === null) return false;
    const version = book.bids[0]!.count;
    assert.equal(book.bids.length, (version % 50) + 1, `version ${version}: its number of levels`);
    for (const level of book.bids) assert.deepEqual([level.quantity, level.count], [BigInt(version), version], `version ${version}: one version per read`);
    assert.equal(book.asks.length, Math.min(2, book.bids.length));
    assert.deepEqual(book.open, { bid: BigInt(version) * BigInt(book.bids.length), ask: BigInt(version) }, `version ${version}: its open quantities`);
    return true;
  });
  assert.equal(exitCode, 0);
  assert.ok(reads > 10, `reads ${reads}`);
  assert.equal(view.read(Int32Array.of(1, 2, 3, 4), 50)!.bids[0]!.count, count - 1, 'the last version is what stays');
});
