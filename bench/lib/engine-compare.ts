// One seeded stream through two engines: our MatchingEngine (fed the pre-encoded
// command slots) and the npm package nodejs-order-book (fed the same commands as
// ReplayOps: integer tick prices, string ids). Both final books are read into one
// shape, level by level, so a benchmark and a test can check that the two engines
// did the same work before any timing is believed.
//
// Only what both engines express identically goes in the stream: resting limits
// (our DAY, their GTC), IOC limits and cancels. No hidden orders (nodejs-order-book
// has none) and no modifies (its modify always re-queues, ours keeps priority on a
// reduction at the same price). Cancels name only orders resting at that moment
// (cancelsNameRestingOnly): the default stream also cancels some IOCs already gone,
// which our engine rejects and theirs ignores, and the mix says cancels of resting orders.

import { OrderBook, Side as TheirSide, type LimitOrderOptions } from 'nodejs-order-book';
import { COMMAND_SLOT_BYTES } from '../../core/command-slot.ts';
import { EventKind } from '../../core/codes.ts';
import { MatchingEngine } from '../../core/matching-engine.ts';
import { buildCoreStream, ReplayOp, type CommandStream, type ReplayOps } from './core-stream.ts';

export type CompareStream = CommandStream & { ops: ReplayOps };

export interface CompareStreamOptions {
  seed: number;
  restingOrders: number;
  commands: number;
  /** Of the generator's scratch engine (default OUR_ORDER_CAPACITY); tests use less. */
  orderCapacity?: number;
}

/** The mix both engines run: 60% resting limits, 30% cancels, 10% crossing IOCs. */
export const COMPARE_MIX = { restPct: 60, cancelPct: 30, crossPct: 10, hiddenPct: 0, crossQuantityMax: 400 } as const;

/** Same order capacity as bench/core-bench.ts, so our engine runs as it does there. */
export const OUR_ORDER_CAPACITY = 1 << 21;

export function buildCompareStream(options: CompareStreamOptions): CompareStream {
  const stream = buildCoreStream({
    orderCapacity: OUR_ORDER_CAPACITY,
    ...options,
    ...COMPARE_MIX,
    recordOps: true,
    cancelsNameRestingOnly: true,
  });
  const ops = stream.ops;
  if (!ops) throw new Error('buildCoreStream returned no ops although recordOps was set');
  for (let i = 0; i < stream.total; i++) {
    const kind = ops.kind[i]!;
    if (kind !== ReplayOp.REST && kind !== ReplayOp.CANCEL && kind !== ReplayOp.CROSS_IOC) {
      throw new Error(`command ${i} has kind ${kind}, which nodejs-order-book cannot replay like our engine`);
    }
  }
  return { ...stream, ops };
}

/** Matching work one engine reports for a stream (from its own outputs). */
export interface ReplayTally {
  /** Maker fills: our TRADE events; theirs derived from each limit() answer. */
  trades: number;
  tradedQuantity: number;
  /** Commands the engine refused (ours: REJECTED events; theirs: err or unknown cancel). */
  refused: number;
}

export interface BookLevel {
  priceTicks: number;
  quantity: number;
  orders: number;
}

/** Both sides, best price first. */
export interface BookSides {
  bids: BookLevel[];
  asks: BookLevel[];
}

// ---- our engine ----------------------------------------------------------------

export function newOurEngine(orderCapacity = OUR_ORDER_CAPACITY): MatchingEngine {
  const engine = new MatchingEngine({ orderCapacity });
  engine.prefault();
  return engine;
}

/**
 * Commands prefetched before they are processed, as a shard does with each batch it drains
 * (core/shard-runner.ts processBatch: a whole batch of up to SHARD_BATCH_MAX, 64 by
 * default, prefetched at once). 32 is the batch the 5 M target is judged on; 64 runs about
 * 2% faster (docs/decisions/0016-engine-prefetch.md).
 */
export const SHARD_PREFETCH_BATCH = 32;

/**
 * Slots [from, to) of pre-encoded commands: one command at a time (batch 1), or as a
 * shard drains its rings (batch > 1): prefetch the next `batch` commands' order-index
 * buckets and records, then process them one by one.
 */
export function processSlots(engine: MatchingEngine, words: Int32Array, floats: Float64Array, from: number, to: number, batch = 1): void {
  if (batch <= 1) {
    for (let i = from; i < to; i++) engine.process(words, floats, i * COMMAND_SLOT_BYTES);
    return;
  }
  for (let i = from; i < to; i += batch) {
    const stop = Math.min(i + batch, to);
    engine.prefetch(words, i * COMMAND_SLOT_BYTES, stop - i);
    for (let j = i; j < stop; j++) engine.process(words, floats, j * COMMAND_SLOT_BYTES);
  }
}

/** Slots [from, to) of the stream, fed as processSlots does. */
export function runOurs(engine: MatchingEngine, stream: CommandStream, from: number, to: number, batch = 1): void {
  processSlots(engine, stream.views.words, stream.views.floats, from, to, batch);
}

/** Same as runOurs, tallying the events (untimed verification pass). */
export function runOursTallied(engine: MatchingEngine, stream: CommandStream, from: number, to: number): ReplayTally {
  const { words, floats } = stream.views;
  const events = engine.events;
  const tally: ReplayTally = { trades: 0, tradedQuantity: 0, refused: 0 };
  for (let i = from; i < to; i++) {
    engine.process(words, floats, i * COMMAND_SLOT_BYTES);
    for (let e = 0; e < events.count; e++) {
      const kind = events.kind(e);
      if (kind === EventKind.TRADE) {
        tally.trades++;
        tally.tradedQuantity += events.quantity(e);
      } else if (kind === EventKind.REJECTED) tally.refused++;
    }
  }
  return tally;
}

export function readOurBook(engine: MatchingEngine, tickNanos: number): BookSides {
  // The compare stream names one instrument, so its book is book 0.
  if (engine.instrumentCount !== 1) throw new Error(`expected one book, found ${engine.instrumentCount}`);
  const levels = engine.levels;
  const read = (side: number): BookLevel[] => {
    const out: BookLevel[] = [];
    levels.walkBestFirst(side, (level) => {
      // Both queues: the stream has no hidden orders, and if one slipped in it must show as a difference.
      out.push({
        priceTicks: levels.price(level) / tickNanos,
        quantity: levels.quantity(level, 0) + levels.quantity(level, 1),
        orders: levels.count(level, 0) + levels.count(level, 1),
      });
      return true;
    });
    return out;
  };
  return { bids: read(0), asks: read(1) };
}

// ---- nodejs-order-book -----------------------------------------------------------

type TheirTimeInForce = NonNullable<LimitOrderOptions['timeInForce']>;
// The package's index does not export its TimeInForce enum; its values are these strings.
const GTC = 'GTC' as TheirTimeInForce;
const IOC = 'IOC' as TheirTimeInForce;
/** Indexed by our Side codes (BUY 0, SELL 1). */
const THEIR_SIDES = [TheirSide.BUY, TheirSide.SELL] as const;

/**
 * String ids by order number, built before timing: our engine gets its ids
 * pre-encoded in the slots, so formatting theirs is not timed either. Not plain
 * digits: the package keys plain objects by id, and digit strings become integer
 * keys, which makes it about 35% slower (200,000 commands); "o<n>" runs
 * as fast as 36-character UUID text.
 */
export function theirOrderIds(ops: ReplayOps): string[] {
  let last = 0;
  for (let i = 0; i < ops.orderNo.length; i++) last = Math.max(last, ops.orderNo[i]!);
  const ids = new Array<string>(last + 1);
  for (let n = 0; n <= last; n++) ids[n] = `o${n}`;
  return ids;
}

export function newTheirBook(): OrderBook {
  return new OrderBook({ enableJournaling: false });
}

export function runTheirs(book: OrderBook, ops: ReplayOps, ids: string[], from: number, to: number): void {
  const { kind, orderNo, side, priceTicks, quantity } = ops;
  for (let i = from; i < to; i++) {
    const k = kind[i]!;
    if (k === ReplayOp.CANCEL) book.cancel(ids[orderNo[i]!]!);
    else {
      book.limit({
        id: ids[orderNo[i]!]!,
        side: THEIR_SIDES[side[i]!]!,
        size: quantity[i]!,
        price: priceTicks[i]!,
        timeInForce: k === ReplayOp.CROSS_IOC ? IOC : GTC,
      });
    }
  }
}

/**
 * Same as runTheirs, tallying each answer (untimed verification pass). A limit()
 * answer lists in `done` every maker it filled completely and, when the incoming
 * order was filled completely, that order last; `partial` is the maker left partly
 * filled, if any, only in that case. So maker fills are done.length while the
 * incoming order has a remainder, else done.length - 1 + (partial ? 1 : 0).
 */
export function runTheirsTallied(book: OrderBook, ops: ReplayOps, ids: string[], from: number, to: number): ReplayTally {
  const { kind, orderNo, side, priceTicks, quantity } = ops;
  const tally: ReplayTally = { trades: 0, tradedQuantity: 0, refused: 0 };
  for (let i = from; i < to; i++) {
    const k = kind[i]!;
    if (k === ReplayOp.CANCEL) {
      if (book.cancel(ids[orderNo[i]!]!) === undefined) tally.refused++;
      continue;
    }
    const size = quantity[i]!;
    const answer = book.limit({
      id: ids[orderNo[i]!]!,
      side: THEIR_SIDES[side[i]!]!,
      size,
      price: priceTicks[i]!,
      timeInForce: k === ReplayOp.CROSS_IOC ? IOC : GTC,
    });
    if (answer.err !== null) {
      tally.refused++;
      continue;
    }
    const filled = size - answer.quantityLeft;
    if (filled === 0) continue;
    tally.tradedQuantity += filled;
    tally.trades += answer.quantityLeft > 0 ? answer.done.length : answer.done.length - 1 + (answer.partial !== null ? 1 : 0);
  }
  return tally;
}

export function readTheirBook(book: OrderBook): BookSides {
  // snapshot() walks each side's price tree best first (bids descending, asks ascending).
  const { bids, asks } = book.snapshot();
  const read = (levels: typeof bids): BookLevel[] =>
    levels.map((level) => ({
      priceTicks: level.price,
      quantity: level.orders.reduce((sum, order) => sum + order.size, 0),
      orders: level.orders.length,
    }));
  return { bids: read(bids), asks: read(asks) };
}

// ---- comparison ------------------------------------------------------------------

export interface BookDifference {
  side: 'bids' | 'asks';
  /** Level index, best first. */
  index: number;
  ours: BookLevel | null;
  theirs: BookLevel | null;
}

/** The first level (bids, then asks, best first) where price, quantity or order count differ; null if none. */
export function firstBookDifference(ours: BookSides, theirs: BookSides): BookDifference | null {
  for (const side of ['bids', 'asks'] as const) {
    const a = ours[side];
    const b = theirs[side];
    for (let i = 0; i < Math.max(a.length, b.length); i++) {
      const x = a[i];
      const y = b[i];
      if (!x || !y || x.priceTicks !== y.priceTicks || x.quantity !== y.quantity || x.orders !== y.orders) {
        return { side, index: i, ours: x ?? null, theirs: y ?? null };
      }
    }
  }
  return null;
}

export function bookTotals(book: BookSides): { bidLevels: number; askLevels: number; restingOrders: number; restingQuantity: number } {
  const all = [...book.bids, ...book.asks];
  return {
    bidLevels: book.bids.length,
    askLevels: book.asks.length,
    restingOrders: all.reduce((sum, level) => sum + level.orders, 0),
    restingQuantity: all.reduce((sum, level) => sum + level.quantity, 0),
  };
}
