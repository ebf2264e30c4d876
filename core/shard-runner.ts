// The loop of a shard thread: drain the command rings of every gateway in batches,
// run each command through the engine, write the results back to the gateway that
// sent it. Sleeps on its doorbell when every ring is empty (no core burnt while
// idle); wakes each gateway at most once per batch.
//
// A command's results must reach its gateway even when they outgrow the free space
// of the result ring (a sweep of thousands of makers): the runner then publishes
// what it has, wakes the gateway and waits for room, with a bounded back-off.

import {
  COMMAND_HEADER_WORD,
  COMMAND_INSTRUMENT_ID_WORD,
  COMMAND_ORDER_ID_WORD,
  COMMAND_SLOT_BYTES,
  COMMAND_TIMESTAMP_US_FLOAT,
  COMMAND_TOKEN_WORD,
} from './command-slot.ts';
import { EVENT_EXECUTION, EVENT_REJECTED, EVENT_TRADE, OPCODE_QUERY } from './codes.ts';
import { Doorbell } from './doorbell.ts';
import type { MatchingEngine } from './matching-engine.ts';
import { ORDER_SIDE_BYTE, ORDER_BYTE_SHIFT } from './order-store.ts';
import { RESULT_RECORD_BYTES, RESULT_UUID_A_WORD, RESULT_UUID_B_WORD, writeEvent, writeHeader, writeUuid } from './result-slot.ts';
import { RingConsumer, RingProducer } from './ring.ts';

/** Words of the shard control block (a small SharedArrayBuffer per shard). */
export const SHARD_STOP_WORD = 0;
export const SHARD_COMMANDS_WORD = 1;
export const SHARD_BATCHES_WORD = 2;
export const SHARD_RESULT_WAITS_WORD = 3;
export const SHARD_CONTROL_BYTES = 64;

export interface ShardRunnerOptions {
  engine: MatchingEngine;
  commandRings: SharedArrayBuffer[];
  resultRings: SharedArrayBuffer[];
  doorbell: SharedArrayBuffer;
  gatewayDoorbells: SharedArrayBuffer[];
  control: SharedArrayBuffer;
  clockUs: () => number;
  batchMax: number;
  idleSleepMs?: number;
}

const pause = new Int32Array(new SharedArrayBuffer(4));

export class ShardRunner {
  private readonly engine: MatchingEngine;
  private readonly inputs: RingConsumer[];
  private readonly outputs: RingProducer[];
  private readonly doorbell: Doorbell;
  private readonly gatewayDoorbells: Doorbell[];
  private readonly control: Int32Array;
  private readonly clockUs: () => number;
  private readonly batchMax: number;
  private readonly idleSleepMs: number;
  private batch = 0;
  /** Result records written to a gateway's ring and not yet published. */
  private readonly unpublished: number[];

  constructor(options: ShardRunnerOptions) {
    this.engine = options.engine;
    this.inputs = options.commandRings.map((ring) => new RingConsumer(ring, COMMAND_SLOT_BYTES));
    this.outputs = options.resultRings.map((ring) => new RingProducer(ring, RESULT_RECORD_BYTES));
    this.doorbell = new Doorbell(options.doorbell);
    this.gatewayDoorbells = options.gatewayDoorbells.map((buffer) => new Doorbell(buffer));
    this.control = new Int32Array(options.control);
    this.clockUs = options.clockUs;
    this.batchMax = options.batchMax;
    this.idleSleepMs = options.idleSleepMs ?? 100;
    this.unpublished = this.outputs.map(() => 0);
  }

  /** Runs until the stop word is set and every ring is drained. */
  run(): void {
    for (;;) {
      if (this.drainOnce() > 0) continue;
      if (Atomics.load(this.control, SHARD_STOP_WORD) !== 0) return;
      const seen = this.doorbell.prepareSleep();
      if (this.anyAvailable() || Atomics.load(this.control, SHARD_STOP_WORD) !== 0) {
        this.doorbell.wake();
        continue;
      }
      this.doorbell.sleep(seen, this.idleSleepMs);
    }
  }

  /** One pass over every command ring; returns the commands processed. */
  drainOnce(): number {
    let processed = 0;
    for (let gateway = 0; gateway < this.inputs.length; gateway++) {
      const input = this.inputs[gateway]!;
      const available = input.available();
      if (available === 0) continue;
      const count = available < this.batchMax ? available : this.batchMax;
      this.processBatch(gateway, input, count);
      input.release(count);
      processed += count;
      this.publish(gateway);
    }
    if (processed > 0) {
      Atomics.add(this.control, SHARD_COMMANDS_WORD, processed);
      Atomics.add(this.control, SHARD_BATCHES_WORD, 1);
    }
    return processed;
  }

  private anyAvailable(): boolean {
    for (const input of this.inputs) if (input.available() > 0) return true;
    return false;
  }

  private processBatch(gateway: number, input: RingConsumer, count: number): void {
    const engine = this.engine;
    const now = this.clockUs();
    this.batch++;
    const first = input.nextIndex;
    // Prefetch in runs that do not cross the end of the ring (slots are contiguous there).
    const toEnd = input.capacity - (first & input.mask);
    engine.prefetch(input.words, input.slotOffset(first), count < toEnd ? count : toEnd);
    for (let k = 0; k < count; k++) {
      if (k === toEnd) engine.prefetch(input.words, input.slotOffset(first + k), count - k);
      const offset = input.slotOffset(first + k);
      input.floats[(offset >> 3) + COMMAND_TIMESTAMP_US_FLOAT] = now;
      const w = offset >> 2;
      if ((input.words[w + COMMAND_HEADER_WORD]! & 0xff) === OPCODE_QUERY) {
        this.answerQuery(gateway, input, w, now);
        continue;
      }
      engine.process(input.words, input.floats, offset);
      this.writeResults(gateway, input, w, now);
    }
  }

  private answerQuery(gateway: number, input: RingConsumer, w: number, now: number): void {
    const words = input.words;
    const orders = this.engine.orders;
    const slot = orders.find(
      words[w + COMMAND_ORDER_ID_WORD]!,
      words[w + COMMAND_ORDER_ID_WORD + 1]!,
      words[w + COMMAND_ORDER_ID_WORD + 2]!,
      words[w + COMMAND_ORDER_ID_WORD + 3]!,
    );
    const at = this.reserve(gateway, 1);
    writeHeader(this.outputs[gateway]!, at, words[w + COMMAND_TOKEN_WORD]!, 0, 0, slot < 0 ? -1 : orders.state(slot), now, 0, this.batch);
    this.unpublished[gateway]!++;
  }

  private writeResults(gateway: number, input: RingConsumer, w: number, now: number): void {
    const engine = this.engine;
    const events = engine.events;
    const orders = engine.orders;
    const out = this.outputs[gateway]!;
    const book = engine.findBook(input.words, w + COMMAND_INSTRUMENT_ID_WORD);
    const first = events.order(0);
    const engineOrderId = events.kind(0) === EVENT_REJECTED || first < 0 ? 0 : orders.engineNo[first]!;
    const token = input.words[w + COMMAND_TOKEN_WORD]!;
    writeHeader(out, this.reserve(gateway, 1), token, events.count, book < 0 ? 0 : engine.currency[book]!, 0, now, engineOrderId, this.batch);
    this.unpublished[gateway]!++;
    for (let i = 0; i < events.count; i++) {
      const at = this.reserve(gateway, 1);
      const kind = events.kind(i);
      const a = events.order(i);
      const named = kind !== EVENT_REJECTED && a >= 0;
      const side = named ? orders.bytes[(a << ORDER_BYTE_SHIFT) + ORDER_SIDE_BYTE]! : 0;
      writeEvent(out, at, kind, events.state(i), events.aggressor(i), side, events.code(i), events.sequence(i), events.quantity(i), events.price(i));
      // A rejection names the command's order; everything else the orders the engine holds.
      if (named) writeUuid(out, at, RESULT_UUID_A_WORD, orders.words, orders.idAt(a));
      else writeUuid(out, at, RESULT_UUID_A_WORD, input.words, w + COMMAND_ORDER_ID_WORD);
      if (kind === EVENT_EXECUTION || kind === EVENT_TRADE) writeUuid(out, at, RESULT_UUID_B_WORD, orders.words, orders.idAt(events.counterparty(i)));
      this.unpublished[gateway]!++;
    }
  }

  /**
   * Byte offset of the next free result record for a gateway. When the ring has no
   * room, publishes what is pending, wakes the gateway and waits for it to consume.
   */
  private reserve(gateway: number, count: number): number {
    const out = this.outputs[gateway]!;
    const pending = this.unpublished[gateway]!;
    if (out.freeSlots() - pending < count) {
      this.publish(gateway);
      Atomics.add(this.control, SHARD_RESULT_WAITS_WORD, 1);
      while (out.freeSlots() < count) {
        this.gatewayDoorbells[gateway]!.ringAlways();
        Atomics.wait(pause, 0, 0, 0.2);
      }
    }
    return out.slotOffset(out.nextIndex + this.unpublished[gateway]!);
  }

  private publish(gateway: number): void {
    const pending = this.unpublished[gateway]!;
    if (pending === 0) return;
    this.outputs[gateway]!.publish(pending);
    this.unpublished[gateway] = 0;
    this.gatewayDoorbells[gateway]!.ring();
  }
}
