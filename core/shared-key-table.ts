// A hash table in a SharedArrayBuffer that several threads read and write: keys of
// 16 bytes (a UUID or a digest), a 32-bit value and a few extra words per entry.
// Used by the gateway threads for what must hold across them: idempotency claims,
// commandId lookups, the orderId -> shard directory and clientOrderId claims.
//
// Buckets of 8 entries, each guarded by a spinlock word (critical sections are a
// few dozen loads and stores). A full bucket evicts its oldest entry (smallest
// insertion stamp), so the table is bounded and never refuses an insert; callers
// that must not forget (durable idempotency) keep a second source of truth, and may
// give the table a KeyFilter that learns every key it evicts (under the bucket lock,
// before the entry is reused: a lookup that misses afterwards finds the key there).
// Size it at 4x the entries it should remember: with uniform hashing, buckets of 8
// start to overflow (and evict early) above ~30% load.
//
// Layout (Int32 words):
//   0  insertion stamp counter (Atomics.add)     1  evictions (Atomics.add)
//   16 bucket 0: [lock, 15 words padding] then 8 entries of `stride` words
//   entry: 0 used flag, 1 stamp, 2..5 key, 6 value, 7.. extra words
//   after the buckets: a word per WRITTEN_GROUP buckets, 1 once an entry of one of them was written
//
// The written words let a scan of every key (addKeysTo) pass over the buckets no write
// ever reached without reading them. Reading or locking a bucket first touches its page,
// and the kernel of this virtual machine took about 0.4 s to map the pages of four
// tables of 65,536 buckets (26 MiB each) at a venue's graceful stop, which scanned them
// all however few commands the venue had taken, and kept them resident after.

import { hashWords } from './hash.ts';
import type { KeyFilter } from './key-filter.ts';

const HEADER_WORDS = 16;
const ENTRIES_PER_BUCKET = 8;
const LOCK_WORDS = 16;
const USED = 0;
const STAMP = 1;
const KEY = 2;
const VALUE = 6;
const EXTRA = 7;
const SPINS_BEFORE_YIELD = 1000;
/** Buckets per written word: about a page of buckets (8 buckets of 8 entries with 4 extra words are 3.3 KiB). */
const WRITTEN_GROUP_SHIFT = 3;

export const NOT_FOUND = -1;

export interface SharedKeyTableShape {
  bucketCount: number;
  extraWords: number;
}

function strideOf(extraWords: number): number {
  return EXTRA + extraWords;
}

function bucketWords(extraWords: number): number {
  return LOCK_WORDS + ENTRIES_PER_BUCKET * strideOf(extraWords);
}

function writtenWords(bucketCount: number): number {
  return Math.ceil(bucketCount / (1 << WRITTEN_GROUP_SHIFT));
}

function tableWords(shape: SharedKeyTableShape): number {
  return HEADER_WORDS + shape.bucketCount * bucketWords(shape.extraWords) + writtenWords(shape.bucketCount);
}

export function createSharedKeyTable(shape: SharedKeyTableShape): SharedArrayBuffer {
  const { bucketCount } = shape;
  if (bucketCount < 1 || (bucketCount & (bucketCount - 1)) !== 0) throw new RangeError('bucketCount must be a power of two');
  return new SharedArrayBuffer(tableWords(shape) * 4);
}

const yieldCell = new Int32Array(new SharedArrayBuffer(4));

export class SharedKeyTable {
  readonly words: Int32Array;
  readonly bucketCount: number;
  readonly extraWords: number;
  private readonly mask: number;
  private readonly stride: number;
  private readonly bucketStride: number;
  /** Word of the first written word (after the buckets). */
  private readonly written: number;
  private readonly forgotten: KeyFilter | null;

  constructor(buffer: SharedArrayBuffer, shape: SharedKeyTableShape, forgotten: KeyFilter | null = null) {
    this.forgotten = forgotten;
    this.words = new Int32Array(buffer);
    this.bucketCount = shape.bucketCount;
    this.extraWords = shape.extraWords;
    this.mask = shape.bucketCount - 1;
    this.stride = strideOf(shape.extraWords);
    this.bucketStride = bucketWords(shape.extraWords);
    this.written = HEADER_WORDS + shape.bucketCount * this.bucketStride;
    if (this.words.length !== tableWords(shape)) {
      throw new RangeError('buffer does not match the table shape');
    }
  }

  get capacity(): number {
    return this.bucketCount * ENTRIES_PER_BUCKET;
  }

  get evictions(): number {
    return Atomics.load(this.words, 1);
  }

  /** Value for the key (key words at key[keyAt..+3]), or NOT_FOUND; extra words copied to `extraOut`. */
  get(key: Int32Array, keyAt: number, extraOut?: Int32Array): number {
    const bucket = this.lock(key, keyAt);
    try {
      const entry = this.findIn(bucket, key, keyAt);
      if (entry < 0) return NOT_FOUND;
      if (extraOut !== undefined) this.copyExtra(entry, extraOut);
      return this.words[entry + VALUE]!;
    } finally {
      this.unlock(bucket);
    }
  }

  /**
   * Inserts the key unless present. Returns NOT_FOUND when inserted, else the
   * existing value (its extra words copied to `extraOut`).
   */
  insertIfAbsent(key: Int32Array, keyAt: number, value: number, extra?: Int32Array, extraOut?: Int32Array): number {
    const bucket = this.lock(key, keyAt);
    try {
      const existing = this.findIn(bucket, key, keyAt);
      if (existing >= 0) {
        if (extraOut !== undefined) this.copyExtra(existing, extraOut);
        return this.words[existing + VALUE]!;
      }
      this.write(this.freeEntry(bucket), key, keyAt, value, extra);
      return NOT_FOUND;
    } finally {
      this.unlock(bucket);
    }
  }

  /** Sets the key's value and extra whether or not it was present. */
  put(key: Int32Array, keyAt: number, value: number, extra?: Int32Array): void {
    const bucket = this.lock(key, keyAt);
    try {
      const existing = this.findIn(bucket, key, keyAt);
      this.write(existing >= 0 ? existing : this.freeEntry(bucket), key, keyAt, value, extra);
    } finally {
      this.unlock(bucket);
    }
  }

  /** Replaces the value only if it still is `expected` (compare-and-set). */
  replace(key: Int32Array, keyAt: number, expected: number, value: number, extra?: Int32Array): boolean {
    const bucket = this.lock(key, keyAt);
    try {
      const existing = this.findIn(bucket, key, keyAt);
      if (existing < 0 || this.words[existing + VALUE] !== expected) return false;
      this.write(existing, key, keyAt, value, extra);
      return true;
    } finally {
      this.unlock(bucket);
    }
  }

  /** Removes the key if its value is `expected`. */
  remove(key: Int32Array, keyAt: number, expected: number): boolean {
    const bucket = this.lock(key, keyAt);
    try {
      const existing = this.findIn(bucket, key, keyAt);
      if (existing < 0 || this.words[existing + VALUE] !== expected) return false;
      this.words[existing + USED] = 0;
      return true;
    } finally {
      this.unlock(bucket);
    }
  }

  /** The insertion stamp the next write takes (read it before addKeysTo, to pass as the next call's `since`). */
  get stamp(): number {
    return Atomics.load(this.words, 0);
  }

  /**
   * Adds the keys the table holds to `filter`, skipping those it may hold already (so its
   * count does not grow by the table's keys at every call); returns how many it added.
   * With `since` (a `stamp` read before an earlier call's scan), only entries written
   * since then: an older entry was in its bucket when that scan locked it (so it was
   * added then) or has been evicted into the table's filter since. The stamps wrap, so
   * `since` must be less than 2^31 writes old; an entry that old comes back as written
   * since, which costs a lookup only. Buckets [from, to), each under its lock, but for
   * those of a group no write has reached: an insert marks its group before it takes its
   * stamp (write()), so a group seen unmarked here gets only entries stamped `stamp` or
   * later, which the next call with `since` visits, as if written after this scan.
   */
  addKeysTo(filter: KeyFilter, since: number | null = null, from = 0, to = this.bucketCount): number {
    const words = this.words;
    let added = 0;
    for (let index = from; index < to; index++) {
      if (Atomics.load(words, this.written + (index >> WRITTEN_GROUP_SHIFT)) === 0) continue;
      const bucket = this.lockBucket(HEADER_WORDS + index * this.bucketStride);
      try {
        for (let k = 0, entry = bucket + LOCK_WORDS; k < ENTRIES_PER_BUCKET; k++, entry += this.stride) {
          if (words[entry + USED] !== 1) continue;
          if (since !== null && ((words[entry + STAMP]! - since) | 0) < 0) continue;
          if (filter.mightContain(words, entry + KEY)) continue;
          filter.add(words, entry + KEY);
          added++;
        }
      } finally {
        this.unlock(bucket);
      }
    }
    return added;
  }

  private lock(key: Int32Array, keyAt: number): number {
    const index = hashWords(key[keyAt]!, key[keyAt + 1]!, key[keyAt + 2]!, key[keyAt + 3]!) & this.mask;
    return this.lockBucket(HEADER_WORDS + index * this.bucketStride);
  }

  private lockBucket(bucket: number): number {
    let spins = 0;
    while (Atomics.compareExchange(this.words, bucket, 0, 1) !== 0) {
      if (++spins === SPINS_BEFORE_YIELD) {
        spins = 0;
        Atomics.wait(yieldCell, 0, 0, 0.01); // the holder runs; sleep a few microseconds
      }
    }
    return bucket;
  }

  private unlock(bucket: number): void {
    Atomics.store(this.words, bucket, 0);
  }

  private findIn(bucket: number, key: Int32Array, keyAt: number): number {
    const words = this.words;
    for (let k = 0, entry = bucket + LOCK_WORDS; k < ENTRIES_PER_BUCKET; k++, entry += this.stride) {
      if (
        words[entry + USED] === 1 &&
        words[entry + KEY] === key[keyAt] &&
        words[entry + KEY + 1] === key[keyAt + 1] &&
        words[entry + KEY + 2] === key[keyAt + 2] &&
        words[entry + KEY + 3] === key[keyAt + 3]
      ) {
        return entry;
      }
    }
    return -1;
  }

  /** An unused entry of the bucket, or its oldest one (evicted). */
  private freeEntry(bucket: number): number {
    const words = this.words;
    let oldest = -1;
    let oldestStamp = 0;
    for (let k = 0, entry = bucket + LOCK_WORDS; k < ENTRIES_PER_BUCKET; k++, entry += this.stride) {
      if (words[entry + USED] === 0) return entry;
      const age = (Atomics.load(words, 0) - words[entry + STAMP]!) >>> 0;
      if (oldest < 0 || age > oldestStamp) {
        oldest = entry;
        oldestStamp = age;
      }
    }
    Atomics.add(words, 1, 1);
    this.forgotten?.add(words, oldest + KEY);
    return oldest;
  }

  private write(entry: number, key: Int32Array, keyAt: number, value: number, extra?: Int32Array): void {
    const words = this.words;
    const written = this.written + (Math.floor((entry - HEADER_WORDS) / this.bucketStride) >> WRITTEN_GROUP_SHIFT);
    if (Atomics.load(words, written) === 0) Atomics.store(words, written, 1); // before the stamp: see addKeysTo
    words[entry + USED] = 1;
    words[entry + STAMP] = Atomics.add(words, 0, 1);
    for (let k = 0; k < 4; k++) words[entry + KEY + k] = key[keyAt + k]!;
    words[entry + VALUE] = value;
    if (extra !== undefined) for (let k = 0; k < this.extraWords; k++) words[entry + EXTRA + k] = extra[k]!;
  }

  private copyExtra(entry: number, out: Int32Array): void {
    for (let k = 0; k < this.extraWords; k++) out[k] = this.words[entry + EXTRA + k]!;
  }
}
