import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, test } from 'node:test';
import { SeededRandom } from '../../bench/lib/seeded-random.ts';
import { topOfBook, depth } from '../../core/book-queries.ts';
import { EVENT_ACCEPTED, EVENT_EXPIRED, EVENT_REJECTED, EventKind, EXPIRY_SCAN_SLOTS, Opcode, OrderType, Side, rejectCodeOf, STATE_EXPIRED, TimeInForce } from '../../core/codes.ts';
import { COMMAND_SLOT_BYTES, encodeCommand, type CommandInput } from '../../core/command-slot.ts';
import { Doorbell } from '../../core/doorbell.ts';
import type { SnapshotHeader } from '../../core/engine-state.ts';
import { readEngineSnapshot, writeEngineSnapshot } from '../../persistence/engine-snapshot.ts';
import { MatchingEngine } from '../../core/matching-engine.ts';
import { ResultReader } from '../../core/result-reader.ts';
import { RESULT_RECORD_BYTES, type ResultEvent } from '../../core/result-slot.ts';
import { createRingBuffer, RingConsumer, RingProducer } from '../../core/ring.ts';
import { SHARD_CONTROL_BYTES, ShardRunner } from '../../core/shard-runner.ts';
import { bytesOf, writeSnapshotFile } from '../../persistence/snapshot-file.ts';
import { ACCOUNT_1, EngineDriver, idOf, INSTRUMENT_A, NIL_UUID, PARTICIPANT_1, type DecodedEvent } from '../support/engine-driver.ts';

const id = (n: number) => idOf(0xe5, n);
const dir = mkdtempSync(path.join(os.tmpdir(), 'session-expiry-'));
after(() => rmSync(dir, { recursive: true, force: true }));

const kinds = (events: DecodedEvent[]) => events.map((e) => (e.kind === 'rejected' ? e.code : e.kind));
const expiredIds = (events: DecodedEvent[]) => events.flatMap((e) => (e.kind === 'expired' ? [e.orderId] : []));
const restingIds = (d: EngineDriver) => [...d.book('BUY'), ...d.book('SELL')].map((o) => o.orderId);

/** Session 1: two displayed bids (one partially filled), a hidden bid and an ask; an IOC that never rested. */
function sessionOneBook(): EngineDriver {
  const d = new EngineDriver({ orderCapacity: 64 });
  d.submit({ orderId: id(1), side: 'BUY', price: 100, quantity: 10 });
  d.submit({ orderId: id(2), side: 'BUY', price: 99, quantity: 7 });
  d.submit({ orderId: id(3), side: 'BUY', price: 98, quantity: 5, hidden: true });
  d.submit({ orderId: id(4), side: 'SELL', price: 105, quantity: 3 });
  d.submit({ orderId: id(5), side: 'SELL', price: 100, quantity: 4, ioc: true }); // fills 4 of id(1)
  return d;
}

test('an EXPIRE expires the resting DAY orders of the ended session, open and partially filled, one event each after the leading one', () => {
  const d = sessionOneBook();
  const before = d.engine.sequence;
  const events = d.expire(2, 0);
  assert.deepEqual(events, [
    { kind: 'expiry', sequence: before + 1, expired: 4, slotsLeft: 0 },
    { kind: 'expired', sequence: before + 2, orderId: id(1), state: 'EXPIRED', quantityUnits: 10, filled: 4, leaves: 6, priceNanos: 100 },
    { kind: 'expired', sequence: before + 3, orderId: id(2), state: 'EXPIRED', quantityUnits: 7, filled: 0, leaves: 7, priceNanos: 99 },
    { kind: 'expired', sequence: before + 4, orderId: id(3), state: 'EXPIRED', quantityUnits: 5, filled: 0, leaves: 5, priceNanos: 98 },
    { kind: 'expired', sequence: before + 5, orderId: id(4), state: 'EXPIRED', quantityUnits: 3, filled: 0, leaves: 3, priceNanos: 105 },
  ]);
  assert.equal(d.engine.sequence, before + 5);
  assert.equal(d.engine.sessionFloor, 2);
});

test('the leading event of an EXPIRE that scanned every slot is an ACCEPTED naming no order, with state 0, code 0 (no slot left) and no price', () => {
  const d = sessionOneBook();
  d.expire(2, 0);
  const e = d.engine.events;
  assert.deepEqual([e.kind(0), e.order(0), e.counterparty(0), e.code(0), e.state(0), e.filled(0), e.price(0)], [EVENT_ACCEPTED, -1, -1, 0, 0, 0, 0]);
  assert.deepEqual([e.kind(1), e.counterparty(1), e.code(1), e.state(1)], [EVENT_EXPIRED, -1, 0, STATE_EXPIRED]);
});

test('expired orders leave the book: no level, top of book or depth is left', () => {
  const d = sessionOneBook();
  d.expire(2, 0);
  const book = d.bookIndex();
  assert.deepEqual(topOfBook(d.engine, book), { bid: null, ask: null });
  assert.deepEqual([depth(d.engine, book, Side.BUY, 10), depth(d.engine, book, Side.SELL, 10)], [[], []]);
  assert.deepEqual(restingIds(d), []);
  assert.equal(d.engine.levels.best(book * 2 + Side.BUY), -1);
  assert.equal(d.engine.levels.best(book * 2 + Side.SELL), -1);
  assert.equal(d.engine.orders.restingCount, 0);
});

test('a cancel or modify of an expired order answers ORDER_NOT_OPEN', () => {
  const d = sessionOneBook();
  d.expire(2, 0);
  assert.deepEqual(kinds(d.cancel({ orderId: id(1) })), ['ORDER_NOT_OPEN']);
  assert.deepEqual(kinds(d.modify({ orderId: id(2) }, 99, 3)), ['ORDER_NOT_OPEN']);
});

test('DAY orders of the new session and of later ones are untouched', () => {
  const d = new EngineDriver({ orderCapacity: 64 });
  d.submit({ orderId: id(1), side: 'BUY', price: 100, quantity: 10, sessionNo: 1 });
  d.submit({ orderId: id(2), side: 'BUY', price: 100, quantity: 6, sessionNo: 2 });
  d.submit({ orderId: id(3), side: 'SELL', price: 101, quantity: 4, sessionNo: 3 });
  d.submit({ orderId: id(4), side: 'SELL', price: 102, quantity: 2, sessionNo: 1 });
  const events = d.expire(2, 0);
  assert.deepEqual(expiredIds(events), [id(1), id(4)]);
  assert.deepEqual(d.book('BUY'), [{ orderId: id(2), priceNanos: 100, leaves: 6, hidden: false }]);
  assert.deepEqual(d.book('SELL'), [{ orderId: id(3), priceNanos: 101, leaves: 4, hidden: false }]);
  assert.deepEqual(topOfBook(d.engine, d.bookIndex()), {
    bid: { priceNanos: 100, quantityUnits: 6, orderCount: 1 },
    ask: { priceNanos: 101, quantityUnits: 4, orderCount: 1 },
  });
});

test('an EXPIRE past the slots in use expires nothing and reports no slot left', () => {
  const d = sessionOneBook();
  assert.deepEqual(d.expire(2, 5), [{ kind: 'expiry', sequence: d.engine.sequence, expired: 0, slotsLeft: 0 }]);
  assert.equal(d.book('SELL').length, 1, 'the ask in slot 3 was not in the range');
  assert.deepEqual(d.expire(2, 1 << 30), [{ kind: 'expiry', sequence: d.engine.sequence, expired: 0, slotsLeft: 0 }]);
  assert.equal(d.engine.sessionFloor, 2);
});

test('a book of more than EXPIRY_SCAN_SLOTS slots expires in several bounded commands, the last reporting no slot left', () => {
  const orders = 2 * EXPIRY_SCAN_SLOTS + 900;
  const d = new EngineDriver({ orderCapacity: orders + 16 });
  let sessionOne = 0;
  for (let n = 0; n < orders; n++) {
    // Every seventh order is of the new session; bids below 1000, asks above, none crossing.
    const session = n % 7 === 0 ? 2 : 1;
    if (session === 1) sessionOne++;
    d.submit({ orderId: id(n), side: n % 2 === 0 ? 'BUY' : 'SELL', price: n % 2 === 0 ? 900 - (n % 50) : 1100 + (n % 50), quantity: 1 + (n % 9), sessionNo: session });
  }
  assert.equal(d.engine.orders.slotsInUse, orders);
  const leads: { expired: number; slotsLeft: number }[] = [];
  let expired = 0;
  for (let first = 0; first < orders; first += EXPIRY_SCAN_SLOTS) {
    const events = d.expire(2, first);
    assert.ok(events.length <= EXPIRY_SCAN_SLOTS + 1, `${events.length} events`);
    const lead = events[0]!;
    assert.ok(lead.kind === 'expiry');
    assert.equal(lead.expired, events.length - 1);
    leads.push({ expired: lead.expired, slotsLeft: lead.slotsLeft });
    expired += lead.expired;
    // Slot order: every expired order lies in this command's range.
    for (const event of events.slice(1)) {
      assert.ok(event.kind === 'expired');
      const slot = Number.parseInt(event.orderId.slice(-12), 16);
      assert.ok(slot >= first && slot < first + EXPIRY_SCAN_SLOTS, `slot ${slot} in [${first}, ${first + EXPIRY_SCAN_SLOTS})`);
    }
  }
  assert.deepEqual(
    leads.map((lead) => lead.slotsLeft),
    [orders - EXPIRY_SCAN_SLOTS, orders - 2 * EXPIRY_SCAN_SLOTS, 0],
  );
  assert.equal(expired, sessionOne);
  assert.equal(d.engine.orders.restingCount, orders - sessionOne);
  const resting = restingIds(d).map((orderId) => Number.parseInt(orderId.slice(-12), 16));
  assert.equal(resting.length, orders - sessionOne);
  assert.ok(
    resting.every((n) => n % 7 === 0),
    'only the new session rests',
  );
});

test('an order of the ended session submitted after the roll fails SESSION_ENDED: nothing of it trades or rests', () => {
  const d = new EngineDriver({ orderCapacity: 64 });
  d.submit({ orderId: id(1), side: 'SELL', price: 100, quantity: 5, sessionNo: 2 });
  d.submit({ orderId: id(2), side: 'SELL', price: 101, quantity: 5, sessionNo: 2 });
  d.expire(2, 0);
  const events = d.submit({ orderId: id(3), side: 'BUY', price: 100, quantity: 8, sessionNo: 1 });
  assert.deepEqual(kinds(events), ['SESSION_ENDED']);
  assert.deepEqual(d.book('BUY'), []);
  assert.deepEqual(d.book('SELL'), [
    { orderId: id(1), priceNanos: 100, leaves: 5, hidden: false },
    { orderId: id(2), priceNanos: 101, leaves: 5, hidden: false },
  ]);
  assert.deepEqual(kinds(d.cancel({ orderId: id(3) })), ['ORDER_NOT_FOUND'], 'no order was created');
});

test('an order id that failed SESSION_ENDED is free: the same order stamped with the open session trades and rests', () => {
  const d = new EngineDriver({ orderCapacity: 64 });
  d.submit({ orderId: id(1), side: 'SELL', price: 100, quantity: 5, sessionNo: 2 });
  d.expire(2, 0);
  assert.deepEqual(kinds(d.submit({ orderId: id(2), side: 'BUY', price: 100, quantity: 8, sessionNo: 1 })), ['SESSION_ENDED']);
  const events = d.submit({ orderId: id(2), side: 'BUY', price: 100, quantity: 8, sessionNo: 2 });
  assert.deepEqual(kinds(events), ['accepted', 'execution', 'execution', 'trade']);
  assert.deepEqual(d.book('BUY'), [{ orderId: id(2), priceNanos: 100, leaves: 3, hidden: false }]);
});
test('an EXPIRE with floor 0, a negative floor or a negative first slot is rejected INVALID_COMMAND and changes nothing', () => {
  const d = sessionOneBook();
  const book = restingIds(d);
  for (const [floor, first] of [
    [0, 0],
    [-1, 0],
    [2, -1],
  ] as const) {
    const before = d.engine.sequence;
    const events = d.expire(floor, first);
    assert.deepEqual(events, [{ kind: 'rejected', sequence: before + 1, orderId: NIL_UUID, code: 'INVALID_COMMAND' }], `floor ${floor}, first ${first}`);
  }
  assert.equal(d.engine.sessionFloor, 0);
  assert.deepEqual(restingIds(d), book);
  assert.equal(d.engine.orders.restingCount, 4);
});

test('a lower floor after a higher one keeps the higher floor', () => {
  const d = new EngineDriver({ orderCapacity: 64 });
  d.submit({ orderId: id(1), side: 'BUY', price: 100, quantity: 1, sessionNo: 2 });
  d.expire(3, 0);
  d.submit({ orderId: id(2), side: 'BUY', price: 100, quantity: 1, sessionNo: 3 });
  const events = d.expire(2, 0);
  assert.equal(d.engine.sessionFloor, 3);
  assert.deepEqual(kinds(events), ['expiry'], 'the session-3 order is of a live session');
  assert.deepEqual(restingIds(d), [id(2)]);
});

test('the session floor survives a save and restore, and still keeps ended-session orders from resting', () => {
  const d = sessionOneBook();
  d.submit({ orderId: id(10), side: 'BUY', price: 97, quantity: 2, sessionNo: 4 });
  d.expire(4, 0);
  const file = path.join(dir, 'floor.bin');
  const { sequence } = writeEngineSnapshot(file, d.engine, 'floor', 0, 1);
  const restored = readEngineSnapshot(file, { token: 'floor', shard: 0, sequence }, d.engine.shape);
  assert.ok(typeof restored !== 'string', `restored: ${String(restored)}`);
  assert.equal(restored.engine.sessionFloor, 4);
  const copy = new EngineDriver(restored.engine);
  assert.deepEqual(restingIds(copy), [id(10)]);
  const late = copy.submit({ orderId: id(11), side: 'BUY', price: 96, quantity: 2, sessionNo: 3 });
  assert.deepEqual(kinds(late), ['SESSION_ENDED']);
  assert.deepEqual(restingIds(copy), [id(10)]);
});

test('a state saved without a session floor (a file written before expiry existed) loads with floor 0', () => {
  const d = sessionOneBook();
  // The file as an older engine wrote it: the same header and sections, no sessionFloor scalar.
  const numbers: Record<string, number> = {};
  const sections: [string, Uint8Array][] = [];
  d.engine.saveState({ number: (name, value) => (numbers[name] = value), array: (name, view) => sections.push([name, bytesOf(view)]) });
  assert.equal(numbers.sessionFloor, 0, 'a current engine writes it');
  delete numbers.sessionFloor;
  const header: SnapshotHeader = {
    token: 'older',
    shard: 0,
    sequence: d.engine.sequence,
    batch: 3,
    shape: d.engine.shape,
    numbers,
    sections: sections.map(([name, view]) => [name, view.byteLength]),
  };
  const file = path.join(dir, 'older.bin');
  writeSnapshotFile(
    file,
    'VES1',
    header,
    sections.map(([, view]) => view),
  );
  const restored = readEngineSnapshot(file, { token: 'older', shard: 0, sequence: d.engine.sequence }, d.engine.shape);
  assert.ok(typeof restored !== 'string', `restored: ${String(restored)}`);
  assert.equal(restored.engine.sessionFloor, 0);
  const copy = new EngineDriver(restored.engine);
  assert.deepEqual(restingIds(copy), restingIds(d));
  assert.deepEqual(expiredIds(copy.expire(2, 0)), [id(1), id(2), id(3), id(4)]);
});

/** A seeded stream of submits, cancels and session rolls (sessions 1..4) through one engine: every event field, and the orders expired. */
function runWithRolls(seed: number, hashSeed: number): { fields: number[]; expired: number } {
  const r = new SeededRandom(seed);
  const engine = new MatchingEngine({ orderCapacity: 1024, hashSeed });
  const d = new EngineDriver(engine);
  const out: number[] = [];
  let expired = 0;
  const record = () => {
    const e = engine.events;
    for (let k = 0; k < e.count; k++) {
      if (e.kind(k) === EVENT_EXPIRED) expired++;
      out.push(e.kind(k), e.sequence(k), e.order(k), e.counterparty(k), e.code(k), e.quantity(k), e.price(k), e.state(k));
      if (e.kind(k) !== EventKind.REJECTED) out.push(e.leaves(k), e.filled(k));
    }
  };
  let session = 1;
  const sessions: number[] = [];
  for (let n = 0; n < 6000; n++) {
    const roll = r.below(1000);
    if (roll < 4 && session < 4) {
      session++;
      d.expire(session, 0); // a book under EXPIRY_SCAN_SLOTS slots takes one command
      record();
    } else if (roll < 700) {
      // Mostly the current session; some orders of an older one arrive late.
      const sessionNo = r.chance(0.1) ? 1 + r.below(session) : session;
      const side = r.chance(0.5) ? 'BUY' : 'SELL';
      sessions.push(sessionNo);
      d.submit({ orderId: id(sessions.length), side, price: 1000 + (side === 'BUY' ? -1 : 1) * (r.below(40) - 8), quantity: 1 + r.below(20), ioc: r.chance(0.1), hidden: r.chance(0.1), sessionNo });
      record();
    } else {
      const target = r.below(sessions.length + 1);
      d.cancel({ orderId: id(target), sessionNo: sessions[target - 1] ?? 1 });
      record();
    }
  }
  return { fields: out, expired };
}

test('the same command sequence with session rolls always produces the same events', () => {
  const first = runWithRolls(7, 0);
  const second = runWithRolls(7, 0);
  assert.ok(first.fields.length > 40_000, `${first.fields.length} fields`);
  assert.ok(first.expired > 20, `the stream expired ${first.expired} orders`);
  assert.deepEqual(second, first);
  assert.notDeepEqual(runWithRolls(8, 0).fields, first.fields, 'a different stream gives different events');
});

test('the hash seed does not change what session rolls output', () => {
  assert.deepEqual(runWithRolls(9, 0x5eed), runWithRolls(9, 0));
});

// Through a shard runner in this thread: the result records a gateway reads and the journal a restart replays.

const context = { runNo: 1, instrumentId: INSTRUMENT_A, participantId: PARTICIPANT_1, accountId: ACCOUNT_1, currency: 'USD' };
type Command = Omit<CommandInput, 'token' | 'timestampUs'>;
const submitCommand = (n: number, side: number, price: number, quantity: number, sessionNo: number): Command => ({
  ...context,
  sessionNo,
  opcode: Opcode.SUBMIT,
  commandId: idOf(0xc5, n),
  orderId: id(n),
  side,
  orderType: OrderType.LIMIT,
  timeInForce: TimeInForce.DAY,
  priceNanos: price,
  quantityUnits: quantity,
});
const expireCommand = (n: number, floor: number, first: number): Command => ({
  opcode: Opcode.EXPIRE,
  runNo: 1,
  sessionNo: floor,
  argument: first,
  commandId: idOf(0xc5, n),
  orderId: NIL_UUID,
  instrumentId: NIL_UUID,
  participantId: NIL_UUID,
  accountId: NIL_UUID,
});

/** Runs commands through a ShardRunner over in-memory rings; returns each command's result events and the journal bytes. */
function runShard(engine: MatchingEngine, commands: Command[]): { results: ResultEvent[][]; journal: Uint8Array } {
  const commandRing = createRingBuffer(COMMAND_SLOT_BYTES, 64);
  const resultRing = createRingBuffer(RESULT_RECORD_BYTES, 1024);
  const journalRing = createRingBuffer(RESULT_RECORD_BYTES, 1024);
  const runner = new ShardRunner({
    engine,
    commandRings: [commandRing],
    resultRings: [resultRing],
    doorbell: Doorbell.create(),
    gatewayDoorbells: [Doorbell.create()],
    journalRing,
    journalDoorbell: Doorbell.create(),
    control: new SharedArrayBuffer(SHARD_CONTROL_BYTES),
    clockUs: () => 1_700_000_000_000_000,
    batchMax: 32,
  });
  const producer = new RingProducer(commandRing, COMMAND_SLOT_BYTES);
  commands.forEach((command, k) => encodeCommand({ ...command, token: k + 1, timestampUs: 0 }, producer, producer.slotOffset(producer.nextIndex + k)));
  producer.publish(commands.length);
  assert.equal(runner.drainOnce(), commands.length);
  const results: ResultEvent[][] = [];
  new ResultReader(resultRing).poll((_header, events) => results.push(events));
  const consumer = new RingConsumer(journalRing, RESULT_RECORD_BYTES);
  const journal = new Uint8Array(consumer.available() * RESULT_RECORD_BYTES);
  consumer.copyOut(consumer.available(), journal, 0);
  return { results, journal };
}

const shardCommands = (): Command[] => [
  submitCommand(1, Side.BUY, 100, 10, 1),
  submitCommand(2, Side.SELL, 105, 3, 1),
  submitCommand(3, Side.SELL, 104, 6, 2),
  submitCommand(4, Side.SELL, 106, 5, 2),
  submitCommand(5, Side.SELL, 100, 4, 2), // fills 4 of order 1
  expireCommand(6, 2, 0),
  submitCommand(7, Side.BUY, 104, 8, 1), // a late order of the ended session: fails SESSION_ENDED, trades nothing
];

test("a shard writes an EXPIRE result with the expired orders' ids, sides, quantities and prices", () => {
  const { results } = runShard(new MatchingEngine({ orderCapacity: 64 }), shardCommands());
  const expiry = results[5]!;
  assert.deepEqual(
    expiry.map((e) => [e.kind, e.state, e.side, e.orderA, e.quantity, e.price, e.code]),
    [
      [EVENT_ACCEPTED, 0, 0, NIL_UUID, 2, 0, 0],
      [EVENT_EXPIRED, STATE_EXPIRED, Side.BUY, id(1), 10, 100, 0],
      [EVENT_EXPIRED, STATE_EXPIRED, Side.SELL, id(2), 3, 105, 0],
    ],
  );
  assert.deepEqual(
    expiry.map((e) => e.sequence),
    [9, 10, 11],
  );
  const late = results[6]!;
  assert.deepEqual(
    late.map((e) => [e.kind, e.code]),
    [[EVENT_REJECTED, rejectCodeOf('SESSION_ENDED')]],
    'the late order fails and trades nothing',
  );
});

test('a journal holding an EXPIRE replays to the same events, book and session floor', () => {
  const original = new MatchingEngine({ orderCapacity: 64 });
  const { journal } = runShard(original, shardCommands());
  const replayed = new MatchingEngine({ orderCapacity: 64 });
  const runner = new ShardRunner({
    engine: replayed,
    commandRings: [],
    resultRings: [],
    doorbell: Doorbell.create(),
    gatewayDoorbells: [],
    journalRing: null,
    journalDoorbell: null,
    control: new SharedArrayBuffer(SHARD_CONTROL_BYTES),
    clockUs: () => 0,
    batchMax: 32,
  });
  assert.equal(runner.replay(journal), 7);
  assert.equal(replayed.sequence, original.sequence);
  assert.equal(replayed.sessionFloor, 2);
  const a = new EngineDriver(original);
  const b = new EngineDriver(replayed);
  assert.deepEqual(b.book('SELL'), a.book('SELL'));
  assert.deepEqual(b.book('SELL'), [
    { orderId: id(3), priceNanos: 104, leaves: 6, hidden: false },
    { orderId: id(4), priceNanos: 106, leaves: 5, hidden: false },
  ]);
  assert.deepEqual(b.book('BUY'), []);
});

test('restingDayOrdersBefore counts the resting DAY orders an EXPIRE would expire, and changes nothing', () => {
  const d = sessionOneBook();
  const sequence = d.engine.sequence;
  assert.equal(d.engine.restingDayOrdersBefore(1), 0);
  assert.equal(d.engine.restingDayOrdersBefore(2), 4);
  assert.equal(d.engine.sequence, sequence);
  d.expire(2, 0);
  assert.equal(d.engine.restingDayOrdersBefore(2), 0);
});
