// One journaled command at a time into the open group: its command_log row, the order
// lifecycle in memory (open orders, loaded compact at start and taken out on first touch),
// its executions and trades, and the own-reads model's changes.

import { COMMAND_HEADER_WORD, COMMAND_ID_WORD, COMMAND_ORDER_ID_WORD, COMMAND_SLOT_BYTES, unpackCurrency } from '../core/command-slot.ts';
import {
  EVENT_ACCEPTED,
  EVENT_EXECUTION,
  EVENT_TRADE,
  OPCODE_CANCEL,
  OPCODE_EXPIRE,
  OPCODE_MODIFY,
  OPCODE_SUBMIT,
  ORDER_TYPE_LIMIT,
  rejectName,
  SIDE_NAMES,
  STATE_OPEN,
  STATE_PARTIALLY_FILLED,
} from '../core/codes.ts';
import {
  INTAKE_CLIENT_ID_BYTE,
  INTAKE_CLIENT_ID_LENGTH_WORD,
  INTAKE_CLIENT_ORDER_ID_BYTE,
  INTAKE_CLIENT_ORDER_ID_LENGTH_WORD,
  INTAKE_COMMAND_ID_BYTE,
  INTAKE_FLAGS_WORD,
  INTAKE_HAS_INSTRUMENT,
  INTAKE_HAS_ORDER_ID,
  INTAKE_INSTRUMENT_ID_BYTE,
  INTAKE_KEY_BYTE,
  INTAKE_KEY_LENGTH_WORD,
  INTAKE_ORDER_ID_BYTE,
  INTAKE_PAYLOAD_HASH_BYTE,
  INTAKE_PRINCIPAL_WORD,
  INTAKE_RECEIVED_AT_FLOAT,
  INTAKE_SCOPE_BYTE,
} from '../core/intake-record.ts';
import type { JournalView } from '../core/journal-format.ts';
import { engineOrderIdOf, eventIdWords } from '../core/outcome-format.ts';
import {
  RESULT_AGGRESSOR_BYTE,
  RESULT_BATCH_FLOAT,
  RESULT_CODE_WORD,
  RESULT_COUNT_WORD,
  RESULT_ENGINE_ORDER_FLOAT,
  RESULT_KIND_BYTE,
  RESULT_PRICE_FLOAT,
  RESULT_QUANTITY_FLOAT,
  RESULT_RECORD_BYTES,
  RESULT_SEQUENCE_FLOAT,
  RESULT_STATE_BYTE,
  RESULT_TIMESTAMP_FLOAT,
  RESULT_UUID_A_WORD,
  RESULT_UUID_B_WORD,
} from '../core/result-slot.ts';
import { formatUuid, idKey as keyOf } from '../core/uuid.ts';
import { acceptedChange, ACCOUNT_ID, fillChange, forEachExpired, INSTRUMENT_ID, openSubmitted, ORDER_ID, PARTICIPANT_ID, type OrderState } from './order-changes.ts';
import type { OwnReads } from './own-reads.ts';
import type { PendingIntake, PendingIntakes } from './pending-intake.ts';
import type { Rows, SessionBytes } from './projection-group.ts';
import { RestingOrders } from './resting-orders.ts';

/** An order's place in the displayed books: instrument, side, price, open quantity. */
export type Level = [instrumentId: string, side: string, priceNanos: number, quantity: number];

const EVENT_ID = new Int32Array(4);

export class CommandApplier {
  /** Open orders as ingested (ahead of storage by the unflushed groups), once touched since the start. */
  readonly live = new Map<string, OrderState>();
  /** Open orders loaded at start and not touched since (compact; taken into `live` on first touch). */
  resting = new RestingOrders();
  /** Instruments already in runtime.instruments (or in a group on its way there). */
  readonly instruments = new Set<string>();
  private readonly instrumentNames = new Map<string, string>();
  /** The latest command time ingested (µs): what a rebuild's model lacks reaches that far. */
  lastTimestampUs = 0;
  /**
   * The next trade's tape sequence. This thread assigns it (in ingestion order, which is
   * commit order), so that the tape view can show each trade with the sequence storage
   * holds without reading it back.
   */
  nextTapeSequence = 1;

  constructor(
    private readonly pending: PendingIntakes,
    /** Principal ids as UTF-8, by their index in the principals file (intake records carry the index). */
    private readonly principals: Buffer[],
    private readonly own: OwnReads,
    private readonly sessions: SessionBytes,
    private readonly log: (level: 'info' | 'warn' | 'error', message: string, fields?: object) => void,
  ) {}

  /** Open orders held (the compact store and those touched since the start). */
  get openOrderCount(): number {
    let count = this.resting.size;
    for (const order of this.live.values()) if (order.state === STATE_OPEN || order.state === STATE_PARTIALLY_FILLED) count++;
    return count;
  }

  /** One command of a journal batch: its command_log row, its order changes, its executions and trades. Returns the next offset. */
  apply(rows: Rows, touched: Map<string, Level | null>, view: JournalView, at: number, shard: number, batchFirst: number): number {
    const { words, floats, bytes } = view;
    const w = at >> 2;
    const headerAt = at + COMMAND_SLOT_BYTES;
    const hw = headerAt >> 2;
    const hf = headerAt >> 3;
    const eventCount = words[hw + RESULT_COUNT_WORD]!;
    const next = headerAt + (1 + eventCount) * RESULT_RECORD_BYTES;
    const firstAt = headerAt + RESULT_RECORD_BYTES;
    const accepted = bytes[firstAt + RESULT_KIND_BYTE] === EVENT_ACCEPTED;
    const timestampUs = floats[hf + RESULT_TIMESTAMP_FLOAT]!;
    if (timestampUs > this.lastTimestampUs) this.lastTimestampUs = timestampUs;
    const opcode = words[w + COMMAND_HEADER_WORD]! & 0xff;
    if (opcode === OPCODE_EXPIRE) {
      // The session roll's: no client command (no intake record, no command_log row), only orders that expired.
      if (accepted) this.applyExpiry(rows, touched, view, firstAt, next, timestampUs);
      return next;
    }
    const intake = this.pending.take(keyOf(words, w + COMMAND_ID_WORD));
    if (intake === undefined) throw new Error(`command ${formatUuid(words, w + COMMAND_ID_WORD)} is on the journal of shard ${shard} without its intake record`);

    const i = intake.at;
    const iw = i >> 2;
    const flags = intake.words[iw + INTAKE_FLAGS_WORD]!;
    const principal = this.principals[intake.words[iw + INTAKE_PRINCIPAL_WORD]!];
    const clientOrderIdLength = intake.words[iw + INTAKE_CLIENT_ORDER_ID_LENGTH_WORD]!;
    const c = rows.commands
      .row(24)
      .range(intake.bytes, i + INTAKE_COMMAND_ID_BYTE, 16)
      .range(intake.bytes, i + INTAKE_SCOPE_BYTE, 16)
      .range(intake.bytes, i + INTAKE_PAYLOAD_HASH_BYTE, 32);
    if (principal === undefined) c.text(`#${intake.words[iw + INTAKE_PRINCIPAL_WORD]}`);
    else c.range(principal, 0, principal.byteLength);
    c.range(intake.bytes, i + INTAKE_CLIENT_ID_BYTE, intake.words[iw + INTAKE_CLIENT_ID_LENGTH_WORD]!)
      .range(intake.bytes, i + INTAKE_KEY_BYTE, intake.words[iw + INTAKE_KEY_LENGTH_WORD]!)
      .smallint((flags >> 2) & 3)
      .smallint(flags & 3)
      .smallint(shard);
    if ((flags & INTAKE_HAS_ORDER_ID) !== 0) c.range(intake.bytes, i + INTAKE_ORDER_ID_BYTE, 16);
    else c.null();
    if ((flags & INTAKE_HAS_INSTRUMENT) !== 0) c.range(intake.bytes, i + INTAKE_INSTRUMENT_ID_BYTE, 16);
    else c.null();
    if (clientOrderIdLength > 0) c.range(intake.bytes, i + INTAKE_CLIENT_ORDER_ID_BYTE, clientOrderIdLength);
    else c.null();
    c.timestampUs(intake.floats[(i >> 3) + INTAKE_RECEIVED_AT_FLOAT]!)
      .bigint(floats[(firstAt >> 3) + RESULT_SEQUENCE_FLOAT]!)
      .bigint(batchFirst)
      .bigint(floats[hf + RESULT_BATCH_FLOAT]!)
      .smallint(accepted ? 1 : 2)
      .text(accepted ? null : rejectName(words[(firstAt >> 2) + RESULT_CODE_WORD]!))
      .timestampUs(timestampUs)
      .integer(at)
      .integer(next - at)
      .bigint(intake.commitNo)
      .smallint(intake.gateway)
      .integer(intake.index);

    if (!accepted) return next;
    if (opcode !== OPCODE_SUBMIT && opcode !== OPCODE_CANCEL && opcode !== OPCODE_MODIFY) return next;
    const taker = this.applyOrder(rows, touched, view, at, shard, opcode, eventCount, timestampUs, intake, clientOrderIdLength);
    if (taker === null) return next;
    for (let e = firstAt + RESULT_RECORD_BYTES; e + 3 * RESULT_RECORD_BYTES <= next; e += 3 * RESULT_RECORD_BYTES) {
      this.applyFill(rows, touched, view, e, shard, taker, w + COMMAND_ID_WORD, timestampUs);
    }
    return next;
  }

  /** The orders an EXPIRE command expired (events after its leading one, `firstAt` to `next`): state EXPIRED, nothing left open. */
  applyExpiry(rows: Rows, touched: Map<string, Level | null>, view: JournalView, firstAt: number, next: number, timestampUs: number): void {
    forEachExpired(view, firstAt, next, (e) => {
      const order = this.touch(rows, touched, view.words, (e >> 2) + RESULT_UUID_A_WORD);
      if (order === undefined) {
        this.log('error', 'projection: the session roll expired an order it never saw', { orderId: formatUuid(view.words, (e >> 2) + RESULT_UUID_A_WORD) });
        return;
      }
      order.state = view.bytes[e + RESULT_STATE_BYTE]!;
      order.updatedAtUs = timestampUs;
      order.lastSequence = view.floats[(e >> 3) + RESULT_SEQUENCE_FLOAT]!;
    });
  }

  /** The taker's new state after a submit, cancel or modify (fills are added by applyFill). */
  applyOrder(
    rows: Rows,
    touched: Map<string, Level | null>,
    view: JournalView,
    at: number,
    shard: number,
    opcode: number,
    eventCount: number,
    timestampUs: number,
    intake: PendingIntake,
    clientOrderIdLength: number,
  ): OrderState | null {
    const { words, floats } = view;
    const w = at >> 2;
    const firstAt = at + COMMAND_SLOT_BYTES + RESULT_RECORD_BYTES;
    const lastSequence = floats[((firstAt + (eventCount - 1) * RESULT_RECORD_BYTES) >> 3) + RESULT_SEQUENCE_FLOAT]!;
    const key = keyOf(words, w + COMMAND_ORDER_ID_WORD);
    if (opcode === OPCODE_SUBMIT) {
      const ids = new Int32Array(16);
      const order: OrderState = {
        ids,
        runNo: 0,
        sessionNo: 0,
        side: 0,
        orderType: 0,
        timeInForce: 0,
        state: 0,
        priceNanos: 0,
        quantity: 0,
        filled: 0,
        currency: 0,
        engineOrderId: engineOrderIdOf(shard, floats[((at + COMMAND_SLOT_BYTES) >> 3) + RESULT_ENGINE_ORDER_FLOAT]!),
        shard,
        createdAtUs: timestampUs,
        updatedAtUs: timestampUs,
        lastSequence,
        clientOrderId: clientOrderIdLength > 0 ? intake.bytes.slice(intake.at + INTAKE_CLIENT_ORDER_ID_BYTE, intake.at + INTAKE_CLIENT_ORDER_ID_BYTE + clientOrderIdLength) : null,
        fresh: true,
        clientOrderKnown: intake.bytes.byteLength > 0, // a rebuild's replay has no intake record
      };
      openSubmitted(order, view, at, shard);
      if (!touched.has(key)) touched.set(key, null);
      this.live.set(key, order);
      rows.lifecycle.set(key, order);
      const instrument = keyOf(ids, INSTRUMENT_ID);
      if (!this.instruments.has(instrument) && !rows.instruments.has(instrument)) {
        rows.instruments.set(instrument, [ids.subarray(INSTRUMENT_ID, INSTRUMENT_ID + 4), order.currency, shard, floats[(firstAt >> 3) + RESULT_SEQUENCE_FLOAT]!]);
      }
      return order;
    }
    const order = this.touch(rows, touched, words, w + COMMAND_ORDER_ID_WORD);
    if (order === undefined) {
      this.log('error', 'projection: an accepted command names an order it never saw', { orderId: formatUuid(words, w + COMMAND_ORDER_ID_WORD) });
      return null;
    }
    acceptedChange(order, view, at, opcode);
    order.updatedAtUs = timestampUs;
    order.lastSequence = lastSequence;
    return order;
  }

  /** One fill (taker execution, maker execution, trade at `e`): both orders, two executions, a trade. */
  private applyFill(rows: Rows, touched: Map<string, Level | null>, view: JournalView, e: number, shard: number, taker: OrderState, commandIdWord: number, timestampUs: number): void {
    const { words, floats, bytes } = view;
    const takerAt = e;
    const makerAt = e + RESULT_RECORD_BYTES;
    const tradeAt = e + 2 * RESULT_RECORD_BYTES;
    if (bytes[takerAt + RESULT_KIND_BYTE] !== EVENT_EXECUTION || bytes[makerAt + RESULT_KIND_BYTE] !== EVENT_EXECUTION || bytes[tradeAt + RESULT_KIND_BYTE] !== EVENT_TRADE) {
      throw new Error(`unexpected event layout in command ${formatUuid(words, commandIdWord)}`);
    }
    const makerSequence = floats[(makerAt >> 3) + RESULT_SEQUENCE_FLOAT]!;
    const maker = this.touch(rows, touched, words, (makerAt >> 2) + RESULT_UUID_A_WORD);
    if (maker === undefined) throw new Error(`projection lost an order of command ${formatUuid(words, commandIdWord)}`);
    fillChange(taker, maker, view, takerAt);
    maker.updatedAtUs = timestampUs;
    maker.lastSequence = makerSequence;

    const tradeSequence = floats[(tradeAt >> 3) + RESULT_SEQUENCE_FLOAT]!;
    const takerSequence = floats[(takerAt >> 3) + RESULT_SEQUENCE_FLOAT]!;
    for (const [executionAt, order, liquidity] of [
      [takerAt, taker, 'TAKER'],
      [makerAt, maker, 'MAKER'],
    ] as const) {
      const xw = executionAt >> 2;
      const xf = executionAt >> 3;
      this.own.filled(
        order.ids,
        order.side,
        shard,
        floats[xf + RESULT_SEQUENCE_FLOAT]!,
        tradeSequence,
        floats[xf + RESULT_QUANTITY_FLOAT]!,
        floats[xf + RESULT_PRICE_FLOAT]!,
        order.currency,
        timestampUs,
      );
      eventIdWords(shard, floats[xf + RESULT_SEQUENCE_FLOAT]!, EVENT_ID, 0);
      rows.executions
        .row(16)
        .uuidWords(EVENT_ID, 0)
        .smallint(shard)
        .bigint(floats[xf + RESULT_SEQUENCE_FLOAT]!)
        .uuidWords(words, commandIdWord);
      eventIdWords(shard, tradeSequence, EVENT_ID, 0);
      rows.executions
        .uuidWords(EVENT_ID, 0)
        .uuidWords(order.ids, ORDER_ID)
        .uuidWords(words, xw + RESULT_UUID_B_WORD)
        .uuidWords(order.ids, INSTRUMENT_ID)
        .uuidWords(order.ids, PARTICIPANT_ID)
        .uuidWords(order.ids, ACCOUNT_ID)
        .text(SIDE_NAMES[order.side]!)
        .text(liquidity)
        .bigint(floats[xf + RESULT_QUANTITY_FLOAT]!)
        .bigint(floats[xf + RESULT_PRICE_FLOAT]!)
        .text(unpackCurrency(order.currency))
        .timestampUs(timestampUs);
    }
    const [buy, sell] = taker.side === 0 ? [taker, maker] : [maker, taker];
    const [runId, sessionId] = this.sessions.of(taker.runNo, taker.sessionNo);
    const tapeSequence = this.nextTapeSequence++;
    const tradeQuantity = floats[(tradeAt >> 3) + RESULT_QUANTITY_FLOAT]!;
    const tradePrice = floats[(tradeAt >> 3) + RESULT_PRICE_FLOAT]!;
    eventIdWords(shard, tradeSequence, EVENT_ID, 0);
    rows.tape.add(taker.ids, INSTRUMENT_ID, EVENT_ID, 0, tradePrice, tradeQuantity, timestampUs, tapeSequence, taker.currency);
    rows.trades.row(20).uuidWords(EVENT_ID, 0).smallint(shard).bigint(tradeSequence).uuidWords(words, commandIdWord);
    eventIdWords(shard, takerSequence, EVENT_ID, 0);
    rows.trades
      .uuidWords(EVENT_ID, 0)
      .range(runId, 0, runId.byteLength)
      .range(sessionId, 0, sessionId.byteLength)
      .uuidWords(taker.ids, INSTRUMENT_ID)
      .uuidWords(buy.ids, ORDER_ID)
      .uuidWords(sell.ids, ORDER_ID)
      .uuidWords(buy.ids, PARTICIPANT_ID)
      .uuidWords(buy.ids, ACCOUNT_ID)
      .uuidWords(sell.ids, PARTICIPANT_ID)
      .uuidWords(sell.ids, ACCOUNT_ID)
      .text(SIDE_NAMES[bytes[tradeAt + RESULT_AGGRESSOR_BYTE]!]!)
      .bigint(tradeQuantity)
      .bigint(tradePrice)
      .text(unpackCurrency(taker.currency))
      .timestampUs(timestampUs)
      .bigint(tapeSequence);
  }

  /**
   * An open order about to change: noted in the open group (its row follows its state
   * at the seal) and, for the book update, with what it showed in the books before.
   */
  private touch(rows: Rows, touched: Map<string, Level | null>, words: Int32Array, at: number): OrderState | undefined {
    const key = keyOf(words, at);
    const order = this.liveOrder(words, at, key);
    if (order === undefined) return undefined;
    if (!touched.has(key)) touched.set(key, this.levelOf(order));
    rows.lifecycle.set(key, order);
    return order;
  }

  /** What an order shows in the displayed books: open LIMIT quantity at its price, or null. */
  levelOf(order: OrderState): Level | null {
    if (order.orderType !== ORDER_TYPE_LIMIT || (order.state !== STATE_OPEN && order.state !== STATE_PARTIALLY_FILLED)) return null;
    return [this.instrumentName(order.ids), SIDE_NAMES[order.side]!, order.priceNanos, order.quantity - order.filled];
  }

  /** The open order with this id (words[at..]), taken into `live` from the compact store on first touch. */
  private liveOrder(words: Int32Array, at: number, key: string): OrderState | undefined {
    const known = this.live.get(key);
    if (known !== undefined) return known;
    const resting = this.resting.take(words, at);
    if (resting === null) return undefined;
    const order: OrderState = { ...resting, engineOrderId: '', createdAtUs: 0, updatedAtUs: 0, lastSequence: 0, clientOrderId: null, fresh: false, clientOrderKnown: false };
    this.live.set(key, order);
    return order;
  }

  /** An instrument's id as text, formatted once per instrument (the book levels carry it). */
  private instrumentName(ids: Int32Array): string {
    const key = keyOf(ids, INSTRUMENT_ID);
    let name = this.instrumentNames.get(key);
    if (name === undefined) {
      name = formatUuid(ids, INSTRUMENT_ID);
      this.instrumentNames.set(key, name);
    }
    return name;
  }
}
