// A seeded, realistic command stream for the matching core, pre-encoded into
// command slots so that a benchmark times matching only.
//
// The stream starts with `restingOrders` non-crossing limits around the mid (the
// warm-up book, not timed), then a timed mix:
//   restPct   resting limits 1..spread ticks from a slowly moving mid (hiddenPct of
//             them hidden, 5% unless set)
//   cancelPct cancels of random resting orders
//   crossPct  IOC orders crossing the opposite best by a few ticks
//   the rest  modifies (new price near the old one, or a smaller quantity)
// While generating, the stream is run through a scratch engine so that cancels and
// modifies name an order that is resting at that moment (always, only with
// `cancelsNameRestingOnly`: see there), and the generator knows when a maker was
// filled.
//
// With `recordOps` the stream also comes as plain numbers (ReplayOps), so that an
// engine that cannot read command slots replays exactly the same commands.

import { EventKind, Opcode, OrderState, OrderType, Side, TimeInForce } from '../../core/codes.ts';
import {
  COMMAND_ACCOUNT_ID_WORD,
  COMMAND_CURRENCY_WORD,
  COMMAND_HEADER_WORD,
  COMMAND_ID_WORD,
  COMMAND_INSTRUMENT_ID_WORD,
  COMMAND_ORDER_ID_WORD,
  COMMAND_PARTICIPANT_ID_WORD,
  COMMAND_PRICE_NANOS_FLOAT,
  COMMAND_QUANTITY_UNITS_FLOAT,
  COMMAND_RUN_WORD,
  COMMAND_SESSION_WORD,
  COMMAND_SLOT_BYTES,
  COMMAND_TIMESTAMP_US_FLOAT,
  packCurrency,
  packHeader,
  slotViews,
  type SlotViews,
} from '../../core/command-slot.ts';
import { MatchingEngine } from '../../core/matching-engine.ts';
import { SeededRandom } from './seeded-random.ts';

export interface StreamOptions {
  seed: number;
  restingOrders: number;
  commands: number;
  restPct: number;
  cancelPct: number;
  crossPct: number;
  /** Price step in nanos (a tick of 0.01). */
  tickNanos?: number;
  /** Resting orders are placed up to this many ticks from the mid. */
  spreadTicks?: number;
  /** Crossing orders take 1..crossQuantityMax units (sizes how many makers they sweep). */
  crossQuantityMax?: number;
  orderCapacity?: number;
  /**
   * Share of resting limits that are hidden, in percent (default 5). The draw is made
   * whatever the value, so 0 changes only the order type, never the rest of the stream.
   */
  hiddenPct?: number;
  /** Also return the stream as ReplayOps (costs 14 bytes per command). */
  recordOps?: boolean;
  /**
   * Take the incoming order's state from its accepted outcome only. Without it
   * (the default, kept so the streams measured so far stay the same), an IOC that
   * fills partly stays on the live list through its own execution events, which
   * come after the outcome, and later cancels and modifies name it when it is no
   * longer open: the engine rejects them (ORDER_NOT_OPEN: 7.6% of the cancels and
   * modifies of the quick, 400,000-command core-bench stream).
   */
  cancelsNameRestingOnly?: boolean;
}

/** Kind of a replayed command. */
export const ReplayOp = { REST: 0, REST_HIDDEN: 1, CROSS_IOC: 2, CANCEL: 3, MODIFY: 4 } as const;

/**
 * The stream as parallel arrays, entry i for command slot i. Submits carry their
 * order number, side (Side codes), price in ticks and quantity in units; a cancel
 * names its target's order number (side, price and quantity 0); a modify names its
 * target and carries the new price and quantity.
 */
export interface ReplayOps {
  tickNanos: number;
  kind: Uint8Array;
  orderNo: Int32Array;
  side: Uint8Array;
  priceTicks: Int32Array;
  quantity: Int32Array;
}

export interface CommandStream {
  views: SlotViews;
  /** Slots [0, warmup) build the initial book; [warmup, total) are the timed mix. */
  warmup: number;
  total: number;
  counts: { rest: number; cancel: number; cross: number; modify: number };
  /** What running the whole stream on a fresh engine must leave: a benchmark checks it. */
  expected: { lastSequence: number; restingOrders: number; trades: number };
  /** Present when asked for with `recordOps`. */
  ops?: ReplayOps;
}

const INSTRUMENT = [0x11111111, 0x11114111, 0x81111111, 0x11111111];
const PARTICIPANT = [0x0aaaaaaa, 0x00004000, 0x80000000, 0x00000001];
const ACCOUNT = [0x0bbbbbbb, 0x00004000, 0x80000000, 0x00000001];
const USD = packCurrency('USD');

export function buildCoreStream(options: StreamOptions): CommandStream {
  const tick = options.tickNanos ?? 10_000_000;
  const spread = options.spreadTicks ?? 500;
  const total = options.restingOrders + options.commands;
  const hiddenShare = (options.hiddenPct ?? 5) / 100;
  const ops = options.recordOps ? newReplayOps(total, tick) : undefined;
  const views = slotViews(new ArrayBuffer(total * COMMAND_SLOT_BYTES));
  const random = new SeededRandom(options.seed);
  const engine = new MatchingEngine({ orderCapacity: options.orderCapacity ?? 1 << 21, instrumentCapacity: 4 });
  // Live resting orders by order number, with swap-remove in O(1).
  const live: number[] = [];
  const livePos = new Map<number, number>();
  const livePrice = new Map<number, number>();
  const liveQuantity = new Map<number, number>();
  const add = (n: number, price: number, quantity: number): void => {
    livePos.set(n, live.length);
    live.push(n);
    livePrice.set(n, price);
    liveQuantity.set(n, quantity);
  };
  const remove = (n: number): void => {
    const at = livePos.get(n);
    if (at === undefined) return;
    const last = live.pop()!;
    if (last !== n) {
      live[at] = last;
      livePos.set(last, at);
    }
    livePos.delete(n);
    livePrice.delete(n);
    liveQuantity.delete(n);
  };
  let mid = 10_000 * tick; // 100.00
  let nextOrder = 1;
  let trades = 0;
  const counts = { rest: 0, cancel: 0, cross: 0, modify: 0 };

  for (let i = 0; i < total; i++) {
    const byteOffset = i * COMMAND_SLOT_BYTES;
    const w = byteOffset >> 2;
    const f = byteOffset >> 3;
    const words = views.words;
    const floats = views.floats;
    for (let k = 0; k < 4; k++) {
      words[w + COMMAND_INSTRUMENT_ID_WORD + k] = INSTRUMENT[k]!;
      words[w + COMMAND_PARTICIPANT_ID_WORD + k] = PARTICIPANT[k]!;
      words[w + COMMAND_ACCOUNT_ID_WORD + k] = ACCOUNT[k]!;
    }
    words[w + COMMAND_RUN_WORD] = 1;
    words[w + COMMAND_SESSION_WORD] = 1;
    words[w + COMMAND_CURRENCY_WORD] = USD;
    words[w + COMMAND_ID_WORD] = 0x0c0c0c0c;
    words[w + COMMAND_ID_WORD + 3] = i;
    floats[f + COMMAND_TIMESTAMP_US_FLOAT] = 1_700_000_000_000_000 + i;
    if (random.chance(0.001)) mid += random.chance(0.5) ? tick : -tick;

    const roll = i < options.restingOrders ? 0 : random.below(100);
    if (roll < options.restPct || live.length === 0) {
      const side = random.chance(0.5) ? Side.BUY : Side.SELL;
      // Distance from the mid: mostly close, a long tail out to `spread` ticks.
      const distance = Math.min(spread, 1 + random.below(random.chance(0.8) ? 20 : spread));
      const price = side === Side.BUY ? mid - distance * tick : mid + distance * tick;
      const hidden = random.chance(hiddenShare);
      const quantity = random.between(1, 100);
      if (ops) recordOp(ops, i, hidden ? ReplayOp.REST_HIDDEN : ReplayOp.REST, nextOrder, side, price, quantity);
      writeSubmit(words, floats, w, f, nextOrder++, side, hidden ? OrderType.LIMIT_HIDDEN : OrderType.LIMIT, TimeInForce.DAY, price, quantity);
      if (i >= options.restingOrders) counts.rest++;
    } else if (roll < options.restPct + options.cancelPct) {
      const target = live[random.below(live.length)]!;
      writeTarget(words, w, Opcode.CANCEL, target);
      if (ops) recordOp(ops, i, ReplayOp.CANCEL, target, 0, 0, 0);
      counts.cancel++;
    } else if (roll < options.restPct + options.cancelPct + options.crossPct) {
      const side = random.chance(0.5) ? Side.BUY : Side.SELL;
      const best = engine.levels.best(side === Side.BUY ? 1 : 0);
      const bestPrice = best < 0 ? mid : engine.levels.price(best);
      const price = side === Side.BUY ? bestPrice + random.between(0, 3) * tick : bestPrice - random.between(0, 3) * tick;
      const quantity = random.between(1, options.crossQuantityMax ?? 300);
      if (ops) recordOp(ops, i, ReplayOp.CROSS_IOC, nextOrder, side, Math.max(tick, price), quantity);
      writeSubmit(words, floats, w, f, nextOrder++, side, OrderType.LIMIT, TimeInForce.IOC, Math.max(tick, price), quantity);
      counts.cross++;
    } else {
      const target = live[random.below(live.length)]!;
      writeTarget(words, w, Opcode.MODIFY, target);
      const price = livePrice.get(target)!;
      const quantity = liveQuantity.get(target)!;
      const reduce = random.chance(0.5) && quantity > 1;
      const newPrice = reduce ? price : price + (price < mid ? -tick : tick);
      const newQuantity = reduce ? quantity - 1 : quantity + random.between(1, 10);
      floats[f + COMMAND_PRICE_NANOS_FLOAT] = newPrice;
      floats[f + COMMAND_QUANTITY_UNITS_FLOAT] = newQuantity;
      if (ops) recordOp(ops, i, ReplayOp.MODIFY, target, 0, newPrice, newQuantity);
      counts.modify++;
    }
    engine.process(words, floats, byteOffset);
    trades += engine.events.countOf(EventKind.TRADE);
    track(engine, add, remove, options.cancelsNameRestingOnly ?? false);
  }
  return {
    views,
    warmup: options.restingOrders,
    total,
    counts,
    expected: { lastSequence: engine.sequence, restingOrders: engine.orders.restingCount, trades },
    ...(ops ? { ops } : {}),
  };
}

function newReplayOps(total: number, tickNanos: number): ReplayOps {
  return {
    tickNanos,
    kind: new Uint8Array(total),
    orderNo: new Int32Array(total),
    side: new Uint8Array(total),
    priceTicks: new Int32Array(total),
    quantity: new Int32Array(total),
  };
}

function recordOp(ops: ReplayOps, i: number, kind: number, n: number, side: number, priceNanos: number, quantity: number): void {
  const ticks = priceNanos / ops.tickNanos;
  // Every generated price is mid +- whole ticks; anything else is a generator bug.
  if (!Number.isInteger(ticks)) throw new Error(`price ${priceNanos} is not a whole number of ticks`);
  ops.kind[i] = kind;
  ops.orderNo[i] = n;
  ops.side[i] = side;
  ops.priceTicks[i] = ticks;
  ops.quantity[i] = quantity;
}

function track(engine: MatchingEngine, add: (n: number, p: number, q: number) => void, remove: (n: number) => void, outcomeOnly: boolean): void {
  const events = engine.events;
  const orders = engine.orders;
  // The accepted outcome comes first and carries the order's final state; its
  // executions as the incoming order follow with intermediate states.
  const incoming = events.count > 0 && events.kind(0) === EventKind.ACCEPTED ? events.order(0) : -1;
  for (let e = 0; e < events.count; e++) {
    const kind = events.kind(e);
    if (kind !== EventKind.ACCEPTED && kind !== EventKind.EXECUTION) continue;
    const slot = events.order(e);
    if (outcomeOnly && kind === EventKind.EXECUTION && slot === incoming) continue;
    const n = orders.words[orders.idAt(slot) + 3]!;
    const state = events.state(e);
    if (state === OrderState.OPEN || state === OrderState.PARTIALLY_FILLED) {
      remove(n);
      add(n, orders.price(slot), orders.quantity(slot));
    } else {
      remove(n);
    }
  }
}

function writeSubmit(words: Int32Array, floats: Float64Array, w: number, f: number, n: number, side: number, orderType: number, timeInForce: number, price: number, quantity: number): void {
  words[w + COMMAND_HEADER_WORD] = packHeader(Opcode.SUBMIT, side, orderType, timeInForce);
  setOrderId(words, w, n);
  floats[f + COMMAND_PRICE_NANOS_FLOAT] = price;
  floats[f + COMMAND_QUANTITY_UNITS_FLOAT] = quantity;
}

function writeTarget(words: Int32Array, w: number, opcode: number, n: number): void {
  words[w + COMMAND_HEADER_WORD] = packHeader(opcode, 0, 0, 0);
  setOrderId(words, w, n);
}

function setOrderId(words: Int32Array, w: number, n: number): void {
  words[w + COMMAND_ORDER_ID_WORD] = 0x0d0d0d0d;
  words[w + COMMAND_ORDER_ID_WORD + 1] = 0x00004000;
  words[w + COMMAND_ORDER_ID_WORD + 2] = 0x80000000 | 0;
  words[w + COMMAND_ORDER_ID_WORD + 3] = n;
}
