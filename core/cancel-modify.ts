// CANCEL and MODIFY of a resting order: the target is resolved by id, its full context
// compared (ORDER_CONTEXT_MISMATCH) and then its state (ORDER_NOT_OPEN); a modify keeps
// the order's place or re-enters it at the back, where it may cross.

import { RejectCode } from './codes.ts';
import * as codes from './codes.ts';
import * as commandSlot from './command-slot.ts';
import type { EngineParts } from './engine-parts.ts';
import { beginAccepted, finishAccepted, reject } from './engine-events.ts';
import { isValidPriceNanos, isValidQuantityUnits } from './fixed-point.ts';
import { execute, unlink } from './matching-loop.ts';
import * as orderStore from './order-store.ts';
import * as priceLevels from './price-levels.ts';

// Hot-path constants re-bound as module-local consts (see core/engine-events.ts).
const COMMAND_ACCOUNT_ID_WORD = commandSlot.COMMAND_ACCOUNT_ID_WORD;
const COMMAND_INSTRUMENT_ID_WORD = commandSlot.COMMAND_INSTRUMENT_ID_WORD;
const COMMAND_ORDER_ID_WORD = commandSlot.COMMAND_ORDER_ID_WORD;
const COMMAND_PARTICIPANT_ID_WORD = commandSlot.COMMAND_PARTICIPANT_ID_WORD;
const COMMAND_PRICE_NANOS_FLOAT = commandSlot.COMMAND_PRICE_NANOS_FLOAT;
const COMMAND_QUANTITY_UNITS_FLOAT = commandSlot.COMMAND_QUANTITY_UNITS_FLOAT;
const COMMAND_RUN_WORD = commandSlot.COMMAND_RUN_WORD;
const COMMAND_SESSION_WORD = commandSlot.COMMAND_SESSION_WORD;
const STATE_CANCELLED = codes.STATE_CANCELLED;
const STATE_OPEN = codes.STATE_OPEN;
const STATE_PARTIALLY_FILLED = codes.STATE_PARTIALLY_FILLED;
const ORDER_BOOK_WORD = orderStore.ORDER_BOOK_WORD;
const ORDER_BYTE_SHIFT = orderStore.ORDER_BYTE_SHIFT;
const ORDER_FILLED_WORD = orderStore.ORDER_FILLED_WORD;
const ORDER_FLOAT_SHIFT = orderStore.ORDER_FLOAT_SHIFT;
const ORDER_LEVEL_WORD = orderStore.ORDER_LEVEL_WORD;
const ORDER_OWNER_WORD = orderStore.ORDER_OWNER_WORD;
const ORDER_PRICE_FLOAT = orderStore.ORDER_PRICE_FLOAT;
const ORDER_QUANTITY_WORD = orderStore.ORDER_QUANTITY_WORD;
const ORDER_RUN_WORD = orderStore.ORDER_RUN_WORD;
const ORDER_SESSION_WORD = orderStore.ORDER_SESSION_WORD;
const ORDER_SIDE_BYTE = orderStore.ORDER_SIDE_BYTE;
const ORDER_STATE_BYTE = orderStore.ORDER_STATE_BYTE;
const ORDER_TYPE_BYTE = orderStore.ORDER_TYPE_BYTE;
const ORDER_WORD_SHIFT = orderStore.ORDER_WORD_SHIFT;
const LEVEL_FLOAT_SHIFT = priceLevels.LEVEL_FLOAT_SHIFT;
const LEVEL_QUANTITY_FLOAT = priceLevels.LEVEL_QUANTITY_FLOAT;

/** CANCEL: the command slot's words from `w`. */
export function cancel(engine: EngineParts, words: Int32Array, w: number): void {
  const slot = findTarget(engine, words, w);
  if (slot < 0) return;
  const orders = engine.orders;
  unlink(engine, slot);
  orders.bytes[(slot << ORDER_BYTE_SHIFT) + ORDER_STATE_BYTE] = STATE_CANCELLED;
  orders.retire(slot);
  const accepted = beginAccepted(engine, slot);
  finishAccepted(engine, accepted, slot);
}

/** MODIFY: the command slot's words from `w`, its floats from `f`. */
export function modify(engine: EngineParts, words: Int32Array, floats: Float64Array, w: number, f: number): void {
  const price = floats[f + COMMAND_PRICE_NANOS_FLOAT]!;
  const quantity = floats[f + COMMAND_QUANTITY_UNITS_FLOAT]!;
  if (!isValidPriceNanos(price) || !isValidQuantityUnits(quantity)) {
    reject(engine, -1, RejectCode.INVALID_COMMAND);
    return;
  }
  const slot = findTarget(engine, words, w);
  if (slot < 0) return;
  const orders = engine.orders;
  const o = orders.words;
  const r = slot << ORDER_WORD_SHIFT;
  if (quantity <= o[r + ORDER_FILLED_WORD]!) {
    reject(engine, slot, RejectCode.INVALID_MODIFY);
    return;
  }
  const accepted = beginAccepted(engine, slot);
  const currentQuantity = o[r + ORDER_QUANTITY_WORD]!;
  const priceAt = (slot << ORDER_FLOAT_SHIFT) + ORDER_PRICE_FLOAT;
  if (price === orders.floats[priceAt] && quantity <= currentQuantity) {
    // Same price, not larger: reduce in place and keep time priority.
    const level = o[r + ORDER_LEVEL_WORD]!;
    const queue = orders.bytes[(slot << ORDER_BYTE_SHIFT) + ORDER_TYPE_BYTE]!;
    engine.levels.floats[(level << LEVEL_FLOAT_SHIFT) + LEVEL_QUANTITY_FLOAT + queue]! -= currentQuantity - quantity;
    o[r + ORDER_QUANTITY_WORD] = quantity;
  } else {
    // Price change or increase: loses priority, may cross.
    unlink(engine, slot);
    orders.floats[priceAt] = price;
    o[r + ORDER_QUANTITY_WORD] = quantity;
    const side = orders.bytes[(slot << ORDER_BYTE_SHIFT) + ORDER_SIDE_BYTE]!;
    execute(engine, slot, o[r + ORDER_BOOK_WORD]! * 2 + side, price, quantity);
  }
  finishAccepted(engine, accepted, slot);
}

/**
 * Resolves the target of a cancel or modify: found, same full context, still
 * open. Emits the reject and returns -1 otherwise.
 */
function findTarget(engine: EngineParts, words: Int32Array, w: number): number {
  const idAt = w + COMMAND_ORDER_ID_WORD;
  const orders = engine.orders;
  const slot = orders.find(words[idAt]!, words[idAt + 1]!, words[idAt + 2]!, words[idAt + 3]!);
  if (slot < 0) {
    reject(engine, -1, RejectCode.ORDER_NOT_FOUND);
    return -1;
  }
  if (!contextMatches(engine, slot, words, w)) {
    reject(engine, slot, RejectCode.ORDER_CONTEXT_MISMATCH);
    return -1;
  }
  const state = orders.bytes[(slot << ORDER_BYTE_SHIFT) + ORDER_STATE_BYTE];
  if (state !== STATE_OPEN && state !== STATE_PARTIALLY_FILLED) {
    reject(engine, slot, RejectCode.ORDER_NOT_OPEN);
    return -1;
  }
  return slot;
}

/** runId, venueSessionId, instrumentId, participantId and accountId all equal. */
function contextMatches(engine: EngineParts, slot: number, words: Int32Array, w: number): boolean {
  const o = engine.orders.words;
  const r = slot << ORDER_WORD_SHIFT;
  if (o[r + ORDER_RUN_WORD] !== words[w + COMMAND_RUN_WORD] || o[r + ORDER_SESSION_WORD] !== words[w + COMMAND_SESSION_WORD]) {
    return false;
  }
  const instrumentAt = o[r + ORDER_BOOK_WORD]! << 2;
  const instrument = engine.instrument;
  for (let k = 0; k < 4; k++) {
    if (instrument[instrumentAt + k] !== words[w + COMMAND_INSTRUMENT_ID_WORD + k]) return false;
  }
  return engine.owners.matches(o[r + ORDER_OWNER_WORD]!, words, w + COMMAND_PARTICIPANT_ID_WORD, w + COMMAND_ACCOUNT_ID_WORD);
}
