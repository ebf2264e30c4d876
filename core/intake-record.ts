// Intake records: what a gateway tells the persistence worker about every command it
// takes, on the gateway -> persistence ring (fixed 832-byte slots). The worker writes
// them to runtime.command_log; acknowledgements wait for that commit.
//
//    0 flags i32: mode (bits 0-1), route (bits 2-3), has orderId (4), has instrument (5)
//    4 shard i32        8 principal index i32     12 clientId length i32
//   16 key length i32  20 clientOrderId length i32 (0: none)
//   24 receivedAtUs f64
//   32 commandId 16 B  48 scope digest 16 B       64 payload hash 32 B
//   96 orderId 16 B   112 instrumentId 16 B
//  128 body length i32 (bytes of the command's JSON text on the body ring, core/body-ring.ts; 0: none)
//  132 (free)         192 the 128-byte command slot sent to the shard
//  320 clientId (128 B, ASCII)   448 idempotency key (128 B, ASCII)
//  576 clientOrderId (256 B, UTF-8: 64 code points of up to 4 bytes each)
//
// Records stored before the clientOrderId had 256 bytes were 640 bytes long, with the
// same offsets and 64 bytes for it: intakeStride() tells the two apart in stored batches.

import { asciiInto, copyRange, putInt32 } from './byte-stores.ts';

export const INTAKE_RECORD_BYTES = 832;
/** The record's length before the clientOrderId had 256 bytes (stored batches may hold them). */
export const INTAKE_RECORD_BYTES_V1 = 640;
export const INTAKE_FLAGS_WORD = 0;
export const INTAKE_SHARD_WORD = 1;
export const INTAKE_PRINCIPAL_WORD = 2;
export const INTAKE_CLIENT_ID_LENGTH_WORD = 3;
export const INTAKE_KEY_LENGTH_WORD = 4;
export const INTAKE_CLIENT_ORDER_ID_LENGTH_WORD = 5;
export const INTAKE_BODY_LENGTH_WORD = 32;
export const INTAKE_RECEIVED_AT_FLOAT = 3;
export const INTAKE_COMMAND_ID_BYTE = 32;
export const INTAKE_SCOPE_BYTE = 48;
export const INTAKE_PAYLOAD_HASH_BYTE = 64;
export const INTAKE_ORDER_ID_BYTE = 96;
export const INTAKE_INSTRUMENT_ID_BYTE = 112;
export const INTAKE_SLOT_BYTE = 192;
export const INTAKE_CLIENT_ID_BYTE = 320;
export const INTAKE_KEY_BYTE = 448;
export const INTAKE_CLIENT_ORDER_ID_BYTE = 576;
export const INTAKE_TEXT_MAX = 128;
export const INTAKE_CLIENT_ORDER_ID_MAX = 256;

export const INTAKE_HAS_ORDER_ID = 1 << 4;
export const INTAKE_HAS_INSTRUMENT = 1 << 5;

export interface IntakeViews {
  words: Int32Array;
  floats: Float64Array;
  bytes: Uint8Array;
}

export interface IntakeEntry {
  processingMode: number;
  route: number;
  shard: number;
  principal: number;
  receivedAtUs: number;
  commandId: Uint8Array;
  scopeDigest: Uint8Array;
  payloadHash: Uint8Array;
  orderId: Uint8Array | null;
  instrumentId: Uint8Array | null;
  slot: Uint8Array;
  clientId: string;
  idempotencyKey: string;
  clientOrderId: string | null;
  /** Bytes of the command's JSON text, sent on the body ring (0: none). */
  bodyLength: number;
}

/** What writeIntake takes: the ids as the four words of core/uuid.ts, as the gateway holds them (stored big-endian, as the text reads). */
export interface IntakeInput extends Omit<IntakeEntry, 'commandId' | 'orderId' | 'instrumentId'> {
  commandId: Int32Array;
  orderId: Int32Array | null;
  instrumentId: Int32Array | null;
}

const encoder = new TextEncoder();
const decoder = new TextDecoder('utf-8', { ignoreBOM: true }); // a leading U+FEFF is text the client sent, not a mark to strip

/**
 * Writes an intake record at byteOffset; `slot` is the command slot as sent. Nothing is
 * allocated: the ids' bytes and ASCII text are stored one by one, since a view per id or
 * text costs most of the write.
 */
export function writeIntake(views: IntakeViews, byteOffset: number, entry: IntakeInput): void {
  const w = byteOffset >> 2;
  const { words, bytes } = views;
  bytes.fill(0, byteOffset, byteOffset + INTAKE_RECORD_BYTES);
  words[w + INTAKE_FLAGS_WORD] = entry.processingMode | (entry.route << 2) | (entry.orderId !== null ? INTAKE_HAS_ORDER_ID : 0) | (entry.instrumentId !== null ? INTAKE_HAS_INSTRUMENT : 0);
  words[w + INTAKE_SHARD_WORD] = entry.shard;
  words[w + INTAKE_PRINCIPAL_WORD] = entry.principal;
  words[w + INTAKE_BODY_LENGTH_WORD] = entry.bodyLength;
  views.floats[(byteOffset >> 3) + INTAKE_RECEIVED_AT_FLOAT] = entry.receivedAtUs;
  uuidBytesInto(bytes, byteOffset + INTAKE_COMMAND_ID_BYTE, entry.commandId);
  copyRange(bytes, byteOffset + INTAKE_SCOPE_BYTE, entry.scopeDigest, 0, 16);
  bytes.set(entry.payloadHash, byteOffset + INTAKE_PAYLOAD_HASH_BYTE);
  if (entry.orderId !== null) uuidBytesInto(bytes, byteOffset + INTAKE_ORDER_ID_BYTE, entry.orderId);
  if (entry.instrumentId !== null) uuidBytesInto(bytes, byteOffset + INTAKE_INSTRUMENT_ID_BYTE, entry.instrumentId);
  bytes.set(entry.slot, byteOffset + INTAKE_SLOT_BYTE);
  words[w + INTAKE_CLIENT_ID_LENGTH_WORD] = textInto(bytes, byteOffset + INTAKE_CLIENT_ID_BYTE, INTAKE_TEXT_MAX, entry.clientId);
  words[w + INTAKE_KEY_LENGTH_WORD] = textInto(bytes, byteOffset + INTAKE_KEY_BYTE, INTAKE_TEXT_MAX, entry.idempotencyKey);
  words[w + INTAKE_CLIENT_ORDER_ID_LENGTH_WORD] = entry.clientOrderId === null ? 0 : textInto(bytes, byteOffset + INTAKE_CLIENT_ORDER_ID_BYTE, INTAKE_CLIENT_ORDER_ID_MAX, entry.clientOrderId);
}

/** A UUID's four words as its 16 bytes, most significant first. */
function uuidBytesInto(bytes: Uint8Array, at: number, words: Int32Array): void {
  for (let k = 0; k < 4; k++) putInt32(bytes, at + k * 4, words[k]!);
}

/**
 * UTF-8 of `text` into at most `max` bytes at `at`; returns the bytes written. ASCII (every
 * header value) is stored as is. The edge's bounds make every accepted text fit: one that
 * does not is a bug, and is thrown rather than stored cut.
 */
function textInto(bytes: Uint8Array, at: number, max: number, text: string): number {
  const written = text.length <= max ? asciiInto(bytes, at, text) : -1;
  if (written >= 0) return written;
  const result = encoder.encodeInto(text, bytes.subarray(at, at + max));
  if (result.read !== text.length) throw new RangeError(`an intake text of ${text.length} UTF-16 units does not fit its ${max} bytes`);
  return result.written;
}

/** The length of each record in a stored intake batch of `byteLength` bytes holding `recordCount` records. */
export function intakeStride(byteLength: number, recordCount: number): number {
  const stride = byteLength / recordCount;
  if (stride !== INTAKE_RECORD_BYTES && stride !== INTAKE_RECORD_BYTES_V1) throw new Error(`an intake batch of ${recordCount} records has ${byteLength} bytes: not whole records`);
  return stride;
}

/** Reads an intake record (copies: the ring slot is released right after). */
export function readIntake(views: IntakeViews, byteOffset: number): IntakeEntry {
  const w = byteOffset >> 2;
  const { words, bytes } = views;
  const flags = words[w + INTAKE_FLAGS_WORD]!;
  const copy = (at: number, length: number) => bytes.slice(byteOffset + at, byteOffset + at + length);
  const text = (at: number, lengthWord: number) => decoder.decode(bytes.subarray(byteOffset + at, byteOffset + at + words[w + lengthWord]!));
  const clientOrderIdLength = words[w + INTAKE_CLIENT_ORDER_ID_LENGTH_WORD]!;
  return {
    processingMode: flags & 3,
    route: (flags >> 2) & 3,
    shard: words[w + INTAKE_SHARD_WORD]!,
    principal: words[w + INTAKE_PRINCIPAL_WORD]!,
    receivedAtUs: views.floats[(byteOffset >> 3) + INTAKE_RECEIVED_AT_FLOAT]!,
    commandId: copy(INTAKE_COMMAND_ID_BYTE, 16),
    scopeDigest: copy(INTAKE_SCOPE_BYTE, 16),
    payloadHash: copy(INTAKE_PAYLOAD_HASH_BYTE, 32),
    orderId: (flags & INTAKE_HAS_ORDER_ID) !== 0 ? copy(INTAKE_ORDER_ID_BYTE, 16) : null,
    instrumentId: (flags & INTAKE_HAS_INSTRUMENT) !== 0 ? copy(INTAKE_INSTRUMENT_ID_BYTE, 16) : null,
    slot: copy(INTAKE_SLOT_BYTE, 128),
    clientId: text(INTAKE_CLIENT_ID_BYTE, INTAKE_CLIENT_ID_LENGTH_WORD),
    idempotencyKey: text(INTAKE_KEY_BYTE, INTAKE_KEY_LENGTH_WORD),
    clientOrderId: clientOrderIdLength === 0 ? null : text(INTAKE_CLIENT_ORDER_ID_BYTE, INTAKE_CLIENT_ORDER_ID_LENGTH_WORD),
    bodyLength: words[w + INTAKE_BODY_LENGTH_WORD]!,
  };
}

/** Bytes of a record before its texts: the header and the command slot. */
const INTAKE_HEAD_BYTES = INTAKE_CLIENT_ID_BYTE;
/** runtime.intake_batches.layout of a packed batch (null: whole records, as on the ring). */
export const INTAKE_LAYOUT_PACKED = 1;

const packedLength = (words: Int32Array, w: number) =>
  (INTAKE_HEAD_BYTES + words[w + INTAKE_CLIENT_ID_LENGTH_WORD]! + words[w + INTAKE_KEY_LENGTH_WORD]! + words[w + INTAKE_CLIENT_ORDER_ID_LENGTH_WORD]! + 7) & ~7;

/**
 * The bytes `count` whole records (from `bytes`' start) take packed: each its header and
 * slot, then its three texts at their lengths, padded to 8 bytes. Most of a record is
 * room for texts at their maximum (512 of its 832 bytes); storage keeps only the texts.
 */
export function packedIntakeBytes(words: Int32Array, count: number): number {
  let total = 0;
  for (let k = 0; k < count; k++) total += packedLength(words, (k * INTAKE_RECORD_BYTES) >> 2);
  return total;
}

/** Packs `count` whole records of `bytes` into `into` (at least packedIntakeBytes long, zeroed); returns the bytes written. */
export function packIntake(bytes: Uint8Array, words: Int32Array, count: number, into: Uint8Array): number {
  let to = 0;
  for (let k = 0; k < count; k++) {
    const from = k * INTAKE_RECORD_BYTES;
    const w = from >> 2;
    into.set(bytes.subarray(from, from + INTAKE_HEAD_BYTES), to);
    let at = to + INTAKE_HEAD_BYTES;
    const texts: [number, number][] = [
      [INTAKE_CLIENT_ID_BYTE, words[w + INTAKE_CLIENT_ID_LENGTH_WORD]!],
      [INTAKE_KEY_BYTE, words[w + INTAKE_KEY_LENGTH_WORD]!],
      [INTAKE_CLIENT_ORDER_ID_BYTE, words[w + INTAKE_CLIENT_ORDER_ID_LENGTH_WORD]!],
    ];
    for (const [offset, length] of texts) {
      into.set(bytes.subarray(from + offset, from + offset + length), at);
      at += length;
    }
    to += packedLength(words, w);
  }
  return to;
}

/**
 * A stored batch's records as whole records (a new buffer for a packed batch, the payload
 * itself otherwise) and their stride; throws on a payload that is not `count` records of
 * its layout.
 */
export function storedIntake(payload: Uint8Array, count: number, layout: number | null): { bytes: Uint8Array; stride: number } {
  if (layout === null) return { bytes: payload, stride: intakeStride(payload.byteLength, count) };
  if (layout !== INTAKE_LAYOUT_PACKED) throw new Error(`an intake batch of an unknown layout ${layout}`);
  const bytes = new Uint8Array(count * INTAKE_RECORD_BYTES);
  const words = new Int32Array(bytes.buffer);
  const view = new DataView(payload.buffer, payload.byteOffset, payload.byteLength);
  let from = 0;
  for (let k = 0; k < count; k++) {
    const to = k * INTAKE_RECORD_BYTES;
    if (from + INTAKE_HEAD_BYTES > payload.byteLength) throw new Error(`a packed intake batch of ${count} records ends in record ${k}`);
    bytes.set(payload.subarray(from, from + INTAKE_HEAD_BYTES), to);
    const w = to >> 2;
    const lengths = [INTAKE_CLIENT_ID_LENGTH_WORD, INTAKE_KEY_LENGTH_WORD, INTAKE_CLIENT_ORDER_ID_LENGTH_WORD].map((word) => view.getInt32(from + word * 4, true));
    const maxima = [INTAKE_TEXT_MAX, INTAKE_TEXT_MAX, INTAKE_CLIENT_ORDER_ID_MAX];
    let at = from + INTAKE_HEAD_BYTES;
    [INTAKE_CLIENT_ID_BYTE, INTAKE_KEY_BYTE, INTAKE_CLIENT_ORDER_ID_BYTE].forEach((offset, n) => {
      const length = lengths[n]!;
      if (length < 0 || length > maxima[n]! || at + length > payload.byteLength) throw new Error(`a packed intake batch's record ${k} has a text of ${length} bytes past its bounds`);
      bytes.set(payload.subarray(at, at + length), to + offset);
      at += length;
    });
    from += packedLength(words, w);
  }
  if (from !== payload.byteLength) throw new Error(`a packed intake batch of ${count} records has ${payload.byteLength} bytes, its records ${from}`);
  return { bytes, stride: INTAKE_RECORD_BYTES };
}
