// The open orders the projector loads at start-up, held compactly: a venue restarted
// with a million resting orders keeps them in a few typed arrays, found through an
// open-addressing index on their ids, instead of a million objects in a Map (loading
// those took the persistence thread 3 s of a 10 s start, most of it allocation and
// garbage collection, by --cpu-prof). Most resting orders are never touched again; the
// projector takes an order out of here (as the object it works with) the first time a
// command changes it.

import { STATE_OPEN, STATE_PARTIALLY_FILLED } from '../core/codes.ts';
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

/** An index slot's entry word: no entry, or one taken (a tombstone: the probe sequence goes on past it). */
const EMPTY = 0;
const TAKEN = -1;
/** Adds indexed together (indexAdds): their index slots are read in one loop first, so that their cache misses overlap. */
const ADD_GROUP = 256;

/**
 * The orders sit in the order they were added, in columns (written in sequence, so a
 * start's million adds touch memory in order), found through an open-addressing index of
 * two words a slot: the entry's number + 1 (EMPTY, TAKEN) and the id's hash, so a probe
 * reads the orders' ids only when the hashes are equal. An add costs one cache miss (its
 * index slot), not four (a slot in each column, as when the columns were the table), and
 * the adds are indexed in groups of ADD_GROUP whose slots are loaded before any is
 * probed, so those misses overlap instead of each add waiting for its own.
 */
export class RestingOrders {
  private slots = 0;
  private mask = 0;
  /** Per slot: the entry + 1 (or EMPTY, TAKEN), then the id's hash. */
  private index = new Int32Array(0);
  /** Entries added so far (taken ones included: they stay until the columns are rebuilt). */
  private entries = 0;
  private room = 0;
  private count = 0;
  /** The last `pending` entries are not in the index yet (indexAdds); their hashes. */
  private pending = 0;
  private readonly pendingHashes = new Int32Array(ADD_GROUP);
  /** What indexAdds's loads gave (kept, so that they are not optimized away). */
  private touched = 0;
  private readonly views = [new StoredOrder(this), new StoredOrder(this)];
  /** Per entry: whether it was taken. */
  private taken = new Uint8Array(0);
  /** The columns (read and written by StoredOrder too). */
  ids = new Int32Array(0);
  /** runNo, sessionNo, (side | orderType << 8 | timeInForce << 16 | state << 24), currency, shard. */
  small = new Int32Array(0);
  /** priceNanos, quantity, filled. */
  numbers = new Float64Array(0);

  constructor(expected = 1024) {
    this.allocate(Math.max(1024, expected));
  }

  get size(): number {
    return this.count;
  }

  clear(): void {
    this.allocate(1024);
  }

  /**
   * Adds an order (its ids copied). It is indexed with the group it falls in: at the
   * group's last add, or at indexAdds() (which a take calls); an order already here is
   * refused there ("loaded twice"): a loader calls indexAdds() at its end.
   */
  add(order: RestingOrder): void {
    if (this.entries === this.room) {
      this.indexAdds();
      this.growColumns();
    }
    if ((this.entries + 1) * 2 > this.slots) {
      this.indexAdds();
      this.rebuildIndex(this.slots * 2);
    }
    const words = order.ids;
    const entry = this.entries++;
    const ids = this.ids;
    const w = entry * 16;
    for (let k = 0; k < 16; k++) ids[w + k] = words[k]!;
    const s = entry * 5;
    this.small[s] = order.runNo;
    this.small[s + 1] = order.sessionNo;
    this.small[s + 2] = order.side | (order.orderType << 8) | (order.timeInForce << 16) | (order.state << 24);
    this.small[s + 3] = order.currency;
    this.small[s + 4] = order.shard;
    this.numbers[entry * 3] = order.priceNanos;
    this.numbers[entry * 3 + 1] = order.quantity;
    this.numbers[entry * 3 + 2] = order.filled;
    this.count++;
    this.pendingHashes[this.pending++] = hashWords(words[0]!, words[1]!, words[2]!, words[3]!);
    if (this.pending === ADD_GROUP) this.indexAdds();
  }

  /**
   * A store of `count` orders written in bulk, with room for `room` in all: `fill` writes
   * the first `count` entries of the columns in place (`small` packed as here, see
   * `small`) and says why not (null: filled). Then they are indexed in groups, as adds
   * are; an order twice throws, as there. A start's million saved orders load this way
   * straight from their file (persistence/open-orders-snapshot.ts): one add each copied
   * every order once more and took about as long as reading the file.
   */
  static filled(count: number, room: number, fill: (ids: Int32Array, small: Int32Array, numbers: Float64Array) => string | null): RestingOrders | string {
    const store = new RestingOrders(Math.max(count, room));
    const why = fill(store.ids.subarray(0, count * 16), store.small.subarray(0, count * 5), store.numbers.subarray(0, count * 3));
    if (why !== null) return why;
    const ids = store.ids;
    for (let first = 0; first < count; first += ADD_GROUP) {
      const n = Math.min(ADD_GROUP, count - first);
      for (let j = 0; j < n; j++) {
        const w = (first + j) * 16;
        store.pendingHashes[j] = hashWords(ids[w]!, ids[w + 1]!, ids[w + 2]!, ids[w + 3]!);
      }
      store.entries = first + n;
      store.count = first + n;
      store.pending = n;
      store.indexAdds();
    }
    return store;
  }

  /** Puts the adds not yet indexed into the index; throws if one of them is an order already here. */
  indexAdds(): void {
    const n = this.pending;
    if (n === 0) return;
    this.pending = 0;
    const index = this.index;
    const hashes = this.pendingHashes;
    const mask = this.mask;
    let touched = 0;
    for (let j = 0; j < n; j++) touched ^= index[(hashes[j]! & mask) * 2]!; // brings each slot's line in, alongside the others
    this.touched = touched;
    const first = this.entries - n;
    for (let j = 0; j < n; j++) {
      const entry = first + j;
      const hash = hashes[j]!;
      const slot = this.probe(this.ids, entry * 16, hash, true);
      if (index[slot * 2]! > 0) throw new Error('a resting order loaded twice');
      index[slot * 2] = entry + 1;
      index[slot * 2 + 1] = hash;
    }
  }

  /** The order whose id is words[at..at+3], removed from here; null if it is not here. */
  take(words: Int32Array, at: number): RestingOrder | null {
    const entry = this.remove(words, at);
    return entry < 0 ? null : this.orderAt(entry, this.ids.slice(entry * 16, entry * 16 + 16));
  }

  /** Removes the order whose id is words[at..at+3]; its entry, or -1 if it is not here. */
  private remove(words: Int32Array, at: number): number {
    if (this.count === 0) return -1;
    if (this.pending > 0) this.indexAdds();
    const slot = this.probe(words, at, hashWords(words[at]!, words[at + 1]!, words[at + 2]!, words[at + 3]!), false);
    if (slot < 0) return -1;
    const entry = this.index[slot * 2]! - 1;
    this.index[slot * 2] = TAKEN;
    this.taken[entry] = 1;
    this.count--;
    return entry;
  }

  /**
   * The order whose id is words[at..at+3] as a StoredOrder (`role`: one view each, reused)
   * whose fields are its entry's columns, or undefined if it is not here. Valid until the
   * next add (which may move the entries).
   */
  stored(words: Int32Array, at: number, role: 0 | 1): StoredOrder | undefined {
    if (this.count === 0) return undefined;
    if (this.pending > 0) this.indexAdds();
    const slot = this.probe(words, at, hashWords(words[at]!, words[at + 1]!, words[at + 2]!, words[at + 3]!), false);
    if (slot < 0) return undefined;
    const view = this.views[role]!;
    view.entry = this.index[slot * 2]! - 1;
    return view;
  }

  /** Removes the order in `entry` (a StoredOrder closed). */
  removeEntry(entry: number): void {
    if (this.taken[entry] === 0) this.remove(this.ids, entry * 16);
  }

  /**
   * The orders here now, kept for a later write while the store goes on: its columns
   * themselves (takes and adds leave the entries there as they are; growing the columns
   * makes new ones) and a copy of its taken flags. Valid while no entry is written in
   * place (stored(), a start's replay, does that: freeze after it).
   */
  freeze(): FrozenOrders {
    if (this.pending > 0) this.indexAdds();
    return new FrozenOrders(this.ids, this.small, this.numbers, this.taken.slice(0, this.entries), this.count);
  }

  /** Calls fn with every order still here, in the order they were added (the depth of the read thread, tests). */
  forEach(fn: (order: RestingOrder) => void): void {
    for (let entry = 0; entry < this.entries; entry++) {
      if (this.taken[entry] === 0) fn(this.orderAt(entry, this.ids.subarray(entry * 16, entry * 16 + 16)));
    }
  }

  /** The order in `entry`, with `ids` (a copy, or a view while the entry stays). */
  private orderAt(entry: number, ids: Int32Array): RestingOrder {
    return readEntry(this.small, this.numbers, entry, { ids, ...BLANK_ORDER });
  }

  /**
   * The slot of the id at words[at..] (its hash `hash`): when found, its slot; when not,
   * -1, or (forInsert) the first free slot of its probe sequence.
   */
  private probe(words: Int32Array, at: number, hash: number, forInsert: boolean): number {
    const index = this.index;
    let slot = hash & this.mask;
    let free = -1;
    for (;;) {
      const entry = index[slot * 2]!;
      if (entry === EMPTY) return forInsert ? (free >= 0 ? free : slot) : -1;
      if (entry === TAKEN) {
        if (free < 0) free = slot;
      } else if (index[slot * 2 + 1] === hash) {
        const w = (entry - 1) * 16;
        const ids = this.ids;
        if (ids[w] === words[at] && ids[w + 1] === words[at + 1] && ids[w + 2] === words[at + 2] && ids[w + 3] === words[at + 3]) return slot;
      }
      slot = (slot + 1) & this.mask;
    }
  }

  private allocate(room: number): void {
    this.room = room;
    this.entries = 0;
    this.count = 0;
    this.pending = 0;
    this.taken = new Uint8Array(room);
    this.ids = new Int32Array(room * 16);
    this.small = new Int32Array(room * 5);
    this.numbers = new Float64Array(room * 3);
    this.slots = 0;
    this.rebuildIndex(powerOfTwoAbove(room * 2));
  }

  /** Twice the room; the orders taken are dropped on the way (the index is rebuilt for the rest). */
  private growColumns(): void {
    const { entries, taken, ids, small, numbers } = this;
    const room = this.room * 2;
    this.room = room;
    this.taken = new Uint8Array(room);
    this.ids = new Int32Array(room * 16);
    this.small = new Int32Array(room * 5);
    this.numbers = new Float64Array(room * 3);
    let kept = 0;
    for (let entry = 0; entry < entries; entry++) {
      if (taken[entry] !== 0) continue;
      this.ids.set(ids.subarray(entry * 16, entry * 16 + 16), kept * 16);
      this.small.set(small.subarray(entry * 5, entry * 5 + 5), kept * 5);
      this.numbers.set(numbers.subarray(entry * 3, entry * 3 + 3), kept * 3);
      kept++;
    }
    this.entries = kept;
    this.rebuildIndex(Math.max(this.slots, powerOfTwoAbove(room * 2)));
  }

  /** An index of `slots` slots over the entries not taken. */
  private rebuildIndex(slots: number): void {
    this.slots = slots;
    this.mask = slots - 1;
    this.index = new Int32Array(slots * 2);
    const ids = this.ids;
    for (let entry = 0; entry < this.entries; entry++) {
      if (this.taken[entry] !== 0) continue;
      const w = entry * 16;
      const hash = hashWords(ids[w]!, ids[w + 1]!, ids[w + 2]!, ids[w + 3]!);
      let slot = hash & this.mask;
      while (this.index[slot * 2] !== EMPTY) slot = (slot + 1) & this.mask;
      this.index[slot * 2] = entry + 1;
      this.index[slot * 2 + 1] = hash;
    }
  }
}

const BLANK_ORDER: Omit<RestingOrder, 'ids'> = { runNo: 0, sessionNo: 0, side: 0, orderType: 0, timeInForce: 0, state: 0, priceNanos: 0, quantity: 0, filled: 0, currency: 0, shard: 0 };

/** Everything but the ids of the order in `entry` of a store's small-integer and number columns, into `order`. */
function readEntry(small: Int32Array, numbers: Float64Array, entry: number, order: RestingOrder): RestingOrder {
  const s = entry * 5;
  const packed = small[s + 2]!;
  order.runNo = small[s]!;
  order.sessionNo = small[s + 1]!;
  order.side = packed & 0xff;
  order.orderType = (packed >>> 8) & 0xff;
  order.timeInForce = (packed >>> 16) & 0xff;
  order.state = packed >>> 24;
  order.currency = small[s + 3]!;
  order.shard = small[s + 4]!;
  order.priceNanos = numbers[entry * 3]!;
  order.quantity = numbers[entry * 3 + 1]!;
  order.filled = numbers[entry * 3 + 2]!;
  return order;
}

/** The orders of a store as they were when it was frozen (RestingOrders.freeze). */
export class FrozenOrders {
  private readonly order: RestingOrder = { ids: new Int32Array(16), ...BLANK_ORDER };

  constructor(
    private readonly ids: Int32Array,
    private readonly small: Int32Array,
    private readonly numbers: Float64Array,
    private readonly taken: Uint8Array,
    /** The orders held. */
    readonly count: number,
  ) {}

  /** Entries, taken ones included: visit()'s range. */
  get entries(): number {
    return this.taken.byteLength;
  }

  /** Calls fn with each order of the entries [from, to) not taken, in order (one object, reused: copy what is kept). */
  visit(from: number, to: number, fn: (order: RestingOrder) => void): void {
    const { ids, small, numbers, taken, order } = this;
    for (let entry = from; entry < Math.min(to, taken.byteLength); entry++) {
      if (taken[entry] !== 0) continue;
      const w = entry * 16;
      for (let k = 0; k < 16; k++) order.ids[k] = ids[w + k]!;
      fn(readEntry(small, numbers, entry, order));
    }
  }
}

function powerOfTwoAbove(value: number): number {
  let power = 1;
  while (power < value) power *= 2;
  return power;
}

/**
 * An order of a RestingOrders store read and written in place (a start's replay of the
 * journal after a checkpoint of the open orders: no object per order). Setting a state
 * other than open or partially filled removes it from the store; writes after that go
 * to an entry no one reads.
 */
export class StoredOrder implements RestingOrder {
  entry = 0;
  constructor(private readonly store: RestingOrders) {}
  get ids(): Int32Array {
    return this.store.ids.subarray(this.entry * 16, this.entry * 16 + 16);
  }
  get runNo(): number {
    return this.store.small[this.entry * 5]!;
  }
  get sessionNo(): number {
    return this.store.small[this.entry * 5 + 1]!;
  }
  get side(): number {
    return this.store.small[this.entry * 5 + 2]! & 0xff;
  }
  get orderType(): number {
    return (this.store.small[this.entry * 5 + 2]! >>> 8) & 0xff;
  }
  get timeInForce(): number {
    return (this.store.small[this.entry * 5 + 2]! >>> 16) & 0xff;
  }
  get state(): number {
    return this.store.small[this.entry * 5 + 2]! >>> 24;
  }
  set state(state: number) {
    const at = this.entry * 5 + 2;
    this.store.small[at] = (this.store.small[at]! & 0xffffff) | (state << 24);
    if (state !== STATE_OPEN && state !== STATE_PARTIALLY_FILLED) this.store.removeEntry(this.entry);
  }
  get currency(): number {
    return this.store.small[this.entry * 5 + 3]!;
  }
  get shard(): number {
    return this.store.small[this.entry * 5 + 4]!;
  }
  get priceNanos(): number {
    return this.store.numbers[this.entry * 3]!;
  }
  set priceNanos(value: number) {
    this.store.numbers[this.entry * 3] = value;
  }
  get quantity(): number {
    return this.store.numbers[this.entry * 3 + 1]!;
  }
  set quantity(value: number) {
    this.store.numbers[this.entry * 3 + 1] = value;
  }
  get filled(): number {
    return this.store.numbers[this.entry * 3 + 2]!;
  }
  set filled(value: number) {
    this.store.numbers[this.entry * 3 + 2] = value;
  }
}
