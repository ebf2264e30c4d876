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
//    then the order's state (ORDER_NOT_OPEN).

import { COMMAND_SLOT_WORDS, CommandFloat, CommandWord } from './command-slot.ts';
import { EventKind, Opcode, OrderState, OrderType, RejectCode, Side, TimeInForce } from './codes.ts';
import { EventBuffer } from './event-buffer.ts';
import { isValidPriceNanos, isValidQuantityUnits } from './fixed-point.ts';
import { hashWords, powerOfTwoAtLeast } from './hash.ts';
import {
  ORDER_BYTE_SHIFT,
  ORDER_FLOAT_SHIFT,
  ORDER_WORD_SHIFT,
  OrderByte,
  OrderFloat,
  OrderStore,
  OrderWord,
} from './order-store.ts';
import { OwnerRegistry } from './owner-registry.ts';
import { LEVEL_FLOAT_SHIFT, LEVEL_WORD_SHIFT, LevelFloat, LevelWord, PriceLevels } from './price-levels.ts';

export interface EngineOptions {
  /** Orders held per shard, resting plus retained terminal ones (default 2^21). */
  orderCapacity?: number;
  /** Instruments (books) per shard (default 4096). */
  instrumentCapacity?: number;
  /** Distinct (participantId, accountId) pairs per shard (default 65536). */
  ownerCapacity?: number;
  /** Sequence of the last event already issued (recovery continues from it). */
  lastSequence?: number;
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
  /** Sequence of the last event issued; every event takes the next one. */
  sequence: number;
  /** instrumentId words per book. */
  readonly instrument: Int32Array;
  /** Packed currency per book, fixed by the book's first order. */
  readonly currency: Int32Array;
  private bookCount = 0;
  private readonly bookTable: Int32Array;
  private readonly bookMask: number;

  constructor(options: EngineOptions = {}) {
    const orderCapacity = options.orderCapacity ?? ORDER_CAPACITY_DEFAULT;
    this.instrumentCapacity = options.instrumentCapacity ?? INSTRUMENT_CAPACITY_DEFAULT;
    this.orders = new OrderStore(orderCapacity);
    this.owners = new OwnerRegistry(options.ownerCapacity ?? OWNER_CAPACITY_DEFAULT);
    // A level lives only while it holds a resting order: never more levels than orders.
    this.levels = new PriceLevels(orderCapacity, this.instrumentCapacity * 2);
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

  /**
   * Runs the command in the slot at byteOffset of the two views and leaves its
   * events in this.events. Returns the number of events.
   */
  process(words: Int32Array, floats: Float64Array, byteOffset: number): number {
    this.events.count = 0;
    const w = byteOffset >> 2;
    const opcode = words[w + CommandWord.HEADER]! & 0xff;
    if (opcode === Opcode.SUBMIT) this.submit(words, floats, w, byteOffset >> 3);
    else if (opcode === Opcode.CANCEL) this.cancel(words, w);
    else if (opcode === Opcode.MODIFY) this.modify(words, floats, w, byteOffset >> 3);
    else this.reject(-1, RejectCode.INVALID_COMMAND);
    return this.events.count;
  }

  /** Faults in the engine's memory ahead of use (see OrderStore.prefault); call before trading. */
  prefault(): void {
    this.orders.prefault();
  }

  /**
   * Hint before processing `count` queued command slots starting at byteOffset:
   * loads, with independent accesses the CPU overlaps, the order-index buckets and
   * records the commands will touch. Changes no state; process() is correct
   * without it, only slower on a book larger than the caches.
   */
  prefetch(words: Int32Array, byteOffset: number, count: number): void {
    this.orders.prefetch(words, (byteOffset >> 2) + CommandWord.ORDER_ID, count, COMMAND_SLOT_WORDS);
  }

  /** Book index of an instrument (its id as four words at words[at..]), or -1. */
  findBook(words: Int32Array, at: number): number {
    const a = words[at]!;
    const b = words[at + 1]!;
    const c = words[at + 2]!;
    const d = words[at + 3]!;
    const instrument = this.instrument;
    const table = this.bookTable;
    const mask = this.bookMask;
    let bucket = hashWords(a, b, c, d) & mask;
    for (;;) {
      const entry = table[bucket]!;
      if (entry === 0) return -1;
      const i = (entry - 1) << 2;
      if (instrument[i] === a && instrument[i + 1] === b && instrument[i + 2] === c && instrument[i + 3] === d) {
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
    let bucket = hashWords(words[at]!, words[at + 1]!, words[at + 2]!, words[at + 3]!) & mask;
    while (this.bookTable[bucket] !== 0) bucket = (bucket + 1) & mask;
    this.bookTable[bucket] = book + 1;
    return book;
  }

  private submit(words: Int32Array, floats: Float64Array, w: number, f: number): void {
    const header = words[w + CommandWord.HEADER]!;
    const side = (header >>> 8) & 0xff;
    const orderType = (header >>> 16) & 0xff;
    const timeInForce = header >>> 24;
    const price = floats[f + CommandFloat.PRICE_NANOS]!;
    const quantity = floats[f + CommandFloat.QUANTITY_UNITS]!;
    const currency = words[w + CommandWord.CURRENCY]!;
    if (
      side > Side.SELL ||
      orderType > OrderType.LIMIT_HIDDEN ||
      timeInForce > TimeInForce.IOC ||
      currency <= 0 ||
      !isValidPriceNanos(price) ||
      !isValidQuantityUnits(quantity)
    ) {
      this.reject(-1, RejectCode.INVALID_COMMAND);
      return;
    }
    const idAt = w + CommandWord.ORDER_ID;
    const orders = this.orders;
    if (orders.find(words[idAt]!, words[idAt + 1]!, words[idAt + 2]!, words[idAt + 3]!) >= 0) {
      this.reject(-1, RejectCode.DUPLICATE_ORDER_ID);
      return;
    }
    let book = this.findBook(words, w + CommandWord.INSTRUMENT_ID);
    if (book >= 0 && this.currency[book] !== currency) {
      this.reject(-1, RejectCode.CURRENCY_MISMATCH);
      return;
    }
    // Every capacity is checked before anything is created, so a reject leaves no trace.
    if (!orders.canAllocate()) {
      this.reject(-1, RejectCode.ORDER_CAPACITY_EXCEEDED);
      return;
    }
    if (book < 0 && this.bookCount === this.instrumentCapacity) {
      this.reject(-1, RejectCode.INSTRUMENT_CAPACITY_EXCEEDED);
      return;
    }
    const owners = this.owners;
    let owner = owners.find(words, w + CommandWord.PARTICIPANT_ID, w + CommandWord.ACCOUNT_ID);
    if (owner < 0 && owners.isFull) {
      this.reject(-1, RejectCode.ACCOUNT_CAPACITY_EXCEEDED);
      return;
    }
    if (owner < 0) owner = owners.add(words, w + CommandWord.PARTICIPANT_ID, w + CommandWord.ACCOUNT_ID);
    if (book < 0) book = this.createBook(words, w + CommandWord.INSTRUMENT_ID, currency);
    const slot = orders.allocate();
    this.writeOrder(slot, words, w, book, owner, side, orderType, timeInForce, price, quantity);
    orders.index(slot);
    const accepted = this.beginAccepted(slot);
    // The engine order number is the sequence of the event that accepted the order:
    // unique on the shard stream and reproduced exactly by a replay.
    orders.engineNo[slot] = this.sequence;
    this.execute(slot, book * 2 + side, price, quantity);
    this.finishAccepted(accepted, slot);
  }

  private writeOrder(
    slot: number,
    words: Int32Array,
    w: number,
    book: number,
    owner: number,
    side: number,
    orderType: number,
    timeInForce: number,
    price: number,
    quantity: number,
  ): void {
    const orders = this.orders;
    const o = orders.words;
    const r = slot << ORDER_WORD_SHIFT;
    o[r + OrderWord.ID] = words[w + CommandWord.ORDER_ID]!;
    o[r + OrderWord.ID + 1] = words[w + CommandWord.ORDER_ID + 1]!;
    o[r + OrderWord.ID + 2] = words[w + CommandWord.ORDER_ID + 2]!;
    o[r + OrderWord.ID + 3] = words[w + CommandWord.ORDER_ID + 3]!;
    o[r + OrderWord.BOOK] = book;
    o[r + OrderWord.LEVEL] = -1;
    o[r + OrderWord.PREV] = -1;
    o[r + OrderWord.NEXT] = -1;
    o[r + OrderWord.OWNER] = owner;
    o[r + OrderWord.RUN] = words[w + CommandWord.RUN]!;
    o[r + OrderWord.SESSION] = words[w + CommandWord.SESSION]!;
    o[r + OrderWord.QUANTITY] = quantity;
    o[r + OrderWord.FILLED] = 0;
    const b = slot << ORDER_BYTE_SHIFT;
    const bytes = orders.bytes;
    bytes[b + OrderByte.SIDE] = side;
    bytes[b + OrderByte.ORDER_TYPE] = orderType;
    bytes[b + OrderByte.TIME_IN_FORCE] = timeInForce;
    bytes[b + OrderByte.STATE] = OrderState.OPEN;
    orders.floats[(slot << ORDER_FLOAT_SHIFT) + OrderFloat.PRICE] = price;
  }

  /**
   * Matches an order (not resting) on bookSide against the opposite side, then
   * rests its remainder (DAY) or cancels it (IOC). Leaves the order's final state.
   */
  private execute(slot: number, bookSide: number, price: number, quantity: number): void {
    const orders = this.orders;
    const b = slot << ORDER_BYTE_SHIFT;
    const bytes = orders.bytes;
    const filledAt = (slot << ORDER_WORD_SHIFT) + OrderWord.FILLED;
    const leaves = this.match(slot, bookSide ^ 1, bookSide & 1, price, quantity - orders.words[filledAt]!);
    if (leaves === 0) {
      bytes[b + OrderByte.STATE] = OrderState.FILLED;
      orders.retire(slot);
    } else if (bytes[b + OrderByte.TIME_IN_FORCE] === TimeInForce.IOC) {
      bytes[b + OrderByte.STATE] = OrderState.CANCELLED;
      orders.retire(slot);
    } else {
      bytes[b + OrderByte.STATE] = orders.words[filledAt]! > 0 ? OrderState.PARTIALLY_FILLED : OrderState.OPEN;
      this.rest(slot, bookSide, price, leaves);
    }
  }

  /** Executes against the opposite side while it crosses; returns the quantity left. */
  private match(taker: number, opposite: number, takerSide: number, limit: number, leaves: number): number {
    const levels = this.levels;
    const levelFloats = levels.floats;
    while (leaves > 0) {
      const level = levels.best(opposite);
      if (level < 0) break;
      const levelPrice = levelFloats[(level << LEVEL_FLOAT_SHIFT) + LevelFloat.PRICE]!;
      if (takerSide === Side.BUY ? levelPrice > limit : levelPrice < limit) break;
      leaves = this.matchQueue(taker, level, 0, levelPrice, takerSide, leaves);
      if (leaves > 0) leaves = this.matchQueue(taker, level, 1, levelPrice, takerSide, leaves);
      if (levels.isEmpty(level)) levels.destroy(level);
    }
    return leaves;
  }

  /** Executes against one FIFO queue of a level, oldest first. */
  private matchQueue(taker: number, level: number, queue: number, price: number, takerSide: number, leaves: number): number {
    const orders = this.orders;
    const o = orders.words;
    const bytes = orders.bytes;
    const lw = this.levels.words;
    const headAt = (level << LEVEL_WORD_SHIFT) + LevelWord.HEAD + queue;
    const quantityAt = (level << LEVEL_FLOAT_SHIFT) + LevelFloat.QUANTITY + queue;
    const takerFilledAt = (taker << ORDER_WORD_SHIFT) + OrderWord.FILLED;
    let maker = lw[headAt]!;
    while (maker >= 0 && leaves > 0) {
      const r = maker << ORDER_WORD_SHIFT;
      const makerLeaves = o[r + OrderWord.QUANTITY]! - o[r + OrderWord.FILLED]!;
      const fill = leaves < makerLeaves ? leaves : makerLeaves;
      leaves -= fill;
      o[takerFilledAt]! += fill;
      o[r + OrderWord.FILLED]! += fill;
      this.levels.floats[quantityAt]! -= fill;
      const next = o[r + OrderWord.NEXT]!;
      if (fill === makerLeaves) {
        // The maker is done: it is the head of its queue, pop it.
        lw[headAt] = next;
        if (next >= 0) o[(next << ORDER_WORD_SHIFT) + OrderWord.PREV] = -1;
        else lw[headAt - LevelWord.HEAD + LevelWord.TAIL] = -1;
        lw[headAt - LevelWord.HEAD + LevelWord.COUNT]!--;
        o[r + OrderWord.LEVEL] = -1;
        o[r + OrderWord.NEXT] = -1;
        bytes[(maker << ORDER_BYTE_SHIFT) + OrderByte.STATE] = OrderState.FILLED;
        orders.retire(maker);
      } else {
        bytes[(maker << ORDER_BYTE_SHIFT) + OrderByte.STATE] = OrderState.PARTIALLY_FILLED;
      }
      this.emitFill(taker, maker, fill, price, takerSide, leaves);
      maker = next;
    }
    return leaves;
  }

  /** Appends an order at the back of its queue at `price`, creating the level if needed. */
  private rest(slot: number, bookSide: number, price: number, leaves: number): void {
    const levels = this.levels;
    const o = this.orders.words;
    let level = levels.find(bookSide, price);
    if (level < 0) level = levels.create(bookSide, price);
    const queue = this.orders.bytes[(slot << ORDER_BYTE_SHIFT) + OrderByte.ORDER_TYPE]!;
    const lw = levels.words;
    const lr = (level << LEVEL_WORD_SHIFT) + queue;
    const tail = lw[lr + LevelWord.TAIL]!;
    const r = slot << ORDER_WORD_SHIFT;
    o[r + OrderWord.PREV] = tail;
    o[r + OrderWord.NEXT] = -1;
    o[r + OrderWord.LEVEL] = level;
    if (tail >= 0) o[(tail << ORDER_WORD_SHIFT) + OrderWord.NEXT] = slot;
    else lw[lr + LevelWord.HEAD] = slot;
    lw[lr + LevelWord.TAIL] = slot;
    lw[lr + LevelWord.COUNT]!++;
    levels.floats[(level << LEVEL_FLOAT_SHIFT) + LevelFloat.QUANTITY + queue]! += leaves;
  }

  /** Takes a resting order out of its queue; drops the level if it empties. */
  private unlink(slot: number): void {
    const levels = this.levels;
    const orders = this.orders;
    const o = orders.words;
    const r = slot << ORDER_WORD_SHIFT;
    const level = o[r + OrderWord.LEVEL]!;
    const queue = orders.bytes[(slot << ORDER_BYTE_SHIFT) + OrderByte.ORDER_TYPE]!;
    const lw = levels.words;
    const lr = (level << LEVEL_WORD_SHIFT) + queue;
    const prev = o[r + OrderWord.PREV]!;
    const next = o[r + OrderWord.NEXT]!;
    if (prev >= 0) o[(prev << ORDER_WORD_SHIFT) + OrderWord.NEXT] = next;
    else lw[lr + LevelWord.HEAD] = next;
    if (next >= 0) o[(next << ORDER_WORD_SHIFT) + OrderWord.PREV] = prev;
    else lw[lr + LevelWord.TAIL] = prev;
    lw[lr + LevelWord.COUNT]!--;
    levels.floats[(level << LEVEL_FLOAT_SHIFT) + LevelFloat.QUANTITY + queue]! -=
      o[r + OrderWord.QUANTITY]! - o[r + OrderWord.FILLED]!;
    o[r + OrderWord.PREV] = -1;
    o[r + OrderWord.NEXT] = -1;
    o[r + OrderWord.LEVEL] = -1;
    if (levels.isEmpty(level)) levels.destroy(level);
  }

  private cancel(words: Int32Array, w: number): void {
    const slot = this.findTarget(words, w);
    if (slot < 0) return;
    const orders = this.orders;
    this.unlink(slot);
    orders.bytes[(slot << ORDER_BYTE_SHIFT) + OrderByte.STATE] = OrderState.CANCELLED;
    orders.retire(slot);
    const accepted = this.beginAccepted(slot);
    this.finishAccepted(accepted, slot);
  }

  private modify(words: Int32Array, floats: Float64Array, w: number, f: number): void {
    const price = floats[f + CommandFloat.PRICE_NANOS]!;
    const quantity = floats[f + CommandFloat.QUANTITY_UNITS]!;
    if (!isValidPriceNanos(price) || !isValidQuantityUnits(quantity)) {
      this.reject(-1, RejectCode.INVALID_COMMAND);
      return;
    }
    const slot = this.findTarget(words, w);
    if (slot < 0) return;
    const orders = this.orders;
    const o = orders.words;
    const r = slot << ORDER_WORD_SHIFT;
    if (quantity <= o[r + OrderWord.FILLED]!) {
      this.reject(slot, RejectCode.INVALID_MODIFY);
      return;
    }
    const accepted = this.beginAccepted(slot);
    const currentQuantity = o[r + OrderWord.QUANTITY]!;
    const priceAt = (slot << ORDER_FLOAT_SHIFT) + OrderFloat.PRICE;
    if (price === orders.floats[priceAt] && quantity <= currentQuantity) {
      // Same price, not larger: reduce in place and keep time priority.
      const level = o[r + OrderWord.LEVEL]!;
      const queue = orders.bytes[(slot << ORDER_BYTE_SHIFT) + OrderByte.ORDER_TYPE]!;
      this.levels.floats[(level << LEVEL_FLOAT_SHIFT) + LevelFloat.QUANTITY + queue]! -= currentQuantity - quantity;
      o[r + OrderWord.QUANTITY] = quantity;
    } else {
      // Price change or increase: loses priority, may cross.
      this.unlink(slot);
      orders.floats[priceAt] = price;
      o[r + OrderWord.QUANTITY] = quantity;
      const side = orders.bytes[(slot << ORDER_BYTE_SHIFT) + OrderByte.SIDE]!;
      this.execute(slot, o[r + OrderWord.BOOK]! * 2 + side, price, quantity);
    }
    this.finishAccepted(accepted, slot);
  }

  /**
   * Resolves the target of a cancel or modify: found, same full context, still
   * open. Emits the reject and returns -1 otherwise.
   */
  private findTarget(words: Int32Array, w: number): number {
    const idAt = w + CommandWord.ORDER_ID;
    const orders = this.orders;
    const slot = orders.find(words[idAt]!, words[idAt + 1]!, words[idAt + 2]!, words[idAt + 3]!);
    if (slot < 0) {
      this.reject(-1, RejectCode.ORDER_NOT_FOUND);
      return -1;
    }
    if (!this.contextMatches(slot, words, w)) {
      this.reject(slot, RejectCode.ORDER_CONTEXT_MISMATCH);
      return -1;
    }
    const state = orders.bytes[(slot << ORDER_BYTE_SHIFT) + OrderByte.STATE];
    if (state !== OrderState.OPEN && state !== OrderState.PARTIALLY_FILLED) {
      this.reject(slot, RejectCode.ORDER_NOT_OPEN);
      return -1;
    }
    return slot;
  }

  /** runId, venueSessionId, instrumentId, participantId and accountId all equal. */
  private contextMatches(slot: number, words: Int32Array, w: number): boolean {
    const o = this.orders.words;
    const r = slot << ORDER_WORD_SHIFT;
    if (o[r + OrderWord.RUN] !== words[w + CommandWord.RUN] || o[r + OrderWord.SESSION] !== words[w + CommandWord.SESSION]) {
      return false;
    }
    const instrumentAt = o[r + OrderWord.BOOK]! << 2;
    const instrument = this.instrument;
    for (let k = 0; k < 4; k++) {
      if (instrument[instrumentAt + k] !== words[w + CommandWord.INSTRUMENT_ID + k]) return false;
    }
    return this.owners.matches(o[r + OrderWord.OWNER]!, words, w + CommandWord.PARTICIPANT_ID, w + CommandWord.ACCOUNT_ID);
  }

  private reject(slot: number, code: number): void {
    const events = this.events;
    events.reserve(1);
    const i = events.count++;
    events.kind[i] = EventKind.REJECTED;
    events.sequence[i] = ++this.sequence;
    events.order[i] = slot;
    events.counterparty[i] = -1;
    events.code[i] = code;
  }

  /** Issues the accepted outcome first (its sequence precedes the fills it causes). */
  private beginAccepted(slot: number): number {
    const events = this.events;
    events.reserve(1);
    const i = events.count++;
    events.kind[i] = EventKind.ACCEPTED;
    events.sequence[i] = ++this.sequence;
    events.order[i] = slot;
    events.counterparty[i] = -1;
    events.code[i] = 0;
    return i;
  }

  /** Completes the accepted outcome with the order as the command left it. */
  private finishAccepted(i: number, slot: number): void {
    const events = this.events;
    const o = this.orders.words;
    const r = slot << ORDER_WORD_SHIFT;
    const filled = o[r + OrderWord.FILLED]!;
    const quantity = o[r + OrderWord.QUANTITY]!;
    const state = this.orders.bytes[(slot << ORDER_BYTE_SHIFT) + OrderByte.STATE]!;
    events.state[i] = state;
    events.filled[i] = filled;
    events.leaves[i] = state === OrderState.OPEN || state === OrderState.PARTIALLY_FILLED ? quantity - filled : 0;
    events.price[i] = this.orders.floats[(slot << ORDER_FLOAT_SHIFT) + OrderFloat.PRICE]!;
    events.quantity[i] = quantity;
  }

  /** Taker execution, maker execution, trade: three consecutive sequences. */
  private emitFill(taker: number, maker: number, fill: number, price: number, takerSide: number, takerLeaves: number): void {
    const events = this.events;
    const o = this.orders.words;
    events.reserve(3);
    let i = events.count;
    events.kind[i] = EventKind.EXECUTION;
    events.sequence[i] = ++this.sequence;
    events.order[i] = taker;
    events.counterparty[i] = maker;
    events.quantity[i] = fill;
    events.price[i] = price;
    events.filled[i] = o[(taker << ORDER_WORD_SHIFT) + OrderWord.FILLED]!;
    events.leaves[i] = takerLeaves;
    events.state[i] = takerLeaves === 0 ? OrderState.FILLED : OrderState.PARTIALLY_FILLED;
    i++;
    const r = maker << ORDER_WORD_SHIFT;
    const makerFilled = o[r + OrderWord.FILLED]!;
    events.kind[i] = EventKind.EXECUTION;
    events.sequence[i] = ++this.sequence;
    events.order[i] = maker;
    events.counterparty[i] = taker;
    events.quantity[i] = fill;
    events.price[i] = price;
    events.filled[i] = makerFilled;
    events.leaves[i] = o[r + OrderWord.QUANTITY]! - makerFilled;
    events.state[i] = this.orders.bytes[(maker << ORDER_BYTE_SHIFT) + OrderByte.STATE]!;
    i++;
    events.kind[i] = EventKind.TRADE;
    events.sequence[i] = ++this.sequence;
    events.order[i] = takerSide === Side.BUY ? taker : maker;
    events.counterparty[i] = takerSide === Side.BUY ? maker : taker;
    events.quantity[i] = fill;
    events.price[i] = price;
    events.aggressor[i] = takerSide;
    events.count = i + 1;
  }
}
