// The loop of a shard thread: drain the command rings of every gateway in batches,
// run each command through the engine, write the results back to the gateway that
// sent it, and the command with its outcome to the journal ring (the persistence
// worker makes it durable). Sleeps on its doorbell when every ring is empty (no core
// burnt while idle); wakes each consumer at most once per batch.
//
// An output that has no room (results larger than the ring, a persistence worker that
// fell behind or a database that is down) makes the runner publish what it has, wake
// the consumer and wait: the shard stops taking commands, its command rings fill and
// the gateways answer 503. Back-pressure, not unbounded buffering.
//
// Journal stream, per command: the 128-byte slot as sequenced (two 64-byte records),
// then the result header and the event records, exactly as sent to the gateway.

import { COMMAND_HEADER_WORD, COMMAND_INSTRUMENT_ID_WORD, COMMAND_ORDER_ID_WORD, COMMAND_SLOT_BYTES, COMMAND_TIMESTAMP_US_FLOAT, COMMAND_TOKEN_WORD } from './command-slot.ts';
import { EVENT_EXECUTION, EVENT_REJECTED, EVENT_TRADE, OPCODE_QUERY, RejectCode } from './codes.ts';
import { Doorbell } from './doorbell.ts';
import type { MatchingEngine } from './matching-engine.ts';
import { ORDER_BYTE_SHIFT, ORDER_SIDE_BYTE } from './order-store.ts';
import {
  RESULT_BATCH_FLOAT,
  RESULT_CODE_WORD,
  RESULT_COUNT_WORD,
  RESULT_RECORD_BYTES,
  RESULT_SEQUENCE_FLOAT,
  RESULT_UUID_A_WORD,
  RESULT_UUID_B_WORD,
  writeEvent,
  writeHeader,
  writeUuid,
} from './result-slot.ts';
import { RingConsumer, RingProducer } from './ring.ts';

/** Words of the shard control block (a small SharedArrayBuffer per shard). */
export const SHARD_STOP_WORD = 0;
export const SHARD_COMMANDS_WORD = 1;
export const SHARD_BATCHES_WORD = 2;
export const SHARD_OUTPUT_WAITS_WORD = 3;
/** 1 while a checkpoint of this shard's engine is being written (the main thread clears it); none is taken meanwhile. */
export const SHARD_CHECKPOINT_WORD = 4;
/** 1 once an internal check failed (ShardRunner.halted): the gateways send it no more commands. */
export const SHARD_HALTED_WORD = 5;
export const SHARD_CONTROL_BYTES = 64;

/** Records a command takes on the journal ring before its result records. */
export const JOURNAL_COMMAND_RECORDS = COMMAND_SLOT_BYTES / RESULT_RECORD_BYTES;

export interface ShardRunnerOptions {
  engine: MatchingEngine;
  commandRings: SharedArrayBuffer[];
  resultRings: SharedArrayBuffer[];
  doorbell: SharedArrayBuffer;
  gatewayDoorbells: SharedArrayBuffer[];
  /** Where the journal stream goes; null runs without persistence (tests of the loop). */
  journalRing: SharedArrayBuffer | null;
  journalDoorbell: SharedArrayBuffer | null;
  control: SharedArrayBuffer;
  clockUs: () => number;
  batchMax: number;
  idleSleepMs?: number;
  /** Batch numbers go on from here (the engine restored from a file; a replay moves it too). */
  batch?: number;
  /**
   * A checkpoint of the engine every `commands` commands (while none is being written):
   * `take` copies what it needs before it returns, between two batches, or returns false
   * to be asked again after the next batch (it is not ready: its buffer is on its way). Null: none.
   */
  checkpoint?: { commands: number; take: (batch: number) => boolean } | null;
  /** Hears the error of an internal check that failed, once: the shard halts (ShardRunner.halted). */
  onHalt?: (error: unknown) => void;
}

/** A ring this shard writes, with what it wrote and has not published yet. */
class Output {
  unpublished = 0;
  /** A state-query answer is among the unpublished records (its asker waits for the shard, not for storage). */
  answersQuery = false;
  constructor(
    readonly ring: RingProducer,
    readonly bell: Doorbell,
  ) {}
}

const pause = new Int32Array(new SharedArrayBuffer(4));

export class ShardRunner {
  private readonly engine: MatchingEngine;
  private readonly inputs: RingConsumer[];
  private readonly outputs: Output[];
  private readonly journal: Output | null;
  private readonly doorbell: Doorbell;
  private readonly control: Int32Array;
  private readonly clockUs: () => number;
  private readonly batchMax: number;
  private readonly idleSleepMs: number;
  private batch: number;
  private readonly checkpoint: { commands: number; take: (batch: number) => boolean } | null;
  private sinceCheckpoint = 0;
  /** A one-slot buffer the replay and re-drive paths run commands from. */
  private readonly scratch = new SlotBuffer();
  private readonly onHalt: (error: unknown) => void;
  /**
   * Set when the engine threw while carrying out a command (an internal check failed):
   * that command fails INTERNAL_CHECK_FAILED and nothing of it reaches the journal, but
   * the engine's memory may hold part of it, so it carries out no further command: each
   * fails SHARD_HALTED, and no checkpoint or save is taken. A restart replays the journal,
   * which holds the failures and none of their effects, into a sound engine.
   */
  halted = false;

  constructor(options: ShardRunnerOptions) {
    this.engine = options.engine;
    this.inputs = options.commandRings.map((ring) => new RingConsumer(ring, COMMAND_SLOT_BYTES));
    this.outputs = options.resultRings.map((ring, gateway) => new Output(new RingProducer(ring, RESULT_RECORD_BYTES), new Doorbell(options.gatewayDoorbells[gateway]!)));
    this.journal = options.journalRing === null ? null : new Output(new RingProducer(options.journalRing, RESULT_RECORD_BYTES), new Doorbell(options.journalDoorbell!));
    this.doorbell = new Doorbell(options.doorbell);
    this.control = new Int32Array(options.control);
    this.clockUs = options.clockUs;
    this.batchMax = options.batchMax;
    this.idleSleepMs = options.idleSleepMs ?? 100;
    this.batch = options.batch ?? 0;
    this.checkpoint = options.checkpoint ?? null;
    this.onHalt = options.onHalt ?? (() => undefined);
  }

  /** The last batch number given. */
  get lastBatch(): number {
    return this.batch;
  }

  /** Runs until the stop word is set and every ring is drained. */
  run(): void {
    for (;;) {
      const processed = this.drainOnce();
      if (processed > 0) {
        if (this.checkpoint !== null && (this.sinceCheckpoint += processed) >= this.checkpoint.commands) this.takeCheckpoint();
        continue;
      }
      if (Atomics.load(this.control, SHARD_STOP_WORD) !== 0) return;
      const seen = this.doorbell.prepareSleep();
      if (this.anyAvailable() || Atomics.load(this.control, SHARD_STOP_WORD) !== 0) {
        this.doorbell.wake();
        continue;
      }
      this.doorbell.sleep(seen, this.idleSleepMs);
    }
  }

  /** Sets how many commands the engine holds since the checkpoint a crash would start from (before run()). */
  countTowardCheckpoint(commands: number): void {
    this.sinceCheckpoint = Math.max(0, commands);
  }

  /** Between two batches (every result published): unless the last one is still being written. */
  private takeCheckpoint(): void {
    if (this.halted) return;
    if (Atomics.compareExchange(this.control, SHARD_CHECKPOINT_WORD, 0, 1) !== 0) return;
    let taken: boolean;
    try {
      taken = this.checkpoint!.take(this.batch);
    } catch (error) {
      Atomics.store(this.control, SHARD_CHECKPOINT_WORD, 0);
      throw error;
    }
    if (taken) this.sinceCheckpoint = 0;
    else Atomics.store(this.control, SHARD_CHECKPOINT_WORD, 0); // still due: asked again after the next batch
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
      this.publishResults(this.outputs[gateway]!);
      if (this.journal !== null) this.publish(this.journal);
    }
    if (processed > 0) {
      Atomics.add(this.control, SHARD_COMMANDS_WORD, processed);
      Atomics.add(this.control, SHARD_BATCHES_WORD, 1);
    }
    return processed;
  }

  /**
   * Recovery: runs the commands of a journal payload through the engine again, in
   * order, and checks that every event comes out on the sequence the journal holds.
   * Writes nothing anywhere. The payload must start on an 8-byte boundary. Returns the
   * commands replayed.
   */
  replay(payload: Uint8Array): number {
    const engine = this.engine;
    const words = new Int32Array(payload.buffer, payload.byteOffset, payload.byteLength >> 2);
    const floats = new Float64Array(payload.buffer, payload.byteOffset, payload.byteLength >> 3);
    const view = { words, floats, bytes: payload };
    let at = 0;
    let commands = 0;
    // An engine restored from a checkpoint holds a prefix of this payload already: the
    // commands whose events are all at or below engine.sequence (every journaled command
    // has an event: an outcome, a rejection at least).
    while (at < payload.byteLength) {
      const held = engine.sequence;
      const counted = words[((at + COMMAND_SLOT_BYTES) >> 2) + RESULT_COUNT_WORD]!;
      const firstEventAt = at + COMMAND_SLOT_BYTES + RESULT_RECORD_BYTES;
      let lowest = Infinity;
      let highest = 0;
      for (let i = 0; i < counted; i++) {
        const sequence = floats[((firstEventAt + i * RESULT_RECORD_BYTES) >> 3) + RESULT_SEQUENCE_FLOAT]!;
        if (sequence < lowest) lowest = sequence;
        if (sequence > highest) highest = sequence;
      }
      if (lowest <= held) {
        if (highest > held) throw new Error(`journal replay: the engine's sequence ${held} falls inside the command of sequences ${lowest}-${highest}`);
        at = firstEventAt + counted * RESULT_RECORD_BYTES;
        continue;
      }
      // The slot as it was sequenced (its timestamp included), processed where it lies; a
      // command that failed on the shard (and did nothing) fails the same way again.
      const failure = counted === 1 ? words[(firstEventAt >> 2) + RESULT_CODE_WORD]! : 0;
      if (failure === RejectCode.INTERNAL_CHECK_FAILED || failure === RejectCode.SHARD_HALTED) engine.failCommand(held, failure);
      else engine.process(words, floats, at);
      at += COMMAND_SLOT_BYTES;
      const eventCount = words[(at >> 2) + RESULT_COUNT_WORD]!;
      const batch = floats[(at >> 3) + RESULT_BATCH_FLOAT]!;
      at += RESULT_RECORD_BYTES;
      if (batch > this.batch) this.batch = batch; // batch numbers go on after a restart
      const events = engine.events;
      if (events.count !== eventCount) {
        throw new Error(`journal replay diverged: ${events.count} events, the journal has ${eventCount}`);
      }
      for (let i = 0; i < events.count; i++, at += RESULT_RECORD_BYTES) {
        const expected = view.floats[(at >> 3) + RESULT_SEQUENCE_FLOAT]!;
        if (events.sequence(i) !== expected) throw new Error(`journal replay diverged at sequence ${expected}: the engine gave ${events.sequence(i)}`);
      }
      commands++;
    }
    return commands;
  }

  /**
   * Recovery: a command that was captured but never reached the journal runs now,
   * stamped with the current time, and goes to the journal; no gateway waits for it.
   */
  redrive(slot: Uint8Array): void {
    const scratch = this.scratch;
    scratch.bytes.set(slot);
    scratch.floats[COMMAND_TIMESTAMP_US_FLOAT] = this.clockUs();
    this.batch++;
    this.carryOut(scratch.words, scratch.floats, 0);
    if (this.journal !== null) {
      this.journalCommand(scratch, 0);
      this.writeOutcome(this.journal, scratch, 0, scratch.floats[COMMAND_TIMESTAMP_US_FLOAT]!);
      this.publish(this.journal);
    }
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
    const output = this.outputs[gateway]!;
    for (let k = 0; k < count; k++) {
      if (k === toEnd) engine.prefetch(input.words, input.slotOffset(first + k), count - k);
      const offset = input.slotOffset(first + k);
      input.floats[(offset >> 3) + COMMAND_TIMESTAMP_US_FLOAT] = now;
      const w = offset >> 2;
      if ((input.words[w + COMMAND_HEADER_WORD]! & 0xff) === OPCODE_QUERY) {
        this.answerQuery(output, input, w, now);
        continue;
      }
      this.carryOut(input.words, input.floats, offset);
      this.writeOutcome(output, input, w, now);
      if (this.journal !== null) {
        this.journalCommand(input, offset);
        this.writeOutcome(this.journal, input, w, now);
      }
    }
  }

  /** Runs one command through the engine; an exception (an internal check failed) halts the shard. */
  private carryOut(words: Int32Array, floats: Float64Array, offset: number): void {
    const engine = this.engine;
    const before = engine.sequence;
    if (this.halted) {
      engine.failCommand(before, RejectCode.SHARD_HALTED);
      return;
    }
    try {
      engine.process(words, floats, offset);
    } catch (error) {
      engine.failCommand(before, RejectCode.INTERNAL_CHECK_FAILED);
      this.halted = true;
      Atomics.store(this.control, SHARD_HALTED_WORD, 1);
      this.onHalt(error);
    }
  }

  private answerQuery(output: Output, input: RingConsumer, w: number, now: number): void {
    const words = input.words;
    const orders = this.engine.orders;
    const slot = orders.find(words[w + COMMAND_ORDER_ID_WORD]!, words[w + COMMAND_ORDER_ID_WORD + 1]!, words[w + COMMAND_ORDER_ID_WORD + 2]!, words[w + COMMAND_ORDER_ID_WORD + 3]!);
    const at = this.reserve(output, 1);
    writeHeader(output.ring, at, words[w + COMMAND_TOKEN_WORD]!, 0, 0, slot < 0 ? -1 : orders.state(slot), now, 0, this.batch);
    output.unpublished++;
    output.answersQuery = true;
  }

  /** The command slot as sequenced, as two records of the journal stream. */
  private journalCommand(input: { bytes: Uint8Array }, offset: number): void {
    const journal = this.journal!;
    for (let part = 0; part < JOURNAL_COMMAND_RECORDS; part++) {
      const at = this.reserve(journal, 1);
      const from = offset + part * RESULT_RECORD_BYTES;
      journal.ring.bytes.set(input.bytes.subarray(from, from + RESULT_RECORD_BYTES), at);
      journal.unpublished++;
    }
  }

  /** The engine's events for the command just processed: a header, then one record per event. */
  private writeOutcome(output: Output, input: { words: Int32Array }, w: number, now: number): void {
    const engine = this.engine;
    const events = engine.events;
    const orders = engine.orders;
    const out = output.ring;
    const book = engine.findBook(input.words, w + COMMAND_INSTRUMENT_ID_WORD);
    const first = events.order(0);
    const engineOrderId = events.kind(0) === EVENT_REJECTED || first < 0 ? 0 : orders.engineNo[first]!;
    const token = input.words[w + COMMAND_TOKEN_WORD]!;
    writeHeader(out, this.reserve(output, 1), token, events.count, book < 0 ? 0 : engine.currency[book]!, 0, now, engineOrderId, this.batch);
    output.unpublished++;
    for (let i = 0; i < events.count; i++) {
      const at = this.reserve(output, 1);
      const kind = events.kind(i);
      const a = events.order(i);
      const named = kind !== EVENT_REJECTED && a >= 0;
      const side = named ? orders.bytes[(a << ORDER_BYTE_SHIFT) + ORDER_SIDE_BYTE]! : 0;
      writeEvent(out, at, kind, events.state(i), events.aggressor(i), side, events.code(i), events.sequence(i), events.quantity(i), events.price(i));
      // A rejection names the command's order; everything else the orders the engine holds
      // (an EXPIRE's EXPIRED events too), but for an EXPIRE's leading event, which names
      // none (order -1): it carries the command's orderId words.
      if (named) writeUuid(out, at, RESULT_UUID_A_WORD, orders.words, orders.idAt(a));
      else writeUuid(out, at, RESULT_UUID_A_WORD, input.words, w + COMMAND_ORDER_ID_WORD);
      if (kind === EVENT_EXECUTION || kind === EVENT_TRADE) writeUuid(out, at, RESULT_UUID_B_WORD, orders.words, orders.idAt(events.counterparty(i)));
      output.unpublished++;
    }
  }

  /**
   * Byte offset of the next free record of an output. When the ring has no room,
   * publishes what is pending, wakes the consumer and waits for it.
   */
  private reserve(output: Output, count: number): number {
    const ring = output.ring;
    if (ring.freeSlots() - output.unpublished < count) {
      this.publish(output);
      Atomics.add(this.control, SHARD_OUTPUT_WAITS_WORD, 1);
      while (ring.freeSlots() < count) {
        output.bell.ringAlways();
        Atomics.wait(pause, 0, 0, 0.2);
      }
    }
    return ring.slotOffset(ring.nextIndex + output.unpublished);
  }

  private publish(output: Output): void {
    if (output.unpublished === 0) return;
    output.ring.publish(output.unpublished);
    output.unpublished = 0;
    output.bell.ring();
  }

  /**
   * Results go to their gateway at once, but with persistence the gateway is not woken
   * for them: every answer also waits for a commit, and the persistence thread wakes
   * the gateways after each one (results are published before their journal records,
   * so they are there by then). That saves a thread wake-up per batch. A state-query
   * answer (nothing to wait for), or a result ring a quarter full, still wakes it.
   */
  private publishResults(output: Output): void {
    if (output.unpublished === 0) return;
    const ring = output.ring;
    ring.publish(output.unpublished);
    output.unpublished = 0;
    if (this.journal === null || output.answersQuery || ring.capacity - ring.freeSlots() >= ring.capacity >> 2) output.bell.ring();
    output.answersQuery = false;
  }
}

/** One command slot of private memory, with the views the engine reads. */
class SlotBuffer {
  readonly bytes = new Uint8Array(COMMAND_SLOT_BYTES);
  readonly words = new Int32Array(this.bytes.buffer);
  readonly floats = new Float64Array(this.bytes.buffer);
}
