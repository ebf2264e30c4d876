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
//       96 │ currency u32 (three ASCII letters)  │ 100 reserved i32            │
//      104 │ priceNanos f64 (integer)                                          │
//      112 │ quantityUnits f64 (integer)                                       │
//      120 │ timestampUs f64 (integer microseconds since the epoch)            │
//      128 └───────────────────────────────────────────────────────────────────┘

import { formatUuid, parseUuidInto } from './uuid.ts';

export const COMMAND_SLOT_BYTES = 128;
export const COMMAND_SLOT_WORDS = COMMAND_SLOT_BYTES >> 2;
export const COMMAND_SLOT_FLOATS = COMMAND_SLOT_BYTES >> 3;

/** Int32 word offsets inside a slot. */
export const CommandWord = {
  HEADER: 0,
  TOKEN: 1,
  RUN: 2,
  SESSION: 3,
  COMMAND_ID: 4,
  ORDER_ID: 8,
  INSTRUMENT_ID: 12,
  PARTICIPANT_ID: 16,
  ACCOUNT_ID: 20,
  CURRENCY: 24,
  RESERVED: 25,
} as const;

/** Float64 offsets inside a slot. */
export const CommandFloat = { PRICE_NANOS: 13, QUANTITY_UNITS: 14, TIMESTAMP_US: 15 } as const;

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
  words[w + CommandWord.HEADER] = packHeader(
    command.opcode,
    command.side ?? 0,
    command.orderType ?? 0,
    command.timeInForce ?? 0,
  );
  words[w + CommandWord.TOKEN] = command.token ?? 0;
  words[w + CommandWord.RUN] = command.runNo;
  words[w + CommandWord.SESSION] = command.sessionNo;
  writeUuid(words, w + CommandWord.COMMAND_ID, command.commandId, 'commandId');
  writeUuid(words, w + CommandWord.ORDER_ID, command.orderId, 'orderId');
  writeUuid(words, w + CommandWord.INSTRUMENT_ID, command.instrumentId, 'instrumentId');
  writeUuid(words, w + CommandWord.PARTICIPANT_ID, command.participantId, 'participantId');
  writeUuid(words, w + CommandWord.ACCOUNT_ID, command.accountId, 'accountId');
  words[w + CommandWord.CURRENCY] = command.currency === undefined ? 0 : packCurrency(command.currency);
  words[w + CommandWord.RESERVED] = 0;
  floats[f + CommandFloat.PRICE_NANOS] = command.priceNanos ?? 0;
  floats[f + CommandFloat.QUANTITY_UNITS] = command.quantityUnits ?? 0;
  floats[f + CommandFloat.TIMESTAMP_US] = command.timestampUs;
}

export function decodeCommand(views: SlotViews, byteOffset: number): Required<CommandInput> {
  const w = byteOffset >> 2;
  const f = byteOffset >> 3;
  const { words, floats } = views;
  const header = words[w + CommandWord.HEADER]!;
  return {
    opcode: header & 0xff,
    side: (header >>> 8) & 0xff,
    orderType: (header >>> 16) & 0xff,
    timeInForce: (header >>> 24) & 0xff,
    token: words[w + CommandWord.TOKEN]!,
    runNo: words[w + CommandWord.RUN]!,
    sessionNo: words[w + CommandWord.SESSION]!,
    commandId: formatUuid(words, w + CommandWord.COMMAND_ID),
    orderId: formatUuid(words, w + CommandWord.ORDER_ID),
    instrumentId: formatUuid(words, w + CommandWord.INSTRUMENT_ID),
    participantId: formatUuid(words, w + CommandWord.PARTICIPANT_ID),
    accountId: formatUuid(words, w + CommandWord.ACCOUNT_ID),
    currency: unpackCurrency(words[w + CommandWord.CURRENCY]!),
    priceNanos: floats[f + CommandFloat.PRICE_NANOS]!,
    quantityUnits: floats[f + CommandFloat.QUANTITY_UNITS]!,
    timestampUs: floats[f + CommandFloat.TIMESTAMP_US]!,
  };
}
