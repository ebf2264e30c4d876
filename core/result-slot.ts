// Result records: what a shard sends back to the gateway that sent a command, on
// the shard -> gateway result ring. Fixed 64-byte records; one command's results are
// a header record followed by `eventCount` event records, in sequence order.
//
// Header                                  Event
//    0 kind u8 (RESULT_HEADER)            0 kind u8, state u8, aggressor u8, side u8
//    4 token i32 (gateway request)        4 reject code i32
//    8 event count i32                    8 uuid A: the order (EXECUTION, ACCEPTED,
//   12 currency i32                         REJECTED target) or the buy order (TRADE)
//   16 query state i32 (QUERY: the       24 uuid B: the counterparty order
//      order's state, -1 unknown)           (EXECUTION) or the sell order (TRADE)
//   24 timestampUs f64 (sequenced at)    40 sequence f64
//   32 engineOrderId f64 (ACCEPTED)      48 quantity f64 (units)
//   40 batch number f64                  56 price f64 (nanos)

import { EVENT_EXECUTION, EVENT_TRADE } from './codes.ts';
import { formatUuid } from './uuid.ts';

function hasSecondOrder(kind: number): boolean {
  return kind === EVENT_EXECUTION || kind === EVENT_TRADE;
}

export const RESULT_RECORD_BYTES = 64;
export const RESULT_HEADER = 16;

export const RESULT_KIND_BYTE = 0;
export const RESULT_STATE_BYTE = 1;
export const RESULT_AGGRESSOR_BYTE = 2;
export const RESULT_SIDE_BYTE = 3;
export const RESULT_TOKEN_WORD = 1;
export const RESULT_COUNT_WORD = 2;
export const RESULT_CURRENCY_WORD = 3;
export const RESULT_QUERY_STATE_WORD = 4;
export const RESULT_TIMESTAMP_FLOAT = 3;
export const RESULT_ENGINE_ORDER_FLOAT = 4;
export const RESULT_BATCH_FLOAT = 5;
export const RESULT_CODE_WORD = 1;
export const RESULT_UUID_A_WORD = 2;
export const RESULT_UUID_B_WORD = 6;
export const RESULT_SEQUENCE_FLOAT = 5;
export const RESULT_QUANTITY_FLOAT = 6;
export const RESULT_PRICE_FLOAT = 7;

/** One command's results as plain values (gateway rendering, tests). */
export interface ResultHeader {
  token: number;
  eventCount: number;
  currency: number;
  queryState: number;
  timestampUs: number;
  engineOrderId: number;
  batch: number;
}

export interface ResultEvent {
  kind: number;
  state: number;
  aggressor: number;
  side: number;
  code: number;
  orderA: string;
  orderB: string;
  sequence: number;
  quantity: number;
  price: number;
}

export interface RecordViews {
  words: Int32Array;
  floats: Float64Array;
  bytes: Uint8Array;
}

export function readHeader(views: RecordViews, byteOffset: number): ResultHeader {
  const w = byteOffset >> 2;
  const f = byteOffset >> 3;
  return {
    token: views.words[w + RESULT_TOKEN_WORD]!,
    eventCount: views.words[w + RESULT_COUNT_WORD]!,
    currency: views.words[w + RESULT_CURRENCY_WORD]!,
    queryState: views.words[w + RESULT_QUERY_STATE_WORD]!,
    timestampUs: views.floats[f + RESULT_TIMESTAMP_FLOAT]!,
    engineOrderId: views.floats[f + RESULT_ENGINE_ORDER_FLOAT]!,
    batch: views.floats[f + RESULT_BATCH_FLOAT]!,
  };
}

export function readEvent(views: RecordViews, byteOffset: number): ResultEvent {
  const w = byteOffset >> 2;
  const f = byteOffset >> 3;
  return {
    kind: views.bytes[byteOffset + RESULT_KIND_BYTE]!,
    state: views.bytes[byteOffset + RESULT_STATE_BYTE]!,
    aggressor: views.bytes[byteOffset + RESULT_AGGRESSOR_BYTE]!,
    side: views.bytes[byteOffset + RESULT_SIDE_BYTE]!,
    code: views.words[w + RESULT_CODE_WORD]!,
    orderA: formatUuid(views.words, w + RESULT_UUID_A_WORD),
    // Only executions and trades name a second order: the others leave it '' rather than format a string no one reads.
    orderB: hasSecondOrder(views.bytes[byteOffset + RESULT_KIND_BYTE]!) ? formatUuid(views.words, w + RESULT_UUID_B_WORD) : '',
    sequence: views.floats[f + RESULT_SEQUENCE_FLOAT]!,
    quantity: views.floats[f + RESULT_QUANTITY_FLOAT]!,
    price: views.floats[f + RESULT_PRICE_FLOAT]!,
  };
}

export function writeHeader(
  views: RecordViews,
  byteOffset: number,
  token: number,
  eventCount: number,
  currency: number,
  queryState: number,
  timestampUs: number,
  engineOrderId: number,
  batch: number,
): void {
  const w = byteOffset >> 2;
  const f = byteOffset >> 3;
  views.bytes[byteOffset + RESULT_KIND_BYTE] = RESULT_HEADER;
  views.words[w + RESULT_TOKEN_WORD] = token;
  views.words[w + RESULT_COUNT_WORD] = eventCount;
  views.words[w + RESULT_CURRENCY_WORD] = currency;
  views.words[w + RESULT_QUERY_STATE_WORD] = queryState;
  views.floats[f + RESULT_TIMESTAMP_FLOAT] = timestampUs;
  views.floats[f + RESULT_ENGINE_ORDER_FLOAT] = engineOrderId;
  views.floats[f + RESULT_BATCH_FLOAT] = batch;
}

/** Writes an event record's scalar fields; its order ids are copied with writeUuid. */
export function writeEvent(
  views: RecordViews,
  byteOffset: number,
  kind: number,
  state: number,
  aggressor: number,
  side: number,
  code: number,
  sequence: number,
  quantity: number,
  price: number,
): void {
  const w = byteOffset >> 2;
  const f = byteOffset >> 3;
  views.bytes[byteOffset + RESULT_KIND_BYTE] = kind;
  views.bytes[byteOffset + RESULT_STATE_BYTE] = state;
  views.bytes[byteOffset + RESULT_AGGRESSOR_BYTE] = aggressor;
  views.bytes[byteOffset + RESULT_SIDE_BYTE] = side;
  views.words[w + RESULT_CODE_WORD] = code;
  views.floats[f + RESULT_SEQUENCE_FLOAT] = sequence;
  views.floats[f + RESULT_QUANTITY_FLOAT] = quantity;
  views.floats[f + RESULT_PRICE_FLOAT] = price;
}

/** Copies four id words from source[sourceAt..] into an event record (field RESULT_UUID_A_WORD or _B_WORD). */
export function writeUuid(views: RecordViews, byteOffset: number, field: number, source: Int32Array, sourceAt: number): void {
  const at = (byteOffset >> 2) + field;
  views.words[at] = source[sourceAt]!;
  views.words[at + 1] = source[sourceAt + 1]!;
  views.words[at + 2] = source[sourceAt + 2]!;
  views.words[at + 3] = source[sourceAt + 3]!;
}
