import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  COMMAND_ACCOUNT_ID_WORD,
  COMMAND_CURRENCY_WORD,
  COMMAND_HEADER_WORD,
  COMMAND_INSTRUMENT_ID_WORD,
  COMMAND_ORDER_ID_WORD,
  COMMAND_PARTICIPANT_ID_WORD,
  COMMAND_PRICE_NANOS_FLOAT,
  COMMAND_QUANTITY_UNITS_FLOAT,
  COMMAND_RUN_WORD,
  COMMAND_SESSION_WORD,
  COMMAND_SLOT_BYTES,
  packCurrency,
  packHeader,
  slotViews,
} from '../../core/command-slot.ts';
import { EventKind, Opcode, OrderType, Side, TimeInForce } from '../../core/codes.ts';
import { depth } from '../../core/book-queries.ts';
import { MatchingEngine } from '../../core/matching-engine.ts';
import { ACCOUNT_2, EngineDriver, idOf, INSTRUMENT_B, PARTICIPANT_2, type DecodedEvent } from '../support/engine-driver.ts';

const id = (n: number) => idOf(0xcafe, n);
const codes = (events: DecodedEvent[]) => events.map((e) => (e.kind === 'rejected' ? e.code : e.kind));

test('a shard full of resting orders rejects the next order with ORDER_CAPACITY_EXCEEDED', () => {
  const d = new EngineDriver({ orderCapacity: 4 });
  for (let n = 1; n <= 4; n++) assert.deepEqual(codes(d.submit({ orderId: id(n), side: 'BUY', price: n, quantity: 1 })), ['accepted']);
  assert.deepEqual(codes(d.submit({ orderId: id(5), side: 'BUY', price: 9, quantity: 1 })), ['ORDER_CAPACITY_EXCEEDED']);
  d.cancel({ orderId: id(1) });
  assert.deepEqual(codes(d.submit({ orderId: id(5), side: 'BUY', price: 9, quantity: 1 })), ['accepted']);
});

test('terminal orders are retained until their record is needed, oldest first', () => {
  const d = new EngineDriver({ orderCapacity: 3 });
  d.submit({ orderId: id(1), side: 'BUY', price: 1, quantity: 1 });
  d.submit({ orderId: id(2), side: 'BUY', price: 2, quantity: 1 });
  d.cancel({ orderId: id(1) });
  d.cancel({ orderId: id(2) });
  assert.deepEqual(codes(d.cancel({ orderId: id(1) })), ['ORDER_NOT_OPEN'], 'retained while a free record exists');
  d.submit({ orderId: id(3), side: 'BUY', price: 3, quantity: 1 }); // takes the free record
  d.submit({ orderId: id(4), side: 'BUY', price: 4, quantity: 1 }); // evicts order 1, the oldest terminal
  assert.deepEqual(codes(d.cancel({ orderId: id(1) })), ['ORDER_NOT_FOUND']);
  assert.deepEqual(codes(d.cancel({ orderId: id(2) })), ['ORDER_NOT_OPEN']);
  assert.deepEqual(codes(d.submit({ orderId: id(2), side: 'BUY', price: 5, quantity: 1 })), ['DUPLICATE_ORDER_ID']);
  assert.deepEqual(
    d.book('BUY').map((o) => o.orderId),
    [id(4), id(3)],
  );
});

test('a shard holding its maximum of instruments rejects a new one and keeps trading the others', () => {
  const d = new EngineDriver({ orderCapacity: 16, instrumentCapacity: 1 });
  d.submit({ orderId: id(1), side: 'SELL', price: 10, quantity: 1 });
  assert.deepEqual(codes(d.submit({ orderId: id(2), side: 'BUY', price: 10, quantity: 1, instrumentId: INSTRUMENT_B })), ['INSTRUMENT_CAPACITY_EXCEEDED']);
  assert.deepEqual(codes(d.submit({ orderId: id(2), side: 'BUY', price: 10, quantity: 1 })), ['accepted', 'execution', 'execution', 'trade']);
});

test('a shard holding its maximum of participant/account pairs rejects a new pair, not a known one', () => {
  const d = new EngineDriver({ orderCapacity: 16, ownerCapacity: 1 });
  d.submit({ orderId: id(1), side: 'SELL', price: 10, quantity: 1 });
  assert.deepEqual(codes(d.submit({ orderId: id(2), side: 'SELL', price: 10, quantity: 1, participantId: PARTICIPANT_2, accountId: ACCOUNT_2 })), ['ACCOUNT_CAPACITY_EXCEEDED']);
  assert.deepEqual(codes(d.submit({ orderId: id(2), side: 'SELL', price: 11, quantity: 1 })), ['accepted']);
});

test('a command sweeping many resting orders reports every fill', () => {
  const d = new EngineDriver({ orderCapacity: 5000 });
  for (let n = 1; n <= 3000; n++) d.submit({ orderId: id(n), side: 'SELL', price: 100 + (n % 7), quantity: 2 });
  const events = d.submit({ orderId: id(9999), side: 'BUY', price: 200, quantity: 6000, ioc: true });
  assert.equal(events.filter((e) => e.kind === 'trade').length, 3000);
  assert.ok(events[0]?.kind === 'accepted');
  assert.deepEqual([events[0].state, events[0].filled], ['FILLED', 6000]);
  assert.deepEqual(d.book('SELL'), []);
});

test('one shard holds 1,000,000 resting orders and still matches them in priority order', () => {
  const capacity = 1_000_000;
  const engine = new MatchingEngine({ orderCapacity: capacity });
  const { words, floats } = slotViews(new ArrayBuffer(COMMAND_SLOT_BYTES));
  words[COMMAND_RUN_WORD] = 1;
  words[COMMAND_SESSION_WORD] = 1;
  words[COMMAND_CURRENCY_WORD] = packCurrency('USD');
  words[COMMAND_INSTRUMENT_ID_WORD] = 0x1234;
  words[COMMAND_PARTICIPANT_ID_WORD] = 1;
  words[COMMAND_ACCOUNT_ID_WORD] = 1;
  words[COMMAND_ORDER_ID_WORD] = 0x77;
  const run = (opcode: number, n: number, side: number, timeInForce: number, price: number, quantity: number): void => {
    words[COMMAND_HEADER_WORD] = packHeader(opcode, side, OrderType.LIMIT, timeInForce);
    words[COMMAND_ORDER_ID_WORD + 3] = n;
    floats[COMMAND_PRICE_NANOS_FLOAT] = price;
    floats[COMMAND_QUANTITY_UNITS_FLOAT] = quantity;
    engine.process(words, floats, 0);
  };
  // Asks at 10,000 prices from 1,000,000 nanos up, 100 orders each, of 1..3 units.
  const priceOf = (n: number) => 1_000_000 + (n % 10_000);
  const quantityOf = (n: number) => 1 + (n % 3);
  for (let n = 0; n < capacity; n++) {
    run(Opcode.SUBMIT, n, Side.SELL, TimeInForce.DAY, priceOf(n), quantityOf(n));
    if (engine.events.kind(0) !== EventKind.ACCEPTED) assert.fail(`order ${n} was not accepted`);
  }
  assert.equal(engine.orders.restingCount, capacity);
  assert.equal(engine.levels.liveCount, 10_000);
  const book = engine.findBook(words, COMMAND_INSTRUMENT_ID_WORD);
  let bestLevelUnits = 0;
  for (let n = 0; n < capacity; n += 10_000) bestLevelUnits += quantityOf(n);
  assert.deepEqual(depth(engine, book, Side.SELL, 1), [{ priceNanos: 1_000_000, quantityUnits: bestLevelUnits, orderCount: 100 }]);

  run(Opcode.SUBMIT, capacity, Side.BUY, TimeInForce.IOC, 2_000_000, 1);
  assert.equal(engine.events.code(0), 301, 'a full shard answers ORDER_CAPACITY_EXCEEDED');
  run(Opcode.CANCEL, 5, 0, 0, 0, 0);
  assert.equal(engine.events.kind(0), EventKind.ACCEPTED);

  // Sweep the two best levels exactly: 200 fills, oldest first within each price.
  const secondLevelOrders: number[] = [];
  let sweepUnits = bestLevelUnits;
  for (let n = 1; n < capacity; n += 10_000) {
    secondLevelOrders.push(n);
    sweepUnits += quantityOf(n);
  }
  run(Opcode.SUBMIT, capacity + 1, Side.BUY, TimeInForce.IOC, 1_000_001, sweepUnits);
  const e = engine.events;
  const makers: number[] = [];
  for (let k = 0; k < e.count; k++) {
    if (e.kind(k) === EventKind.TRADE) makers.push(engine.orders.words[engine.orders.idAt(e.counterparty(k)) + 3]!);
  }
  const firstLevelOrders = Array.from({ length: 100 }, (_, k) => k * 10_000);
  assert.deepEqual(makers, [...firstLevelOrders, ...secondLevelOrders]);
  assert.equal(engine.orders.restingCount, capacity - 1 - 200);
  assert.equal(depth(engine, book, Side.SELL, 1)[0]?.priceNanos, 1_000_002);
});
