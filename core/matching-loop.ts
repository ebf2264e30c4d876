// Price-time matching: an order against the opposite side of its book, best price first
// and oldest first within a queue, then its remainder rested or cancelled; and the queue
// links a resting order enters (rest) and leaves (unlink).

import * as codes from './codes.ts';
import type { EngineParts } from './engine-parts.ts';
import { emitFill } from './engine-events.ts';
import * as orderStore from './order-store.ts';
import * as priceLevels from './price-levels.ts';

// Hot-path constants re-bound as module-local consts (see core/engine-events.ts).
const SIDE_BUY = codes.SIDE_BUY;
const STATE_CANCELLED = codes.STATE_CANCELLED;
const STATE_FILLED = codes.STATE_FILLED;
const STATE_OPEN = codes.STATE_OPEN;
const STATE_PARTIALLY_FILLED = codes.STATE_PARTIALLY_FILLED;
const TIME_IN_FORCE_IOC = codes.TIME_IN_FORCE_IOC;
const ORDER_BYTE_SHIFT = orderStore.ORDER_BYTE_SHIFT;
const ORDER_FILLED_WORD = orderStore.ORDER_FILLED_WORD;
const ORDER_LEVEL_WORD = orderStore.ORDER_LEVEL_WORD;
const ORDER_NEXT_WORD = orderStore.ORDER_NEXT_WORD;
const ORDER_PREV_WORD = orderStore.ORDER_PREV_WORD;
const ORDER_QUANTITY_WORD = orderStore.ORDER_QUANTITY_WORD;
const ORDER_STATE_BYTE = orderStore.ORDER_STATE_BYTE;
const ORDER_TIME_IN_FORCE_BYTE = orderStore.ORDER_TIME_IN_FORCE_BYTE;
const ORDER_TYPE_BYTE = orderStore.ORDER_TYPE_BYTE;
const ORDER_WORD_SHIFT = orderStore.ORDER_WORD_SHIFT;
const LEVEL_COUNT_WORD = priceLevels.LEVEL_COUNT_WORD;
const LEVEL_FLOAT_SHIFT = priceLevels.LEVEL_FLOAT_SHIFT;
const LEVEL_HEAD_WORD = priceLevels.LEVEL_HEAD_WORD;
const LEVEL_PRICE_FLOAT = priceLevels.LEVEL_PRICE_FLOAT;
const LEVEL_QUANTITY_FLOAT = priceLevels.LEVEL_QUANTITY_FLOAT;
const LEVEL_TAIL_WORD = priceLevels.LEVEL_TAIL_WORD;
const LEVEL_WORD_SHIFT = priceLevels.LEVEL_WORD_SHIFT;

/**
 * Matches an order (not resting) on bookSide against the opposite side, then
 * rests its remainder (DAY) or cancels it (IOC). Leaves the order's final state.
 */
export function execute(engine: EngineParts, slot: number, bookSide: number, price: number, quantity: number): void {
  const orders = engine.orders;
  const b = slot << ORDER_BYTE_SHIFT;
  const bytes = orders.bytes;
  const filledAt = (slot << ORDER_WORD_SHIFT) + ORDER_FILLED_WORD;
  const leaves = match(engine, slot, bookSide ^ 1, bookSide & 1, price, quantity - orders.words[filledAt]!);
  if (leaves === 0) {
    bytes[b + ORDER_STATE_BYTE] = STATE_FILLED;
    orders.retire(slot);
  } else if (bytes[b + ORDER_TIME_IN_FORCE_BYTE] === TIME_IN_FORCE_IOC) {
    bytes[b + ORDER_STATE_BYTE] = STATE_CANCELLED;
    orders.retire(slot);
  } else {
    bytes[b + ORDER_STATE_BYTE] = orders.words[filledAt]! > 0 ? STATE_PARTIALLY_FILLED : STATE_OPEN;
    rest(engine, slot, bookSide, price, leaves);
  }
}

/** Executes against the opposite side while it crosses; returns the quantity left. */
function match(engine: EngineParts, taker: number, opposite: number, takerSide: number, limit: number, leaves: number): number {
  const levels = engine.levels;
  const levelFloats = levels.floats;
  while (leaves > 0) {
    const level = levels.best(opposite);
    if (level < 0) break;
    const levelPrice = levelFloats[(level << LEVEL_FLOAT_SHIFT) + LEVEL_PRICE_FLOAT]!;
    if (takerSide === SIDE_BUY ? levelPrice > limit : levelPrice < limit) break;
    leaves = matchQueue(engine, taker, level, 0, levelPrice, takerSide, leaves);
    if (leaves > 0) leaves = matchQueue(engine, taker, level, 1, levelPrice, takerSide, leaves);
    if (levels.isEmpty(level)) levels.destroy(level);
  }
  return leaves;
}

/** Executes against one FIFO queue of a level, oldest first. */
function matchQueue(engine: EngineParts, taker: number, level: number, queue: number, price: number, takerSide: number, leaves: number): number {
  const orders = engine.orders;
  const o = orders.words;
  const bytes = orders.bytes;
  const lw = engine.levels.words;
  const headAt = (level << LEVEL_WORD_SHIFT) + LEVEL_HEAD_WORD + queue;
  const quantityAt = (level << LEVEL_FLOAT_SHIFT) + LEVEL_QUANTITY_FLOAT + queue;
  const takerFilledAt = (taker << ORDER_WORD_SHIFT) + ORDER_FILLED_WORD;
  let maker = lw[headAt]!;
  while (maker >= 0 && leaves > 0) {
    const r = maker << ORDER_WORD_SHIFT;
    const makerLeaves = o[r + ORDER_QUANTITY_WORD]! - o[r + ORDER_FILLED_WORD]!;
    const fill = leaves < makerLeaves ? leaves : makerLeaves;
    leaves -= fill;
    o[takerFilledAt]! += fill;
    o[r + ORDER_FILLED_WORD]! += fill;
    engine.levels.floats[quantityAt]! -= fill;
    const next = o[r + ORDER_NEXT_WORD]!;
    if (fill === makerLeaves) {
      // The maker is done: it is the head of its queue, pop it.
      lw[headAt] = next;
      if (next >= 0) o[(next << ORDER_WORD_SHIFT) + ORDER_PREV_WORD] = -1;
      else lw[headAt - LEVEL_HEAD_WORD + LEVEL_TAIL_WORD] = -1;
      lw[headAt - LEVEL_HEAD_WORD + LEVEL_COUNT_WORD]!--;
      o[r + ORDER_LEVEL_WORD] = -1;
      o[r + ORDER_NEXT_WORD] = -1;
      bytes[(maker << ORDER_BYTE_SHIFT) + ORDER_STATE_BYTE] = STATE_FILLED;
      orders.retire(maker);
    } else {
      bytes[(maker << ORDER_BYTE_SHIFT) + ORDER_STATE_BYTE] = STATE_PARTIALLY_FILLED;
    }
    emitFill(engine, taker, maker, fill, price, takerSide, leaves);
    maker = next;
  }
  return leaves;
}

/** Appends an order at the back of its queue at `price`, creating the level if needed. */
function rest(engine: EngineParts, slot: number, bookSide: number, price: number, leaves: number): void {
  const levels = engine.levels;
  const orders = engine.orders;
  const o = orders.words;
  const level = levels.findOrCreate(bookSide, price);
  const queue = orders.bytes[(slot << ORDER_BYTE_SHIFT) + ORDER_TYPE_BYTE]!;
  const lw = levels.words;
  const lr = (level << LEVEL_WORD_SHIFT) + queue;
  const tail = lw[lr + LEVEL_TAIL_WORD]!;
  const r = slot << ORDER_WORD_SHIFT;
  o[r + ORDER_PREV_WORD] = tail;
  o[r + ORDER_NEXT_WORD] = -1;
  o[r + ORDER_LEVEL_WORD] = level;
  if (tail >= 0) o[(tail << ORDER_WORD_SHIFT) + ORDER_NEXT_WORD] = slot;
  else lw[lr + LEVEL_HEAD_WORD] = slot;
  lw[lr + LEVEL_TAIL_WORD] = slot;
  lw[lr + LEVEL_COUNT_WORD]!++;
  levels.floats[(level << LEVEL_FLOAT_SHIFT) + LEVEL_QUANTITY_FLOAT + queue]! += leaves;
}

/** Takes a resting order out of its queue; drops the level if it empties. */
export function unlink(engine: EngineParts, slot: number): void {
  const levels = engine.levels;
  const orders = engine.orders;
  const o = orders.words;
  const r = slot << ORDER_WORD_SHIFT;
  const level = o[r + ORDER_LEVEL_WORD]!;
  const queue = orders.bytes[(slot << ORDER_BYTE_SHIFT) + ORDER_TYPE_BYTE]!;
  const lw = levels.words;
  const lr = (level << LEVEL_WORD_SHIFT) + queue;
  const prev = o[r + ORDER_PREV_WORD]!;
  const next = o[r + ORDER_NEXT_WORD]!;
  if (prev >= 0) o[(prev << ORDER_WORD_SHIFT) + ORDER_NEXT_WORD] = next;
  else lw[lr + LEVEL_HEAD_WORD] = next;
  if (next >= 0) o[(next << ORDER_WORD_SHIFT) + ORDER_PREV_WORD] = prev;
  else lw[lr + LEVEL_TAIL_WORD] = prev;
  lw[lr + LEVEL_COUNT_WORD]!--;
  levels.floats[(level << LEVEL_FLOAT_SHIFT) + LEVEL_QUANTITY_FLOAT + queue]! -= o[r + ORDER_QUANTITY_WORD]! - o[r + ORDER_FILLED_WORD]!;
  o[r + ORDER_PREV_WORD] = -1;
  o[r + ORDER_NEXT_WORD] = -1;
  o[r + ORDER_LEVEL_WORD] = -1;
  if (levels.isEmpty(level)) levels.destroy(level);
}
