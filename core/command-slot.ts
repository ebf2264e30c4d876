// Fixed-size binary command slot: the one layout every thread agrees on.
// Gateways write it once from validated JSON; shards and the journal read it.
// Offsets are declared here only (piscina style) and imported by both sides.
//
//  byte  0 ┌──────────┬──────────┬───────────┬──────────────┐
//          │ opcode u8│ side u8  │ orderType │ timeInForce  │   header word
//        4 │ token u32: gateway-local request token, echoed in results        │
//        8 │ runNo i32: venue run, interned to a number by the shard's owner   │
//       12 │ sessionNo i32: venue session, interned likewise                   │
//       16 │ commandId      16 bytes                                           │
//       32 │ orderId        16 bytes                                           │
//       48 │ instrumentId   16 bytes                                           │
//       64 │ participantId  16 bytes                                           │
//       80 │ accountId      16 bytes                                           │
//       96 │ currency u32 (three ASCII letters)  │ 100 argument i32             │
//      104 │ priceNanos f64 (integer)                                          │
//      112 │ quantityUnits f64 (integer)                                       │
//      120 │ timestampUs f64: when the shard sequenced it (µs since the epoch)  │
//      128 └───────────────────────────────────────────────────────────────────┘

import { formatUuid, parseUuidInto } from './uuid.ts';

export const COMMAND_SLOT_BYTES = 128;
export const COMMAND_SLOT_WORDS = COMMAND_SLOT_BYTES >> 2;
export const COMMAND_SLOT_FLOATS = COMMAND_SLOT_BYTES >> 3;

// Int32 word and Float64 offsets inside a slot, as plain constants (an imported
// const folds to an immediate in optimized code; an object property does not).
export const COMMAND_HEADER_WORD = 0;
export const COMMAND_TOKEN_WORD = 1;
export const COMMAND_RUN_WORD = 2;
export const COMMAND_SESSION_WORD = 3;
export const COMMAND_ID_WORD = 4;
export const COMMAND_ORDER_ID_WORD = 8;
export const COMMAND_INSTRUMENT_ID_WORD = 12;
export const COMMAND_PARTICIPANT_ID_WORD = 16;
export const COMMAND_ACCOUNT_ID_WORD = 20;
export const COMMAND_CURRENCY_WORD = 24;
/** REJECT: the reject code; EXPIRE: the first order slot to scan (its session word: the new session floor). */
export const COMMAND_ARGUMENT_WORD = 25;
export const COMMAND_PRICE_NANOS_FLOAT = 13;
export const COMMAND_QUANTITY_UNITS_FLOAT = 14;
export const COMMAND_TIMESTAMP_US_FLOAT = 15;

export function packHeader(opcode: number, side: number, orderType: number, timeInForce: number): number {
  return opcode | (side << 8) | (orderType << 16) | (timeInForce << 24);
}

/** "USD" -> 0x555344. Returns -1 unless exactly three ASCII upper-case letters. */
export function packCurrency(code: string): number {
  if (code.length !== 3) return -1;
  let packed = 0;
  for (let i = 0; i < 3; i++) {
    const c = code.charCodeAt(i);
    if (c < 65 || c > 90) return -1;
    packed = (packed << 8) | c;
  }
  return packed;
}

export function unpackCurrency(packed: number): string {
  return String.fromCharCode((packed >>> 16) & 0xff, (packed >>> 8) & 0xff, packed & 0xff);
}

/** A command as plain values: for tests, tools and the slow paths. */
export interface CommandInput {
  opcode: number;
  side?: number;
  orderType?: number;
  timeInForce?: number;
  token?: number;
  runNo: number;
  sessionNo: number;
  commandId: string;
  orderId: string;
  instrumentId: string;
  participantId: string;
  accountId: string;
  currency?: string;
  priceNanos?: number;
  quantityUnits?: number;
  timestampUs: number;
  argument?: number;
}

/** Two views over the same memory: what every slot reader and writer takes. */
export interface SlotViews {
  words: Int32Array;
  floats: Float64Array;
}

export function slotViews(buffer: ArrayBufferLike): SlotViews {
  return { words: new Int32Array(buffer), floats: new Float64Array(buffer) };
}

function writeUuid(words: Int32Array, at: number, text: string, field: string): void {
  if (!parseUuidInto(text, words, at)) throw new TypeError(`${field} is not a UUID: ${text}`);
}

export function encodeCommand(command: CommandInput, views: SlotViews, byteOffset: number): void {
  const w = byteOffset >> 2;
  const f = byteOffset >> 3;
  const { words, floats } = views;
  words[w + COMMAND_HEADER_WORD] = packHeader(command.opcode, command.side ?? 0, command.orderType ?? 0, command.timeInForce ?? 0);
  words[w + COMMAND_TOKEN_WORD] = command.token ?? 0;
  words[w + COMMAND_RUN_WORD] = command.runNo;
  words[w + COMMAND_SESSION_WORD] = command.sessionNo;
  writeUuid(words, w + COMMAND_ID_WORD, command.commandId, 'commandId');
  writeUuid(words, w + COMMAND_ORDER_ID_WORD, command.orderId, 'orderId');
  writeUuid(words, w + COMMAND_INSTRUMENT_ID_WORD, command.instrumentId, 'instrumentId');
  writeUuid(words, w + COMMAND_PARTICIPANT_ID_WORD, command.participantId, 'participantId');
  writeUuid(words, w + COMMAND_ACCOUNT_ID_WORD, command.accountId, 'accountId');
  words[w + COMMAND_CURRENCY_WORD] = command.currency === undefined ? 0 : packCurrency(command.currency);
  words[w + COMMAND_ARGUMENT_WORD] = command.argument ?? 0;
  floats[f + COMMAND_PRICE_NANOS_FLOAT] = command.priceNanos ?? 0;
  floats[f + COMMAND_QUANTITY_UNITS_FLOAT] = command.quantityUnits ?? 0;
  floats[f + COMMAND_TIMESTAMP_US_FLOAT] = command.timestampUs;
}

export function decodeCommand(views: SlotViews, byteOffset: number): Required<CommandInput> {
  const w = byteOffset >> 2;
  const f = byteOffset >> 3;
  const { words, floats } = views;
  const header = words[w + COMMAND_HEADER_WORD]!;
  return {
    opcode: header & 0xff,
    side: (header >>> 8) & 0xff,
    orderType: (header >>> 16) & 0xff,
    timeInForce: (header >>> 24) & 0xff,
    token: words[w + COMMAND_TOKEN_WORD]!,
    runNo: words[w + COMMAND_RUN_WORD]!,
    sessionNo: words[w + COMMAND_SESSION_WORD]!,
    commandId: formatUuid(words, w + COMMAND_ID_WORD),
    orderId: formatUuid(words, w + COMMAND_ORDER_ID_WORD),
    instrumentId: formatUuid(words, w + COMMAND_INSTRUMENT_ID_WORD),
    participantId: formatUuid(words, w + COMMAND_PARTICIPANT_ID_WORD),
    accountId: formatUuid(words, w + COMMAND_ACCOUNT_ID_WORD),
    currency: unpackCurrency(words[w + COMMAND_CURRENCY_WORD]!),
    argument: words[w + COMMAND_ARGUMENT_WORD]!,
    priceNanos: floats[f + COMMAND_PRICE_NANOS_FLOAT]!,
    quantityUnits: floats[f + COMMAND_QUANTITY_UNITS_FLOAT]!,
    timestampUs: floats[f + COMMAND_TIMESTAMP_US_FLOAT]!,
  };
}
