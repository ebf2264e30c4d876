// The command records of one gateway thread, in shared memory so that every gateway
// can answer a status read or an idempotent replay for a command another one took.
// One writer (the owning gateway), many readers (all gateways).
//
// SharedArrayBuffer layout:
//   header (64 bytes): [0] records allocated (u32 counter) [1] arena head (8-byte
//   units, u32 wrapping) — then `recordCount` records of 256 bytes — then the arena.
// Record (Int32 words): a seqlock version word first (odd while the writer changes
// the record); readers copy the record and retry if the version moved.
//   0 version          8 rejectCode           24..31 payloadHash (32 bytes)
//   1 status           9 principal index      32 flags (1: orderId known)
//   2 internalStatus  10 command ring index   33/34 text length / offset
//   3 processingMode  11 deliveredCount       35/36 response length / offset
//   4 route           12..15 commandId        37/38 result length / offset
//   5 responseStatus  16..19 orderId          F20 streamSequence  F21 batch
//   6 shard (-1 none) 20..23 instrumentId     F22 receivedAtUs    F23 completedAtUs
//   7 resultStatus                            F24 intake count (this gateway's records
//                                                 up to and including it; 0: not captured)
// Text (clientId + NUL + idempotencyKey), the response body and the result envelope
// live in the arena, a byte ring: a blob is valid while fewer than `arena` bytes have
// been written after its start, which a reader checks before and after copying it.
// Records are reused round-robin: a reader verifies the commandId it expects.

import { formatUuid, parseUuidInto } from '../core/uuid.ts';

export const RECORD_BYTES = 256;
const RECORD_WORDS = RECORD_BYTES >> 2;
const HEADER_BYTES = 64;
const UNIT = 8;

export const STATUS = { NONE: 0, ACCEPTED: 1, IN_FLIGHT: 2, COMPLETED: 3, REJECTED: 4, FAILED: 5 } as const;
export const STATUS_NAMES = ['', 'ACCEPTED', 'IN_FLIGHT', 'COMPLETED', 'REJECTED', 'FAILED'] as const;
export const INTERNAL = { RECEIVED: 1, PROCESSING: 2, COMPLETED: 3, FAILED: 4 } as const;
export const INTERNAL_NAMES = ['', 'RECEIVED', 'PROCESSING', 'COMPLETED', 'FAILED'] as const;
export const RESULT = { NONE: 0, ACCEPTED: 1, REJECTED: 2 } as const;

const W = {
  VERSION: 0,
  STATUS: 1,
  INTERNAL: 2,
  MODE: 3,
  ROUTE: 4,
  RESPONSE_STATUS: 5,
  SHARD: 6,
  RESULT: 7,
  REJECT_CODE: 8,
  PRINCIPAL: 9,
  RING_INDEX: 10,
  DELIVERED: 11,
  COMMAND_ID: 12,
  ORDER_ID: 16,
  INSTRUMENT_ID: 20,
  PAYLOAD_HASH: 24,
  FLAGS: 32,
  TEXT_LENGTH: 33,
  TEXT_OFFSET: 34,
  RESPONSE_LENGTH: 35,
  RESPONSE_OFFSET: 36,
  RESULT_LENGTH: 37,
  RESULT_OFFSET: 38,
} as const;
const F = { STREAM_SEQUENCE: 20, BATCH: 21, RECEIVED_AT: 22, COMPLETED_AT: 23, INTAKE: 24 } as const;

/**
 * Buffer size for a store. The arena is rounded down to a power of two of 8-byte
 * units, so positions stay consistent when the u32 head wraps.
 */
export function commandStoreBytes(recordCount: number, arenaBytes: number): number {
  let units = 1;
  while (units * 2 * UNIT <= arenaBytes) units *= 2;
  return HEADER_BYTES + recordCount * RECORD_BYTES + units * UNIT;
}

/** A consistent copy of one record (what status reads and replays work from). */
export interface CommandSnapshot {
  status: number;
  internalStatus: number;
  processingMode: number;
  route: number;
  responseStatus: number;
  shard: number;
  resultStatus: number;
  rejectCode: number;
  principal: number;
  ringIndex: number;
  deliveredCount: number;
  commandId: string;
  orderId: string | null;
  instrumentId: string | null;
  payloadHash: string;
  clientId: string;
  idempotencyKey: string;
  response: Uint8Array | null;
  result: Uint8Array | null;
  streamSequence: number;
  batch: number;
  receivedAtUs: number;
  completedAtUs: number;
  /** Its intake record's place among the owning gateway's (durable once that many are committed); 0: not captured. */
  intakeCount: number;
}

/** What the owner writes when it takes a command (the gateway's intake facts; the ids come as text beside it). */
export interface NewCommand {
  mode: number;
  route: number;
  principal: number;
  payloadHash: Uint8Array;
  clientId: string;
  idempotencyKey: string;
  receivedAtUs: number;
}

const decoder = new TextDecoder('utf-8', { ignoreBOM: true }); // a leading U+FEFF is text the client sent, not a mark to strip

export class CommandStore {
  readonly recordCount: number;
  private readonly words: Int32Array;
  private readonly floats: Float64Array;
  private readonly bytes: Uint8Array;
  /** The same memory as a Buffer: its write() encodes UTF-8 in place and allocates nothing. */
  private readonly text: Buffer;
  /** The byte length of the last append (a second return value without an array per call). */
  private appended = 0;
  /** The arena head reserve() chose, for commit(). */
  private head = 0;
  private readonly arenaStart: number;
  private readonly arenaUnits: number;

  constructor(buffer: SharedArrayBuffer, recordCount: number) {
    this.recordCount = recordCount;
    this.words = new Int32Array(buffer);
    this.floats = new Float64Array(buffer);
    this.bytes = new Uint8Array(buffer);
    this.text = Buffer.from(buffer);
    this.arenaStart = HEADER_BYTES + recordCount * RECORD_BYTES;
    this.arenaUnits = (buffer.byteLength - this.arenaStart) / UNIT;
    if ((this.arenaUnits & (this.arenaUnits - 1)) !== 0 || (recordCount & (recordCount - 1)) !== 0) {
      throw new RangeError('command store: record count and arena units must be powers of two (use commandStoreBytes)');
    }
  }

  // ---- owner side ----

  /** Takes the next record (round-robin) and writes a new command into it. */
  create(command: NewCommand, commandId: string, orderId: string | null, instrumentId: string | null): number {
    const index = Atomics.add(this.words, 0, 1) & (this.recordCount - 1);
    const textOffset = this.appendPair(command.clientId, command.idempotencyKey);
    const textLength = this.appended;
    const r = this.begin(index);
    {
      const words = this.words;
      words.fill(0, r + 1, r + RECORD_WORDS);
      words[r + W.STATUS] = STATUS.ACCEPTED;
      words[r + W.INTERNAL] = INTERNAL.RECEIVED;
      words[r + W.MODE] = command.mode;
      words[r + W.ROUTE] = command.route;
      words[r + W.SHARD] = -1;
      words[r + W.PRINCIPAL] = command.principal;
      parseUuidInto(commandId, words, r + W.COMMAND_ID);
      if (orderId !== null) {
        parseUuidInto(orderId, words, r + W.ORDER_ID);
        words[r + W.FLAGS] = words[r + W.FLAGS]! | 1;
      }
      if (instrumentId !== null) {
        parseUuidInto(instrumentId, words, r + W.INSTRUMENT_ID);
        words[r + W.FLAGS] = words[r + W.FLAGS]! | 2;
      }
      this.bytes.set(command.payloadHash, (r + W.PAYLOAD_HASH) * 4);
      words[r + W.TEXT_LENGTH] = textLength;
      words[r + W.TEXT_OFFSET] = textOffset;
      this.floats[(r >> 1) + F.RECEIVED_AT] = command.receivedAtUs;
    }
    this.end(r);
    return index;
  }

  /** Marks a record void: a command that was not taken after all (claim lost, ring full). */
  void(index: number): void {
    const r = this.begin(index);
    this.words[r + W.STATUS] = STATUS.NONE;
    this.end(r);
  }

  /**
   * The command is on its shard's ring and its intake record written (the `intakeCount`-th
   * of this gateway). `orderId`, `instrumentId`: the four words of the order and instrument
   * the command names (a cancel by clientOrderId learns them here), or null.
   */
  setQueued(index: number, shard: number, ringIndex: number, intakeCount: number, orderId: Int32Array | null, instrumentId: Int32Array | null): void {
    const r = this.begin(index);
    {
      this.words[r + W.SHARD] = shard;
      this.words[r + W.RING_INDEX] = ringIndex;
      this.floats[(r >> 1) + F.INTAKE] = intakeCount;
      if (orderId !== null) {
        this.words.set(orderId, r + W.ORDER_ID);
        this.words[r + W.FLAGS] = this.words[r + W.FLAGS]! | 1;
      }
      if (instrumentId !== null) {
        this.words.set(instrumentId, r + W.INSTRUMENT_ID);
        this.words[r + W.FLAGS] = this.words[r + W.FLAGS]! | 2;
      }
    }
    this.end(r);
  }

  /** Records the engine's outcome and the envelope rendered from it. */
  setResult(index: number, result: { accepted: boolean; rejectCode: number; streamSequence: number; batch: number; completedAtUs: number; envelope: string }): void {
    const offset = this.append(result.envelope);
    const length = this.appended;
    const r = this.begin(index);
    {
      const words = this.words;
      words[r + W.STATUS] = result.accepted ? STATUS.COMPLETED : STATUS.REJECTED;
      words[r + W.INTERNAL] = INTERNAL.COMPLETED;
      words[r + W.RESULT] = result.accepted ? RESULT.ACCEPTED : RESULT.REJECTED;
      words[r + W.REJECT_CODE] = result.rejectCode;
      words[r + W.DELIVERED] = 1;
      words[r + W.RESULT_LENGTH] = length;
      words[r + W.RESULT_OFFSET] = offset;
      this.floats[(r >> 1) + F.STREAM_SEQUENCE] = result.streamSequence;
      this.floats[(r >> 1) + F.BATCH] = result.batch;
      this.floats[(r >> 1) + F.COMPLETED_AT] = result.completedAtUs;
    }
    this.end(r);
  }

  /** Records that the answer given is the envelope itself (sync-result): one copy of the bytes. */
  setResponseToResult(index: number, status: number): void {
    const r = this.begin(index);
    this.words[r + W.RESPONSE_STATUS] = status;
    this.words[r + W.RESPONSE_LENGTH] = this.words[r + W.RESULT_LENGTH]!;
    this.words[r + W.RESPONSE_OFFSET] = this.words[r + W.RESULT_OFFSET]!;
    this.end(r);
  }

  /** Records the HTTP answer given (the bytes an idempotent replay repeats). */
  setResponse(index: number, status: number, body: string): void {
    const offset = this.append(body);
    const r = this.begin(index);
    this.words[r + W.RESPONSE_STATUS] = status;
    this.words[r + W.RESPONSE_LENGTH] = this.appended;
    this.words[r + W.RESPONSE_OFFSET] = offset;
    this.end(r);
  }

  // ---- reader side (any thread) ----

  /** A consistent copy of the record, or null if it is void or now holds another command. */
  read(index: number, expectedCommandId?: Int32Array): CommandSnapshot | null {
    for (let attempt = 0; attempt < 1000; attempt++) {
      const r = this.base(index);
      const before = Atomics.load(this.words, r + W.VERSION);
      if ((before & 1) === 1) continue;
      const snapshot = this.copy(r, expectedCommandId);
      if (Atomics.load(this.words, r + W.VERSION) === before) return snapshot;
    }
    throw new Error('command record kept changing while read');
  }

  private copy(r: number, expected?: Int32Array): CommandSnapshot | null {
    const words = this.words;
    if (words[r + W.STATUS] === STATUS.NONE) return null;
    if (expected !== undefined) {
      for (let k = 0; k < 4; k++) if (words[r + W.COMMAND_ID + k] !== expected[k]) return null;
    }
    const text = this.blob(words[r + W.TEXT_OFFSET]!, words[r + W.TEXT_LENGTH]!);
    const [clientId, idempotencyKey] = text === null ? ['', ''] : (decoder.decode(text).split('\u0000') as [string, string]);
    const flags = words[r + W.FLAGS]!;
    return {
      status: words[r + W.STATUS]!,
      internalStatus: words[r + W.INTERNAL]!,
      processingMode: words[r + W.MODE]!,
      route: words[r + W.ROUTE]!,
      responseStatus: words[r + W.RESPONSE_STATUS]!,
      shard: words[r + W.SHARD]!,
      resultStatus: words[r + W.RESULT]!,
      rejectCode: words[r + W.REJECT_CODE]!,
      principal: words[r + W.PRINCIPAL]!,
      ringIndex: words[r + W.RING_INDEX]! >>> 0,
      deliveredCount: words[r + W.DELIVERED]!,
      commandId: formatUuid(words, r + W.COMMAND_ID),
      orderId: (flags & 1) !== 0 ? formatUuid(words, r + W.ORDER_ID) : null,
      instrumentId: (flags & 2) !== 0 ? formatUuid(words, r + W.INSTRUMENT_ID) : null,
      payloadHash: Buffer.from(this.bytes.subarray((r + W.PAYLOAD_HASH) * 4, (r + W.PAYLOAD_HASH + 8) * 4)).toString('hex'),
      clientId,
      idempotencyKey,
      response: words[r + W.RESPONSE_STATUS] === 0 ? null : this.blob(words[r + W.RESPONSE_OFFSET]!, words[r + W.RESPONSE_LENGTH]!),
      result: words[r + W.RESULT] === RESULT.NONE ? null : this.blob(words[r + W.RESULT_OFFSET]!, words[r + W.RESULT_LENGTH]!),
      streamSequence: this.floats[(r >> 1) + F.STREAM_SEQUENCE]!,
      batch: this.floats[(r >> 1) + F.BATCH]!,
      receivedAtUs: this.floats[(r >> 1) + F.RECEIVED_AT]!,
      completedAtUs: this.floats[(r >> 1) + F.COMPLETED_AT]!,
      intakeCount: this.floats[(r >> 1) + F.INTAKE]!,
    };
  }

  private base(index: number): number {
    return (HEADER_BYTES + index * RECORD_BYTES) >> 2;
  }

  /** Opens a change of the record (odd version: readers retry) and returns its base; end() closes it. No closure per write. */
  private begin(index: number): number {
    const r = this.base(index);
    Atomics.add(this.words, r + W.VERSION, 1);
    return r;
  }

  private end(r: number): void {
    Atomics.add(this.words, r + W.VERSION, 1);
  }

  /**
   * Appends text (UTF-8, encoded straight into the arena) and returns its offset in
   * units; its length in bytes is left in `appended`. A blob wraps to the start rather
   * than split. When the text's largest UTF-8 size fits before the arena's end it is
   * encoded at once and measured by what was written (no Buffer.byteLength scan first).
   */
  private append(text: string): number {
    const start = this.reserve(text.length * 3, text, '');
    this.appended = this.text.write(text, start, text.length * 3);
    return this.commit();
  }

  /** Appends `first`, NUL, `second` as one blob (the record's clientId and Idempotency-Key). */
  private appendPair(first: string, second: string): number {
    const most = (first.length + second.length) * 3 + 1;
    const start = this.reserve(most, first, second);
    let length = this.text.write(first, start, most);
    this.bytes[start + length++] = 0;
    length += this.text.write(second, start + length, most - length);
    this.appended = length;
    return this.commit();
  }

  /** Where the next blob of at most `most` bytes starts (skipping to the arena's start if it would not fit before the end). */
  private reserve(most: number, first: string, second: string): number {
    let head = Atomics.load(this.words, 1) >>> 0;
    let position = head & (this.arenaUnits - 1);
    if (position * UNIT + most > this.arenaUnits * UNIT) {
      const length = Buffer.byteLength(first, 'utf8') + (second === '' ? 0 : 1 + Buffer.byteLength(second, 'utf8'));
      const units = Math.ceil(length / UNIT) || 1;
      if (units > this.arenaUnits) throw new Error(`blob of ${length} bytes exceeds the arena`);
      if (position + units > this.arenaUnits) head = (head + (this.arenaUnits - position)) >>> 0; // skip to the start
      position = head & (this.arenaUnits - 1);
    }
    this.head = head;
    return this.arenaStart + position * UNIT;
  }

  /** Moves the arena's head past the blob just written; returns the blob's offset. */
  private commit(): number {
    const head = this.head;
    Atomics.store(this.words, 1, (head + (Math.ceil(this.appended / UNIT) || 1)) | 0);
    return head;
  }

  /** The blob's bytes if not yet overwritten, else null. */
  private blob(offset: number, length: number): Uint8Array | null {
    const units = Math.ceil(length / UNIT) || 1;
    const start = offset >>> 0;
    const intact = () => (Atomics.load(this.words, 1) - start) >>> 0 <= this.arenaUnits;
    if (!intact()) return null;
    const from = this.arenaStart + (start & (this.arenaUnits - 1)) * UNIT;
    const copy = this.bytes.slice(from, from + length);
    if (!intact() || units > this.arenaUnits) return null;
    return copy;
  }
}
