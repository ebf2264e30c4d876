import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ACCOUNT_2, EngineDriver, idOf, INSTRUMENT_B, PARTICIPANT_2, type DecodedEvent, type TargetSpec } from '../support/engine-driver.ts';

const id = (n: number) => idOf(0xb, n);
const codes = (events: DecodedEvent[]) => events.map((e) => (e.kind === 'rejected' ? e.code : e.kind));
const trades = (events: DecodedEvent[]) => events.filter((e) => e.kind === 'trade').map((e) => e.kind === 'trade' && [e.sellOrderId, e.buyOrderId, e.quantityUnits, e.priceNanos]);

function bookWithThreeBids(): EngineDriver {
  const d = new EngineDriver({ orderCapacity: 64 });
  d.submit({ orderId: id(1), side: 'BUY', price: 100, quantity: 10 });
  d.submit({ orderId: id(2), side: 'BUY', price: 100, quantity: 10 });
  d.submit({ orderId: id(3), side: 'BUY', price: 100, quantity: 10 });
  return d;
}

test('cancel removes a resting order and answers CANCELLED with its filled quantity', () => {
  const d = bookWithThreeBids();
  d.submit({ orderId: id(9), side: 'SELL', price: 100, quantity: 4 });
  const events = d.cancel({ orderId: id(1) });
  assert.equal(events.length, 1);
  assert.deepEqual(events[0], {
    kind: 'accepted',
    sequence: events[0]!.sequence,
    orderId: id(1),
    engineOrderId: 1,
    state: 'CANCELLED',
    leaves: 0,
    filled: 4,
    priceNanos: 100,
    quantityUnits: 10,
  });
  assert.deepEqual(
    d.book('BUY').map((o) => o.orderId),
    [id(2), id(3)],
  );
});

test('cancel of an unknown orderId is ORDER_NOT_FOUND', () => {
  const d = bookWithThreeBids();
  assert.deepEqual(codes(d.cancel({ orderId: id(77) })), ['ORDER_NOT_FOUND']);
  assert.equal(d.book('BUY').length, 3);
});

test('cancel or modify of a filled order is ORDER_NOT_OPEN', () => {
  const d = bookWithThreeBids();
  d.submit({ orderId: id(9), side: 'SELL', price: 100, quantity: 10 });
  assert.deepEqual(codes(d.cancel({ orderId: id(1) })), ['ORDER_NOT_OPEN']);
  assert.deepEqual(codes(d.modify({ orderId: id(1) }, 100, 20)), ['ORDER_NOT_OPEN']);
});

test('cancel or modify of a cancelled order is ORDER_NOT_OPEN', () => {
  const d = bookWithThreeBids();
  d.cancel({ orderId: id(2) });
  assert.deepEqual(codes(d.cancel({ orderId: id(2) })), ['ORDER_NOT_OPEN']);
  assert.deepEqual(codes(d.modify({ orderId: id(2) }, 100, 5)), ['ORDER_NOT_OPEN']);
});

test('cancel of an IOC order (never resting) is ORDER_NOT_OPEN', () => {
  const d = new EngineDriver({ orderCapacity: 64 });
  d.submit({ orderId: id(1), side: 'BUY', price: 100, quantity: 10, ioc: true });
  assert.deepEqual(codes(d.cancel({ orderId: id(1) })), ['ORDER_NOT_OPEN']);
});

const mismatches: Array<[string, Partial<TargetSpec>]> = [
  ['runId', { runNo: 2 }],
  ['venueSessionId', { sessionNo: 2 }],
  ['instrumentId', { instrumentId: INSTRUMENT_B }],
  ['participantId', { participantId: PARTICIPANT_2 }],
  ['accountId', { accountId: ACCOUNT_2 }],
];

for (const [field, change] of mismatches) {
  test(`cancel with a different ${field} is ORDER_CONTEXT_MISMATCH and the order is unchanged`, () => {
    const d = bookWithThreeBids();
    const before = d.book('BUY');
    assert.deepEqual(codes(d.cancel({ orderId: id(2), ...change })), ['ORDER_CONTEXT_MISMATCH']);
    assert.deepEqual(d.book('BUY'), before);
  });

  test(`modify with a different ${field} is ORDER_CONTEXT_MISMATCH and the order is unchanged`, () => {
    const d = bookWithThreeBids();
    const before = d.book('BUY');
    assert.deepEqual(codes(d.modify({ orderId: id(2), ...change }, 101, 5)), ['ORDER_CONTEXT_MISMATCH']);
    assert.deepEqual(d.book('BUY'), before);
  });
}

test('the context is checked before the state: a mismatching cancel of a filled order is ORDER_CONTEXT_MISMATCH', () => {
  const d = bookWithThreeBids();
  d.submit({ orderId: id(9), side: 'SELL', price: 100, quantity: 10 });
  assert.deepEqual(codes(d.cancel({ orderId: id(1), participantId: PARTICIPANT_2 })), ['ORDER_CONTEXT_MISMATCH']);
});

test('modify down keeps time priority', () => {
  const d = bookWithThreeBids();
  const events = d.modify({ orderId: id(1) }, 100, 6);
  assert.ok(events[0]?.kind === 'accepted');
  assert.deepEqual([events[0].state, events[0].leaves, events[0].quantityUnits], ['OPEN', 6, 6]);
  assert.deepEqual(
    d.book('BUY').map((o) => [o.orderId, o.leaves]),
    [
      [id(1), 6],
      [id(2), 10],
      [id(3), 10],
    ],
  );
});

test('modify up loses time priority', () => {
  const d = bookWithThreeBids();
  d.modify({ orderId: id(1) }, 100, 11);
  assert.deepEqual(
    d.book('BUY').map((o) => [o.orderId, o.leaves]),
    [
      [id(2), 10],
      [id(3), 10],
      [id(1), 11],
    ],
  );
});

test('a price change loses time priority even when moving back to the same price', () => {
  const d = bookWithThreeBids();
  d.modify({ orderId: id(1) }, 99, 10);
  assert.deepEqual(
    d.book('BUY').map((o) => [o.orderId, o.priceNanos]),
    [
      [id(2), 100],
      [id(3), 100],
      [id(1), 99],
    ],
  );
  d.modify({ orderId: id(1) }, 100, 10);
  assert.deepEqual(
    d.book('BUY').map((o) => o.orderId),
    [id(2), id(3), id(1)],
  );
});

test('modify to a crossing price matches as the incoming order at the resting prices', () => {
  const d = bookWithThreeBids();
  d.submit({ orderId: id(8), side: 'SELL', price: 101, quantity: 3 });
  d.submit({ orderId: id(9), side: 'SELL', price: 102, quantity: 3 });
  const events = d.modify({ orderId: id(2) }, 102, 10);
  assert.deepEqual(trades(events), [
    [id(8), id(2), 3, 101],
    [id(9), id(2), 3, 102],
  ]);
  assert.ok(events[0]?.kind === 'accepted');
  assert.deepEqual([events[0].state, events[0].filled, events[0].leaves, events[0].priceNanos], ['PARTIALLY_FILLED', 6, 4, 102]);
  assert.deepEqual(
    d.book('BUY').map((o) => [o.orderId, o.priceNanos, o.leaves]),
    [
      [id(2), 102, 4],
      [id(1), 100, 10],
      [id(3), 100, 10],
    ],
  );
  assert.deepEqual(d.book('SELL'), []);
});

test('modify quantity is the new total: at or below the filled quantity is INVALID_MODIFY', () => {
  const d = bookWithThreeBids();
  d.submit({ orderId: id(9), side: 'SELL', price: 100, quantity: 4 });
  assert.deepEqual(codes(d.modify({ orderId: id(1) }, 100, 4)), ['INVALID_MODIFY']);
  assert.deepEqual(codes(d.modify({ orderId: id(1) }, 100, 3)), ['INVALID_MODIFY']);
  assert.equal(d.book('BUY')[0]?.leaves, 6);
  const events = d.modify({ orderId: id(1) }, 100, 5);
  assert.ok(events[0]?.kind === 'accepted');
  assert.deepEqual([events[0].state, events[0].filled, events[0].leaves], ['PARTIALLY_FILLED', 4, 1]);
  assert.deepEqual(
    d.book('BUY').map((o) => [o.orderId, o.leaves]),
    [
      [id(1), 1],
      [id(2), 10],
      [id(3), 10],
    ],
  );
});

test('modify keeps a hidden order hidden, behind the displayed queue', () => {
  const d = new EngineDriver({ orderCapacity: 64 });
  d.submit({ orderId: id(1), side: 'SELL', price: 101, quantity: 5, hidden: true });
  d.submit({ orderId: id(2), side: 'SELL', price: 100, quantity: 5 });
  d.modify({ orderId: id(1) }, 100, 5);
  assert.deepEqual(
    d.book('SELL').map((o) => [o.orderId, o.hidden]),
    [
      [id(2), false],
      [id(1), true],
    ],
  );
});

test('cancelling the last order of a price level removes the level', () => {
  const d = new EngineDriver({ orderCapacity: 64 });
  d.submit({ orderId: id(1), side: 'SELL', price: 100, quantity: 5 });
  d.submit({ orderId: id(2), side: 'SELL', price: 101, quantity: 5 });
  d.cancel({ orderId: id(1) });
  assert.equal(d.engine.levels.liveCount, 1);
  const events = d.submit({ orderId: id(3), side: 'BUY', price: 101, quantity: 1 });
  assert.deepEqual(trades(events), [[id(2), id(3), 1, 101]]);
});
