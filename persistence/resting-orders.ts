// The open orders the projector loads at start-up, held compactly: a venue restarted
// with a million resting orders keeps them in a few typed arrays, found through an
// open-addressing index on their ids, instead of a million objects in a Map (loading
// those took the persistence thread 3 s of a 10 s start, most of it allocation and
// garbage collection, by --cpu-prof). Most resting orders are never touched again; the
// projector takes an order out of here (as the object it works with) the first time a
// command changes it.

import { hashWords } from '../core/hash.ts';

/** What the projector keeps of a resting order, in the units of its OrderState. */
export interface RestingOrder {
  /** orderId, instrumentId, participantId, account: four words each. */
  ids: Int32Array;
  runNo: number;
  sessionNo: number;
  side: number;
  orderType: number;
  timeInForce: number;
  state: number;
  priceNanos: number;
  quantity: number;
  filled: number;
  /** Packed currency (core/command-slot.ts). */
  currency: number;
  shard: number;
}

const EMPTY = 0;
const USED = 1;
const TAKEN = 2; // a tombstone: the probe sequence goes on past it

export class RestingOrders {
  private capacity = 0;
  private mask = 0;
  private count = 0;
  /** Per slot: EMPTY, USED or TAKEN. */
  private status = new Uint8Array(0);
  private ids = new Int32Array(0);
  /** runNo, sessionNo, (side | orderType << 8 | timeInForce << 16 | state << 24), currency, shard. */
  private small = new Int32Array(0);
  /** priceNanos, quantity, filled. */
  private numbers = new Float64Array(0);

  constructor(expected = 1024) {
    this.allocate(Math.max(1024, powerOfTwoAbove(expected * 2)));
  }

  get size(): number {
    return this.count;
  }

  clear(): void {
    this.allocate(1024);
  }

  add(order: RestingOrder): void {
    if ((this.count + 1) * 2 > this.capacity) this.grow();
    const slot = this.probe(order.ids, 0, true);
    if (this.status[slot] === USED) throw new Error('a resting order loaded twice');
    this.status[slot] = USED;
    this.ids.set(order.ids, slot * 16);
    const s = slot * 5;
    this.small[s] = order.runNo;
    this.small[s + 1] = order.sessionNo;
    this.small[s + 2] = order.side | (order.orderType << 8) | (order.timeInForce << 16) | (order.state << 24);
    this.small[s + 3] = order.currency;
    this.small[s + 4] = order.shard;
    this.numbers[slot * 3] = order.priceNanos;
    this.numbers[slot * 3 + 1] = order.quantity;
    this.numbers[slot * 3 + 2] = order.filled;
    this.count++;
  }

  /** The order whose id is words[at..at+3], removed from here; null if it is not here. */
  take(words: Int32Array, at: number): RestingOrder | null {
    if (this.count === 0) return null;
    const slot = this.probe(words, at, false);
    if (slot < 0) return null;
    this.status[slot] = TAKEN;
    this.count--;
    return this.orderAt(slot, this.ids.slice(slot * 16, slot * 16 + 16));
  }

  /** Calls fn with every order still here (the depth of the read thread, tests). */
  forEach(fn: (order: RestingOrder) => void): void {
    for (let slot = 0; slot < this.capacity; slot++) {
      if (this.status[slot] === USED) fn(this.orderAt(slot, this.ids.subarray(slot * 16, slot * 16 + 16)));
    }
  }

  /** The order in `slot`, with `ids` (a copy, or a view while the slot stays). */
  private orderAt(slot: number, ids: Int32Array): RestingOrder {
    const s = slot * 5;
    const packed = this.small[s + 2]!;
    return {
      ids,
      runNo: this.small[s]!,
      sessionNo: this.small[s + 1]!,
      side: packed & 0xff,
      orderType: (packed >>> 8) & 0xff,
      timeInForce: (packed >>> 16) & 0xff,
      state: packed >>> 24,
      currency: this.small[s + 3]!,
      shard: this.small[s + 4]!,
      priceNanos: this.numbers[slot * 3]!,
      quantity: this.numbers[slot * 3 + 1]!,
      filled: this.numbers[slot * 3 + 2]!,
    };
  }

  /**
   * The slot of the id at words[at..]: when found, its slot; when not, -1, or (forInsert)
   * the first free slot of its probe sequence.
   */
  private probe(words: Int32Array, at: number, forInsert: boolean): number {
    const a = words[at]!;
    const b = words[at + 1]!;
    const c = words[at + 2]!;
    const d = words[at + 3]!;
    let slot = hashWords(a, b, c, d) & this.mask;
    let free = -1;
    for (;;) {
      const status = this.status[slot];
      if (status === EMPTY) return forInsert ? (free >= 0 ? free : slot) : -1;
      if (status === TAKEN) {
        if (free < 0) free = slot;
      } else {
        const w = slot * 16;
        if (this.ids[w] === a && this.ids[w + 1] === b && this.ids[w + 2] === c && this.ids[w + 3] === d) return slot;
      }
      slot = (slot + 1) & this.mask;
    }
  }

  private allocate(capacity: number): void {
    this.capacity = capacity;
    this.mask = capacity - 1;
    this.count = 0;
    this.status = new Uint8Array(capacity);
    this.ids = new Int32Array(capacity * 16);
    this.small = new Int32Array(capacity * 5);
    this.numbers = new Float64Array(capacity * 3);
  }

  private grow(): void {
    const orders: RestingOrder[] = [];
    this.forEach((order) => orders.push({ ...order, ids: order.ids.slice() }));
    this.allocate(this.capacity * 2);
    for (const order of orders) this.add(order);
  }
}

function powerOfTwoAbove(value: number): number {
  let power = 1;
  while (power < value) power *= 2;
  return power;
}
