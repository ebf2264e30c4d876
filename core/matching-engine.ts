// The matching engine of one shard: every book of the instruments the shard owns,
// driven one command slot at a time. Pure: no I/O, no clock (time is a field of the
// command), no randomness, so the same command sequence always produces the same
// events; recovery by replay and the property test rely on that.
//
// Rules (price-time priority):
//  - an incoming order executes against the best opposite price first, and within
//    a price against displayed orders oldest first, then hidden orders oldest first
//    (displayed before hidden at the same price, whatever their age);
//  - every execution is at the resting order's price;
//  - an IOC remainder is cancelled, a DAY remainder rests at the back of its queue;
//  - modify: same price and a lower (or equal) total quantity keeps the order's
//    place; a price change or a quantity increase re-enters it at the back and, if
//    it now crosses, it matches as the incoming order;
//  - cancel and modify compare the full order context first (ORDER_CONTEXT_MISMATCH),
//    then the order's state (ORDER_NOT_OPEN);
//  - session expiry: an EXPIRE command raises the session floor (session numbers only
//    grow) and expires, in the range of order slots it names, every resting DAY order
//    stamped with a session below the floor (state EXPIRED, one event each). A submit
//    stamped with an ended session that arrives after the roll is not carried out
//    (SESSION_ENDED: command status FAILED).
//
// The class holds the books and runs order entry (submit); the rest of a command is plain
// functions of its parts, kept monomorphic: core/matching-loop.ts, core/cancel-modify.ts,
// core/expire-orders.ts and core/engine-events.ts (the events each writes).

import { assert } from './assert.ts';
import { cancel, modify } from './cancel-modify.ts';
import * as commandSlot from './command-slot.ts';
import { RejectCode } from './codes.ts';
import * as codes from './codes.ts';
import { beginAccepted, finishAccepted, reject } from './engine-events.ts';
import type { EngineShape, StateReader, StateWriter } from './engine-state.ts';
import { checkLoadedBooks, checkLoadedOrders } from './engine-state-checks.ts';
import { EventBuffer } from './event-buffer.ts';
import { expire, restingDayOrdersBefore } from './expire-orders.ts';
import { isValidPriceNanos, isValidQuantityUnits } from './fixed-point.ts';
import { hashWords, powerOfTwoAtLeast } from './hash.ts';
import { execute } from './matching-loop.ts';
import { OrderStore } from './order-store.ts';
import * as orderStore from './order-store.ts';
import { OwnerRegistry } from './owner-registry.ts';
import { PriceLevels } from './price-levels.ts';

// Hot-path constants re-bound as module-local consts. V8 11 (Node 20) does not fold
// a constant imported from another module: every use loads the module's cell. A
// module-local const is folded to an immediate. Measured on a cached micro-benchmark
// (submit + cancel on a small book): 178 -> 151 ns per command.
const COMMAND_ACCOUNT_ID_WORD = commandSlot.COMMAND_ACCOUNT_ID_WORD;
const COMMAND_ARGUMENT_WORD = commandSlot.COMMAND_ARGUMENT_WORD;
const COMMAND_CURRENCY_WORD = commandSlot.COMMAND_CURRENCY_WORD;
const COMMAND_HEADER_WORD = commandSlot.COMMAND_HEADER_WORD;
const COMMAND_INSTRUMENT_ID_WORD = commandSlot.COMMAND_INSTRUMENT_ID_WORD;
const COMMAND_ORDER_ID_WORD = commandSlot.COMMAND_ORDER_ID_WORD;
const COMMAND_PARTICIPANT_ID_WORD = commandSlot.COMMAND_PARTICIPANT_ID_WORD;
const COMMAND_PRICE_NANOS_FLOAT = commandSlot.COMMAND_PRICE_NANOS_FLOAT;
const COMMAND_QUANTITY_UNITS_FLOAT = commandSlot.COMMAND_QUANTITY_UNITS_FLOAT;
const COMMAND_RUN_WORD = commandSlot.COMMAND_RUN_WORD;
const COMMAND_SESSION_WORD = commandSlot.COMMAND_SESSION_WORD;
const COMMAND_SLOT_WORDS = commandSlot.COMMAND_SLOT_WORDS;
/** Int32 words in a 64-byte cache line: a command slot (128 bytes) is two of them. */
const CACHE_LINE_WORDS = 16;
const OPCODE_CANCEL = codes.OPCODE_CANCEL;
const OPCODE_EXPIRE = codes.OPCODE_EXPIRE;
const OPCODE_MODIFY = codes.OPCODE_MODIFY;
const OPCODE_REJECT = codes.OPCODE_REJECT;
const OPCODE_SUBMIT = codes.OPCODE_SUBMIT;
const ORDER_TYPE_LIMIT_HIDDEN = codes.ORDER_TYPE_LIMIT_HIDDEN;
const SIDE_SELL = codes.SIDE_SELL;
const STATE_OPEN = codes.STATE_OPEN;
const TIME_IN_FORCE_IOC = codes.TIME_IN_FORCE_IOC;
const ORDER_BOOK_WORD = orderStore.ORDER_BOOK_WORD;
const ORDER_BYTE_SHIFT = orderStore.ORDER_BYTE_SHIFT;
const ORDER_FILLED_WORD = orderStore.ORDER_FILLED_WORD;
const ORDER_FLOAT_SHIFT = orderStore.ORDER_FLOAT_SHIFT;
const ORDER_ID_WORD = orderStore.ORDER_ID_WORD;
const ORDER_LEVEL_WORD = orderStore.ORDER_LEVEL_WORD;
const ORDER_NEXT_WORD = orderStore.ORDER_NEXT_WORD;
const ORDER_OWNER_WORD = orderStore.ORDER_OWNER_WORD;
const ORDER_PREV_WORD = orderStore.ORDER_PREV_WORD;
const ORDER_PRICE_FLOAT = orderStore.ORDER_PRICE_FLOAT;
const ORDER_QUANTITY_WORD = orderStore.ORDER_QUANTITY_WORD;
const ORDER_RUN_WORD = orderStore.ORDER_RUN_WORD;
const ORDER_SESSION_WORD = orderStore.ORDER_SESSION_WORD;
const ORDER_SIDE_BYTE = orderStore.ORDER_SIDE_BYTE;
const ORDER_STATE_BYTE = orderStore.ORDER_STATE_BYTE;
const ORDER_TIME_IN_FORCE_BYTE = orderStore.ORDER_TIME_IN_FORCE_BYTE;
const ORDER_TYPE_BYTE = orderStore.ORDER_TYPE_BYTE;
const ORDER_WORD_SHIFT = orderStore.ORDER_WORD_SHIFT;
const PREFETCH_BATCH_MAX = orderStore.PREFETCH_BATCH_MAX;

export interface EngineOptions {
  /** Orders held per shard, resting plus retained terminal ones (default 2^21). */
  orderCapacity?: number;
  /** Instruments (books) per shard (default 4096). */
  instrumentCapacity?: number;
  /** Distinct (participantId, accountId) pairs per shard (default 65536). */
  ownerCapacity?: number;
  /** Sequence of the last event already issued (recovery continues from it). */
  lastSequence?: number;
  /**
   * Mixed into every hash table's hash. Tables decide only where an entry sits, never
   * what the engine outputs, so any seed gives the same events; a random one per
   * process keeps clients from crafting ids that all probe the same buckets.
   */
  hashSeed?: number;
  /** The order store's memory (orderStoreBytes(orderCapacity) bytes), faulted in ahead by whoever gives it; else allocated here. */
  orderMemory?: SharedArrayBuffer;
}

export const ORDER_CAPACITY_DEFAULT = 1 << 21;
export const INSTRUMENT_CAPACITY_DEFAULT = 4096;
export const OWNER_CAPACITY_DEFAULT = 65536;

export class MatchingEngine {
  readonly orders: OrderStore;
  readonly levels: PriceLevels;
  readonly owners: OwnerRegistry;
  readonly events: EventBuffer;
  readonly instrumentCapacity: number;
  private readonly hashSeed: number;
  /** Sequence of the last event issued; every event takes the next one. */
  sequence: number;
  /**
   * Orders stamped with a session number below it belong to ended sessions: raised by
   * EXPIRE commands (session numbers only grow over the venue's life), never lowered.
   */
  sessionFloor = 0;
  /** instrumentId words per book. */
  readonly instrument: Int32Array;
  /** Packed currency per book, fixed by the book's first order. */
  readonly currency: Int32Array;
  private bookCount = 0;
  private lastBook = 0;
  private readonly bookTable: Int32Array;
  private readonly bookMask: number;
  /** Written by prefetch() so that its loads of the command slots cannot be optimised away. */
  prefetchSink = 0;

  constructor(options: EngineOptions = {}) {
    const orderCapacity = options.orderCapacity ?? ORDER_CAPACITY_DEFAULT;
    this.instrumentCapacity = options.instrumentCapacity ?? INSTRUMENT_CAPACITY_DEFAULT;
    this.hashSeed = (options.hashSeed ?? 0) | 0;
    this.orders = new OrderStore(orderCapacity, this.hashSeed, options.orderMemory);
    this.owners = new OwnerRegistry(options.ownerCapacity ?? OWNER_CAPACITY_DEFAULT, this.hashSeed);
    // A level lives only while it holds a resting order: never more levels than orders.
    this.levels = new PriceLevels(orderCapacity, this.instrumentCapacity * 2, this.hashSeed);
    this.events = new EventBuffer(orderCapacity * 3 + 1);
    this.sequence = options.lastSequence ?? 0;
    this.instrument = new Int32Array(this.instrumentCapacity * 4);
    this.currency = new Int32Array(this.instrumentCapacity);
    const tableSize = powerOfTwoAtLeast(this.instrumentCapacity * 2);
    this.bookTable = new Int32Array(tableSize);
    this.bookMask = tableSize - 1;
  }

  get instrumentCount(): number {
    return this.bookCount;
  }

  get shape(): EngineShape {
    return { orderCapacity: this.orders.capacity, instrumentCapacity: this.instrumentCapacity, ownerCapacity: this.owners.capacity, hashSeed: this.hashSeed };
  }

  /** Everything that decides the engine's future events (persistence/engine-snapshot.ts); the event buffer is scratch. */
  saveState(out: StateWriter): void {
    out.number('sequence', this.sequence);
    out.number('sessionFloor', this.sessionFloor);
    out.number('books', this.bookCount);
    out.array('books.instrument', this.instrument.subarray(0, this.bookCount * 4));
    out.array('books.currency', this.currency.subarray(0, this.bookCount));
    out.array('books.table', this.bookTable);
    this.orders.saveState(out);
    this.levels.saveState(out);
    this.owners.saveState(out);
  }

  /** Takes the state saveState wrote into this engine, which must be fresh and of the same shape. */
  loadState(input: StateReader): void {
    assert(this.bookCount === 0 && this.sequence === 0, 'loadState() needs a fresh engine');
    const books = input.number('books');
    assert(Number.isInteger(books) && books >= 0 && books <= this.instrumentCapacity, `engine state holds ${books} books of ${this.instrumentCapacity}`);
    input.into('books.instrument', this.instrument.subarray(0, books * 4));
    input.into('books.currency', this.currency.subarray(0, books));
    input.into('books.table', this.bookTable);
    checkLoadedBooks(this.instrument, this.currency, books, this.bookTable, this.hashSeed);
    this.orders.loadState(input);
    this.levels.loadState(input);
    this.owners.loadState(input);
    const sequence = input.number('sequence');
    assert(Number.isSafeInteger(sequence) && sequence >= 0, `engine state holds sequence ${sequence}`);
    // A state written before session expiry existed has no floor: no session had ended.
    const sessionFloor = input.number('sessionFloor', 0);
    assert(Number.isSafeInteger(sessionFloor) && sessionFloor >= 0, `engine state holds session floor ${sessionFloor}`);
    checkLoadedOrders(this.orders, this.levels, this.owners.count, books, sequence);
    this.bookCount = books;
    this.lastBook = 0;
    this.sequence = sequence;
    this.sessionFloor = sessionFloor;
  }

  /**
   * Runs the command in the slot at byteOffset of the two views and leaves its
   * events in this.events. Returns the number of events.
   */
  process(words: Int32Array, floats: Float64Array, byteOffset: number): number {
    this.events.count = 0;
    const w = byteOffset >> 2;
    const opcode = words[w + COMMAND_HEADER_WORD]! & 0xff;
    if (opcode === OPCODE_SUBMIT) this.submit(words, floats, w, byteOffset >> 3);
    else if (opcode === OPCODE_CANCEL) cancel(this, words, w);
    else if (opcode === OPCODE_MODIFY) modify(this, words, floats, w, byteOffset >> 3);
    else if (opcode === OPCODE_REJECT) {
      const code = words[w + COMMAND_ARGUMENT_WORD]!;
      reject(this, -1, codes.isRejectCode(code) ? code : RejectCode.INVALID_COMMAND);
    } else if (opcode === OPCODE_EXPIRE) expire(this, words, w);
    else reject(this, -1, RejectCode.INVALID_COMMAND);
    return this.events.count;
  }

  /**
   * The outcome of a command the shard could not carry out (a failure code, 4xx): its
   * events are dropped and the sequence goes back to `sequenceBefore`, so the stream
   * stays gap-free; one rejection with `code` is the whole outcome.
   */
  failCommand(sequenceBefore: number, code: number): void {
    this.sequence = sequenceBefore;
    this.events.count = 0;
    reject(this, -1, code);
  }

  /** Faults in the engine's memory ahead of use (see OrderStore.prefault); call before trading. */
  prefault(): void {
    this.orders.prefault();
  }

  /**
   * Hint before processing `count` queued command slots starting at byteOffset:
   * loads, with independent accesses the CPU overlaps, the command slots themselves
   * and the order-index buckets and records the commands will touch. Changes no
   * state; process() is correct without it, only slower on a book larger than the
   * caches.
   *
   * The slots come first, in a loop of loads alone: each is two cache lines (three
   * where its buffer is not line-aligned, and the next slot's first load takes the
   * third), not yet in this core's cache (a gateway thread just wrote them, or, in
   * the benchmarks, a stream larger than the caches), and the order store's first
   * stage hashes each id between its loads, which let only a few of those misses
   * overlap. Measured on the core compare stream as a shard feeds it
   * (docs/decisions/0016-engine-prefetch.md).
   */
  prefetch(words: Int32Array, byteOffset: number, count: number): void {
    const n = count < PREFETCH_BATCH_MAX ? count : PREFETCH_BATCH_MAX;
    const first = byteOffset >> 2;
    let sink = 0;
    for (let k = 0; k < n; k++) {
      const w = first + k * COMMAND_SLOT_WORDS;
      sink += words[w]! + words[w + CACHE_LINE_WORDS]!;
    }
    this.prefetchSink = sink;
    this.orders.prefetch(words, first + COMMAND_ORDER_ID_WORD, count, COMMAND_SLOT_WORDS);
  }

  /** Book index of an instrument (its id as four words at words[at..]), or -1. */
  findBook(words: Int32Array, at: number): number {
    const a = words[at]!;
    const b = words[at + 1]!;
    const c = words[at + 2]!;
    const d = words[at + 3]!;
    const instrument = this.instrument;
    // Consecutive commands mostly name the same instrument: try the last one first.
    const last = this.lastBook << 2;
    if (instrument[last] === a && instrument[last + 1] === b && instrument[last + 2] === c && instrument[last + 3] === d) {
      if (this.lastBook < this.bookCount) return this.lastBook;
    }
    const table = this.bookTable;
    const mask = this.bookMask;
    let bucket = hashWords(a ^ this.hashSeed, b, c, d) & mask;
    for (;;) {
      const entry = table[bucket]!;
      if (entry === 0) return -1;
      const i = (entry - 1) << 2;
      if (instrument[i] === a && instrument[i + 1] === b && instrument[i + 2] === c && instrument[i + 3] === d) {
        this.lastBook = entry - 1;
        return entry - 1;
      }
      bucket = (bucket + 1) & mask;
    }
  }

  /** Adds a book; the caller checked the instrument capacity. */
  private createBook(words: Int32Array, at: number, currency: number): number {
    const book = this.bookCount++;
    const i = book << 2;
    this.instrument[i] = words[at]!;
    this.instrument[i + 1] = words[at + 1]!;
    this.instrument[i + 2] = words[at + 2]!;
    this.instrument[i + 3] = words[at + 3]!;
    this.currency[book] = currency;
    const mask = this.bookMask;
    let bucket = hashWords(words[at]! ^ this.hashSeed, words[at + 1]!, words[at + 2]!, words[at + 3]!) & mask;
    while (this.bookTable[bucket] !== 0) bucket = (bucket + 1) & mask;
    this.bookTable[bucket] = book + 1;
    return book;
  }

  private submit(words: Int32Array, floats: Float64Array, w: number, f: number): void {
    const header = words[w + COMMAND_HEADER_WORD]!;
    const side = (header >>> 8) & 0xff;
    const orderType = (header >>> 16) & 0xff;
    const timeInForce = header >>> 24;
    const price = floats[f + COMMAND_PRICE_NANOS_FLOAT]!;
    const quantity = floats[f + COMMAND_QUANTITY_UNITS_FLOAT]!;
    const currency = words[w + COMMAND_CURRENCY_WORD]!;
    if (side > SIDE_SELL || orderType > ORDER_TYPE_LIMIT_HIDDEN || timeInForce > TIME_IN_FORCE_IOC || currency <= 0 || !isValidPriceNanos(price) || !isValidQuantityUnits(quantity)) {
      reject(this, -1, RejectCode.INVALID_COMMAND);
      return;
    }
    // Stamped with a session that ended before it got here (a roll raised the floor): it
    // cannot be carried out, and nothing of it is (command status FAILED).
    if (words[w + COMMAND_SESSION_WORD]! < this.sessionFloor) {
      reject(this, -1, RejectCode.SESSION_ENDED);
      return;
    }
    const idAt = w + COMMAND_ORDER_ID_WORD;
    const orders = this.orders;
    if (orders.find(words[idAt]!, words[idAt + 1]!, words[idAt + 2]!, words[idAt + 3]!) >= 0) {
      reject(this, -1, RejectCode.DUPLICATE_ORDER_ID);
      return;
    }
    let book = this.findBook(words, w + COMMAND_INSTRUMENT_ID_WORD);
    if (book >= 0 && this.currency[book] !== currency) {
      reject(this, -1, RejectCode.CURRENCY_MISMATCH);
      return;
    }
    // Every capacity is checked before anything is created, so a reject leaves no trace.
    if (!orders.canAllocate()) {
      reject(this, -1, RejectCode.ORDER_CAPACITY_EXCEEDED);
      return;
    }
    if (book < 0 && this.bookCount === this.instrumentCapacity) {
      reject(this, -1, RejectCode.INSTRUMENT_CAPACITY_EXCEEDED);
      return;
    }
    const owners = this.owners;
    let owner = owners.find(words, w + COMMAND_PARTICIPANT_ID_WORD, w + COMMAND_ACCOUNT_ID_WORD);
    if (owner < 0 && owners.isFull) {
      reject(this, -1, RejectCode.ACCOUNT_CAPACITY_EXCEEDED);
      return;
    }
    if (owner < 0) owner = owners.add(words, w + COMMAND_PARTICIPANT_ID_WORD, w + COMMAND_ACCOUNT_ID_WORD);
    if (book < 0) book = this.createBook(words, w + COMMAND_INSTRUMENT_ID_WORD, currency);
    const slot = orders.allocate();
    this.writeOrder(slot, words, w, book, owner, side, orderType, timeInForce, price, quantity);
    orders.index(slot);
    const accepted = beginAccepted(this, slot);
    // The engine order number is the sequence of the event that accepted the order:
    // unique on the shard stream and reproduced exactly by a replay.
    orders.engineNo[slot] = this.sequence;
    execute(this, slot, book * 2 + side, price, quantity);
    finishAccepted(this, accepted, slot);
  }

  private writeOrder(slot: number, words: Int32Array, w: number, book: number, owner: number, side: number, orderType: number, timeInForce: number, price: number, quantity: number): void {
    const orders = this.orders;
    const o = orders.words;
    const r = slot << ORDER_WORD_SHIFT;
    o[r + ORDER_ID_WORD] = words[w + COMMAND_ORDER_ID_WORD]!;
    o[r + ORDER_ID_WORD + 1] = words[w + COMMAND_ORDER_ID_WORD + 1]!;
    o[r + ORDER_ID_WORD + 2] = words[w + COMMAND_ORDER_ID_WORD + 2]!;
    o[r + ORDER_ID_WORD + 3] = words[w + COMMAND_ORDER_ID_WORD + 3]!;
    o[r + ORDER_BOOK_WORD] = book;
    o[r + ORDER_LEVEL_WORD] = -1;
    o[r + ORDER_PREV_WORD] = -1;
    o[r + ORDER_NEXT_WORD] = -1;
    o[r + ORDER_OWNER_WORD] = owner;
    o[r + ORDER_RUN_WORD] = words[w + COMMAND_RUN_WORD]!;
    o[r + ORDER_SESSION_WORD] = words[w + COMMAND_SESSION_WORD]!;
    o[r + ORDER_QUANTITY_WORD] = quantity;
    o[r + ORDER_FILLED_WORD] = 0;
    const b = slot << ORDER_BYTE_SHIFT;
    const bytes = orders.bytes;
    bytes[b + ORDER_SIDE_BYTE] = side;
    bytes[b + ORDER_TYPE_BYTE] = orderType;
    bytes[b + ORDER_TIME_IN_FORCE_BYTE] = timeInForce;
    bytes[b + ORDER_STATE_BYTE] = STATE_OPEN;
    orders.floats[(slot << ORDER_FLOAT_SHIFT) + ORDER_PRICE_FLOAT] = price;
  }

  /** Resting DAY orders stamped with a session below `floor`: what an EXPIRE with that floor would expire (a start checks; nothing changes). */
  restingDayOrdersBefore(floor: number): number {
    return restingDayOrdersBefore(this.orders, floor);
  }
}
