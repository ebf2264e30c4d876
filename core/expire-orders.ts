// EXPIRE, the session roll's command to a shard: raises the session floor and expires,
// over a bounded range of order slots, the resting DAY orders of ended sessions.

import { RejectCode } from './codes.ts';
import * as codes from './codes.ts';
import * as commandSlot from './command-slot.ts';
import type { EngineParts } from './engine-parts.ts';
import { reject, writeExpiryEvent } from './engine-events.ts';
import * as eventBuffer from './event-buffer.ts';
import { unlink } from './matching-loop.ts';
import type { OrderStore } from './order-store.ts';
import * as orderStore from './order-store.ts';

// Constants re-bound as module-local consts (see core/engine-events.ts).
const COMMAND_ARGUMENT_WORD = commandSlot.COMMAND_ARGUMENT_WORD;
const COMMAND_SESSION_WORD = commandSlot.COMMAND_SESSION_WORD;
const EVENT_CODE_WORD = eventBuffer.EVENT_CODE_WORD;
const EVENT_FILLED_FLOAT = eventBuffer.EVENT_FILLED_FLOAT;
const EVENT_FLOAT_SHIFT = eventBuffer.EVENT_FLOAT_SHIFT;
const EVENT_LEAVES_FLOAT = eventBuffer.EVENT_LEAVES_FLOAT;
const EVENT_PRICE_FLOAT = eventBuffer.EVENT_PRICE_FLOAT;
const EVENT_QUANTITY_FLOAT = eventBuffer.EVENT_QUANTITY_FLOAT;
const EVENT_WORD_SHIFT = eventBuffer.EVENT_WORD_SHIFT;
const EVENT_ACCEPTED = codes.EVENT_ACCEPTED;
const EVENT_EXPIRED = codes.EVENT_EXPIRED;
const EXPIRY_SCAN_SLOTS = codes.EXPIRY_SCAN_SLOTS;
const STATE_EXPIRED = codes.STATE_EXPIRED;
const STATE_OPEN = codes.STATE_OPEN;
const STATE_PARTIALLY_FILLED = codes.STATE_PARTIALLY_FILLED;
const TIME_IN_FORCE_DAY = codes.TIME_IN_FORCE_DAY;
const ORDER_BYTE_SHIFT = orderStore.ORDER_BYTE_SHIFT;
const ORDER_FILLED_WORD = orderStore.ORDER_FILLED_WORD;
const ORDER_FLOAT_SHIFT = orderStore.ORDER_FLOAT_SHIFT;
const ORDER_PRICE_FLOAT = orderStore.ORDER_PRICE_FLOAT;
const ORDER_QUANTITY_WORD = orderStore.ORDER_QUANTITY_WORD;
const ORDER_SESSION_WORD = orderStore.ORDER_SESSION_WORD;
const ORDER_STATE_BYTE = orderStore.ORDER_STATE_BYTE;
const ORDER_TIME_IN_FORCE_BYTE = orderStore.ORDER_TIME_IN_FORCE_BYTE;
const ORDER_WORD_SHIFT = orderStore.ORDER_WORD_SHIFT;

/**
 * EXPIRE (the session roll, sent to each shard): raises the session floor to the
 * command's session word, then scans order slots [first, end) of the argument word's
 * `first`, end = min(first + EXPIRY_SCAN_SLOTS, slots in use), and expires each
 * resting DAY order of a session below the floor. Bounded: a leading event and at
 * most EXPIRY_SCAN_SLOTS expiries; the roll sends first = 0, EXPIRY_SCAN_SLOTS, ...
 * until the leading event reports no slot left.
 *
 * Events: ACCEPTED, order -1, state 0, quantity = orders expired, code (and leaves)
 * = slots still to scan past this range, filled 0, price 0 (a result record carries
 * the code, not the leaves: core/session-expiry.ts); then per order, in slot order,
 * EXPIRED: order = slot, state EXPIRED, quantity, filled, leaves (the open quantity
 * it had) and price as the order had them.
 */
export function expire(engine: EngineParts, words: Int32Array, w: number): void {
  const floor = words[w + COMMAND_SESSION_WORD]!;
  const first = words[w + COMMAND_ARGUMENT_WORD]!;
  if (floor <= 0 || first < 0) {
    reject(engine, -1, RejectCode.INVALID_COMMAND);
    return;
  }
  if (floor > engine.sessionFloor) engine.sessionFloor = floor;
  const sessionFloor = engine.sessionFloor;
  const orders = engine.orders;
  const used = orders.slotsInUse;
  const end = first + EXPIRY_SCAN_SLOTS < used ? first + EXPIRY_SCAN_SLOTS : used;
  const events = engine.events;
  events.reserve(end > first ? end - first + 1 : 1);
  const lead = events.count++;
  const ef = events.floats;
  writeExpiryEvent(engine, lead, EVENT_ACCEPTED, -1, 0);
  const o = orders.words;
  const bytes = orders.bytes;
  let expired = 0;
  for (let slot = first; slot < end; slot++) {
    const b = slot << ORDER_BYTE_SHIFT;
    const state = bytes[b + ORDER_STATE_BYTE];
    if (state !== STATE_OPEN && state !== STATE_PARTIALLY_FILLED) continue;
    const r = slot << ORDER_WORD_SHIFT;
    if (bytes[b + ORDER_TIME_IN_FORCE_BYTE] !== TIME_IN_FORCE_DAY || o[r + ORDER_SESSION_WORD]! >= sessionFloor) continue;
    const quantity = o[r + ORDER_QUANTITY_WORD]!;
    const filled = o[r + ORDER_FILLED_WORD]!;
    unlink(engine, slot);
    bytes[b + ORDER_STATE_BYTE] = STATE_EXPIRED;
    orders.retire(slot);
    const i = events.count++;
    writeExpiryEvent(engine, i, EVENT_EXPIRED, slot, STATE_EXPIRED);
    const f = i << EVENT_FLOAT_SHIFT;
    ef[f + EVENT_QUANTITY_FLOAT] = quantity;
    ef[f + EVENT_FILLED_FLOAT] = filled;
    ef[f + EVENT_LEAVES_FLOAT] = quantity - filled;
    ef[f + EVENT_PRICE_FLOAT] = orders.floats[(slot << ORDER_FLOAT_SHIFT) + ORDER_PRICE_FLOAT]!;
    expired++;
  }
  const f = lead << EVENT_FLOAT_SHIFT;
  const slotsLeft = used > end ? used - end : 0;
  ef[f + EVENT_QUANTITY_FLOAT] = expired;
  ef[f + EVENT_LEAVES_FLOAT] = slotsLeft;
  // The code word too: a result record carries the code, not the leaves (core/session-expiry.ts expiryProgress).
  events.words[(lead << EVENT_WORD_SHIFT) + EVENT_CODE_WORD] = slotsLeft;
  ef[f + EVENT_FILLED_FLOAT] = 0;
  ef[f + EVENT_PRICE_FLOAT] = 0;
}

/** Resting DAY orders stamped with a session below `floor`: what an EXPIRE with that floor would expire (a start checks; nothing changes). */
export function restingDayOrdersBefore(orders: OrderStore, floor: number): number {
  const o = orders.words;
  const bytes = orders.bytes;
  let count = 0;
  for (let slot = 0; slot < orders.slotsInUse; slot++) {
    const b = slot << ORDER_BYTE_SHIFT;
    const state = bytes[b + ORDER_STATE_BYTE];
    if ((state === STATE_OPEN || state === STATE_PARTIALLY_FILLED) && bytes[b + ORDER_TIME_IN_FORCE_BYTE] === TIME_IN_FORCE_DAY && o[(slot << ORDER_WORD_SHIFT) + ORDER_SESSION_WORD]! < floor) count++;
  }
  return count;
}
