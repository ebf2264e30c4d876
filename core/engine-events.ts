// The events a command leaves in the engine's event buffer (core/event-buffer.ts has
// their layout): rejections, the accepted outcome, fills and expiries, each taking the
// engine's next sequence.

import * as codes from './codes.ts';
import type { EngineParts } from './engine-parts.ts';
import * as eventBuffer from './event-buffer.ts';
import * as orderStore from './order-store.ts';

// Hot-path constants re-bound as module-local consts: V8 11 (Node 20) does not fold a
// constant imported from another module, but folds a module-local const to an immediate.
const EVENT_AGGRESSOR_BYTE = eventBuffer.EVENT_AGGRESSOR_BYTE;
const EVENT_BYTE_SHIFT = eventBuffer.EVENT_BYTE_SHIFT;
const EVENT_CODE_WORD = eventBuffer.EVENT_CODE_WORD;
const EVENT_COUNTERPARTY_WORD = eventBuffer.EVENT_COUNTERPARTY_WORD;
const EVENT_FILLED_FLOAT = eventBuffer.EVENT_FILLED_FLOAT;
const EVENT_FLOAT_SHIFT = eventBuffer.EVENT_FLOAT_SHIFT;
const EVENT_KIND_BYTE = eventBuffer.EVENT_KIND_BYTE;
const EVENT_LEAVES_FLOAT = eventBuffer.EVENT_LEAVES_FLOAT;
const EVENT_ORDER_WORD = eventBuffer.EVENT_ORDER_WORD;
const EVENT_PRICE_FLOAT = eventBuffer.EVENT_PRICE_FLOAT;
const EVENT_QUANTITY_FLOAT = eventBuffer.EVENT_QUANTITY_FLOAT;
const EVENT_RECORD_BYTES = eventBuffer.EVENT_RECORD_BYTES;
const EVENT_SEQUENCE_FLOAT = eventBuffer.EVENT_SEQUENCE_FLOAT;
const EVENT_STATE_BYTE = eventBuffer.EVENT_STATE_BYTE;
const EVENT_WORD_SHIFT = eventBuffer.EVENT_WORD_SHIFT;
const EVENT_ACCEPTED = codes.EVENT_ACCEPTED;
const EVENT_EXECUTION = codes.EVENT_EXECUTION;
const EVENT_REJECTED = codes.EVENT_REJECTED;
const EVENT_TRADE = codes.EVENT_TRADE;
const SIDE_BUY = codes.SIDE_BUY;
const STATE_FILLED = codes.STATE_FILLED;
const STATE_OPEN = codes.STATE_OPEN;
const STATE_PARTIALLY_FILLED = codes.STATE_PARTIALLY_FILLED;
const ORDER_BYTE_SHIFT = orderStore.ORDER_BYTE_SHIFT;
const ORDER_FILLED_WORD = orderStore.ORDER_FILLED_WORD;
const ORDER_FLOAT_SHIFT = orderStore.ORDER_FLOAT_SHIFT;
const ORDER_PRICE_FLOAT = orderStore.ORDER_PRICE_FLOAT;
const ORDER_QUANTITY_WORD = orderStore.ORDER_QUANTITY_WORD;
const ORDER_STATE_BYTE = orderStore.ORDER_STATE_BYTE;
const ORDER_WORD_SHIFT = orderStore.ORDER_WORD_SHIFT;

/** One rejection with `code`; `slot` is the target order's when known, else -1. */
export function reject(engine: EngineParts, slot: number, code: number): void {
  const events = engine.events;
  events.reserve(1);
  const i = events.count++;
  const b = i << EVENT_BYTE_SHIFT;
  const w = i << EVENT_WORD_SHIFT;
  events.bytes[b + EVENT_KIND_BYTE] = EVENT_REJECTED;
  events.words[w + EVENT_ORDER_WORD] = slot;
  events.words[w + EVENT_COUNTERPARTY_WORD] = -1;
  events.words[w + EVENT_CODE_WORD] = code;
  events.floats[(i << EVENT_FLOAT_SHIFT) + EVENT_SEQUENCE_FLOAT] = ++engine.sequence;
}

/** Issues the accepted outcome first (its sequence precedes the fills it causes); returns its event index. */
export function beginAccepted(engine: EngineParts, slot: number): number {
  const events = engine.events;
  events.reserve(1);
  const i = events.count++;
  const w = i << EVENT_WORD_SHIFT;
  events.bytes[(i << EVENT_BYTE_SHIFT) + EVENT_KIND_BYTE] = EVENT_ACCEPTED;
  events.words[w + EVENT_ORDER_WORD] = slot;
  events.words[w + EVENT_COUNTERPARTY_WORD] = -1;
  events.words[w + EVENT_CODE_WORD] = 0;
  events.floats[(i << EVENT_FLOAT_SHIFT) + EVENT_SEQUENCE_FLOAT] = ++engine.sequence;
  return i;
}

/** Completes the accepted outcome at event `i` with the order as the command left it. */
export function finishAccepted(engine: EngineParts, i: number, slot: number): void {
  const events = engine.events;
  const orders = engine.orders;
  const o = orders.words;
  const r = slot << ORDER_WORD_SHIFT;
  const filled = o[r + ORDER_FILLED_WORD]!;
  const quantity = o[r + ORDER_QUANTITY_WORD]!;
  const state = orders.bytes[(slot << ORDER_BYTE_SHIFT) + ORDER_STATE_BYTE]!;
  const f = i << EVENT_FLOAT_SHIFT;
  const ef = events.floats;
  events.bytes[(i << EVENT_BYTE_SHIFT) + EVENT_STATE_BYTE] = state;
  ef[f + EVENT_FILLED_FLOAT] = filled;
  ef[f + EVENT_LEAVES_FLOAT] = state === STATE_OPEN || state === STATE_PARTIALLY_FILLED ? quantity - filled : 0;
  ef[f + EVENT_PRICE_FLOAT] = orders.floats[(slot << ORDER_FLOAT_SHIFT) + ORDER_PRICE_FLOAT]!;
  ef[f + EVENT_QUANTITY_FLOAT] = quantity;
}

/** Taker execution, maker execution, trade: three consecutive sequences. */
export function emitFill(engine: EngineParts, taker: number, maker: number, fill: number, price: number, takerSide: number, takerLeaves: number): void {
  const events = engine.events;
  const orders = engine.orders;
  const o = orders.words;
  events.reserve(3);
  const i = events.count;
  events.count = i + 3;
  const eb = events.bytes;
  const ew = events.words;
  const ef = events.floats;
  let b = i << EVENT_BYTE_SHIFT;
  let w = i << EVENT_WORD_SHIFT;
  let f = i << EVENT_FLOAT_SHIFT;
  eb[b + EVENT_KIND_BYTE] = EVENT_EXECUTION;
  eb[b + EVENT_STATE_BYTE] = takerLeaves === 0 ? STATE_FILLED : STATE_PARTIALLY_FILLED;
  ew[w + EVENT_ORDER_WORD] = taker;
  ew[w + EVENT_COUNTERPARTY_WORD] = maker;
  ef[f + EVENT_SEQUENCE_FLOAT] = ++engine.sequence;
  ef[f + EVENT_QUANTITY_FLOAT] = fill;
  ef[f + EVENT_PRICE_FLOAT] = price;
  ef[f + EVENT_LEAVES_FLOAT] = takerLeaves;
  ef[f + EVENT_FILLED_FLOAT] = o[(taker << ORDER_WORD_SHIFT) + ORDER_FILLED_WORD]!;
  const r = maker << ORDER_WORD_SHIFT;
  const makerFilled = o[r + ORDER_FILLED_WORD]!;
  b += EVENT_RECORD_BYTES;
  w += EVENT_RECORD_BYTES >> 2;
  f += EVENT_RECORD_BYTES >> 3;
  eb[b + EVENT_KIND_BYTE] = EVENT_EXECUTION;
  eb[b + EVENT_STATE_BYTE] = orders.bytes[(maker << ORDER_BYTE_SHIFT) + ORDER_STATE_BYTE]!;
  ew[w + EVENT_ORDER_WORD] = maker;
  ew[w + EVENT_COUNTERPARTY_WORD] = taker;
  ef[f + EVENT_SEQUENCE_FLOAT] = ++engine.sequence;
  ef[f + EVENT_QUANTITY_FLOAT] = fill;
  ef[f + EVENT_PRICE_FLOAT] = price;
  ef[f + EVENT_LEAVES_FLOAT] = o[r + ORDER_QUANTITY_WORD]! - makerFilled;
  ef[f + EVENT_FILLED_FLOAT] = makerFilled;
  b += EVENT_RECORD_BYTES;
  w += EVENT_RECORD_BYTES >> 2;
  f += EVENT_RECORD_BYTES >> 3;
  eb[b + EVENT_KIND_BYTE] = EVENT_TRADE;
  eb[b + EVENT_AGGRESSOR_BYTE] = takerSide;
  ew[w + EVENT_ORDER_WORD] = takerSide === SIDE_BUY ? taker : maker;
  ew[w + EVENT_COUNTERPARTY_WORD] = takerSide === SIDE_BUY ? maker : taker;
  ef[f + EVENT_SEQUENCE_FLOAT] = ++engine.sequence;
  ef[f + EVENT_QUANTITY_FLOAT] = fill;
  ef[f + EVENT_PRICE_FLOAT] = price;
}

/** The fields an expiry event shares (kind, order, state, sequence); its quantities are the caller's. */
export function writeExpiryEvent(engine: EngineParts, i: number, kind: number, slot: number, state: number): void {
  const events = engine.events;
  const b = i << EVENT_BYTE_SHIFT;
  const w = i << EVENT_WORD_SHIFT;
  events.bytes[b + EVENT_KIND_BYTE] = kind;
  events.bytes[b + EVENT_STATE_BYTE] = state;
  events.bytes[b + EVENT_AGGRESSOR_BYTE] = 0;
  events.words[w + EVENT_ORDER_WORD] = slot;
  events.words[w + EVENT_COUNTERPARTY_WORD] = -1;
  events.words[w + EVENT_CODE_WORD] = 0;
  events.floats[(i << EVENT_FLOAT_SHIFT) + EVENT_SEQUENCE_FLOAT] = ++engine.sequence;
}
