// What a loaded engine state must satisfy across its parts (books, orders, price levels,
// owners), checked once by MatchingEngine.loadState in O(slots + levels): a snapshot that
// breaks one is refused rather than traded on. Never on the command path.

import { assert, fail } from './assert.ts';
import { ORDER_TYPE_LIMIT_HIDDEN, SIDE_SELL, STATE_FILLED, STATE_OPEN, STATE_PARTIALLY_FILLED, TIME_IN_FORCE_IOC } from './codes.ts';
import { isValidPriceNanos, isValidQuantityUnits } from './fixed-point.ts';
import { hashWords } from './hash.ts';
import {
  ORDER_BOOK_WORD,
  ORDER_BYTE_SHIFT,
  ORDER_FILLED_WORD,
  ORDER_LEVEL_WORD,
  ORDER_NEXT_WORD,
  ORDER_OWNER_WORD,
  ORDER_PREV_WORD,
  ORDER_QUANTITY_WORD,
  ORDER_SIDE_BYTE,
  ORDER_STATE_BYTE,
  ORDER_TIME_IN_FORCE_BYTE,
  ORDER_TYPE_BYTE,
  ORDER_WORD_SHIFT,
  type OrderStore,
} from './order-store.ts';
import { LEVEL_BOOK_SIDE_WORD, LEVEL_HEAD_WORD, LEVEL_TAIL_WORD, LEVEL_WORD_SHIFT, type PriceLevels } from './price-levels.ts';

/**
 * The books: each has a currency, and the book table holds each book once, where a probe
 * for its instrument reaches it, and no other book of the same instrument before it.
 */
export function checkLoadedBooks(instrument: Int32Array, currency: Int32Array, books: number, table: Int32Array, seed: number): void {
  for (let book = 0; book < books; book++) {
    if (currency[book]! <= 0) fail(`engine state: book ${book} has currency ${currency[book]}`);
  }
  const mask = table.length - 1;
  const seen = new Uint8Array(books);
  let indexed = 0;
  for (let bucket = 0; bucket <= mask; bucket++) {
    const entry = table[bucket]!;
    if (entry === 0) continue;
    const book = entry - 1;
    if (book < 0 || book >= books) fail(`engine state: book table bucket ${bucket} names book ${book} of ${books}`);
    if (seen[book] !== 0) fail(`engine state: book ${book} is in the book table twice`);
    seen[book] = 1;
    indexed++;
    const at = book << 2;
    for (let probe = hashWords(instrument[at]! ^ seed, instrument[at + 1]!, instrument[at + 2]!, instrument[at + 3]!) & mask; probe !== bucket; probe = (probe + 1) & mask) {
      const other = table[probe]!;
      if (other === 0) fail(`engine state: book ${book} lies past an empty bucket of its probe`);
      const o = (other - 1) << 2;
      if (instrument[o] === instrument[at] && instrument[o + 1] === instrument[at + 1] && instrument[o + 2] === instrument[at + 2] && instrument[o + 3] === instrument[at + 3]) {
        fail(`engine state: books ${other - 1} and ${book} are the same instrument`);
      }
    }
  }
  assert(indexed === books, `engine state: ${indexed} books in the book table of ${books}`);
}

/**
 * The orders against the books, owners and levels: every field in range; a terminal order
 * linked nowhere; each resting order at a live level of its book side and price, in the
 * queue of its type. The queues are checked link by link, not walked (a walk waits on one
 * miss per order): each order's predecessor, in the same queue, links back to it, or it is
 * its queue's head; with no successor it is the tail; head and tail are ends of the queue;
 * each queue's count and open quantity are its orders'. Links that close a cycle apart from
 * the queue's head are the one break this does not see. The order store and levels checked
 * themselves first.
 */
export function checkLoadedOrders(orders: OrderStore, levels: PriceLevels, owners: number, books: number, sequence: number): void {
  const used = orders.slotsInUse;
  const o = orders.words;
  const bytes = orders.bytes;
  const lw = levels.words;
  // Per level and queue (level * 2 + queue): the resting orders that name it, and their open quantity.
  const counts = new Int32Array(levels.capacity * 2);
  const open = new Float64Array(levels.capacity * 2);
  // Per slot: its successor and its queue (level * 2 + queue, -1 when terminal), gathered in
  // slot order so that the predecessors' links are then read from this array, not the records.
  const links = new Int32Array(used * 2);
  for (let slot = 0; slot < used; slot++) {
    const r = slot << ORDER_WORD_SHIFT;
    const b = slot << ORDER_BYTE_SHIFT;
    const book = o[r + ORDER_BOOK_WORD]!;
    const owner = o[r + ORDER_OWNER_WORD]!;
    const side = bytes[b + ORDER_SIDE_BYTE]!;
    const queue = bytes[b + ORDER_TYPE_BYTE]!;
    if (book < 0 || book >= books) fail(`engine state: order slot ${slot} names book ${book} of ${books}`);
    if (owner < 0 || owner >= owners) fail(`engine state: order slot ${slot} names owner ${owner} of ${owners}`);
    if (side > SIDE_SELL || queue > ORDER_TYPE_LIMIT_HIDDEN || bytes[b + ORDER_TIME_IN_FORCE_BYTE]! > TIME_IN_FORCE_IOC) {
      fail(`engine state: order slot ${slot} has a side, type or time in force out of range`);
    }
    const quantity = o[r + ORDER_QUANTITY_WORD]!;
    const filled = o[r + ORDER_FILLED_WORD]!;
    if (!isValidQuantityUnits(quantity) || filled < 0 || filled > quantity) fail(`engine state: order slot ${slot} has ${filled} filled of ${quantity}`);
    const price = orders.price(slot);
    if (!isValidPriceNanos(price)) fail(`engine state: order slot ${slot} has price ${price}`);
    const engineNo = orders.engineNo[slot]!;
    if (!(engineNo >= 1 && engineNo <= sequence)) fail(`engine state: order slot ${slot} has engine order number ${engineNo}, past sequence ${sequence}`);
    const state = bytes[b + ORDER_STATE_BYTE]!;
    const level = o[r + ORDER_LEVEL_WORD]!;
    const prev = o[r + ORDER_PREV_WORD]!;
    const next = o[r + ORDER_NEXT_WORD]!;
    links[slot * 2] = next;
    if (state !== STATE_OPEN && state !== STATE_PARTIALLY_FILLED) {
      links[slot * 2 + 1] = -1;
      if (level !== -1 || prev !== -1 || next !== -1) fail(`engine state: terminal order slot ${slot} is still linked`);
      if ((state === STATE_FILLED) !== (filled === quantity)) fail(`engine state: order slot ${slot} in state ${state} has ${filled} filled of ${quantity}`);
      continue;
    }
    if (filled === quantity || (state === STATE_PARTIALLY_FILLED) !== filled > 0) fail(`engine state: order slot ${slot} rests in state ${state} with ${filled} filled of ${quantity}`);
    if (level < 0 || level >= levels.capacity || levels.isEmpty(level)) fail(`engine state: resting order slot ${slot} names level ${level}, not a live one`);
    const lr = level << LEVEL_WORD_SHIFT;
    if (lw[lr + LEVEL_BOOK_SIDE_WORD] !== book * 2 + side || levels.price(level) !== price) fail(`engine state: order slot ${slot} rests at level ${level}, of another book side or price`);
    counts[level * 2 + queue]!++;
    open[level * 2 + queue]! += quantity - filled;
    links[slot * 2 + 1] = level * 2 + queue;
    if (prev === -1 && lw[lr + LEVEL_HEAD_WORD + queue] !== slot) fail(`engine state: order slot ${slot} starts queue ${queue} of level ${level}, whose head is another`);
    if (next === -1 && lw[lr + LEVEL_TAIL_WORD + queue] !== slot) fail(`engine state: order slot ${slot} ends queue ${queue} of level ${level}, whose tail is another`);
  }
  for (let slot = 0; slot < used; slot++) {
    const queue = links[slot * 2 + 1]!;
    if (queue < 0) continue;
    const prev = o[(slot << ORDER_WORD_SHIFT) + ORDER_PREV_WORD]!;
    if (prev === -1) continue;
    if (prev < 0 || prev >= used || links[prev * 2 + 1] !== queue || links[prev * 2] !== slot) {
      fail(`engine state: order slot ${slot}, in queue ${queue & 1} of level ${queue >> 1}, has a predecessor that does not link back to it`);
    }
  }
  for (let level = 0; level < levels.capacity; level++) {
    for (let queue = 0; queue < 2; queue++) {
      const count = levels.count(level, queue);
      if (count !== counts[level * 2 + queue]) fail(`engine state: queue ${queue} of level ${level} counts ${count} orders, ${counts[level * 2 + queue]} rest in it`);
      const head = levels.head(level, queue);
      const tail = lw[(level << LEVEL_WORD_SHIFT) + LEVEL_TAIL_WORD + queue]!;
      if (count === 0) {
        // A free level's links are stale and reset when it is taken; a live level's empty queue has none.
        if (!levels.isEmpty(level) && (head !== -1 || tail !== -1)) fail(`engine state: empty queue ${queue} of level ${level} has a head or tail`);
        continue;
      }
      if (!linksTo(orders, head, used, level, queue, ORDER_PREV_WORD, -1) || !linksTo(orders, tail, used, level, queue, ORDER_NEXT_WORD, -1)) {
        fail(`engine state: queue ${queue} of level ${level} has a head or tail that is not an end of it`);
      }
      if (levels.quantity(level, queue) !== open[level * 2 + queue])
        fail(`engine state: queue ${queue} of level ${level} holds ${levels.quantity(level, queue)} open, its orders ${open[level * 2 + queue]}`);
    }
  }
}

/** Whether `slot` is an order slot in use resting in `queue` of `level` whose `linkWord` (prev or next) is `to`. */
function linksTo(orders: OrderStore, slot: number, used: number, level: number, queue: number, linkWord: number, to: number): boolean {
  if (slot < 0 || slot >= used) return false;
  const r = slot << ORDER_WORD_SHIFT;
  return orders.words[r + ORDER_LEVEL_WORD] === level && orders.bytes[(slot << ORDER_BYTE_SHIFT) + ORDER_TYPE_BYTE] === queue && orders.words[r + linkWord] === to;
}
