// The public trade tape's most recent rows in shared memory, so a gateway answers a tape
// read itself: no message to the read thread, no query. A tape read from PostgreSQL cost
// about 0.4 ms of the venue's CPU and 0.3 ms of PostgreSQL's for 50 rows; depth and
// snapshot reads, answered from shared memory, cost 50-90 µs.
//
// One writer, the persistence thread: it appends each projection group's trades right
// after the group's commit (the same rows, with the same tape sequence, storage now
// holds) and only then moves the projection watermark, so a reader that waited for the
// watermark finds every trade answered before it arrived. Any number of readers, each
// instrument under a seqlock (the writer makes its word odd, writes, makes it even; a
// reader copies and retries if the word moved or was odd).
//
// Per instrument a ring of the last `rowsPerInstrument` trades. A read the ring cannot
// answer in full (older than the ring, or an instrument the full view does not hold)
// returns null: the read thread answers it from PostgreSQL, as before.
//
//   header (64 B): int32 [0] capacity (index entries, a power of two) [1] entries used
//                  [2] full (an instrument found no room) [3] instruments it may hold
//                  [4] rows per instrument [5] loaded (storage's trades are in it: it
//                  answers only from then on)
//   index (open addressing by instrument id), 48 B an entry:
//     int32 [0] seqlock [1] used [2..5] instrument id [6] complete (the ring began with
//     the instrument's first trade) [7] its block of rows; f64 [4] trades appended
//   blocks (one per instrument held, claimed in order), rows of 56 B:
//     int32 [0..3] trade id; f64 [2] price nanos [3] quantity units [4] occurred at (µs
//     since the epoch) [5] tape sequence; int32 [12] currency (packed)

import { hashWords } from './hash.ts';
import { entriesFor } from './market-view.ts';

/** The most rows a tape read may ask for (API contract), and so the most a ring is worth holding. */
export const TAPE_ROWS_MAX = 500;
const HEADER_BYTES = 64;
const ENTRY_BYTES = 48;
const ROW_BYTES = 56;

export interface TapeRow {
  /** The trade id's four words, most significant first (core/uuid.ts). */
  tradeId: Int32Array;
  priceNanos: number;
  quantity: number;
  occurredAtUs: number;
  sequence: number;
  currency: number;
}

/** Trades to append, in tape order (growable; the projector keeps one per projection group). 72 B a row: int32 [0..3] instrument [4..7] trade id, f64 [4..7] price, quantity, µs, sequence, int32 [16] currency. */
export class TapeBatch {
  private buffer = new ArrayBuffer(72 * 64);
  words = new Int32Array(this.buffer);
  floats = new Float64Array(this.buffer);
  length = 0;

  add(instrument: Int32Array, instrumentAt: number, tradeId: Int32Array, tradeIdAt: number, priceNanos: number, quantity: number, occurredAtUs: number, sequence: number, currency: number): void {
    if ((this.length + 1) * 72 > this.buffer.byteLength) {
      const grown = new ArrayBuffer(this.buffer.byteLength * 2);
      new Uint8Array(grown).set(new Uint8Array(this.buffer));
      this.buffer = grown;
      this.words = new Int32Array(grown);
      this.floats = new Float64Array(grown);
    }
    const w = this.length * 18;
    const f = this.length * 9;
    for (let k = 0; k < 4; k++) {
      this.words[w + k] = instrument[instrumentAt + k]!;
      this.words[w + 4 + k] = tradeId[tradeIdAt + k]!;
    }
    this.floats[f + 4] = priceNanos;
    this.floats[f + 5] = quantity;
    this.floats[f + 6] = occurredAtUs;
    this.floats[f + 7] = sequence;
    this.words[w + 16] = currency;
    this.length++;
  }

  clear(): void {
    this.length = 0;
  }
}

export class TapeView {
  readonly words: Int32Array;
  readonly floats: Float64Array;
  readonly capacity: number;
  readonly bound: number;
  readonly rowsPerInstrument: number;
  private readonly blocksAt: number;

  /** A view of `instruments` rings of `rows` trades each (rows 0: a view that holds nothing, every read goes to storage). */
  static create(instruments: number, rows: number): SharedArrayBuffer {
    if (!Number.isInteger(rows) || rows < 0 || rows > TAPE_ROWS_MAX) throw new RangeError(`tape rows per instrument must be 0-${TAPE_ROWS_MAX}`);
    const capacity = entriesFor(instruments);
    const held = rows === 0 ? 0 : instruments;
    const buffer = new SharedArrayBuffer(HEADER_BYTES + (held === 0 ? 0 : capacity * ENTRY_BYTES) + held * rows * ROW_BYTES);
    new Int32Array(buffer).set([held === 0 ? 0 : capacity, 0, held === 0 ? 1 : 0, held, rows]);
    return buffer;
  }

  constructor(buffer: SharedArrayBuffer) {
    this.words = new Int32Array(buffer);
    this.floats = new Float64Array(buffer);
    this.capacity = this.words[0]!;
    this.bound = this.words[3]!;
    this.rowsPerInstrument = this.words[4]!;
    this.blocksAt = HEADER_BYTES + this.capacity * ENTRY_BYTES;
  }

  /** Instruments held. */
  get used(): number {
    return Atomics.load(this.words, 1);
  }

  /** At start, once storage's trades are in it: reads are answered from then on (before, by storage). */
  markLoaded(): void {
    Atomics.store(this.words, 5, 1);
  }

  get loaded(): boolean {
    return Atomics.load(this.words, 5) === 1;
  }

  /** Some instrument is not held (storage had more than the view holds): reads of those go to storage. */
  markFull(): void {
    Atomics.store(this.words, 2, 1);
  }

  /** An instrument found no room: its reads go to storage. */
  get full(): boolean {
    return Atomics.load(this.words, 2) === 1;
  }

  /**
   * Appends a batch's trades, each after the ones before it of its instrument (writer
   * only; in tape order). An instrument new to the view has no trades before these
   * (storage's were loaded at start). False when an instrument found no room.
   */
  publish(batch: TapeBatch): boolean {
    let fitted = true;
    const { words, floats } = batch;
    for (let k = 0; k < batch.length; k++) {
      const w = k * 18;
      const entry = this.claim(words, w, true);
      if (entry < 0) {
        fitted = false;
        continue;
      }
      const e = (HEADER_BYTES + entry * ENTRY_BYTES) >> 2;
      Atomics.add(this.words, e, 1);
      this.write(entry, words, w + 4, floats[k * 9 + 4]!, floats[k * 9 + 5]!, floats[k * 9 + 6]!, floats[k * 9 + 7]!, words[w + 16]!);
      Atomics.add(this.words, e, 1);
    }
    return fitted;
  }

  /**
   * At start: an instrument's most recent trades from storage, oldest first;
   * `complete` when they are all it ever had. False when the view has no room for it.
   */
  load(instrument: Int32Array, rows: readonly TapeRow[], complete: boolean): boolean {
    const entry = this.claim(instrument, 0, complete);
    if (entry < 0) return false;
    const e = (HEADER_BYTES + entry * ENTRY_BYTES) >> 2;
    Atomics.add(this.words, e, 1);
    for (const row of rows) this.write(entry, row.tradeId, 0, row.priceNanos, row.quantity, row.occurredAtUs, row.sequence, row.currency);
    Atomics.add(this.words, e, 1);
    return true;
  }

  /**
   * The tape of an instrument as storage would answer it (most recent first, `limit`
   * rows older than `before`), or null when the view cannot tell: the page reaches
   * beyond the ring into older trades, the instrument is not held and the view is full,
   * or the view is not loaded yet.
   */
  read(instrument: Int32Array, limit: number, before: number | null): TapeRow[] | null {
    if (!this.loaded) return null;
    const entry = this.claim(instrument, 0, false, false);
    if (entry < 0) return this.full ? null : [];
    const e = (HEADER_BYTES + entry * ENTRY_BYTES) >> 2;
    const rows = this.rowsPerInstrument;
    for (;;) {
      const seen = Atomics.load(this.words, e);
      if ((seen & 1) !== 0) continue;
      const total = this.floats[(e >> 1) + 4]!;
      const whole = this.words[e + 6] === 1 && total <= rows;
      const block = this.blocksAt + this.words[e + 7]! * rows * ROW_BYTES;
      const out: TapeRow[] = [];
      for (let n = total - 1; n >= 0 && n >= total - rows && out.length < limit; n--) {
        const at = block + (n % rows) * ROW_BYTES;
        const f = at >> 3;
        const sequence = this.floats[f + 5]!;
        if (before !== null && sequence >= before) continue;
        const w = at >> 2;
        out.push({
          tradeId: this.words.slice(w, w + 4),
          priceNanos: this.floats[f + 2]!,
          quantity: this.floats[f + 3]!,
          occurredAtUs: this.floats[f + 4]!,
          sequence,
          currency: this.words[w + 12]!,
        });
      }
      if (Atomics.load(this.words, e) !== seen) continue;
      return out.length === limit || whole ? out : null;
    }
  }

  private write(entry: number, tradeId: Int32Array, idAt: number, priceNanos: number, quantity: number, occurredAtUs: number, sequence: number, currency: number): void {
    const e = (HEADER_BYTES + entry * ENTRY_BYTES) >> 2;
    const rows = this.rowsPerInstrument;
    const total = this.floats[(e >> 1) + 4]!;
    const at = this.blocksAt + (this.words[e + 7]! * rows + (total % rows)) * ROW_BYTES;
    const w = at >> 2;
    const f = at >> 3;
    for (let k = 0; k < 4; k++) this.words[w + k] = tradeId[idAt + k]!;
    this.floats[f + 2] = priceNanos;
    this.floats[f + 3] = quantity;
    this.floats[f + 4] = occurredAtUs;
    this.floats[f + 5] = sequence;
    this.words[w + 12] = currency;
    this.floats[(e >> 1) + 4] = total + 1;
  }

  /**
   * The entry of an instrument (ids at words[at..at+3]); with `claim`, a new one when it
   * has none, its ring marked complete or not (-1 when the view holds `bound` already,
   * and the view is then marked full).
   */
  private claim(ids: Int32Array, at: number, complete: boolean, claim = true): number {
    if (this.capacity === 0) return -1;
    const mask = this.capacity - 1;
    for (let entry = hashWords(ids[at]!, ids[at + 1]!, ids[at + 2]!, ids[at + 3]!) & mask, probes = 0; probes < this.capacity; probes++, entry = (entry + 1) & mask) {
      const e = (HEADER_BYTES + entry * ENTRY_BYTES) >> 2;
      if (Atomics.load(this.words, e + 1) === 0) {
        if (!claim) return -1;
        const used = this.used;
        if (used >= this.bound) {
          Atomics.store(this.words, 2, 1);
          return -1;
        }
        for (let k = 0; k < 4; k++) this.words[e + 2 + k] = ids[at + k]!;
        this.words[e + 6] = complete ? 1 : 0;
        this.words[e + 7] = used;
        this.floats[(e >> 1) + 4] = 0;
        Atomics.store(this.words, e + 1, 1); // readers find it from here on, with its ids in place
        Atomics.add(this.words, 1, 1);
        return entry;
      }
      if (this.words[e + 2] === ids[at] && this.words[e + 3] === ids[at + 1] && this.words[e + 4] === ids[at + 2] && this.words[e + 5] === ids[at + 3]) return entry;
    }
    return -1;
  }
}
