// Market data in shared memory, so a gateway answers depth and snapshot reads itself:
// no message to the read thread, no query (reads under an order load cost the order
// flow less, and wait only for their own thread). One writer per region, any number of
// readers, each entry under a seqlock (the writer makes its word odd, writes, makes it
// even; a reader copies and retries if the word moved or was odd).
//
// DepthView (written by the persistence thread, which keeps the full books: every
// price of every instrument, exact BigInt sums): per instrument the best
// DEPTH_LEVELS_MAX prices of each side and each whole side's open quantity, and per
// shard the journal position they show. Snapshot refreshes are computed from it.
//
//   header (64 B): int32 [0] capacity (entries), [1] entries used, [2] full (an
//                  instrument found no room), [3] most entries used (the bound asked for)
//   watermarks: float64 per shard (MAX_STREAMS)
//   entries (open addressing by instrument id, capacity a power of two):
//     int32 [0] seqlock [1] used [2..5] instrument id [6] currency [7] shard
//           [8] bid levels [9] ask levels, i64 at byte 40 open bid quantity, at 48 open
//           ask quantity, f64 at 56 depth seq, 64 top seq, 72 stream position (the
//           market-data stream's marks: core/market-stream.ts) (96 B), then
//           DEPTH_LEVELS_MAX bid levels and as many ask levels of 24 B: price f64 |
//           quantity i64 | order count i32 | pad
//
// SnapshotView (written by the read thread, which refreshes the snapshots): per
// (instrument, projection name) the stored top-of-book row.
//
//   header (64 B): int32 [0] capacity [1] used [2] full [3] most entries used
//   entries: int32 [0] seqlock [1] used [2..5] instrument id [6] currency [7] flags
//            (1 bid, 2 ask) [8] name length [9..24] name (64 B) (128 B), then f64 bid
//            price, i64 bid quantity, f64 ask price, i64 ask quantity, f64 source
//            watermark, f64 refreshed at (µs), i64 open bid quantity, i64 open ask
//            quantity (64 B)

import { hashWords } from './hash.ts';
import { MAX_STREAMS } from './persistence-control.ts';

export const DEPTH_LEVELS_MAX = 50;
const HEADER_BYTES = 64;
const LEVEL_BYTES = 24;
const DEPTH_HEAD_BYTES = 96;
const DEPTH_ENTRY_BYTES = DEPTH_HEAD_BYTES + 2 * DEPTH_LEVELS_MAX * LEVEL_BYTES;
const DEPTH_WATERMARKS_BYTES = MAX_STREAMS * 8;
const SNAPSHOT_ENTRY_BYTES = 128 + 64;
const SNAPSHOT_NAME_BYTES = 64;
const encoder = new TextEncoder();

export interface ViewLevel {
  priceNanos: number;
  quantity: bigint;
  count: number;
}

export interface DepthBook {
  currency: number;
  shard: number;
  bids: ViewLevel[];
  asks: ViewLevel[];
  /** The open displayed quantity of each whole side (every level, not only the best ones). */
  open: { bid: bigint; ask: bigint };
  /** The stream's marks these levels carry. */
  marks: StreamMarks;
}

/**
 * Where the market-data stream is for an instrument: the seq of its last depth and top
 * messages, and the ring position (core/market-stream.ts) a reader must have read past
 * for the levels to hold every one of them and no later one.
 */
export interface StreamMarks {
  depthSeq: number;
  topSeq: number;
  position: number;
}

export const NO_MARKS: StreamMarks = { depthSeq: 0, topSeq: 0, position: 0 };

export interface SnapshotEntry {
  currency: number;
  bid: { priceNanos: number; quantity: bigint } | null;
  ask: { priceNanos: number; quantity: bigint } | null;
  /** The open displayed LIMIT quantity of each whole side: orders times units can pass 2^53, so BigInt. */
  openQuantity: { bid: bigint; ask: bigint };
  sourceWatermark: number;
  refreshedAtUs: number;
}

/** Entries a region needs for `count` keys at half load at most (open addressing). */
export function entriesFor(count: number): number {
  let entries = 16;
  while (entries < count * 2) entries *= 2;
  return entries;
}

/** Views and seqlock helpers over one region. */
class Region {
  readonly words: Int32Array;
  readonly floats: Float64Array;
  readonly longs: BigInt64Array;
  readonly bytes: Uint8Array;
  readonly capacity: number;
  /** Entries it may hold (at most half its capacity: probes stay short). */
  readonly bound: number;

  constructor(buffer: SharedArrayBuffer) {
    this.words = new Int32Array(buffer);
    this.floats = new Float64Array(buffer);
    this.longs = new BigInt64Array(buffer);
    this.bytes = new Uint8Array(buffer);
    this.capacity = this.words[0]!;
    this.bound = this.words[3]!;
  }

  get used(): number {
    return Atomics.load(this.words, 1);
  }

  get full(): boolean {
    return Atomics.load(this.words, 2) === 1;
  }

  protected beginWrite(word: number): void {
    Atomics.add(this.words, word, 1); // odd: being written
  }

  protected endWrite(word: number): void {
    Atomics.add(this.words, word, 1); // even again
  }

  /** Runs `read` until it saw a stable entry (the seqlock did not move and was even). */
  protected stable<T>(word: number, read: () => T): T {
    for (;;) {
      const before = Atomics.load(this.words, word);
      if ((before & 1) === 0) {
        const value = read();
        if (Atomics.load(this.words, word) === before) return value;
      }
    }
  }
}

export class DepthView extends Region {
  private readonly entriesAt: number;

  static create(instruments: number): SharedArrayBuffer {
    const capacity = entriesFor(instruments);
    const buffer = new SharedArrayBuffer(HEADER_BYTES + DEPTH_WATERMARKS_BYTES + capacity * DEPTH_ENTRY_BYTES);
    new Int32Array(buffer).set([capacity, 0, 0, instruments]);
    return buffer;
  }

  constructor(buffer: SharedArrayBuffer) {
    super(buffer);
    this.entriesAt = HEADER_BYTES + DEPTH_WATERMARKS_BYTES;
  }

  /** The journal position of a shard the books show (everything up to it is in them). */
  watermark(shard: number): number {
    return Number(Atomics.load(this.longs, (HEADER_BYTES >> 3) + shard));
  }

  /** After the books of a shard's instruments are written up to `sequence` (an atomic store: readers see them first). */
  setWatermark(shard: number, sequence: number): void {
    Atomics.store(this.longs, (HEADER_BYTES >> 3) + shard, BigInt(sequence));
  }

  /** Writes an instrument's best levels (writer thread only). False when no entry is left for a new instrument. */
  write(instrument: Int32Array, currency: number, shard: number, bids: readonly ViewLevel[], asks: readonly ViewLevel[], open: { bid: bigint; ask: bigint }, marks: StreamMarks = NO_MARKS): boolean {
    const entry = this.find(instrument, true);
    if (entry < 0) {
      Atomics.store(this.words, 2, 1);
      return false;
    }
    const at = this.entriesAt + entry * DEPTH_ENTRY_BYTES;
    const w = at >> 2;
    this.beginWrite(w);
    if (this.words[w + 1] === 0) {
      this.words.set(instrument.subarray(0, 4), w + 2);
      Atomics.add(this.words, 1, 1);
    }
    this.words[w + 1] = 1;
    this.words[w + 6] = currency;
    this.words[w + 7] = shard;
    this.words[w + 8] = Math.min(bids.length, DEPTH_LEVELS_MAX);
    this.words[w + 9] = Math.min(asks.length, DEPTH_LEVELS_MAX);
    this.longs[(at + 40) >> 3] = open.bid;
    this.longs[(at + 48) >> 3] = open.ask;
    this.floats[(at + 56) >> 3] = marks.depthSeq;
    this.floats[(at + 64) >> 3] = marks.topSeq;
    this.floats[(at + 72) >> 3] = marks.position;
    this.writeLevels(at + DEPTH_HEAD_BYTES, bids);
    this.writeLevels(at + DEPTH_HEAD_BYTES + DEPTH_LEVELS_MAX * LEVEL_BYTES, asks);
    this.endWrite(w);
    return true;
  }

  /** The best `levels` levels per side of an instrument, or null if the view does not hold it. */
  read(instrument: Int32Array, levels: number): DepthBook | null {
    const entry = this.find(instrument, false);
    if (entry < 0) return null;
    const at = this.entriesAt + entry * DEPTH_ENTRY_BYTES;
    const w = at >> 2;
    return this.stable(w, () => ({
      currency: this.words[w + 6]!,
      shard: this.words[w + 7]!,
      bids: this.readLevels(at + DEPTH_HEAD_BYTES, Math.min(levels, this.words[w + 8]!)),
      asks: this.readLevels(at + DEPTH_HEAD_BYTES + DEPTH_LEVELS_MAX * LEVEL_BYTES, Math.min(levels, this.words[w + 9]!)),
      open: { bid: this.longs[(at + 40) >> 3]!, ask: this.longs[(at + 48) >> 3]! },
      marks: { depthSeq: this.floats[(at + 56) >> 3]!, topSeq: this.floats[(at + 64) >> 3]!, position: this.floats[(at + 72) >> 3]! },
    }));
  }

  /** The ids (four words each) of every instrument the view holds, in no order. */
  instruments(): Int32Array[] {
    const found: Int32Array[] = [];
    for (let entry = 0; entry < this.capacity; entry++) {
      const w = (this.entriesAt + entry * DEPTH_ENTRY_BYTES) >> 2;
      if (Atomics.load(this.words, w + 1) === 0) continue;
      found.push(this.stable(w, () => this.words.slice(w + 2, w + 6)));
    }
    return found;
  }

  private writeLevels(at: number, levels: readonly ViewLevel[]): void {
    const count = Math.min(levels.length, DEPTH_LEVELS_MAX);
    for (let k = 0; k < count; k++) {
      const level = levels[k]!;
      const byte = at + k * LEVEL_BYTES;
      this.floats[byte >> 3] = level.priceNanos;
      this.longs[(byte >> 3) + 1] = level.quantity;
      this.words[(byte >> 2) + 4] = level.count;
    }
  }

  private readLevels(at: number, count: number): ViewLevel[] {
    const out: ViewLevel[] = [];
    for (let k = 0; k < count; k++) {
      const byte = at + k * LEVEL_BYTES;
      out.push({ priceNanos: this.floats[byte >> 3]!, quantity: this.longs[(byte >> 3) + 1]!, count: this.words[(byte >> 2) + 4]! });
    }
    return out;
  }

  /** The entry of an instrument; with `claim`, a free one if it has none (-1 when it holds `bound` instruments already). */
  private find(instrument: Int32Array, claim: boolean): number {
    const mask = this.capacity - 1;
    for (let entry = hashWords(instrument[0]!, instrument[1]!, instrument[2]!, instrument[3]!) & mask, probes = 0; probes < this.capacity; probes++, entry = (entry + 1) & mask) {
      const w = (this.entriesAt + entry * DEPTH_ENTRY_BYTES) >> 2;
      if (Atomics.load(this.words, w + 1) === 0) {
        if (!claim || this.used >= this.bound) return -1;
        return entry;
      }
      if (this.words[w + 2] === instrument[0] && this.words[w + 3] === instrument[1] && this.words[w + 4] === instrument[2] && this.words[w + 5] === instrument[3]) return entry;
    }
    return -1;
  }
}

export class SnapshotView extends Region {
  static create(entries: number): SharedArrayBuffer {
    const capacity = entriesFor(entries);
    const buffer = new SharedArrayBuffer(HEADER_BYTES + capacity * SNAPSHOT_ENTRY_BYTES);
    new Int32Array(buffer).set([capacity, 0, 0, entries]);
    return buffer;
  }

  /** Stores a snapshot row (writer thread only). False when no entry is left for a new one. */
  write(instrument: Int32Array, name: string, snapshot: SnapshotEntry): boolean {
    const nameBytes = encoder.encode(name);
    if (nameBytes.byteLength > SNAPSHOT_NAME_BYTES) throw new RangeError('a snapshot projection name longer than 64 bytes');
    const entry = this.find(instrument, nameBytes, true);
    if (entry < 0) {
      Atomics.store(this.words, 2, 1);
      return false;
    }
    const at = HEADER_BYTES + entry * SNAPSHOT_ENTRY_BYTES;
    const w = at >> 2;
    const f = (at + 128) >> 3;
    this.beginWrite(w);
    if (this.words[w + 1] === 0) {
      this.words.set(instrument.subarray(0, 4), w + 2);
      this.words[w + 8] = nameBytes.byteLength;
      this.bytes.set(nameBytes, at + 36);
      Atomics.add(this.words, 1, 1);
    }
    this.words[w + 1] = 1;
    this.words[w + 6] = snapshot.currency;
    this.words[w + 7] = (snapshot.bid === null ? 0 : 1) | (snapshot.ask === null ? 0 : 2);
    this.floats[f] = snapshot.bid?.priceNanos ?? 0;
    this.longs[f + 1] = snapshot.bid?.quantity ?? 0n;
    this.floats[f + 2] = snapshot.ask?.priceNanos ?? 0;
    this.longs[f + 3] = snapshot.ask?.quantity ?? 0n;
    this.floats[f + 4] = snapshot.sourceWatermark;
    this.floats[f + 5] = snapshot.refreshedAtUs;
    this.longs[f + 6] = snapshot.openQuantity.bid;
    this.longs[f + 7] = snapshot.openQuantity.ask;
    this.endWrite(w);
    return true;
  }

  /** The stored snapshot, or null if the view does not hold it. */
  read(instrument: Int32Array, name: string): SnapshotEntry | null {
    const entry = this.find(instrument, encoder.encode(name), false);
    if (entry < 0) return null;
    const at = HEADER_BYTES + entry * SNAPSHOT_ENTRY_BYTES;
    const w = at >> 2;
    const f = (at + 128) >> 3;
    return this.stable(w, () => {
      const flags = this.words[w + 7]!;
      return {
        currency: this.words[w + 6]!,
        bid: (flags & 1) === 0 ? null : { priceNanos: this.floats[f]!, quantity: this.longs[f + 1]! },
        ask: (flags & 2) === 0 ? null : { priceNanos: this.floats[f + 2]!, quantity: this.longs[f + 3]! },
        openQuantity: { bid: this.longs[f + 6]!, ask: this.longs[f + 7]! },
        sourceWatermark: this.floats[f + 4]!,
        refreshedAtUs: this.floats[f + 5]!,
      };
    });
  }

  private sameName(at: number, name: Uint8Array): boolean {
    for (let k = 0; k < name.byteLength; k++) if (this.bytes[at + k] !== name[k]) return false;
    return true;
  }

  private find(instrument: Int32Array, name: Uint8Array, claim: boolean): number {
    const mask = this.capacity - 1;
    let hash = hashWords(instrument[0]!, instrument[1]!, instrument[2]!, instrument[3]!);
    for (let k = 0; k < name.byteLength; k++) hash = Math.imul(hash ^ name[k]!, 0x01000193);
    for (let entry = hash & mask, probes = 0; probes < this.capacity; probes++, entry = (entry + 1) & mask) {
      const at = HEADER_BYTES + entry * SNAPSHOT_ENTRY_BYTES;
      const w = at >> 2;
      if (Atomics.load(this.words, w + 1) === 0) {
        if (!claim || this.used >= this.bound) return -1;
        return entry;
      }
      if (
        this.words[w + 2] === instrument[0] &&
        this.words[w + 3] === instrument[1] &&
        this.words[w + 4] === instrument[2] &&
        this.words[w + 5] === instrument[3] &&
        this.words[w + 8] === name.byteLength &&
        this.sameName(at + 36, name)
      ) {
        return entry;
      }
    }
    return -1;
  }
}
