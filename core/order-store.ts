// Order storage for one shard: fixed 64-byte records (one cache line per order)
// in one ArrayBuffer, a count of the slots handed out, a FIFO of retired (terminal)
// orders and an open-addressed index from orderId to slot. Everything is allocated
// once, at start-up; submitting an order writes into a record and allocates nothing.
//
// Record layout (byte offset, and index in the Int32 / Float64 / Uint8 view):
//
//    0 orderId 16 bytes     W 0..3      32 side, orderType,     B 32..35
//   16 book i32             W 4            timeInForce, state u8
//   20 level i32            W 5         36 owner i32            W 9
//   24 prev i32             W 6         40 run i32              W 10
//   28 next i32             W 7         44 session i32          W 11
//                                       48 quantity i32         W 12
//                                       52 filled i32           W 13
//                                       56 price f64            F 7
//
// Quantities fit in 32 bits (QUANTITY_UNITS_MAX = 1e9 < 2^31). The engine order
// number, read only for outcomes, lives in a side array.
//
// Terminal orders stay indexed (so a late cancel answers ORDER_NOT_OPEN and a
// reused orderId answers DUPLICATE_ORDER_ID) until their record is needed again:
// when every slot has been handed out the oldest retired order is evicted. Only
// when every record holds a resting order is the shard full.
//
// Memory latency, not arithmetic, bounds matching on a large book (a dependent
// miss costs 130-210 ns on this machine, bench/results/core.json notes), so
// prefetch() lets the caller load, for a batch of queued commands, the lines the
// batch will read (index buckets and named records; not the lines it only writes),
// with independent loads the CPU overlaps.

import { assert, fail } from './assert.ts';
import { STATE_EXPIRED, STATE_FILLED, STATE_FREE } from './codes.ts';
import type { StateReader, StateWriter } from './engine-state.ts';
import { hashWords, powerOfTwoAtLeast } from './hash.ts';

export const ORDER_RECORD_BYTES = 64;
/** Shift from slot to the record's first Int32 word / Float64 / byte. */
export const ORDER_WORD_SHIFT = 4;
export const ORDER_FLOAT_SHIFT = 3;
export const ORDER_BYTE_SHIFT = 6;

// Field offsets are plain exported constants, not properties of a constant object:
// TurboFan folds an imported const to an immediate, while `Layout.FIELD` stayed a
// property load on every access (submit + cancel went from 178 to 151 ns/command in
// a cached micro-benchmark when the objects were replaced).
export const ORDER_ID_WORD = 0;
export const ORDER_BOOK_WORD = 4;
export const ORDER_LEVEL_WORD = 5;
export const ORDER_PREV_WORD = 6;
export const ORDER_NEXT_WORD = 7;
export const ORDER_OWNER_WORD = 9;
export const ORDER_RUN_WORD = 10;
export const ORDER_SESSION_WORD = 11;
export const ORDER_QUANTITY_WORD = 12;
export const ORDER_FILLED_WORD = 13;
export const ORDER_PRICE_FLOAT = 7;
export const ORDER_SIDE_BYTE = 32;
export const ORDER_TYPE_BYTE = 33;
export const ORDER_TIME_IN_FORCE_BYTE = 34;
export const ORDER_STATE_BYTE = 35;

/**
 * Bytes left unused before the first record, so that each record sits on one cache
 * line. Node allocates an ArrayBuffer with calloc, and glibc serves a block this large
 * with its own mapping, handing out the address 16 bytes past a page boundary (its
 * chunk header): records from byte 0 would each straddle two lines, and a cancel or a
 * fill would miss twice. 48 bytes on puts them on line boundaries. Measured on the
 * core compare stream (1 M commands fed as a shard, medians of 5, four interleaved
 * pairs): 4.10 M/s from byte 0, 4.35 M/s from byte 48. Another allocator only loses
 * the gain; nothing depends on the alignment for correctness.
 */
export const RECORDS_SKIP_BYTES = 48;

/** Commands looked ahead by one prefetch() call at most. */
export const PREFETCH_BATCH_MAX = 64;

/** Where each part of an order store of `capacity` lies in one buffer (OrderStore's `memory`), 8-byte aligned. */
function orderStoreLayout(capacity: number) {
  const align = (n: number) => Math.ceil(n / 8) * 8;
  const tableSize = powerOfTwoAtLeast(capacity * 2);
  const recordBytes = RECORDS_SKIP_BYTES + capacity * ORDER_RECORD_BYTES;
  const engineNoAt = align(recordBytes);
  const retiredAt = engineNoAt + capacity * 8;
  const tableAt = align(retiredAt + capacity * 4);
  return { tableSize, recordBytes, engineNoAt, retiredAt, tableAt, bytes: tableAt + tableSize * 8 };
}

/** The bytes an OrderStore of `capacity` takes when it is given its memory. */
export function orderStoreBytes(capacity: number): number {
  return orderStoreLayout(capacity).bytes;
}

export class OrderStore {
  readonly capacity: number;
  readonly words: Int32Array;
  readonly floats: Float64Array;
  readonly bytes: Uint8Array;
  /** Engine order number per slot (the sequence of the event that accepted it). */
  readonly engineNo: Float64Array;

  /**
   * Slots ever handed out: slots [0, used) hold an order (resting or retired), the rest
   * are free. A slot never returns to the free part (a terminal order is retired and its
   * slot reused from there), so a counter is the whole free list.
   */
  private used = 0;
  private readonly retired: Int32Array;
  private retiredHead = 0;
  private retiredCount = 0;
  /** Index: per bucket [hash of the id, slot + 1 (0 = empty)]; linear probing, load <= 0.5. */
  private readonly table: Int32Array;
  private readonly mask: number;
  private missHash = 0;
  private missBucket = -1;
  private readonly prefetched = new Int32Array(PREFETCH_BATCH_MAX);
  /** Written by prefetch() so that its loads cannot be optimised away. */
  prefetchSink = 0;

  /** Mixed into every hash: a process-random seed keeps crafted ids from colliding. */
  private readonly seed: number;
  /** Whether the store lives in memory it was given (constructor), not its own. */
  private readonly given: boolean;

  /**
   * `memory`: where the store lives, if given (orderStoreBytes(capacity) bytes, all zero):
   * a venue's main thread allocates it and faults it in after the venue is ready
   * (runtime/prefault.ts); else the store allocates its own.
   */
  constructor(capacity: number, seed = 0, memory?: SharedArrayBuffer) {
    this.seed = seed | 0;
    if (!Number.isInteger(capacity) || capacity < 1 || capacity > 1 << 26) {
      throw new RangeError(`order capacity must be an integer in [1, 2^26], got ${capacity}`);
    }
    this.capacity = capacity;
    const layout = orderStoreLayout(capacity);
    if (memory !== undefined && memory.byteLength !== layout.bytes) {
      throw new RangeError(`an order store of capacity ${capacity} takes ${layout.bytes} bytes, ${memory.byteLength} given`);
    }
    this.given = memory !== undefined;
    const buffer = memory ?? new ArrayBuffer(layout.recordBytes);
    this.words = new Int32Array(buffer, RECORDS_SKIP_BYTES, capacity * (ORDER_RECORD_BYTES >> 2));
    this.floats = new Float64Array(buffer, RECORDS_SKIP_BYTES, capacity * (ORDER_RECORD_BYTES >> 3));
    this.bytes = new Uint8Array(buffer, RECORDS_SKIP_BYTES, capacity * ORDER_RECORD_BYTES);
    this.engineNo = memory === undefined ? new Float64Array(capacity) : new Float64Array(memory, layout.engineNoAt, capacity);
    this.retired = memory === undefined ? new Int32Array(capacity) : new Int32Array(memory, layout.retiredAt, capacity);
    this.table = memory === undefined ? new Int32Array(layout.tableSize * 2) : new Int32Array(memory, layout.tableAt, layout.tableSize * 2);
    this.mask = layout.tableSize - 1;
  }

  /**
   * Touches every page of the store once. Fresh ArrayBuffers are mapped lazily, so
   * without this the first use of each 4 KiB page faults on the matching path
   * (costly in a VM); a venue calls it at start-up, before taking orders.
   */
  prefault(): void {
    if (this.used !== 0) throw new Error('prefault() must run before the first order');
    if (this.given) return; // its owner faults it in (a venue's main thread, after ready: server.ts)
    for (const view of [this.bytes, this.engineNo, this.retired, this.table]) {
      new Uint8Array(view.buffer, view.byteOffset, view.byteLength).fill(0);
    }
  }

  /** Orders that are neither free nor retired: the resting orders. */
  get restingCount(): number {
    return this.used - this.retiredCount;
  }

  /** Slots ever handed out (each holds a resting or a retired order); the slots past it are free. */
  get slotsInUse(): number {
    return this.used;
  }

  get retainedTerminalCount(): number {
    return this.retiredCount;
  }

  /** True when allocate() would succeed. */
  canAllocate(): boolean {
    return this.used < this.capacity || this.retiredCount > 0;
  }

  // Field accessors for code off the matching path (queries, encoders, tests).
  state(slot: number): number {
    return this.bytes[(slot << ORDER_BYTE_SHIFT) + ORDER_STATE_BYTE]!;
  }
  side(slot: number): number {
    return this.bytes[(slot << ORDER_BYTE_SHIFT) + ORDER_SIDE_BYTE]!;
  }
  orderType(slot: number): number {
    return this.bytes[(slot << ORDER_BYTE_SHIFT) + ORDER_TYPE_BYTE]!;
  }
  timeInForce(slot: number): number {
    return this.bytes[(slot << ORDER_BYTE_SHIFT) + ORDER_TIME_IN_FORCE_BYTE]!;
  }
  word(slot: number, field: number): number {
    return this.words[(slot << ORDER_WORD_SHIFT) + field]!;
  }
  price(slot: number): number {
    return this.floats[(slot << ORDER_FLOAT_SHIFT) + ORDER_PRICE_FLOAT]!;
  }
  quantity(slot: number): number {
    return this.words[(slot << ORDER_WORD_SHIFT) + ORDER_QUANTITY_WORD]!;
  }
  filled(slot: number): number {
    return this.words[(slot << ORDER_WORD_SHIFT) + ORDER_FILLED_WORD]!;
  }
  /** Int32 index of the orderId's first word. */
  idAt(slot: number): number {
    return slot << ORDER_WORD_SHIFT;
  }

  /**
   * Slot of the order with this id, or -1. A miss remembers where the id would go,
   * so index() right after it (the submit path) does not probe again.
   */
  find(a: number, b: number, c: number, d: number): number {
    const words = this.words;
    const table = this.table;
    const mask = this.mask;
    const hash = hashWords(a ^ this.seed, b, c, d);
    let bucket = hash & mask;
    for (;;) {
      const entry = table[bucket * 2 + 1]!;
      if (entry === 0) {
        this.missHash = hash;
        this.missBucket = bucket;
        return -1;
      }
      // The stored hash screens out other ids without touching their records.
      if (table[bucket * 2] === hash) {
        const at = (entry - 1) << ORDER_WORD_SHIFT;
        if (words[at] === a && words[at + 1] === b && words[at + 2] === c && words[at + 3] === d) return entry - 1;
      }
      bucket = (bucket + 1) & mask;
    }
  }

  /**
   * A slot for a new order, evicting the oldest retired order if no slot is free;
   * -1 when every slot holds a resting order. The caller writes the id words and
   * then calls index().
   */
  allocate(): number {
    if (this.used < this.capacity) return this.used++;
    if (this.retiredCount === 0) return -1;
    const slot = this.retired[this.retiredHead]!;
    this.retiredHead = this.retiredHead + 1 === this.capacity ? 0 : this.retiredHead + 1;
    this.retiredCount--;
    this.unindex(slot);
    this.bytes[(slot << ORDER_BYTE_SHIFT) + ORDER_STATE_BYTE] = STATE_FREE;
    return slot;
  }

  /**
   * Adds a slot whose id words are written to the index. The id must be new and
   * find() must have just missed on it (its probe position is reused).
   */
  index(slot: number): void {
    let bucket = this.missBucket;
    if (bucket < 0) {
      // No find() right before (an eviction keeps its position valid): probe.
      const at = slot << ORDER_WORD_SHIFT;
      const words = this.words;
      if (this.find(words[at]!, words[at + 1]!, words[at + 2]!, words[at + 3]!) >= 0) {
        throw new Error(`order slot ${slot} is already indexed`);
      }
      bucket = this.missBucket;
    }
    this.table[bucket * 2] = this.missHash;
    this.table[bucket * 2 + 1] = slot + 1;
    this.missBucket = -1;
  }

  /** Marks a terminal order retired: it stays findable until its slot is reused. */
  retire(slot: number): void {
    let tail = this.retiredHead + this.retiredCount;
    if (tail >= this.capacity) tail -= this.capacity;
    this.retired[tail] = slot;
    this.retiredCount++;
  }

  /**
   * Touches what the next `count` command slots (orderId at words[idAt + k *
   * strideWords]) will need: their index buckets, the records they name, and the
   * records and buckets of the orders the next allocations would evict. A hint only:
   * it changes no state.
   *
   * Not the named records' queue neighbours: unlinking a cancelled order only writes
   * to them, and a store that misses does not hold the CPU up as a load does. Loading
   * them here saved nothing (core compare stream as a shard feeds it, six interleaved
   * pairs of five runs: medians 4.82 M/s with them, 4.96 without).
   */
  prefetch(commandWords: Int32Array, idAt: number, count: number, strideWords: number): void {
    const n = count < PREFETCH_BATCH_MAX ? count : PREFETCH_BATCH_MAX;
    const table = this.table;
    const mask = this.mask;
    const words = this.words;
    const at = this.prefetched;
    let sink = 0;
    // Each stage first computes its addresses (no misses), then loads them in a loop
    // of a few instructions: the CPU can only overlap the misses its reorder window
    // holds, and a hash between two loads filled that window with arithmetic.
    // Stage 1: index buckets.
    for (let k = 0; k < n; k++) {
      const c = idAt + k * strideWords;
      at[k] = ((hashWords(commandWords[c]! ^ this.seed, commandWords[c + 1]!, commandWords[c + 2]!, commandWords[c + 3]!) & mask) << 1) + 1;
    }
    for (let k = 0; k < n; k++) at[k] = table[at[k]!]!;
    // Stage 2: records named by the commands.
    let records = 0;
    for (let k = 0; k < n; k++) {
      const entry = at[k]!;
      if (entry > 0) at[records++] = (entry - 1) << ORDER_WORD_SHIFT;
    }
    for (let k = 0; k < records; k++) sink += words[at[k]!]!;
    // Eviction candidates: the next allocations' index buckets.
    if (this.capacity - this.used < n) {
      let head = this.retiredHead;
      const evictions = n < this.retiredCount ? n : this.retiredCount;
      for (let k = 0; k < evictions; k++) {
        const r = this.retired[head]! << ORDER_WORD_SHIFT;
        head = head + 1 === this.capacity ? 0 : head + 1;
        sink += table[(hashWords(words[r]! ^ this.seed, words[r + 1]!, words[r + 2]!, words[r + 3]!) & mask) * 2]!;
      }
    }
    this.prefetchSink = sink;
  }

  /**
   * The store's state (persistence/engine-snapshot.ts): the records and engine numbers of the
   * slots ever handed out, the retired orders oldest first, and the index as laid out
   * (with this store's seed). The free slots are the ones past `used`.
   */
  saveState(out: StateWriter): void {
    const used = this.used;
    const retired = new Int32Array(this.retiredCount);
    for (let k = 0, at = this.retiredHead; k < this.retiredCount; k++, at = at + 1 === this.capacity ? 0 : at + 1) retired[k] = this.retired[at]!;
    out.number('orders.used', used);
    out.array('orders.records', this.bytes.subarray(0, used * ORDER_RECORD_BYTES));
    out.array('orders.engineNo', this.engineNo.subarray(0, used));
    out.array('orders.retired', retired);
    out.array('orders.table', this.table);
  }

  /** Takes the state saveState wrote into this store, which must be fresh and of the same capacity and seed. */
  loadState(input: StateReader): void {
    assert(this.used === 0, 'loadState() needs a fresh order store');
    const used = input.number('orders.used');
    assert(Number.isInteger(used) && used >= 0 && used <= this.capacity, `order store state holds ${used} slots of ${this.capacity}`);
    input.into('orders.records', this.bytes.subarray(0, used * ORDER_RECORD_BYTES));
    input.into('orders.engineNo', this.engineNo.subarray(0, used));
    const retiredCount = input.length('orders.retired') / 4;
    assert(Number.isInteger(retiredCount) && retiredCount <= used, `order store state retires ${retiredCount} of ${used} slots`);
    input.into('orders.retired', this.retired.subarray(0, retiredCount));
    input.into('orders.table', this.table);
    this.checkLoaded(used, retiredCount);
    this.used = used;
    this.retiredHead = 0;
    this.retiredCount = retiredCount;
    this.missBucket = -1;
  }

  /**
   * What a loaded state must satisfy, checked once at load (O(slots in use + buckets)): each
   * slot in use holds a resting or a terminal order; the retired list is the terminal ones,
   * each once; the index holds each slot in use once, where a probe for its id reaches it.
   */
  private checkLoaded(used: number, retiredCount: number): void {
    const bytes = this.bytes;
    const words = this.words;
    // Each id's hash, taken in slot order (the records read in order), for the index's check
    // below to read from a small array rather than from the records.
    const hashes = new Int32Array(used);
    let terminal = 0;
    for (let slot = 0; slot < used; slot++) {
      const state = bytes[(slot << ORDER_BYTE_SHIFT) + ORDER_STATE_BYTE]!;
      if (state === STATE_FREE || state > STATE_EXPIRED) fail(`order store state: slot ${slot} holds state ${state}`);
      if (state >= STATE_FILLED) terminal++;
      const at = slot << ORDER_WORD_SHIFT;
      hashes[slot] = hashWords(words[at]! ^ this.seed, words[at + 1]!, words[at + 2]!, words[at + 3]!);
    }
    assert(terminal === retiredCount, `order store state: ${terminal} terminal orders but ${retiredCount} retired`);
    const seen = new Uint8Array(used);
    for (let k = 0; k < retiredCount; k++) {
      const slot = this.retired[k]!;
      if (slot < 0 || slot >= used) fail(`order store state: retired entry ${k} names slot ${slot} of ${used}`);
      if (seen[slot] !== 0) fail(`order store state: slot ${slot} is retired twice`);
      if (bytes[(slot << ORDER_BYTE_SHIFT) + ORDER_STATE_BYTE]! < STATE_FILLED) fail(`order store state: retired slot ${slot} holds a resting order`);
      seen[slot] = 1;
    }
    // The index holds each slot in use once, under its id's hash, and a probe from that hash
    // reaches it past no empty bucket and no other slot of the same id.
    seen.fill(0);
    const table = this.table;
    const mask = this.mask;
    let indexed = 0;
    for (let bucket = 0; bucket <= mask; bucket++) {
      const entry = table[bucket * 2 + 1]!;
      if (entry === 0) continue;
      const slot = entry - 1;
      if (slot < 0 || slot >= used) fail(`order store state: index bucket ${bucket} names slot ${slot} of ${used}`);
      if (seen[slot] !== 0) fail(`order store state: slot ${slot} is indexed twice`);
      seen[slot] = 1;
      indexed++;
      const hash = hashes[slot]!;
      if (table[bucket * 2] !== hash) fail(`order store state: index bucket ${bucket} keeps a hash that is not slot ${slot}'s id's`);
      for (let probe = hash & mask; probe !== bucket; probe = (probe + 1) & mask) {
        const other = table[probe * 2 + 1]!;
        if (other === 0) fail(`order store state: slot ${slot} lies past an empty bucket of its probe`);
        if (table[probe * 2] === hash && this.sameId(other - 1, slot)) fail(`order store state: slots ${other - 1} and ${slot} hold the same id`);
      }
    }
    assert(indexed === used, `order store state: ${indexed} slots indexed of ${used} in use`);
  }

  private sameId(a: number, b: number): boolean {
    const words = this.words;
    const x = a << ORDER_WORD_SHIFT;
    const y = b << ORDER_WORD_SHIFT;
    return words[x] === words[y] && words[x + 1] === words[y + 1] && words[x + 2] === words[y + 2] && words[x + 3] === words[y + 3];
  }

  /** Removes a slot from the index (backward-shift deletion keeps probes short). */
  private unindex(slot: number): void {
    const words = this.words;
    const table = this.table;
    const mask = this.mask;
    const at = slot << ORDER_WORD_SHIFT;
    let hole = hashWords(words[at]! ^ this.seed, words[at + 1]!, words[at + 2]!, words[at + 3]!) & mask;
    while (table[hole * 2 + 1] !== slot + 1) {
      if (table[hole * 2 + 1] === 0) throw new Error(`order slot ${slot} is not indexed`);
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
    // A submit's find() remembered where its new id goes: the first empty bucket from
    // the id's home. A deletion empties only its final hole (entries move back into
    // holes, never into an empty bucket), so that position stays right unless the hole
    // now lies between the home and it, and then the hole is the first empty bucket.
    // This spares a submit that evicts a second hash and probe in index().
    const miss = this.missBucket;
    if (miss >= 0) {
      const home = this.missHash & mask;
      const holeBefore = home <= miss ? hole >= home && hole < miss : hole >= home || hole < miss;
      if (holeBefore) this.missBucket = hole;
    }
  }
}
