// What a journaled command changes in its orders (a submit's new order, a cancel or
// modify, the fills, a session roll's expiries), read from the binary journal: one code
// for the ingest, the replay of a checkpoint's tail and the lifecycle rebuild.

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
} from '../core/command-slot.ts';
import { EVENT_ACCEPTED, EVENT_EXPIRED, OPCODE_CANCEL, OPCODE_EXPIRE, OPCODE_MODIFY, OPCODE_SUBMIT } from '../core/codes.ts';
import type { JournalView } from '../core/journal-format.ts';
import { RESULT_COUNT_WORD, RESULT_KIND_BYTE, RESULT_QUANTITY_FLOAT, RESULT_RECORD_BYTES, RESULT_STATE_BYTE, RESULT_UUID_A_WORD } from '../core/result-slot.ts';
import type { RestingOrder } from './resting-orders.ts';

/** Words of the ids an order keeps, in OrderState.ids. */
export const ORDER_ID = 0;
export const INSTRUMENT_ID = 4;
export const PARTICIPANT_ID = 8;
export const ACCOUNT_ID = 12;

/** An order as the lifecycle projection sees it: what the compact store keeps, and more. */
export interface OrderState extends RestingOrder {
  engineOrderId: string;
  createdAtUs: number;
  updatedAtUs: number;
  lastSequence: number;
  /** UTF-8 bytes, or null; only a new order's row writes it. */
  clientOrderId: Uint8Array | null;
  /** Created in the group being projected (its row is inserted, not updated). */
  fresh: boolean;
  /** Whether `clientOrderId` was known when the order came here (not for an order loaded at start or rebuilt). */
  clientOrderKnown: boolean;
}

/** Sets `order` to the order an accepted submit at `at` opens, as its slot and first event say (its fills aside); its ids are copied into `order.ids`. */
export function openSubmitted(order: RestingOrder, view: JournalView, at: number, shard: number): void {
  const { words, floats, bytes } = view;
  const w = at >> 2;
  const f = at >> 3;
  const ids = order.ids;
  ids.set(words.subarray(w + COMMAND_ORDER_ID_WORD, w + COMMAND_ORDER_ID_WORD + 4), ORDER_ID);
  ids.set(words.subarray(w + COMMAND_INSTRUMENT_ID_WORD, w + COMMAND_INSTRUMENT_ID_WORD + 4), INSTRUMENT_ID);
  ids.set(words.subarray(w + COMMAND_PARTICIPANT_ID_WORD, w + COMMAND_PARTICIPANT_ID_WORD + 4), PARTICIPANT_ID);
  ids.set(words.subarray(w + COMMAND_ACCOUNT_ID_WORD, w + COMMAND_ACCOUNT_ID_WORD + 4), ACCOUNT_ID);
  const header = words[w + COMMAND_HEADER_WORD]!;
  order.runNo = words[w + COMMAND_RUN_WORD]!;
  order.sessionNo = words[w + COMMAND_SESSION_WORD]!;
  order.side = (header >>> 8) & 0xff;
  order.orderType = (header >>> 16) & 0xff;
  order.timeInForce = header >>> 24;
  order.state = bytes[at + COMMAND_SLOT_BYTES + RESULT_RECORD_BYTES + RESULT_STATE_BYTE]!;
  order.priceNanos = floats[f + COMMAND_PRICE_NANOS_FLOAT]!;
  order.quantity = floats[f + COMMAND_QUANTITY_UNITS_FLOAT]!;
  order.filled = 0;
  order.currency = words[w + COMMAND_CURRENCY_WORD]!;
  order.shard = shard;
}

/** What an accepted cancel or modify at `at` changes in its order (its fills aside). */
export function acceptedChange(order: RestingOrder, view: JournalView, at: number, opcode: number): void {
  order.state = view.bytes[at + COMMAND_SLOT_BYTES + RESULT_RECORD_BYTES + RESULT_STATE_BYTE]!;
  if (opcode === OPCODE_MODIFY) {
    order.priceNanos = view.floats[(at >> 3) + COMMAND_PRICE_NANOS_FLOAT]!;
    order.quantity = view.floats[(at >> 3) + COMMAND_QUANTITY_UNITS_FLOAT]!;
  }
}

/** What the fill at `e` (taker execution, maker execution, trade) changes in its two orders. */
export function fillChange(taker: RestingOrder, maker: RestingOrder, view: JournalView, e: number): void {
  const makerAt = e + RESULT_RECORD_BYTES;
  taker.filled += view.floats[(e >> 3) + RESULT_QUANTITY_FLOAT]!;
  maker.filled += view.floats[(makerAt >> 3) + RESULT_QUANTITY_FLOAT]!;
  maker.state = view.bytes[makerAt + RESULT_STATE_BYTE]!;
}

/** orderChanges's submitted order, copied by the store when it is added. */
const SUBMITTED: RestingOrder = { ids: new Int32Array(16), runNo: 0, sessionNo: 0, side: 0, orderType: 0, timeInForce: 0, state: 0, priceNanos: 0, quantity: 0, filled: 0, currency: 0, shard: 0 };

/**
 * The changes the journal's command at `at` makes to orders, as ingest() makes them
 * (the same helpers), without the rows: a start replays a checkpoint's tail with it.
 * `orderOf` finds an order by its id's words (`role`: 0 the command's own, 1 a fill's
 * maker); `opened` takes a submit's new order once its fills are applied.
 * Returns where the next command starts.
 */
export function orderChanges(
  view: JournalView,
  at: number,
  shard: number,
  orderOf: (words: Int32Array, at: number, role: 0 | 1) => RestingOrder | undefined,
  opened: (order: RestingOrder) => void,
): number {
  const { words, bytes } = view;
  const headerAt = at + COMMAND_SLOT_BYTES;
  const next = headerAt + (1 + words[(headerAt >> 2) + RESULT_COUNT_WORD]!) * RESULT_RECORD_BYTES;
  const firstAt = headerAt + RESULT_RECORD_BYTES;
  if (bytes[firstAt + RESULT_KIND_BYTE] !== EVENT_ACCEPTED) return next;
  const opcode = words[(at >> 2) + COMMAND_HEADER_WORD]! & 0xff;
  if (opcode === OPCODE_EXPIRE) {
    forEachExpired(view, firstAt, next, (e) => {
      const order = orderOf(words, (e >> 2) + RESULT_UUID_A_WORD, 0);
      if (order === undefined) throw new Error(`the journal of shard ${shard} expires an order the checkpoint does not hold`);
      order.state = bytes[e + RESULT_STATE_BYTE]!;
    });
    return next;
  }
  let taker: RestingOrder | undefined;
  if (opcode === OPCODE_SUBMIT) {
    taker = SUBMITTED;
    openSubmitted(taker, view, at, shard);
  } else if (opcode === OPCODE_CANCEL || opcode === OPCODE_MODIFY) {
    taker = orderOf(words, (at >> 2) + COMMAND_ORDER_ID_WORD, 0); // unknown: ingest() logs it and skips the command
    if (taker !== undefined) acceptedChange(taker, view, at, opcode);
  }
  if (taker === undefined) return next;
  for (let e = firstAt + RESULT_RECORD_BYTES; e + 3 * RESULT_RECORD_BYTES <= next; e += 3 * RESULT_RECORD_BYTES) {
    const maker = orderOf(words, ((e + RESULT_RECORD_BYTES) >> 2) + RESULT_UUID_A_WORD, 1);
    if (maker === undefined) throw new Error(`the journal of shard ${shard} fills an order the checkpoint does not hold`);
    fillChange(taker, maker, view, e);
  }
  if (opcode === OPCODE_SUBMIT) opened(taker);
  return next;
}

/**
 * Calls `each` with the offset of every order an EXPIRE command (the session roll's,
 * core/expire-orders.ts) expired: the events after its leading one, `firstAt` to `next`.
 */
export function forEachExpired(view: JournalView, firstAt: number, next: number, each: (e: number) => void): void {
  for (let e = firstAt + RESULT_RECORD_BYTES; e < next; e += RESULT_RECORD_BYTES) {
    if (view.bytes[e + RESULT_KIND_BYTE] !== EVENT_EXPIRED) throw new Error(`an EXPIRE command carries an event of kind ${view.bytes[e + RESULT_KIND_BYTE]}`);
    each(e);
  }
}
