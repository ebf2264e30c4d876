// Price levels of every book of a shard. A level exists only while it holds at
// least one resting order, so there are never more levels than resting orders.
//
//  - lookup (book side, price) -> level: open-addressed hash, O(1) expected, whose
//    buckets hold the key's hash beside the level, so a probe past other levels and
//    the shifts of a removal neither touch those levels' records nor hash again;
//  - best level per book side: an indexed binary min-heap keyed by price (bids by
//    -price), O(log n) insert and removal anywhere, O(1) peek;
//  - orders inside a level: two FIFO queues, queue 0 displayed (LIMIT) orders and
//    queue 1 hidden (LIMIT_HIDDEN) ones behind them, so a queue number equals the
//    OrderType code.
//
// A book side is addressed as `book * 2 + side`. Levels are 64-byte records (one
// cache line) in one ArrayBuffer:
//
//    0 price f64            F 0       24 bookSide i32   W 6     40 tail[2] i32   W 10, 11
//    8 quantity[2] f64      F 1, 2    28 heapPos i32    W 7     48 count[2] i32  W 12, 13
//                                     32 head[2] i32    W 8, 9  56 hash i32      W 14
//                                                               60 (free)

import { assert, fail } from './assert.ts';
import type { StateReader, StateWriter } from './engine-state.ts';
import { hashPrice, powerOfTwoAtLeast } from './hash.ts';

export const LEVEL_RECORD_BYTES = 64;
export const LEVEL_WORD_SHIFT = 4;
export const LEVEL_FLOAT_SHIFT = 3;
// Plain constants, not object properties: see the note in order-store.ts.
export const LEVEL_BOOK_SIDE_WORD = 6;
export const LEVEL_HEAP_POS_WORD = 7;
/** head, tail and count are pairs: + queue (0 displayed, 1 hidden). */
export const LEVEL_HEAD_WORD = 8;
export const LEVEL_TAIL_WORD = 10;
export const LEVEL_COUNT_WORD = 12;
/** hashPrice(price, bookSide ^ seed): the level's key hash, kept to find its bucket on removal. */
export const LEVEL_HASH_WORD = 14;
export const LEVEL_PRICE_FLOAT = 0;
/** A pair: + queue. */
export const LEVEL_QUANTITY_FLOAT = 1;

const HEAP_INITIAL = 64;
/**
 * The heap of a book side that never held a level: shared, never written (heapInsert
 * gives a side its own at its first level). A heap each at construction was 16,384 typed
 * arrays for the default 4,096 instruments, 140-210 ms of every shard's start with the
 * garbage collector's share, and 6 MiB, for books most of which stay empty.
 */
const NO_LEVELS = new Int32Array(0);
const NO_KEYS = new Float64Array(0);
const TABLE_INITIAL = 4096;
const POOL_INITIAL = 2048;

export class PriceLevels {
  /** Most levels ever needed: one per resting order. */
  readonly capacityMax: number;
  /** Records allocated now; doubles on demand up to capacityMax (levels are few in practice). */
  capacity: number;
  /** Views over the records; replaced when the pool grows, so re-read them after findOrCreate(). */
  words: Int32Array;
  floats: Float64Array;

  private freeStack: Int32Array;
  private freeTop: number;
  /**
   * (bookSide, price) -> pairs of (key hash, level + 1), level + 1 = 0 for an empty
   * bucket. Starts small and doubles while more than half full, so a venue with a few
   * thousand live levels probes a table that stays in cache; bounded by 2 x capacity
   * buckets.
   */
  private table: Int32Array;
  /** Buckets - 1. */
  private mask: number;
  /** Per book side: heap of level ids, their keys, and its size. */
  private readonly heapLevels: Int32Array[];
  private readonly heapKeys: Float64Array[];
  private readonly heapSize: Int32Array;

  private readonly seed: number;

  constructor(capacityMax: number, bookSideCount: number, seed = 0) {
    this.seed = seed | 0;
    this.capacityMax = capacityMax;
    const capacity = Math.min(POOL_INITIAL, capacityMax);
    this.capacity = capacity;
    const buffer = new ArrayBuffer(capacity * LEVEL_RECORD_BYTES);
    this.words = new Int32Array(buffer);
    this.floats = new Float64Array(buffer);
    this.freeStack = new Int32Array(capacity);
    for (let i = 0; i < capacity; i++) this.freeStack[i] = capacity - 1 - i;
    this.freeTop = capacity;
    const buckets = Math.min(TABLE_INITIAL, powerOfTwoAtLeast(capacityMax * 2));
    this.table = new Int32Array(buckets * 2);
    this.mask = buckets - 1;
    this.heapLevels = [];
    this.heapKeys = [];
    for (let i = 0; i < bookSideCount; i++) {
      this.heapLevels.push(NO_LEVELS);
      this.heapKeys.push(NO_KEYS);
    }
    this.heapSize = new Int32Array(bookSideCount);
  }

  get liveCount(): number {
    return this.capacity - this.freeTop;
  }

  levelCount(bookSide: number): number {
    return this.heapSize[bookSide]!;
  }

  price(level: number): number {
    return this.floats[(level << LEVEL_FLOAT_SHIFT) + LEVEL_PRICE_FLOAT]!;
  }

  /** Open quantity of one queue (0 displayed, 1 hidden). */
  quantity(level: number, queue: number): number {
    return this.floats[(level << LEVEL_FLOAT_SHIFT) + LEVEL_QUANTITY_FLOAT + queue]!;
  }

  count(level: number, queue: number): number {
    return this.words[(level << LEVEL_WORD_SHIFT) + LEVEL_COUNT_WORD + queue]!;
  }

  head(level: number, queue: number): number {
    return this.words[(level << LEVEL_WORD_SHIFT) + LEVEL_HEAD_WORD + queue]!;
  }

  isEmpty(level: number): boolean {
    const at = (level << LEVEL_WORD_SHIFT) + LEVEL_COUNT_WORD;
    return this.words[at] === 0 && this.words[at + 1] === 0;
  }

  /** Best level of a book side (highest bid, lowest ask), or -1 when empty. */
  best(bookSide: number): number {
    return this.heapSize[bookSide] === 0 ? -1 : this.heapLevels[bookSide]![0]!;
  }

  find(bookSide: number, price: number): number {
    const found = this.probe(hashPrice(price, bookSide ^ this.seed), bookSide, price);
    return found >= 0 ? found : -1;
  }

  /**
   * The level at (bookSide, price), created empty when there is none: one hash and
   * one probe either way (the index keeps each key's hash, so a creation needs neither again).
   */
  findOrCreate(bookSide: number, price: number): number {
    const hash = hashPrice(price, bookSide ^ this.seed);
    const found = this.probe(hash, bookSide, price);
    if (found >= 0) return found;
    let bucket = -1 - found;
    if ((this.liveCount + 1) * 2 > this.mask + 1) {
      // Rare: the index doubles and the empty bucket found above is gone.
      this.growTable();
      bucket = this.emptyBucket(hash);
    }
    return this.createAt(bucket, hash, bookSide, price);
  }

  /** The level keyed (bookSide, price) of this hash, or -1 - the empty bucket where its probe ended. */
  private probe(hash: number, bookSide: number, price: number): number {
    const table = this.table;
    const mask = this.mask;
    let bucket = hash & mask;
    for (;;) {
      const entry = table[bucket * 2 + 1]!;
      if (entry === 0) return -1 - bucket;
      // The record is read only when the hashes agree.
      if (
        table[bucket * 2] === hash &&
        this.floats[((entry - 1) << LEVEL_FLOAT_SHIFT) + LEVEL_PRICE_FLOAT] === price &&
        this.words[((entry - 1) << LEVEL_WORD_SHIFT) + LEVEL_BOOK_SIDE_WORD] === bookSide
      ) {
        return entry - 1;
      }
      bucket = (bucket + 1) & mask;
    }
  }

  /** The first empty bucket of the probe that starts at the hash's home. */
  private emptyBucket(hash: number): number {
    const table = this.table;
    const mask = this.mask;
    let bucket = hash & mask;
    while (table[bucket * 2 + 1] !== 0) bucket = (bucket + 1) & mask;
    return bucket;
  }

  /** Takes a free record for a level keyed (bookSide, price), indexes it in the empty `bucket` and adds it to its side's heap. */
  private createAt(bucket: number, hash: number, bookSide: number, price: number): number {
    if (this.freeTop === 0) this.growPool();
    const level = this.freeStack[--this.freeTop]!;
    const w = level << LEVEL_WORD_SHIFT;
    const f = level << LEVEL_FLOAT_SHIFT;
    const words = this.words;
    this.floats[f + LEVEL_PRICE_FLOAT] = price;
    this.floats[f + LEVEL_QUANTITY_FLOAT] = 0;
    this.floats[f + LEVEL_QUANTITY_FLOAT + 1] = 0;
    words[w + LEVEL_BOOK_SIDE_WORD] = bookSide;
    words[w + LEVEL_HEAD_WORD] = words[w + LEVEL_HEAD_WORD + 1] = -1;
    words[w + LEVEL_TAIL_WORD] = words[w + LEVEL_TAIL_WORD + 1] = -1;
    words[w + LEVEL_COUNT_WORD] = words[w + LEVEL_COUNT_WORD + 1] = 0;
    words[w + LEVEL_HASH_WORD] = hash;
    this.table[bucket * 2] = hash;
    this.table[bucket * 2 + 1] = level + 1;
    this.heapInsert(bookSide, level, (bookSide & 1) === 0 ? -price : price);
    return level;
  }

  /** Removes an empty level from its heap and the index and frees it. */
  destroy(level: number): void {
    const w = level << LEVEL_WORD_SHIFT;
    this.heapRemove(this.words[w + LEVEL_BOOK_SIDE_WORD]!, this.words[w + LEVEL_HEAP_POS_WORD]!);
    this.unindex(level);
    this.freeStack[this.freeTop++] = level;
  }

  /**
   * Walks a side's levels best first, calling visit(level) until it returns false
   * or the side is exhausted. O(k log k) for k visited levels: a frontier heap of
   * heap positions, ordered by key. For reads, not for matching.
   */
  walkBestFirst(bookSide: number, visit: (level: number) => boolean): void {
    const size = this.heapSize[bookSide]!;
    if (size === 0) return;
    const levels = this.heapLevels[bookSide]!;
    const keys = this.heapKeys[bookSide]!;
    const frontier: number[] = [0];
    while (frontier.length > 0) {
      const position = popMin(frontier, keys);
      if (!visit(levels[position]!)) return;
      const left = position * 2 + 1;
      if (left < size) pushMin(frontier, keys, left);
      if (left + 1 < size) pushMin(frontier, keys, left + 1);
    }
  }

  /**
   * The levels' state (persistence/engine-snapshot.ts): the record pool, its free stack and
   * the index as they are (laid out with this seed), and each book side's heap.
   */
  saveState(out: StateWriter): void {
    let live = 0;
    for (let side = 0; side < this.heapSize.length; side++) live += this.heapSize[side]!;
    const heapLevels = new Int32Array(live);
    const heapKeys = new Float64Array(live);
    for (let side = 0, at = 0; side < this.heapSize.length; side++) {
      const size = this.heapSize[side]!;
      heapLevels.set(this.heapLevels[side]!.subarray(0, size), at);
      heapKeys.set(this.heapKeys[side]!.subarray(0, size), at);
      at += size;
    }
    out.number('levels.capacity', this.capacity);
    out.array('levels.records', new Uint8Array(this.words.buffer));
    out.array('levels.free', this.freeStack.subarray(0, this.freeTop));
    out.array('levels.index', this.table);
    out.array('levels.heapSize', this.heapSize);
    out.array('levels.heapLevels', heapLevels);
    out.array('levels.heapKeys', heapKeys);
  }

  /** Takes the state saveState wrote into these levels, which must be fresh and of the same shape and seed. */
  loadState(input: StateReader): void {
    assert(this.liveCount === 0, 'loadState() needs fresh price levels');
    const capacity = input.number('levels.capacity');
    assert(Number.isInteger(capacity) && capacity >= 1 && capacity <= this.capacityMax, `price level state holds ${capacity} records of at most ${this.capacityMax}`);
    const buffer = new ArrayBuffer(capacity * LEVEL_RECORD_BYTES);
    input.into('levels.records', new Uint8Array(buffer));
    const freeTop = input.length('levels.free') / 4;
    assert(Number.isInteger(freeTop) && freeTop <= capacity, `price level state frees ${freeTop} of ${capacity} records`);
    const freeStack = new Int32Array(capacity);
    input.into('levels.free', freeStack.subarray(0, freeTop));
    // 'levels.index' (hash, level + 1 pairs) replaced 'levels.table' (level + 1 only):
    // a file of the older layout fails here by its section's name and the shard
    // replays its journal instead.
    const buckets = input.length('levels.index') / 8;
    assert(Number.isInteger(buckets) && buckets >= 2 && (buckets & (buckets - 1)) === 0 && buckets <= powerOfTwoAtLeast(this.capacityMax * 2), `price level state has an index of ${buckets} buckets`);
    const table = new Int32Array(buckets * 2);
    input.into('levels.index', table);
    input.into('levels.heapSize', this.heapSize);
    let live = 0;
    for (let side = 0; side < this.heapSize.length; side++) {
      assert(this.heapSize[side]! >= 0, `price level state has a heap of ${this.heapSize[side]} levels`);
      live += this.heapSize[side]!;
    }
    assert(live === capacity - freeTop, `price level state has ${live} levels in heaps and ${capacity - freeTop} in use`);
    const heapLevels = new Int32Array(live);
    const heapKeys = new Float64Array(live);
    input.into('levels.heapLevels', heapLevels);
    input.into('levels.heapKeys', heapKeys);
    checkLoadedLevels(new Int32Array(buffer), new Float64Array(buffer), freeStack.subarray(0, freeTop), table, this.heapSize, heapLevels, heapKeys, this.seed);
    for (let side = 0, at = 0; side < this.heapSize.length; side++) {
      const size = this.heapSize[side]!;
      if (size > this.heapLevels[side]!.length) {
        this.heapLevels[side] = new Int32Array(powerOfTwoAtLeast(size));
        this.heapKeys[side] = new Float64Array(powerOfTwoAtLeast(size));
      }
      this.heapLevels[side]!.set(heapLevels.subarray(at, at + size));
      this.heapKeys[side]!.set(heapKeys.subarray(at, at + size));
      at += size;
    }
    this.capacity = capacity;
    this.words = new Int32Array(buffer);
    this.floats = new Float64Array(buffer);
    this.freeStack = freeStack;
    this.freeTop = freeTop;
    this.table = table;
    this.mask = buckets - 1;
  }

  /** Doubles the record pool (rare, bounded by capacityMax); level ids stay valid. */
  private growPool(): void {
    const old = this.capacity;
    if (old === this.capacityMax) throw new Error('price level capacity exhausted: more levels than resting orders');
    const capacity = Math.min(old * 2, this.capacityMax);
    const buffer = new ArrayBuffer(capacity * LEVEL_RECORD_BYTES);
    new Uint8Array(buffer).set(new Uint8Array(this.words.buffer));
    this.words = new Int32Array(buffer);
    this.floats = new Float64Array(buffer);
    // Every old level is live (the stack was empty): the new ids are the free ones.
    this.freeStack = new Int32Array(capacity);
    for (let i = old; i < capacity; i++) this.freeStack[this.freeTop++] = capacity - 1 - (i - old);
    this.capacity = capacity;
  }

  /** Doubles the index (rare: when live levels pass half of it) and re-inserts every level by its kept hash. */
  private growTable(): void {
    const old = this.table;
    this.table = new Int32Array(old.length * 2);
    this.mask = old.length - 1;
    for (let i = 1; i < old.length; i += 2) {
      if (old[i] !== 0) {
        const bucket = this.emptyBucket(old[i - 1]!);
        this.table[bucket * 2] = old[i - 1]!;
        this.table[bucket * 2 + 1] = old[i]!;
      }
    }
  }

  /** Removes the level's bucket by backward shifting (no tombstones), using the hashes the buckets keep. */
  private unindex(level: number): void {
    const table = this.table;
    const mask = this.mask;
    let hole = this.words[(level << LEVEL_WORD_SHIFT) + LEVEL_HASH_WORD]! & mask;
    while (table[hole * 2 + 1] !== level + 1) {
      if (table[hole * 2 + 1] === 0) throw new Error(`price level ${level} is not indexed`);
      hole = (hole + 1) & mask;
    }
    let probe = hole;
    for (;;) {
      probe = (probe + 1) & mask;
      const entry = table[probe * 2 + 1]!;
      if (entry === 0) break;
      const home = table[probe * 2]! & mask;
      // Move the entry back into the hole unless its home lies cyclically in (hole, probe].
      const homeInRange = hole <= probe ? home > hole && home <= probe : home > hole || home <= probe;
      if (!homeInRange) {
        table[hole * 2] = table[probe * 2]!;
        table[hole * 2 + 1] = entry;
        hole = probe;
      }
    }
    table[hole * 2] = 0;
    table[hole * 2 + 1] = 0;
  }

  private heapInsert(bookSide: number, level: number, key: number): void {
    const size = this.heapSize[bookSide]!;
    let levels = this.heapLevels[bookSide]!;
    let keys = this.heapKeys[bookSide]!;
    if (size === levels.length) {
      // Doubling: amortised O(1); bounded by the level capacity. The first level of a side: a heap of its own.
      const grownLevels = new Int32Array(Math.max(HEAP_INITIAL, size * 2));
      const grownKeys = new Float64Array(Math.max(HEAP_INITIAL, size * 2));
      grownLevels.set(levels);
      grownKeys.set(keys);
      this.heapLevels[bookSide] = levels = grownLevels;
      this.heapKeys[bookSide] = keys = grownKeys;
    }
    this.heapSize[bookSide] = size + 1;
    this.siftUp(levels, keys, size, level, key);
  }

  private heapRemove(bookSide: number, position: number): void {
    const size = this.heapSize[bookSide]! - 1;
    this.heapSize[bookSide] = size;
    if (position === size) return;
    const levels = this.heapLevels[bookSide]!;
    const keys = this.heapKeys[bookSide]!;
    const movedLevel = levels[size]!;
    const movedKey = keys[size]!;
    if (position > 0 && movedKey < keys[(position - 1) >> 1]!) {
      this.siftUp(levels, keys, position, movedLevel, movedKey);
    } else {
      this.siftDown(levels, keys, size, position, movedLevel, movedKey);
    }
  }

  private siftUp(levels: Int32Array, keys: Float64Array, position: number, level: number, key: number): void {
    const words = this.words;
    while (position > 0) {
      const parent = (position - 1) >> 1;
      const parentKey = keys[parent]!;
      if (parentKey <= key) break;
      const parentLevel = levels[parent]!;
      levels[position] = parentLevel;
      keys[position] = parentKey;
      words[(parentLevel << LEVEL_WORD_SHIFT) + LEVEL_HEAP_POS_WORD] = position;
      position = parent;
    }
    levels[position] = level;
    keys[position] = key;
    words[(level << LEVEL_WORD_SHIFT) + LEVEL_HEAP_POS_WORD] = position;
  }

  private siftDown(levels: Int32Array, keys: Float64Array, size: number, position: number, level: number, key: number): void {
    const words = this.words;
    for (;;) {
      let child = position * 2 + 1;
      if (child >= size) break;
      if (child + 1 < size && keys[child + 1]! < keys[child]!) child++;
      const childKey = keys[child]!;
      if (childKey >= key) break;
      const childLevel = levels[child]!;
      levels[position] = childLevel;
      keys[position] = childKey;
      words[(childLevel << LEVEL_WORD_SHIFT) + LEVEL_HEAP_POS_WORD] = position;
      position = child;
    }
    levels[position] = level;
    keys[position] = key;
    words[(level << LEVEL_WORD_SHIFT) + LEVEL_HEAP_POS_WORD] = position;
  }
}

/**
 * What loaded levels must satisfy, checked once at load (O(records + buckets)): free
 * records are distinct and empty; the index holds each live level once, under its key's
 * hash, where a probe for its key reaches it; each side's heap holds that side's live
 * levels once, in heap order, each knowing its position.
 */
function checkLoadedLevels(words: Int32Array, floats: Float64Array, free: Int32Array, table: Int32Array, heapSize: Int32Array, heapLevels: Int32Array, heapKeys: Float64Array, seed: number): void {
  const capacity = words.length >> LEVEL_WORD_SHIFT;
  const live = capacity - free.length;
  // Per record: 0 unseen, 1 free, 2 indexed, 3 in a heap.
  const mark = new Uint8Array(capacity);
  for (let k = 0; k < free.length; k++) {
    const level = free[k]!;
    if (level < 0 || level >= capacity) fail(`price level state: free entry ${k} names level ${level} of ${capacity}`);
    if (mark[level] !== 0) fail(`price level state: level ${level} is free twice`);
    mark[level] = 1;
    const w = (level << LEVEL_WORD_SHIFT) + LEVEL_COUNT_WORD;
    if (words[w] !== 0 || words[w + 1] !== 0) fail(`price level state: free level ${level} holds orders`);
  }
  const buckets = table.length >> 1;
  const mask = buckets - 1;
  assert(live * 2 <= buckets, `price level state: ${live} live levels in an index of ${buckets} buckets`);
  let indexed = 0;
  for (let bucket = 0; bucket < buckets; bucket++) {
    const entry = table[bucket * 2 + 1]!;
    if (entry === 0) continue;
    const level = entry - 1;
    if (level < 0 || level >= capacity) fail(`price level state: index bucket ${bucket} names level ${level} of ${capacity}`);
    if (mark[level] !== 0) fail(`price level state: index bucket ${bucket} names level ${level}, free or indexed before`);
    mark[level] = 2;
    indexed++;
    const w = level << LEVEL_WORD_SHIFT;
    const hash = hashPrice(floats[(level << LEVEL_FLOAT_SHIFT) + LEVEL_PRICE_FLOAT]!, words[w + LEVEL_BOOK_SIDE_WORD]! ^ seed);
    if (words[w + LEVEL_HASH_WORD] !== hash || table[bucket * 2] !== hash) fail(`price level state: level ${level} keeps a hash that is not its key's`);
    for (let probe = hash & mask; probe !== bucket; probe = (probe + 1) & mask) {
      if (table[probe * 2 + 1] === 0) fail(`price level state: level ${level} lies past an empty bucket of its probe`);
    }
  }
  assert(indexed === live, `price level state: ${indexed} levels indexed of ${live} live`);
  for (let side = 0, at = 0; side < heapSize.length; side++) {
    const size = heapSize[side]!;
    for (let position = 0; position < size; position++, at++) {
      const level = heapLevels[at]!;
      if (level < 0 || level >= capacity || mark[level] !== 2) fail(`price level state: heap of book side ${side} names level ${level}, not live or in a heap before`);
      mark[level] = 3;
      const w = level << LEVEL_WORD_SHIFT;
      if (words[w + LEVEL_BOOK_SIDE_WORD] !== side) fail(`price level state: level ${level} of book side ${words[w + LEVEL_BOOK_SIDE_WORD]} is in the heap of side ${side}`);
      if (words[w + LEVEL_HEAP_POS_WORD] !== position) fail(`price level state: level ${level} is at heap position ${position}, not ${words[w + LEVEL_HEAP_POS_WORD]}`);
      const price = floats[(level << LEVEL_FLOAT_SHIFT) + LEVEL_PRICE_FLOAT]!;
      if (heapKeys[at] !== ((side & 1) === 0 ? -price : price)) fail(`price level state: level ${level} has heap key ${heapKeys[at]} for price ${price}`);
      if (position > 0 && heapKeys[at - position + ((position - 1) >> 1)]! > heapKeys[at]!) fail(`price level state: the heap of book side ${side} is out of order at position ${position}`);
      if (words[w + LEVEL_COUNT_WORD] === 0 && words[w + LEVEL_COUNT_WORD + 1] === 0) fail(`price level state: live level ${level} holds no order`);
    }
  }
}

function pushMin(frontier: number[], keys: Float64Array, position: number): void {
  let i = frontier.length;
  frontier.push(position);
  const key = keys[position]!;
  while (i > 0) {
    const parent = (i - 1) >> 1;
    const parentPosition = frontier[parent]!;
    if (keys[parentPosition]! <= key) break;
    frontier[i] = parentPosition;
    i = parent;
  }
  frontier[i] = position;
}

function popMin(frontier: number[], keys: Float64Array): number {
  const top = frontier[0]!;
  const last = frontier.pop()!;
  const size = frontier.length;
  if (size === 0) return top;
  const key = keys[last]!;
  let i = 0;
  for (;;) {
    let child = i * 2 + 1;
    if (child >= size) break;
    if (child + 1 < size && keys[frontier[child + 1]!]! < keys[frontier[child]!]!) child++;
    if (keys[frontier[child]!]! >= key) break;
    frontier[i] = frontier[child]!;
    i = child;
  }
  frontier[i] = last;
  return top;
}
