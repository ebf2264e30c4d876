// Writes commands onto this gateway's rings: the 128-byte slot to its shard, the intake
// record and body text for the command log; publishes once per event-loop turn.

import {
  COMMAND_ACCOUNT_ID_WORD,
  COMMAND_ARGUMENT_WORD,
  COMMAND_CURRENCY_WORD,
  COMMAND_HEADER_WORD,
  COMMAND_ID_WORD,
  COMMAND_INSTRUMENT_ID_WORD,
  COMMAND_ORDER_ID_WORD,
  COMMAND_PARTICIPANT_ID_WORD,
  COMMAND_PRICE_NANOS_FLOAT,
  COMMAND_QUANTITY_UNITS_FLOAT,
  COMMAND_RUN_WORD,
  COMMAND_SESSION_WORD,
  COMMAND_SLOT_BYTES,
  COMMAND_TIMESTAMP_US_FLOAT,
  COMMAND_TOKEN_WORD,
  packHeader,
} from '../core/command-slot.ts';
import { OPCODE_QUERY, OPCODE_REJECT, STATE_OPEN } from '../core/codes.ts';
import { Doorbell } from '../core/doorbell.ts';
import { INTAKE_RECORD_BYTES, writeIntake } from '../core/intake-record.ts';
import { BODY_SLOT_BYTES, bodySlots, writeBody } from '../core/body-ring.ts';
import type { QueueMarks } from '../core/queue-marks.ts';
import { RingProducer } from '../core/ring.ts';
import { SHARD_HALTED_WORD } from '../core/shard-runner.ts';
import type { SharedKeyTable } from '../core/shared-key-table.ts';
import { fail } from './answers.ts';
import type { CommandStore } from './command-store.ts';
import { PROCESSING_MODES, type VenueConfig } from '../core/config.ts';
import { answerWhenDurable, recordPointer, type ResultDeadlines } from './durable-answers.ts';
import type { DurabilityGate } from './durability.ts';
import { ownPending, ZERO_UUID, type ClaimTables, type Pending, type SlotCommand } from './flow-records.ts';
import { recordRef, type VenueMemory } from './venue-memory.ts';

export class CommandDispatch {
  private readonly gatewayId: number;
  private readonly config: VenueConfig;
  private readonly store: CommandStore;
  private readonly orderDirectory: SharedKeyTable;
  private readonly clientOrders: SharedKeyTable;
  private readonly rings: RingProducer[];
  private readonly shardBells: Doorbell[];
  /** Each shard's control words: whether it halted (core/shard-runner.ts). */
  private readonly shardControls: Int32Array[];
  /** The commands and queries waiting for their shard's result, by the token their slot carries. */
  private readonly pending: Map<number, Pending>;
  /** Slots written per shard ring and not yet published (published once per event-loop turn). */
  private readonly unpublished: number[];
  private flushScheduled = false;
  private nextToken = 1;
  private readonly intakeRing: RingProducer;
  private unpublishedIntake = 0;
  /** The commands' JSON texts beside their intake records (core/body-ring.ts), and a buffer for a text that wraps. */
  private readonly bodyRing: RingProducer;
  private unpublishedBodySlots = 0;
  private readonly bodyScratch: Uint8Array;
  /** Intake records written since start (what the persistence worker's count is compared with). */
  private intakeWritten = 0;
  private readonly durability: DurabilityGate;
  private readonly deadlines: ResultDeadlines;
  private readonly marks: QueueMarks;
  private readonly inFlightSlot: number;

  constructor(
    gatewayId: number,
    config: VenueConfig,
    memory: VenueMemory,
    store: CommandStore,
    tables: ClaimTables,
    shardControls: Int32Array[],
    pending: Map<number, Pending>,
    durability: DurabilityGate,
    deadlines: ResultDeadlines,
    marks: QueueMarks,
    inFlightSlot: number,
  ) {
    this.gatewayId = gatewayId;
    this.config = config;
    this.store = store;
    this.orderDirectory = tables.orderDirectory;
    this.clientOrders = tables.clientOrders;
    this.rings = memory.commandRings[gatewayId]!.map((buffer) => new RingProducer(buffer, COMMAND_SLOT_BYTES));
    this.shardBells = memory.shardDoorbells.map((buffer) => new Doorbell(buffer));
    this.shardControls = shardControls;
    this.pending = pending;
    this.unpublished = this.rings.map(() => 0);
    this.intakeRing = new RingProducer(memory.intakeRings[gatewayId]!, INTAKE_RECORD_BYTES);
    this.bodyRing = new RingProducer(memory.bodyRings[gatewayId]!, BODY_SLOT_BYTES);
    this.bodyScratch = new Uint8Array(config.maxBodyBytes);
    this.durability = durability;
    this.deadlines = deadlines;
    this.marks = marks;
    this.inFlightSlot = inFlightSlot;
  }

  get shardCount(): number {
    return this.rings.length;
  }

  /** True when a shard's ring has no slot left this turn (a command of the venue's own waits then). */
  ringFull(shard: number): boolean {
    return this.rings[shard]!.freeSlots() - this.unpublished[shard]! === 0;
  }

  /** Writes the slot and registers the pending result; undoes every claim on 503. */
  dispatch(pending: Pending, command: SlotCommand, undoClaims: () => void): void {
    if (Atomics.load(this.shardControls[pending.shard]!, SHARD_HALTED_WORD) !== 0) {
      undoClaims();
      if (pending.orderDirectoryKey !== null) this.orderDirectory.remove(pending.orderDirectoryKey, 0, pending.shard);
      if (pending.clientOrderKey !== null) this.clientOrders.remove(pending.clientOrderKey, 0, recordRef(this.gatewayId, pending.recordIndex));
      if (pending.reply !== null) fail(pending.reply, 'UNAVAILABLE', `shard ${pending.shard} halted after an internal check failed; nothing was accepted; retry once the venue is restarted`);
      return;
    }
    const ring = this.rings[pending.shard]!;
    const full =
      ring.freeSlots() - this.unpublished[pending.shard]! === 0 ||
      this.intakeRing.freeSlots() - this.unpublishedIntake === 0 ||
      this.bodyRing.freeSlots() - this.unpublishedBodySlots < bodySlots(pending.intake?.rawBytes ?? 0) ||
      this.pending.size + this.durability.size >= this.config.maxInFlight;
    if (full) {
      undoClaims();
      if (pending.orderDirectoryKey !== null) this.orderDirectory.remove(pending.orderDirectoryKey, 0, pending.shard);
      if (pending.clientOrderKey !== null) this.clientOrders.remove(pending.clientOrderKey, 0, recordRef(this.gatewayId, pending.recordIndex));
      if (pending.reply !== null) fail(pending.reply, 'OVERLOADED', 'the venue is at capacity; retry with the same Idempotency-Key');
      return;
    }
    const ringIndex = this.write(ring, pending, command);
    this.marks.note(this.inFlightSlot, this.pending.size + this.durability.size);
    this.capture(pending, command, ring.slotOffset(ringIndex), ring.bytes);
    this.store.setQueued(
      pending.recordIndex,
      pending.shard,
      ringIndex,
      pending.intakeCount,
      command.opcode === OPCODE_REJECT && pending.rejectedOrderIdNull ? null : command.orderId,
      pending.instrumentId === '' ? null : command.instrumentId,
    );
    const mode = PROCESSING_MODES[pending.mode]!;
    pending.deadlineMs = Date.now() + this.config.durableWaitMs;
    if ((mode === 'accepted-async' || mode === 'captured-ack') && pending.reply !== null) {
      // Answered once the command log holds it (a kill -9 after the answer loses nothing); matching follows.
      const reply = pending.reply;
      pending.reply = null;
      answerWhenDurable(this.durability, reply, pending.intakeCount, -1, 0, pending.deadlineMs, false, () => recordPointer(this.store, pending, mode));
    } else if (pending.reply !== null) this.deadlines.push(pending);
  }

  /** Writes the command's intake record (with the slot just written) for the command log. */
  private capture(pending: Pending, command: SlotCommand, slotOffset: number, slotBytes: Uint8Array): void {
    const info = pending.intake!;
    const ring = this.intakeRing;
    writeIntake(ring, ring.slotOffset(ring.nextIndex + this.unpublishedIntake), {
      processingMode: info.mode,
      route: info.route,
      shard: pending.shard,
      principal: info.principal,
      receivedAtUs: info.receivedAtUs,
      commandId: command.commandId,
      scopeDigest: info.scopeDigest,
      payloadHash: info.payloadHash,
      orderId: command.opcode === OPCODE_REJECT && pending.rejectedOrderIdNull ? null : command.orderId,
      instrumentId: pending.instrumentId === '' ? null : command.instrumentId,
      slot: slotBytes.subarray(slotOffset, slotOffset + COMMAND_SLOT_BYTES),
      clientId: info.clientId,
      idempotencyKey: info.idempotencyKey,
      clientOrderId: info.clientOrderId,
      bodyLength: info.rawBytes,
    });
    writeBody(this.bodyRing, this.bodyRing.nextIndex + this.unpublishedBodySlots, info.raw, info.rawBytes, this.bodyScratch);
    this.unpublishedBodySlots += bodySlots(info.rawBytes);
    this.unpublishedIntake++;
    pending.intakeCount = ++this.intakeWritten;
  }

  /** Writes a command of the venue's own (no intake record) to its shard; the caller made sure the ring has room. */
  writeOwn(pending: Pending, command: SlotCommand): void {
    this.write(this.rings[pending.shard]!, pending, command);
  }

  private write(ring: RingProducer, pending: Pending, command: SlotCommand): number {
    const token = this.nextToken;
    this.nextToken = this.nextToken >= 0x7fffffff ? 1 : this.nextToken + 1;
    pending.token = token;
    this.pending.set(token, pending);
    const ringIndex = (ring.nextIndex + this.unpublished[pending.shard]!) >>> 0;
    const offset = ring.slotOffset(ringIndex);
    const w = offset >> 2;
    const f = offset >> 3;
    const words = ring.words;
    words[w + COMMAND_HEADER_WORD] = (command.header & ~0xff) | command.opcode;
    words[w + COMMAND_TOKEN_WORD] = token;
    words[w + COMMAND_RUN_WORD] = command.runNo;
    words[w + COMMAND_SESSION_WORD] = command.sessionNo;
    words.set(command.commandId, w + COMMAND_ID_WORD);
    words.set(command.orderId, w + COMMAND_ORDER_ID_WORD);
    words.set(command.instrumentId, w + COMMAND_INSTRUMENT_ID_WORD);
    words.set(command.participantId, w + COMMAND_PARTICIPANT_ID_WORD);
    words.set(command.accountId, w + COMMAND_ACCOUNT_ID_WORD);
    words[w + COMMAND_CURRENCY_WORD] = command.currency;
    words[w + COMMAND_ARGUMENT_WORD] = command.argument;
    ring.floats[f + COMMAND_PRICE_NANOS_FLOAT] = command.priceNanos;
    ring.floats[f + COMMAND_QUANTITY_UNITS_FLOAT] = command.quantityUnits;
    ring.floats[f + COMMAND_TIMESTAMP_US_FLOAT] = 0;
    this.unpublished[pending.shard]!++;
    if (!this.flushScheduled) {
      this.flushScheduled = true;
      setImmediate(this.flush);
    }
    return ringIndex;
  }

  /**
   * Publishes the slots written during this event-loop turn and rings each shard once:
   * uWS hands over many requests per turn, and one notify per turn instead of one per
   * command keeps the wake-up's cost off each command.
   */
  private readonly flush = (): void => {
    this.flushScheduled = false;
    // Intake first: a command's log record is never behind its outcome in the persistence worker.
    // No wake-up for it: every intake record comes with a slot for a shard, and the shard wakes
    // the persistence thread when it publishes that command's journal records (one wake-up
    // per shard batch instead of one more per gateway turn).
    if (this.unpublishedIntake > 0) {
      this.bodyRing.publish(this.unpublishedBodySlots); // before the records that announce them
      this.unpublishedBodySlots = 0;
      this.intakeRing.publish(this.unpublishedIntake);
      this.unpublishedIntake = 0;
    }
    for (let shard = 0; shard < this.rings.length; shard++) {
      const count = this.unpublished[shard]!;
      if (count === 0) continue;
      this.rings[shard]!.publish(count);
      this.unpublished[shard] = 0;
      this.shardBells[shard]!.ring();
    }
  };

  /** Asks a shard for an order's state (not sequenced); `then` runs with the answer. */
  query(shard: number, orderId: Int32Array, then: (state: number) => void): void {
    const pending = ownPending(shard, 0, { onQuery: then });
    const ring = this.rings[shard]!;
    if (ring.freeSlots() - this.unpublished[shard]! === 0) {
      then(STATE_OPEN); // cannot tell: the safe answer is "still open" (a duplicate reject)
      return;
    }
    this.write(ring, pending, {
      opcode: OPCODE_QUERY,
      header: packHeader(OPCODE_QUERY, 0, 0, 0),
      runNo: 0,
      sessionNo: 0,
      commandId: ZERO_UUID,
      orderId,
      instrumentId: ZERO_UUID,
      participantId: ZERO_UUID,
      accountId: ZERO_UUID,
      currency: 0,
      priceNanos: 0,
      quantityUnits: 0,
      argument: 0,
    });
  }
}
