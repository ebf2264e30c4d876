// A Bloom filter of 16-byte keys (four words) on a SharedArrayBuffer, shared by the
// gateway threads. It answers "could storage hold this key that the shared tables do
// not?": the tables forget their oldest entries when a bucket is full (and a restart
// reloads only the most recent), so every key a table evicts, and every key storage
// holds at start-up, is added here. A key the filter does not hold was never taken:
// no storage read is needed to know it is new. A key it holds (or a false positive,
// about 1% at the rated load) is checked in storage. Past its rated load the false
// positives grow with the load, never a false negative: measured with random keys,
// 5.5% at 1.5 times the rated keys, 14% at 2, 40% at 3, 64% at 4, 97% at 8. It never
// answers "maybe" for every key past its rating: that would send every new command to a
// storage check (docs/decisions/0005-bounded-tables-and-key-filters.md).
// Each start sizes the filters for the keys storage holds (filterBitsFor), so that a
// restart puts a venue that outgrew them back under their rated load.
//
// Blocked: a key's probes all fall in one 64-byte block (one cache line), so an add or
// a lookup costs one cache miss, not one per probe: loading a million stored keys at
// start-up took 1.3 µs per key with probes spread over the whole filter (--cpu-prof of
// the main thread), for slightly more false positives at the same size.
//
// Layout (Int32 words): 0 keys added (Atomics.add); 16.. the blocks of 16 words. Bits
// are only ever set (Atomics.or), so a reader that sees a bit clear knows no add of a
// key with that bit finished before its read.

import { hashWords } from './hash.ts';

const HEADER_WORDS = 16;
/** Probes per key, all in one block of 512 bits: ~1.2% false positives at 10 bits per key. */
const PROBES = 7;
const BITS_PER_KEY = 10;
const BLOCK_WORDS = 16;
/** Keys addMany locates before it sets their bits (one group's misses overlap). */
const ADD_MANY_GROUP = 256;

/**
 * The bits each filter gets at start, for `storedKeys` keys already in storage: the
 * smallest power of two from `floorBits` that holds them at half its rated load (so the
 * venue can take as many keys again before its false positives grow), at most `maxBits`.
 * `short` is true when even `maxBits` is rated for fewer than twice the stored keys.
 */
export function filterBitsFor(storedKeys: number, floorBits: number, maxBits: number): { bits: number; short: boolean } {
  const wanted = storedKeys * 2 * BITS_PER_KEY;
  let bits = floorBits;
  while (bits < maxBits && wanted > bits) bits *= 2;
  return { bits, short: wanted > bits };
}

export function createKeyFilter(bits: number): SharedArrayBuffer {
  if (!validBits(bits)) throw new RangeError(`key filter bits must be a power of two in [2^10, 2^30], got ${bits}`);
  return new SharedArrayBuffer((HEADER_WORDS + bits / 32) * 4);
}

/** The bits of a filter whose buffer (createKeyFilter) has `byteLength` bytes; null if no filter has that size. */
export function keyFilterBitsOf(byteLength: number): number | null {
  const bits = (byteLength / 4 - HEADER_WORDS) * 32;
  return validBits(bits) ? bits : null;
}

function validBits(bits: number): boolean {
  return Number.isSafeInteger(bits) && bits >= 1024 && bits <= 2 ** 30 && (bits & (bits - 1)) === 0;
}

export class KeyFilter {
  private readonly words: Int32Array;
  private readonly blockMask: number;
  readonly bits: number;
  /** Keys the filter holds at about 1% false positives. */
  readonly ratedKeys: number;
  /** The last located key (locate()): scratch, so that a lookup allocates nothing. */
  private block = 0;
  private first = 0;
  private step = 1;
  /** addMany's scratch: each key's block and first probe, for a group of keys. */
  private readonly batchBlocks = new Int32Array(ADD_MANY_GROUP);
  private readonly batchFirsts = new Int32Array(ADD_MANY_GROUP);
  /** What addMany's reads gave (kept, so that they are not optimized away). */
  private touched = 0;

  constructor(buffer: SharedArrayBuffer) {
    this.words = new Int32Array(buffer);
    this.bits = (this.words.length - HEADER_WORDS) * 32;
    this.blockMask = this.bits / 512 - 1;
    this.ratedKeys = Math.floor(this.bits / BITS_PER_KEY);
  }

  get added(): number {
    return Atomics.load(this.words, 0);
  }

  add(key: Int32Array, at: number): void {
    this.locate(key, at);
    for (let i = 0; i < PROBES; i++) {
      const bit = (this.first + Math.imul(i, this.step)) & 511;
      Atomics.or(this.words, this.block + (bit >>> 5), 1 << (bit & 31));
    }
    Atomics.add(this.words, 0, 1);
  }

  /**
   * Adds `count` keys packed four words each in `keys` (what a start's scan of storage adds,
   * millions at a time): each key's block is located and its first word read for all of them
   * first, so that their cache misses overlap instead of each add waiting for its own, and
   * the count is raised once. 225 -> 165 ns a key for 3 M random keys into a 2^27-bit filter
   * (bench/key-filter-bench.ts, medians of 5 alternating rounds).
   */
  addMany(keys: Int32Array, count: number): void {
    const blocks = this.batchBlocks;
    const firsts = this.batchFirsts;
    for (let from = 0; from < count; from += blocks.length) {
      const n = Math.min(blocks.length, count - from);
      let touched = 0;
      for (let j = 0; j < n; j++) {
        this.locate(keys, (from + j) * 4);
        blocks[j] = this.block;
        firsts[j] = this.first;
        touched ^= this.words[this.block]!; // a plain read: brings the block's line in, alongside the others
      }
      this.touched = touched;
      for (let j = 0; j < n; j++) {
        const block = blocks[j]!;
        const first = firsts[j]!;
        const step = (first >>> 16) | 1;
        for (let i = 0; i < PROBES; i++) {
          const bit = (first + Math.imul(i, step)) & 511;
          Atomics.or(this.words, block + (bit >>> 5), 1 << (bit & 31));
        }
      }
      Atomics.add(this.words, 0, n);
    }
  }

  /** False: the key was never added. True: it may have been (more often a false positive past the rated load). */
  mightContain(key: Int32Array, at: number): boolean {
    this.locate(key, at);
    for (let i = 0; i < PROBES; i++) {
      const bit = (this.first + Math.imul(i, this.step)) & 511;
      if ((Atomics.load(this.words, this.block + (bit >>> 5)) & (1 << (bit & 31))) === 0) return false;
    }
    return true;
  }

  /** A key's block (first word) and its probe sequence (first bit, step): two hashes of its four words. */
  private locate(key: Int32Array, at: number): void {
    const h1 = hashWords(key[at]!, key[at + 1]!, key[at + 2]!, key[at + 3]!);
    const h2 = hashWords(key[at + 3]! ^ 0x5bd1e995, key[at + 2]!, key[at + 1]!, key[at]!);
    this.block = HEADER_WORDS + (h1 & this.blockMask) * BLOCK_WORDS;
    this.first = h2;
    this.step = (h2 >>> 16) | 1;
  }
}

/** Keys gathered for KeyFilter.addMany from a stream of them (a scan's rows): each push copies a key; a full group goes in at once; flush() the rest. */
export class KeyFilterFeed {
  private readonly keys = new Int32Array(ADD_MANY_GROUP * 4);
  private count = 0;
  private readonly filter: KeyFilter;

  constructor(filter: KeyFilter) {
    this.filter = filter;
  }

  push(key: Int32Array, at: number): void {
    const to = this.count * 4;
    this.keys[to] = key[at]!;
    this.keys[to + 1] = key[at + 1]!;
    this.keys[to + 2] = key[at + 2]!;
    this.keys[to + 3] = key[at + 3]!;
    if (++this.count === ADD_MANY_GROUP) this.flush();
  }

  flush(): void {
    if (this.count > 0) this.filter.addMany(this.keys, this.count);
    this.count = 0;
  }
}

/**
 * Returns a check to call now and then (the main thread's guard timer): it calls `warn`
 * once per filter, the first time the filter holds more keys than it is rated for.
 */
export function ratedLoadWatch(filters: Record<string, KeyFilter>, warn: (name: string, added: number, ratedKeys: number) => void): () => void {
  const warned = new Set<string>();
  return () => {
    for (const [name, filter] of Object.entries(filters)) {
      const added = filter.added;
      if (added <= filter.ratedKeys || warned.has(name)) continue;
      warned.add(name);
      warn(name, added, filter.ratedKeys);
    }
  };
}
