// A command the shard cannot carry out fails, and nothing of it reaches the journal: an
// engine that throws (an internal check failed) halts its shard, whose later commands fail
// SHARD_HALTED; the journal of those failures replays into a sound engine.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { EVENT_ACCEPTED, EVENT_REJECTED, Opcode, OrderType, rejectCodeOf, Side, TimeInForce } from '../../core/codes.ts';
import { COMMAND_ORDER_ID_WORD, COMMAND_SLOT_BYTES, encodeCommand, type CommandInput } from '../../core/command-slot.ts';
import { Doorbell } from '../../core/doorbell.ts';
import { MatchingEngine } from '../../core/matching-engine.ts';
import { ResultReader } from '../../core/result-reader.ts';
import { RESULT_RECORD_BYTES, type ResultEvent } from '../../core/result-slot.ts';
import { createRingBuffer, RingConsumer, RingProducer } from '../../core/ring.ts';
import { SHARD_CONTROL_BYTES, SHARD_HALTED_WORD, ShardRunner } from '../../core/shard-runner.ts';
import { uuidWords } from '../../core/uuid.ts';
import { ACCOUNT_1, EngineDriver, idOf, INSTRUMENT_A, PARTICIPANT_1 } from '../support/engine-driver.ts';

const id = (n: number) => idOf(0xf1, n);
type Command = Omit<CommandInput, 'token' | 'timestampUs'>;
const submit = (n: number, side: number, price: number, quantity: number): Command => ({
  runNo: 1,
  sessionNo: 1,
  instrumentId: INSTRUMENT_A,
  participantId: PARTICIPANT_1,
  accountId: ACCOUNT_1,
  currency: 'USD',
  opcode: Opcode.SUBMIT,
  commandId: idOf(0xc1, n),
  orderId: id(n),
  side,
  orderType: OrderType.LIMIT,
  timeInForce: TimeInForce.DAY,
  priceNanos: price,
  quantityUnits: quantity,
});

/** An engine whose internal check fails on one order: it half-does the command, then throws. */
class BrokenEngine extends MatchingEngine {
  constructor(private readonly poison: Int32Array) {
    super({ orderCapacity: 64 });
  }

  override process(words: Int32Array, floats: Float64Array, byteOffset: number): number {
    const at = (byteOffset >> 2) + COMMAND_ORDER_ID_WORD;
    if ([0, 1, 2, 3].every((k) => words[at + k] === this.poison[k])) {
      super.process(words, floats, byteOffset); // its effects reach the engine's memory...
      throw new Error('an internal check failed'); // ...then a check finds the state wrong
    }
    return super.process(words, floats, byteOffset);
  }
}

function run(engine: MatchingEngine, commands: Command[], onHalt: (error: unknown) => void = () => undefined) {
  const commandRing = createRingBuffer(COMMAND_SLOT_BYTES, 64);
  const resultRing = createRingBuffer(RESULT_RECORD_BYTES, 1024);
  const journalRing = createRingBuffer(RESULT_RECORD_BYTES, 1024);
  const control = new SharedArrayBuffer(SHARD_CONTROL_BYTES);
  const runner = new ShardRunner({
    engine,
    commandRings: [commandRing],
    resultRings: [resultRing],
    doorbell: Doorbell.create(),
    gatewayDoorbells: [Doorbell.create()],
    journalRing,
    journalDoorbell: Doorbell.create(),
    control,
    clockUs: () => 1_700_000_000_000_000,
    batchMax: 32,
    onHalt,
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
  return { results, journal, runner, halted: Atomics.load(new Int32Array(control), SHARD_HALTED_WORD) };
}

const commands = (): Command[] => [
  submit(1, Side.SELL, 100, 5),
  submit(2, Side.BUY, 100, 2), // the poisoned one: trades 2 with order 1 in memory, then throws
  submit(3, Side.BUY, 90, 4),
  submit(4, Side.SELL, 95, 1),
];

test('an engine that throws fails its command INTERNAL_CHECK_FAILED with one event, and halts: later commands fail SHARD_HALTED', () => {
  const errors: unknown[] = [];
  const { results, runner, halted } = run(new BrokenEngine(uuidWords(id(2))), commands(), (error) => errors.push(error));
  assert.deepEqual(
    results.map((events) => events.map((event) => [event.kind, event.code, event.sequence])),
    [
      [[EVENT_ACCEPTED, 0, 1]],
      [[EVENT_REJECTED, rejectCodeOf('INTERNAL_CHECK_FAILED'), 2]], // no gap: the half-done command's events are dropped
      [[EVENT_REJECTED, rejectCodeOf('SHARD_HALTED'), 3]],
      [[EVENT_REJECTED, rejectCodeOf('SHARD_HALTED'), 4]],
    ],
  );
  assert.equal(runner.halted, true);
  assert.equal(halted, 1, 'the gateways see the halt');
  assert.equal(errors.length, 1);
  assert.match((errors[0] as Error).message, /an internal check failed/);
});

test('the journal of failed commands replays into a sound engine: the failures again, none of their effects', () => {
  const { journal } = run(new BrokenEngine(uuidWords(id(2))), commands());
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
  assert.equal(runner.replay(journal), 4);
  assert.equal(replayed.sequence, 4);
  assert.equal(runner.halted, false, 'a replayed engine is sound: the restart does not halt it');
  const book = new EngineDriver(replayed);
  assert.deepEqual(book.book('SELL'), [{ orderId: id(1), priceNanos: 100, leaves: 5, hidden: false }], 'the failed command traded nothing');
  assert.deepEqual(book.book('BUY'), []);
});
