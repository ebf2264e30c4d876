// The market-data stream's broadcast ring (core/market-stream.ts): records read back in
// order with their fields, across the ring's end (pad records); the position a writer
// announces before appending is where the head ends; a reader more than the ring behind
// skips to the head and counts the overrun; readers never hold the writer back.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createStreamRing, KIND_DEPTH, KIND_TOP, KIND_TRADE, StreamReader, StreamWriter, type StreamRecord } from '../../core/market-stream.ts';

const RING = 256 << 10;
const instrument = Int32Array.of(1, 2, 3, 4);
const tradeId = Int32Array.of(9, 8, 7, 6);

function readAll(reader: StreamReader): Array<Record<string, unknown>> {
  const out: Array<Record<string, unknown>> = [];
  reader.poll(1 << 20, (r: StreamRecord) => {
    if (r.kind === KIND_TRADE) out.push({ kind: 'trade', seq: r.seq, price: r.priceNanos, quantity: r.quantity, tape: r.tapeSequence, trade: [...r.tradeId] });
    if (r.kind === KIND_TOP) out.push({ kind: 'top', seq: r.seq, bid: r.bid, ask: r.ask });
    if (r.kind === KIND_DEPTH)
      out.push({ kind: 'depth', seq: r.seq, changes: Array.from({ length: r.changes }, (_, k) => [r.changeSide[k], r.changePrice[k], r.changeQuantity[k], r.changeCount[k]]) });
  });
  return out;
}

test('records read back in order with their fields, across the end of the ring, at the announced positions', () => {
  const buffer = createStreamRing(RING);
  const writer = new StreamWriter(buffer);
  const reader = new StreamReader(buffer);
  let expectedSeq = 0;
  for (let round = 0; round < 300; round++) {
    const changes = 1 + ((round * 37) % 200);
    const record = writer.stageDepth(instrument, ++expectedSeq, 0x555344, changes);
    for (let k = 0; k < changes; k++) writer.setChange(record, k, k & 1, 1000 + k, BigInt(k) * 2n ** 40n, k);
    writer.stageTop(instrument, expectedSeq, 0x555344, { priceNanos: 5, quantity: 2n ** 60n }, undefined);
    const end = writer.stagedEnd();
    writer.appendStaged();
    assert.equal(writer.head(), end, 'the head ends where stagedEnd said');
    writer.stageTrade(instrument, 0, expectedSeq, tradeId, 0, 100, 3, 1_700_000_000_000_000, round + 1, 0x555344);
    writer.appendStaged();
    const read = readAll(reader);
    assert.equal(read.length, 3);
    const depth = read[0]!.changes as unknown[][];
    assert.equal(depth.length, changes);
    assert.deepEqual(depth[changes - 1], [(changes - 1) & 1, 1000 + changes - 1, BigInt(changes - 1) * 2n ** 40n, changes - 1]);
    assert.deepEqual(read[1], { kind: 'top', seq: expectedSeq, bid: { priceNanos: 5, quantity: 2n ** 60n }, ask: null });
    assert.deepEqual(read[2], { kind: 'trade', seq: expectedSeq, price: 100, quantity: 3, tape: round + 1, trade: [9, 8, 7, 6] });
  }
  assert.ok(writer.head() > 2 * RING, 'the writer went round the ring more than once');
  assert.equal(reader.overruns, 0);
});

test('a reader more than the ring behind skips to the head, counts the overrun, then reads on', () => {
  const buffer = createStreamRing(RING);
  const writer = new StreamWriter(buffer);
  const slow = new StreamReader(buffer);
  for (let seq = 1; seq <= 5000; seq++) {
    writer.stageTrade(instrument, 0, seq, tradeId, 0, 1, 1, 0, seq, 0);
    writer.appendStaged();
  }
  assert.deepEqual(readAll(slow), [], 'nothing handed over from an overwritten record');
  assert.equal(slow.overruns, 1);
  assert.equal(slow.cursor, writer.head());
  writer.stageTrade(instrument, 0, 5001, tradeId, 0, 1, 1, 0, 5001, 0);
  writer.appendStaged();
  assert.deepEqual(
    readAll(slow).map((r) => r.seq),
    [5001],
    'the next record after the jump: the seq gap is visible',
  );
});

test('a reader with no one to hand records to passes over them without counting an overrun', () => {
  const buffer = createStreamRing(RING);
  const writer = new StreamWriter(buffer);
  const reader = new StreamReader(buffer);
  writer.stageTrade(instrument, 0, 1, tradeId, 0, 1, 1, 0, 1, 0);
  writer.appendStaged();
  assert.equal(reader.passAll(), true);
  assert.equal(reader.passAll(), false);
  assert.deepEqual([reader.cursor, reader.overruns, reader.waiting()], [writer.head(), 0, false]);
});
