import assert from 'node:assert/strict';
import { test } from 'node:test';
import { EVENT_ACCEPTED, EVENT_EXECUTION, EVENT_REJECTED, EVENT_TRADE, Opcode, OrderType, rejectCodeOf, Side, STATE_OPEN, STATE_FILLED, TimeInForce } from '../../core/codes.ts';
import { packCurrency, type CommandInput } from '../../core/command-slot.ts';
import { idOf, INSTRUMENT_A, PARTICIPANT_1, ACCOUNT_1 } from '../support/engine-driver.ts';
import { ShardHarness } from '../support/shard-harness.ts';

const id = (n: number) => idOf(0x5a, n);
const base = {
  runNo: 1,
  sessionNo: 1,
  instrumentId: INSTRUMENT_A,
  participantId: PARTICIPANT_1,
  accountId: ACCOUNT_1,
  currency: 'USD',
};
const submit = (n: number, side: number, price: number, quantity: number, timeInForce: number = TimeInForce.DAY): Omit<CommandInput, 'token' | 'timestampUs'> => ({
  ...base,
  opcode: Opcode.SUBMIT,
  commandId: id(1000 + n),
  orderId: id(n),
  side,
  orderType: OrderType.LIMIT,
  timeInForce,
  priceNanos: price,
  quantityUnits: quantity,
});

test('a shard thread answers each command with its header and events, in order', async () => {
  const shard = await ShardHarness.start();
  try {
    const [resting, crossing] = await shard.run([submit(1, Side.SELL, 100, 5), submit(2, Side.BUY, 100, 5)]);
    assert.equal(resting!.header.eventCount, 1);
    assert.equal(resting!.events[0]!.kind, EVENT_ACCEPTED);
    assert.equal(resting!.events[0]!.orderA, id(1));
    assert.equal(resting!.events[0]!.state, STATE_OPEN);
    assert.equal(resting!.header.engineOrderId, resting!.events[0]!.sequence);
    assert.equal(resting!.header.currency, packCurrency('USD'));
    assert.ok(resting!.header.timestampUs > 1.7e15, 'stamped with the sequencing time in microseconds');
    assert.deepEqual(
      crossing!.events.map((e) => e.kind),
      [EVENT_ACCEPTED, EVENT_EXECUTION, EVENT_EXECUTION, EVENT_TRADE],
    );
    const trade = crossing!.events[3]!;
    assert.deepEqual([trade.orderA, trade.orderB, trade.quantity, trade.price], [id(2), id(1), 5, 100]);
    const maker = crossing!.events[2]!;
    assert.deepEqual([maker.orderA, maker.orderB, maker.state, maker.side], [id(1), id(2), STATE_FILLED, Side.SELL]);
  } finally {
    await shard.stop();
  }
});

test('a rejection carries the command orderId and the code; REJECT commands are sequenced too', async () => {
  const shard = await ShardHarness.start();
  try {
    const [cancel, forced] = await shard.run([
      { ...base, opcode: Opcode.CANCEL, commandId: id(2001), orderId: id(77) },
      { ...base, opcode: Opcode.REJECT, commandId: id(2002), orderId: id(78), argument: rejectCodeOf('DUPLICATE_CLIENT_ORDER_ID') },
    ]);
    assert.deepEqual([cancel!.events[0]!.kind, cancel!.events[0]!.code, cancel!.events[0]!.orderA], [EVENT_REJECTED, rejectCodeOf('ORDER_NOT_FOUND'), id(77)]);
    assert.deepEqual([forced!.events[0]!.code, forced!.events[0]!.orderA], [rejectCodeOf('DUPLICATE_CLIENT_ORDER_ID'), id(78)]);
    assert.equal(forced!.events[0]!.sequence, cancel!.events[0]!.sequence + 1);
  } finally {
    await shard.stop();
  }
});

test('a QUERY answers the state of an order without sequencing anything', async () => {
  const shard = await ShardHarness.start();
  try {
    const [placed] = await shard.run([submit(1, Side.SELL, 100, 5)]);
    const [known, unknown] = await shard.run([
      { ...base, opcode: Opcode.QUERY, commandId: id(3001), orderId: id(1) },
      { ...base, opcode: Opcode.QUERY, commandId: id(3002), orderId: id(99) },
    ]);
    assert.deepEqual([known!.header.queryState, known!.header.eventCount], [STATE_OPEN, 0]);
    assert.equal(unknown!.header.queryState, -1);
    const [next] = await shard.run([submit(2, Side.SELL, 101, 5)]);
    assert.equal(next!.events[0]!.sequence, placed!.events[0]!.sequence + 1, 'queries took no sequence');
  } finally {
    await shard.stop();
  }
});

test('results larger than the result ring stream through it: a sweep of 300 makers into 16 slots', async () => {
  const shard = await ShardHarness.start({ resultSlots: 16, orderCapacity: 1024 });
  try {
    const makers = Array.from({ length: 300 }, (_, n) => submit(n + 1, Side.SELL, 100 + (n % 3), 1));
    await shard.run(makers);
    const [sweep] = await shard.run([submit(999, Side.BUY, 200, 300, TimeInForce.IOC)]);
    assert.equal(sweep!.header.eventCount, 1 + 300 * 3);
    const trades = sweep!.events.filter((e) => e.kind === EVENT_TRADE);
    assert.equal(trades.length, 300);
    // Best price first, oldest first within a price.
    const expected = [0, 1, 2].flatMap((p) => makers.filter((_, n) => n % 3 === p).map((m) => m.orderId));
    assert.deepEqual(
      trades.map((t) => t.orderB),
      expected,
    );
    const sequences = sweep!.events.map((e) => e.sequence);
    assert.deepEqual(
      sequences,
      sequences.map((_, k) => sequences[0]! + k),
    );
  } finally {
    assert.equal(await shard.stop(), 301, 'the shard counted 300 makers and the sweep');
  }
});
