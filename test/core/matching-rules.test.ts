import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Opcode, rejectCodeOf } from '../../core/codes.ts';
import { EngineDriver, idOf, INSTRUMENT_B, type DecodedEvent } from '../support/engine-driver.ts';

const id = (n: number) => idOf(0xa, n);
const trades = (events: DecodedEvent[]) => events.filter((e) => e.kind === 'trade').map((e) => e.kind === 'trade' && [e.sellOrderId, e.buyOrderId, e.quantityUnits, e.priceNanos]);

test('non-crossing orders rest, bids best (highest) first and asks best (lowest) first', () => {
  const d = new EngineDriver({ orderCapacity: 64 });
  d.submit({ orderId: id(1), side: 'BUY', price: 99, quantity: 1 });
  d.submit({ orderId: id(2), side: 'BUY', price: 100, quantity: 2 });
  d.submit({ orderId: id(3), side: 'SELL', price: 102, quantity: 3 });
  d.submit({ orderId: id(4), side: 'SELL', price: 101, quantity: 4 });
  assert.deepEqual(
    d.book('BUY').map((o) => o.orderId),
    [id(2), id(1)],
  );
  assert.deepEqual(
    d.book('SELL').map((o) => o.orderId),
    [id(4), id(3)],
  );
});

test('a crossing order executes against the best price first', () => {
  const d = new EngineDriver({ orderCapacity: 64 });
  d.submit({ orderId: id(1), side: 'SELL', price: 103, quantity: 5 });
  d.submit({ orderId: id(2), side: 'SELL', price: 101, quantity: 5 });
  d.submit({ orderId: id(3), side: 'SELL', price: 102, quantity: 5 });
  const events = d.submit({ orderId: id(9), side: 'BUY', price: 103, quantity: 12 });
  assert.deepEqual(trades(events), [
    [id(2), id(9), 5, 101],
    [id(3), id(9), 5, 102],
    [id(1), id(9), 2, 103],
  ]);
  assert.deepEqual(d.book('SELL'), [{ orderId: id(1), priceNanos: 103, leaves: 3, hidden: false }]);
});

test('within a price, the oldest resting order executes first', () => {
  const d = new EngineDriver({ orderCapacity: 64 });
  d.submit({ orderId: id(1), side: 'BUY', price: 100, quantity: 2 });
  d.submit({ orderId: id(2), side: 'BUY', price: 100, quantity: 2 });
  d.submit({ orderId: id(3), side: 'BUY', price: 100, quantity: 2 });
  const events = d.submit({ orderId: id(9), side: 'SELL', price: 100, quantity: 3 });
  assert.deepEqual(trades(events), [
    [id(9), id(1), 2, 100],
    [id(9), id(2), 1, 100],
  ]);
  assert.deepEqual(
    d.book('BUY').map((o) => [o.orderId, o.leaves]),
    [
      [id(2), 1],
      [id(3), 2],
    ],
  );
});

test('executions happen at the resting order price, not the incoming limit', () => {
  const d = new EngineDriver({ orderCapacity: 64 });
  d.submit({ orderId: id(1), side: 'SELL', price: 100, quantity: 1 });
  const buy = d.submit({ orderId: id(2), side: 'BUY', price: 105, quantity: 1 });
  assert.deepEqual(trades(buy), [[id(1), id(2), 1, 100]]);
  d.submit({ orderId: id(3), side: 'BUY', price: 100, quantity: 1 });
  const sell = d.submit({ orderId: id(4), side: 'SELL', price: 90, quantity: 1 });
  assert.deepEqual(trades(sell), [[id(4), id(3), 1, 100]]);
});

test('a partially filled DAY order rests its remainder and reports both sides of each fill', () => {
  const d = new EngineDriver({ orderCapacity: 64 });
  d.submit({ orderId: id(1), side: 'SELL', price: 100, quantity: 4 });
  const events = d.submit({ orderId: id(2), side: 'BUY', price: 100, quantity: 10 });
  assert.deepEqual(
    events.map((e) => e.kind),
    ['accepted', 'execution', 'execution', 'trade'],
  );
  const [accepted, takerExecution, makerExecution] = events;
  assert.deepEqual(accepted, {
    kind: 'accepted',
    sequence: 2,
    orderId: id(2),
    engineOrderId: 2,
    state: 'PARTIALLY_FILLED',
    leaves: 6,
    filled: 4,
    priceNanos: 100,
    quantityUnits: 10,
  });
  assert.ok(takerExecution?.kind === 'execution' && makerExecution?.kind === 'execution');
  assert.deepEqual([takerExecution.orderId, takerExecution.leaves, takerExecution.state], [id(2), 6, 'PARTIALLY_FILLED']);
  assert.deepEqual([makerExecution.orderId, makerExecution.leaves, makerExecution.state], [id(1), 0, 'FILLED']);
  assert.deepEqual(d.book('BUY'), [{ orderId: id(2), priceNanos: 100, leaves: 6, hidden: false }]);
  assert.deepEqual(d.book('SELL'), []);
});

test('a partially filled maker keeps its place at the head of the queue', () => {
  const d = new EngineDriver({ orderCapacity: 64 });
  d.submit({ orderId: id(1), side: 'SELL', price: 100, quantity: 10 });
  d.submit({ orderId: id(2), side: 'SELL', price: 100, quantity: 10 });
  d.submit({ orderId: id(3), side: 'BUY', price: 100, quantity: 3 });
  assert.deepEqual(
    d.book('SELL').map((o) => [o.orderId, o.leaves]),
    [
      [id(1), 7],
      [id(2), 10],
    ],
  );
});

test('an IOC remainder is cancelled and never rests', () => {
  const d = new EngineDriver({ orderCapacity: 64 });
  d.submit({ orderId: id(1), side: 'SELL', price: 100, quantity: 4 });
  const events = d.submit({ orderId: id(2), side: 'BUY', price: 101, quantity: 10, ioc: true });
  const accepted = events[0];
  assert.ok(accepted?.kind === 'accepted');
  assert.deepEqual([accepted.state, accepted.filled, accepted.leaves], ['CANCELLED', 4, 0]);
  assert.deepEqual(d.book('BUY'), []);
  assert.deepEqual(d.book('SELL'), []);
});

test('an IOC that cannot execute is cancelled at once with nothing filled', () => {
  const d = new EngineDriver({ orderCapacity: 64 });
  d.submit({ orderId: id(1), side: 'SELL', price: 100, quantity: 4 });
  const events = d.submit({ orderId: id(2), side: 'BUY', price: 99, quantity: 10, ioc: true });
  assert.equal(events.length, 1);
  assert.ok(events[0]?.kind === 'accepted');
  assert.deepEqual([events[0].state, events[0].filled], ['CANCELLED', 0]);
  assert.deepEqual(d.book('BUY'), []);
});

test('an IOC fully filled is FILLED', () => {
  const d = new EngineDriver({ orderCapacity: 64 });
  d.submit({ orderId: id(1), side: 'BUY', price: 100, quantity: 4 });
  const events = d.submit({ orderId: id(2), side: 'SELL', price: 100, quantity: 4, ioc: true });
  assert.ok(events[0]?.kind === 'accepted');
  assert.equal(events[0].state, 'FILLED');
});

test('displayed orders execute before hidden orders at the same price, whatever their age', () => {
  const d = new EngineDriver({ orderCapacity: 64 });
  d.submit({ orderId: id(1), side: 'SELL', price: 100, quantity: 5, hidden: true });
  d.submit({ orderId: id(2), side: 'SELL', price: 100, quantity: 5 });
  d.submit({ orderId: id(3), side: 'SELL', price: 100, quantity: 5, hidden: true });
  assert.deepEqual(
    d.book('SELL').map((o) => o.orderId),
    [id(2), id(1), id(3)],
  );
  const events = d.submit({ orderId: id(9), side: 'BUY', price: 100, quantity: 8 });
  assert.deepEqual(trades(events), [
    [id(2), id(9), 5, 100],
    [id(1), id(9), 3, 100],
  ]);
});

test('a better-priced hidden order executes before a worse-priced displayed one', () => {
  const d = new EngineDriver({ orderCapacity: 64 });
  d.submit({ orderId: id(1), side: 'SELL', price: 101, quantity: 5 });
  d.submit({ orderId: id(2), side: 'SELL', price: 100, quantity: 5, hidden: true });
  const events = d.submit({ orderId: id(9), side: 'BUY', price: 101, quantity: 6 });
  assert.deepEqual(trades(events), [
    [id(2), id(9), 5, 100],
    [id(1), id(9), 1, 101],
  ]);
});

test('books of different instruments never match each other', () => {
  const d = new EngineDriver({ orderCapacity: 64 });
  d.submit({ orderId: id(1), side: 'SELL', price: 100, quantity: 5 });
  const events = d.submit({ orderId: id(2), side: 'BUY', price: 100, quantity: 5, instrumentId: INSTRUMENT_B });
  assert.deepEqual(trades(events), []);
  assert.equal(d.book('SELL').length, 1);
  assert.equal(d.book('BUY', INSTRUMENT_B).length, 1);
});

test('a reused orderId is rejected, whether the first order rests or is done', () => {
  const d = new EngineDriver({ orderCapacity: 64 });
  d.submit({ orderId: id(1), side: 'SELL', price: 100, quantity: 5 });
  const resting = d.submit({ orderId: id(1), side: 'SELL', price: 101, quantity: 5 });
  assert.deepEqual(
    resting.map((e) => e.kind === 'rejected' && e.code),
    ['DUPLICATE_ORDER_ID'],
  );
  d.submit({ orderId: id(2), side: 'BUY', price: 100, quantity: 5 });
  const filled = d.submit({ orderId: id(2), side: 'BUY', price: 100, quantity: 5 });
  assert.deepEqual(
    filled.map((e) => e.kind === 'rejected' && e.code),
    ['DUPLICATE_ORDER_ID'],
  );
  assert.deepEqual(d.book('BUY'), []);
});

test('an order in another currency than its instrument is rejected and leaves no trace', () => {
  const d = new EngineDriver({ orderCapacity: 64 });
  d.submit({ orderId: id(1), side: 'SELL', price: 100, quantity: 5, currency: 'USD' });
  const events = d.submit({ orderId: id(2), side: 'BUY', price: 100, quantity: 5, currency: 'EUR' });
  assert.deepEqual(
    events.map((e) => e.kind === 'rejected' && e.code),
    ['CURRENCY_MISMATCH'],
  );
  assert.equal(d.book('SELL')[0]?.leaves, 5);
  const again = d.submit({ orderId: id(2), side: 'BUY', price: 99, quantity: 5, currency: 'USD' });
  assert.equal(again[0]?.kind, 'accepted', 'the rejected orderId was not recorded');
});

test('a command slot with an out-of-range value is rejected as INVALID_COMMAND', () => {
  const d = new EngineDriver({ orderCapacity: 64 });
  for (const [price, quantity] of [
    [0, 1],
    [1.5, 1],
    [1, 0],
    [1, 2.5],
    [1, 2_000_000_000],
    [9e15 + 2, 1],
  ] as const) {
    const events = d.submit({ orderId: id(1), side: 'BUY', price, quantity });
    assert.deepEqual(
      events.map((e) => e.kind === 'rejected' && e.code),
      ['INVALID_COMMAND'],
      `${price} x ${quantity}`,
    );
  }
  assert.deepEqual(d.book('BUY'), []);
});

test('a REJECT command is sequenced as a rejection with the code it carries, and changes nothing else', () => {
  const d = new EngineDriver({ orderCapacity: 64 });
  d.submit({ orderId: id(1), side: 'SELL', price: 100, quantity: 5 });
  const events = d.run({
    opcode: Opcode.REJECT,
    runNo: 1,
    sessionNo: 1,
    orderId: id(2),
    instrumentId: INSTRUMENT_B,
    participantId: idOf(1, 1),
    accountId: idOf(1, 2),
    argument: rejectCodeOf('DUPLICATE_CLIENT_ORDER_ID'),
  });
  assert.deepEqual(events, [{ kind: 'rejected', sequence: 2, orderId: id(2), code: 'DUPLICATE_CLIENT_ORDER_ID' }]);
  const unknown = d.run({
    opcode: Opcode.REJECT,
    runNo: 1,
    sessionNo: 1,
    orderId: id(2),
    instrumentId: INSTRUMENT_B,
    participantId: idOf(1, 1),
    accountId: idOf(1, 2),
    argument: 9999,
  });
  assert.deepEqual(
    unknown.map((e) => e.kind === 'rejected' && e.code),
    ['INVALID_COMMAND'],
  );
  assert.equal(d.book('SELL').length, 1);
});
