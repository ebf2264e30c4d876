// The market-data stream's broadcast ring: one producer (the persistence thread, after a
// commit is durable and applied to its books and tape), any number of readers (each
// gateway thread, with its own cursor). The producer never waits for a reader: a reader
// that fell more than the ring behind sees it by the positions (overrun), skips to the
// head, and its subscribers see the jump in their `seq`.
//
//   header (512 B): i64 [0] head: bytes ever written (producer only, Atomics.store after
//                   the record's bytes), int32 [2] capacity (bytes, a power of two),
//                   int32 [16 + g] stream subscribers of gateway g (each gateway its own)
//   records (8-byte aligned, never split at the end: a pad record fills the rest):
//     int32 [0] length (bytes) [1] kind [2..5] instrument id, f64 at byte 24 seq
//     TRADE 88 B: int32 [8..11] trade id, f64 at 48 price nanos, 56 quantity units,
//                 64 occurred at (µs), 72 tape sequence, int32 [20] currency
//     TOP   72 B: int32 [8] currency [9] flags (1 bid, 2 ask), f64 at 40 bid price,
//                 i64 at 48 bid quantity, f64 at 56 ask price, i64 at 64 ask quantity
//     DEPTH 40 + 24 B a change: int32 [8] currency [9] changes, then per change f64
//                 price, i64 quantity (0: the level left the best levels), int32 order
//                 count, int32 side (0 bid, 1 ask)
//
// A reader copies a record, then loads the head again: the record is intact if no write
// in progress (at most WRITE_BYTES_MAX past the head) reached its bytes.

import { DEPTH_LEVELS_MAX } from './market-view.ts';

export const STREAM_HEADER_BYTES = 512;
export const STREAM_GATEWAYS_MAX = 96;
export const KIND_PAD = 0;
export const KIND_TRADE = 1;
export const KIND_TOP = 2;
export const KIND_DEPTH = 3;
/** Changes one depth record may hold: every best level of both sides replaced. */
export const DEPTH_CHANGES_MAX = 4 * DEPTH_LEVELS_MAX;
const DEPTH_HEAD_BYTES = 40;
const CHANGE_BYTES = 24;
export const RECORD_BYTES_MAX = DEPTH_HEAD_BYTES + DEPTH_CHANGES_MAX * CHANGE_BYTES;
/** One append: a pad and a record. */
const WRITE_BYTES_MAX = 2 * RECORD_BYTES_MAX;
const TRADE_BYTES = 88;
const TOP_BYTES = 72;
const SUBSCRIBERS_WORD = 16;

export function createStreamRing(capacityBytes: number): SharedArrayBuffer {
  if (capacityBytes < 8 * WRITE_BYTES_MAX || (capacityBytes & (capacityBytes - 1)) !== 0) {
    throw new RangeError(`the market-data stream ring must be a power of two of at least ${8 * WRITE_BYTES_MAX} bytes, got ${capacityBytes}`);
  }
  const buffer = new SharedArrayBuffer(STREAM_HEADER_BYTES + capacityBytes);
  new Int32Array(buffer)[2] = capacityBytes;
  return buffer;
}

class StreamRing {
  protected readonly header: BigInt64Array;
  protected readonly words: Int32Array;
  protected readonly headerWords: Int32Array;
  protected readonly floats: Float64Array;
  protected readonly longs: BigInt64Array;
  protected readonly bytes: Uint8Array;
  readonly capacity: number;

  constructor(buffer: SharedArrayBuffer) {
    this.header = new BigInt64Array(buffer, 0, STREAM_HEADER_BYTES >> 3);
    this.headerWords = new Int32Array(buffer, 0, STREAM_HEADER_BYTES >> 2);
    this.capacity = this.headerWords[2]!;
    this.words = new Int32Array(buffer, STREAM_HEADER_BYTES);
    this.floats = new Float64Array(buffer, STREAM_HEADER_BYTES);
    this.longs = new BigInt64Array(buffer, STREAM_HEADER_BYTES);
    this.bytes = new Uint8Array(buffer, STREAM_HEADER_BYTES);
  }

  head(): number {
    return Number(Atomics.load(this.header, 0));
  }

  /** Stream subscribers of every gateway together (the `venue_market_data_subscribers` gauge). */
  subscribers(): number {
    let total = 0;
    for (let g = 0; g < STREAM_GATEWAYS_MAX; g++) total += Atomics.load(this.headerWords, SUBSCRIBERS_WORD + g);
    return total;
  }

  setSubscribers(gateway: number, count: number): void {
    Atomics.store(this.headerWords, SUBSCRIBERS_WORD + gateway, count);
  }
}

/** The producer: stages up to two records, says where they will end, then appends them. */
export class StreamWriter extends StreamRing {
  private readonly scratch = new ArrayBuffer(2 * RECORD_BYTES_MAX);
  private readonly sw = new Int32Array(this.scratch);
  private readonly sf = new Float64Array(this.scratch);
  private readonly sl = new BigInt64Array(this.scratch);
  private readonly sb = new Uint8Array(this.scratch);
  private readonly staged: number[] = [];
  private stagedBytes = 0;
  private position: number;

  constructor(buffer: SharedArrayBuffer) {
    super(buffer);
    this.position = this.head();
  }

  private begin(kind: number, length: number, instrument: Int32Array, instrumentAt: number, seq: number): number {
    if (this.stagedBytes + length > this.scratch.byteLength) throw new Error('more than two market-data records staged');
    const at = this.stagedBytes;
    const w = at >> 2;
    this.sw[w] = length;
    this.sw[w + 1] = kind;
    for (let k = 0; k < 4; k++) this.sw[w + 2 + k] = instrument[instrumentAt + k]!;
    this.sf[(at + 24) >> 3] = seq;
    this.staged.push(length);
    this.stagedBytes += length;
    return at;
  }

  stageTrade(
    instrument: Int32Array,
    instrumentAt: number,
    seq: number,
    tradeId: Int32Array,
    tradeIdAt: number,
    priceNanos: number,
    quantity: number,
    occurredAtUs: number,
    tapeSequence: number,
    currency: number,
  ): void {
    const at = this.begin(KIND_TRADE, TRADE_BYTES, instrument, instrumentAt, seq);
    for (let k = 0; k < 4; k++) this.sw[(at >> 2) + 8 + k] = tradeId[tradeIdAt + k]!;
    const f = at >> 3;
    this.sf[f + 6] = priceNanos;
    this.sf[f + 7] = quantity;
    this.sf[f + 8] = occurredAtUs;
    this.sf[f + 9] = tapeSequence;
    this.sw[(at >> 2) + 20] = currency;
  }

  stageTop(instrument: Int32Array, seq: number, currency: number, bid: { priceNanos: number; quantity: bigint } | undefined, ask: { priceNanos: number; quantity: bigint } | undefined): void {
    const at = this.begin(KIND_TOP, TOP_BYTES, instrument, 0, seq);
    const w = at >> 2;
    const f = at >> 3;
    this.sw[w + 8] = currency;
    this.sw[w + 9] = (bid === undefined ? 0 : 1) | (ask === undefined ? 0 : 2);
    this.sf[f + 5] = bid?.priceNanos ?? 0;
    this.sl[f + 6] = bid?.quantity ?? 0n;
    this.sf[f + 7] = ask?.priceNanos ?? 0;
    this.sl[f + 8] = ask?.quantity ?? 0n;
  }

  /** A depth record of `count` changes; fill them with setChange. Returns its offset. */
  stageDepth(instrument: Int32Array, seq: number, currency: number, count: number): number {
    if (count > DEPTH_CHANGES_MAX) throw new RangeError(`a depth record of ${count} changes`);
    const at = this.begin(KIND_DEPTH, DEPTH_HEAD_BYTES + count * CHANGE_BYTES, instrument, 0, seq);
    this.sw[(at >> 2) + 8] = currency;
    this.sw[(at >> 2) + 9] = count;
    return at;
  }

  setChange(record: number, index: number, side: number, priceNanos: number, quantity: bigint, count: number): void {
    const at = record + DEPTH_HEAD_BYTES + index * CHANGE_BYTES;
    this.sf[at >> 3] = priceNanos;
    this.sl[(at >> 3) + 1] = quantity;
    this.sw[(at >> 2) + 4] = count;
    this.sw[(at >> 2) + 5] = side;
  }

  /** The head once the staged records are appended (readers that reached it have seen them). */
  stagedEnd(): number {
    let position = this.position;
    for (const length of this.staged) position = this.placed(position, length) + length;
    return position;
  }

  /** Appends the staged records, each visible to readers once whole. */
  appendStaged(): void {
    let from = 0;
    for (const length of this.staged) {
      const start = this.placed(this.position, length);
      if (start !== this.position) {
        const offset = this.position & (this.capacity - 1);
        this.words[offset >> 2] = start - this.position;
        this.words[(offset >> 2) + 1] = KIND_PAD;
      }
      this.bytes.set(this.sb.subarray(from, from + length), start & (this.capacity - 1));
      this.position = start + length;
      Atomics.store(this.header, 0, BigInt(this.position));
      from += length;
    }
    this.dropStaged();
  }

  dropStaged(): void {
    this.staged.length = 0;
    this.stagedBytes = 0;
  }

  /** Where a record of `length` bytes starts when the head is at `position`: after a pad if it would cross the end. */
  private placed(position: number, length: number): number {
    const offset = position & (this.capacity - 1);
    return offset + length > this.capacity ? position + (this.capacity - offset) : position;
  }
}

/** One record as a reader decoded it (reused from record to record). */
export class StreamRecord {
  kind = 0;
  readonly instrument = new Int32Array(4);
  seq = 0;
  currency = 0;
  readonly tradeId = new Int32Array(4);
  priceNanos = 0;
  quantity = 0;
  occurredAtUs = 0;
  tapeSequence = 0;
  bid: { priceNanos: number; quantity: bigint } | null = null;
  ask: { priceNanos: number; quantity: bigint } | null = null;
  changes = 0;
  readonly changePrice = new Float64Array(DEPTH_CHANGES_MAX);
  readonly changeQuantity = new BigInt64Array(DEPTH_CHANGES_MAX);
  readonly changeCount = new Int32Array(DEPTH_CHANGES_MAX);
  readonly changeSide = new Int32Array(DEPTH_CHANGES_MAX);
}

/** A gateway's cursor on the ring. */
export class StreamReader extends StreamRing {
  /** The position read up to: everything before it has been handed over (or skipped by an overrun). */
  cursor: number;
  /** Times this reader fell more than the ring behind and skipped to the head. */
  overruns = 0;
  private readonly record = new StreamRecord();

  constructor(buffer: SharedArrayBuffer) {
    super(buffer);
    this.cursor = this.head();
  }

  /** Whether records wait to be read. */
  waiting(): boolean {
    return this.head() > this.cursor;
  }

  /** Hands over up to `max` records in order; returns how many. An overrun skips to the head (the callers' seqs jump). */
  poll(max: number, handle: (record: StreamRecord) => void): number {
    const mask = this.capacity - 1;
    let read = 0;
    let head = this.head();
    while (read < max && this.cursor < head) {
      if (!this.intact(this.cursor)) {
        this.skipToHead();
        return read;
      }
      const at = this.cursor & mask;
      const length = this.words[at >> 2]!;
      const kind = this.words[(at >> 2) + 1]!;
      if (length < 8 || length > RECORD_BYTES_MAX || (length & 7) !== 0 || at + length > this.capacity) {
        this.skipToHead(); // torn by a write that overtook the reader
        return read;
      }
      if (kind !== KIND_PAD) this.decode(at, kind);
      if (!this.intact(this.cursor)) {
        this.skipToHead();
        return read;
      }
      this.cursor += length;
      if (kind === KIND_PAD) continue;
      handle(this.record);
      read++;
      if (this.cursor >= head) head = this.head();
    }
    return read;
  }

  /** Passes over every record written so far unread (a reader with no one to hand them to); returns whether there were any. */
  passAll(): boolean {
    const head = this.head();
    const passed = head > this.cursor;
    this.cursor = head;
    return passed;
  }

  private intact(position: number): boolean {
    return position >= this.head() + WRITE_BYTES_MAX - this.capacity;
  }

  private skipToHead(): void {
    this.cursor = this.head();
    this.overruns++;
  }

  private decode(at: number, kind: number): void {
    const r = this.record;
    const w = at >> 2;
    const f = at >> 3;
    r.kind = kind;
    for (let k = 0; k < 4; k++) r.instrument[k] = this.words[w + 2 + k]!;
    r.seq = this.floats[f + 3]!;
    if (kind === KIND_TRADE) {
      for (let k = 0; k < 4; k++) r.tradeId[k] = this.words[w + 8 + k]!;
      r.priceNanos = this.floats[f + 6]!;
      r.quantity = this.floats[f + 7]!;
      r.occurredAtUs = this.floats[f + 8]!;
      r.tapeSequence = this.floats[f + 9]!;
      r.currency = this.words[w + 20]!;
    } else if (kind === KIND_TOP) {
      r.currency = this.words[w + 8]!;
      const flags = this.words[w + 9]!;
      r.bid = (flags & 1) === 0 ? null : { priceNanos: this.floats[f + 5]!, quantity: this.longs[f + 6]! };
      r.ask = (flags & 2) === 0 ? null : { priceNanos: this.floats[f + 7]!, quantity: this.longs[f + 8]! };
    } else if (kind === KIND_DEPTH) {
      r.currency = this.words[w + 8]!;
      const count = Math.min(Math.max(this.words[w + 9]!, 0), DEPTH_CHANGES_MAX);
      r.changes = count;
      for (let k = 0; k < count; k++) {
        const c = at + DEPTH_HEAD_BYTES + k * CHANGE_BYTES;
        r.changePrice[k] = this.floats[c >> 3]!;
        r.changeQuantity[k] = this.longs[(c >> 3) + 1]!;
        r.changeCount[k] = this.words[(c >> 2) + 4]!;
        r.changeSide[k] = this.words[(c >> 2) + 5]!;
      }
    }
  }
}
