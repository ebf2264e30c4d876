import assert from 'node:assert/strict';
import { test } from 'node:test';
import { COMMAND_SLOT_BYTES } from '../../core/command-slot.ts';
import { EventKind } from '../../core/codes.ts';
import { MatchingEngine } from '../../core/matching-engine.ts';
import { buildCoreStream } from '../../bench/lib/core-stream.ts';
import { EngineDriver, idOf } from '../support/engine-driver.ts';

const id = (n: number) => idOf(0xe, n);

test('every event takes the next sequence of the shard stream, rejects included', () => {
  const d = new EngineDriver({ orderCapacity: 64 });
  const seen: number[] = [];
  const record = (events: { sequence: number }[]) => seen.push(...events.map((e) => e.sequence));
  record(d.submit({ orderId: id(1), side: 'SELL', price: 100, quantity: 5 }));
  record(d.cancel({ orderId: id(42) }));
  record(d.submit({ orderId: id(2), side: 'BUY', price: 100, quantity: 8 }));
  record(d.modify({ orderId: id(2) }, 99, 9));
  assert.deepEqual(
    seen,
    Array.from({ length: seen.length }, (_, i) => i + 1),
  );
  assert.equal(d.engine.sequence, seen.length);
});

test('a trade follows its taker and maker executions, in sequence', () => {
  const d = new EngineDriver({ orderCapacity: 64 });
  d.submit({ orderId: id(1), side: 'SELL', price: 100, quantity: 5 });
  const events = d.submit({ orderId: id(2), side: 'BUY', price: 100, quantity: 5 });
  const [, taker, maker, trade] = events;
  assert.ok(taker?.kind === 'execution' && maker?.kind === 'execution' && trade?.kind === 'trade');
  assert.equal(taker.orderId, id(2));
  assert.equal(maker.orderId, id(1));
  assert.deepEqual([taker.sequence + 2, maker.sequence + 1], [trade.sequence, trade.sequence]);
  assert.equal(trade.aggressor, 'BUY');
});

test('the engine resumes a stream from a given last sequence', () => {
  const d = new EngineDriver({ orderCapacity: 8, lastSequence: 1000 });
  const events = d.submit({ orderId: id(1), side: 'SELL', price: 100, quantity: 5 });
  assert.equal(events[0]?.sequence, 1001);
  assert.ok(events[0]?.kind === 'accepted');
  assert.equal(events[0].engineOrderId, 1001);
});

/** Runs a stream and folds every event field into a digest-ready array. */
function runAndRecord(seed: number, hashSeed = 0): number[] {
  const stream = buildCoreStream({
    seed,
    restingOrders: 2000,
    commands: 20_000,
    restPct: 55,
    cancelPct: 30,
    crossPct: 12,
    orderCapacity: 8192,
  });
  const engine = new MatchingEngine({ orderCapacity: 8192, hashSeed });
  const out: number[] = [];
  const e = engine.events;
  for (let i = 0; i < stream.total; i++) {
    engine.process(stream.views.words, stream.views.floats, i * COMMAND_SLOT_BYTES);
    for (let k = 0; k < e.count; k++) {
      out.push(e.kind(k), e.sequence(k), e.order(k), e.code(k), e.quantity(k), e.price(k), e.state(k));
      if (e.kind(k) !== EventKind.REJECTED) out.push(e.leaves(k), e.filled(k));
    }
  }
  return out;
}

test('the same command sequence always produces the same events', () => {
  const first = runAndRecord(11);
  const second = runAndRecord(11);
  assert.ok(first.length > 50_000);
  assert.deepEqual(second, first);
  assert.notDeepEqual(runAndRecord(12), first, 'a different stream gives different events');
});

test('the hash seed changes where entries sit, never what the engine outputs', () => {
  assert.deepEqual(runAndRecord(13, 0x5eed1234), runAndRecord(13, 0));
});
