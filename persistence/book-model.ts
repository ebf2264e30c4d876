// The displayed books, kept by the persistence thread: per instrument and side, the
// open LIMIT quantity and order count at each price. Loaded once from
// runtime.order_lifecycle_state, then kept current by the BookUpdate of every commit
// the projector ingests, and published to the gateways (the best levels of each book
// changed, in shared memory: core/market-view.ts DepthView), so a depth read costs no
// query and no message. Quantities are summed as BigInt (exact whatever the number of
// orders).
//
// Each side keeps its prices sorted best first, changed only when a level appears or
// goes (binary search, then one splice), so the best levels are a prefix. Sorting every
// level of a touched book on each commit, as this did before, cost 30 µs per book at
// 100 levels and 6.3 ms at 100,000 (bench/book-model-bench.ts): one participant's wide
// book slowed every commit of the venue.

import type pg from 'pg';
import { packCurrency } from '../core/command-slot.ts';
import { DEPTH_LEVELS_MAX, type DepthView } from '../core/market-view.ts';
import type { MarketStreamProducer } from './market-stream-producer.ts';
import { uuidWords } from '../core/uuid.ts';
import type { BookUpdate } from './projector.ts';

interface Level {
  quantity: bigint;
  count: number;
}

interface Side {
  levels: Map<number, Level>;
  /** The quantity of every level together. */
  total: bigint;
  /** The prices of `levels`, best first (bids descending, asks ascending). */
  prices: number[];
  descending: boolean;
}

interface Book {
  currency: string;
  shard: number;
  bids: Side;
  asks: Side;
  /** The instrument id as words (the view's key). */
  words: Int32Array;
}

export interface DepthLevel {
  priceNanos: number;
  quantity: bigint;
  count: number;
}

export class BookModel {
  private readonly books = new Map<string, Book>();
  /** The projection position per shard the model includes. */
  private readonly watermarks: number[];

  constructor(shardCount: number) {
    this.watermarks = Array.from({ length: shardCount }, () => 0);
  }

  /**
   * (Re)loads everything from PostgreSQL in one snapshot, with the projection
   * watermarks of that snapshot: an update the snapshot already holds is then skipped,
   * and none it lacks is (the projector commits watermarks with its rows).
   */
  async load(client: pg.ClientBase): Promise<void> {
    try {
      await client.query('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY');
      const marks = await client.query<{ shard_id: number; sequence: string }>("SELECT shard_id, sequence FROM runtime.projection_watermarks WHERE projection = 'runtime'");
      const instruments = await client.query<{ instrument_id: string; currency: string; shard_id: number }>('SELECT instrument_id, currency, shard_id FROM runtime.instruments');
      const levels = await client.query<{ instrument_id: string; side: string; p: string; q: string; n: number }>(
        `SELECT instrument_id, side, limit_price_nanos::text AS p, sum(remaining_quantity_units)::text AS q, count(*)::int AS n
           FROM runtime.order_lifecycle_state WHERE state IN ('OPEN', 'PARTIALLY_FILLED') AND order_type = 'LIMIT'
          GROUP BY instrument_id, side, limit_price_nanos`,
      );
      await client.query('COMMIT');
      this.books.clear();
      for (const row of instruments.rows) this.books.set(row.instrument_id, newBook(row.currency, row.shard_id, row.instrument_id));
      for (const row of levels.rows) {
        const book = this.books.get(row.instrument_id);
        if (book === undefined) continue;
        const side = row.side === 'BUY' ? book.bids : book.asks;
        side.levels.set(Number(row.p), { quantity: BigInt(row.q), count: row.n });
        side.total += BigInt(row.q);
      }
      for (const book of this.books.values()) {
        for (const side of [book.bids, book.asks]) {
          side.prices = [...side.levels.keys()].sort(side.descending ? (a, b) => b - a : (a, b) => a - b);
        }
      }
      this.watermarks.fill(0);
      for (const row of marks.rows) if (row.shard_id < this.watermarks.length) this.watermarks[row.shard_id] = Number(row.sequence);
    } catch (error) {
      await client.query('ROLLBACK').catch(() => undefined);
      throw error;
    }
  }

  /** The projection position of a shard that the model includes. */
  watermark(shard: number): number {
    return this.watermarks[shard] ?? 0;
  }

  /** Applies one group's changes, unless the load already included them. */
  apply(update: BookUpdate): void {
    if (update.watermarks.every(([shard, sequence]) => sequence <= this.watermarks[shard]!)) return;
    for (const [id, currency, shard] of update.instruments) {
      if (!this.books.has(id)) this.books.set(id, newBook(currency, shard, id));
    }
    for (const [id, sideName, priceNanos, quantityDelta, countDelta] of update.levels) {
      const book = this.books.get(id);
      if (book === undefined) throw new Error(`book update for an unknown instrument ${id}`);
      const side = sideName === 'BUY' ? book.bids : book.asks;
      let level = side.levels.get(priceNanos);
      const created = level === undefined;
      if (level === undefined) level = { quantity: 0n, count: 0 };
      level.quantity += BigInt(quantityDelta);
      level.count += countDelta;
      side.total += BigInt(quantityDelta);
      if (level.count < 0 || level.quantity < 0n) throw new Error(`book level went negative: ${id} ${sideName} ${priceNanos}`);
      if (level.count === 0) {
        if (!created) {
          side.levels.delete(priceNanos);
          side.prices.splice(positionOf(side, priceNanos), 1);
        }
      } else if (created) {
        side.levels.set(priceNanos, level);
        side.prices.splice(positionOf(side, priceNanos), 0, priceNanos);
      }
    }
    for (const [shard, sequence] of update.watermarks) if (sequence > this.watermarks[shard]!) this.watermarks[shard] = sequence;
  }

  /**
   * Publishes to the gateways' view: the best levels of each instrument named (every
   * instrument when null), then the watermarks; with `stream`, the market-data stream's
   * records of what changed (none with `emit` false). Returns false if an instrument found no
   * room in the view (its depth answers 503 until MARKET_DATA_INSTRUMENTS is raised).
   */
  publish(view: DepthView, instruments: Iterable<string> | null, watermarks: Iterable<[number, number]>, stream?: { producer: MarketStreamProducer; emit: boolean }): boolean {
    let fits = true;
    for (const id of instruments ?? this.books.keys()) {
      const book = this.books.get(id);
      if (book === undefined) continue;
      const depth = this.depth(id, DEPTH_LEVELS_MAX)!;
      const currency = packCurrency(book.currency);
      // The stream's records for the change are staged first, appended once the view holds what they lead to.
      const marks = stream?.producer.stageBook(id, book.words, currency, depth.bids, depth.asks, stream.emit);
      const written = view.write(book.words, currency, book.shard, depth.bids, depth.asks, { bid: book.bids.total, ask: book.asks.total }, marks);
      stream?.producer.finishBook(written);
      fits = written && fits;
    }
    for (const [shard, sequence] of watermarks) view.setWatermark(shard, sequence);
    return fits;
  }

  /** Every shard's watermark the model includes. */
  watermarkEntries(): [number, number][] {
    return this.watermarks.map((sequence, shard) => [shard, sequence]);
  }

  /** The best `levels` prices per side, or null for an instrument the venue never took an order for. */
  depth(instrumentId: string, levels: number): { currency: string; shard: number; bids: DepthLevel[]; asks: DepthLevel[] } | null {
    const book = this.books.get(instrumentId);
    if (book === undefined) return null;
    return { currency: book.currency, shard: book.shard, bids: best(book.bids, levels), asks: best(book.asks, levels) };
  }
}

function newBook(currency: string, shard: number, instrumentId: string): Book {
  return {
    currency,
    shard,
    bids: { levels: new Map(), total: 0n, prices: [], descending: true },
    asks: { levels: new Map(), total: 0n, prices: [], descending: false },
    words: uuidWords(instrumentId),
  };
}

/** Where `price` is in the side's sorted prices, or where it would go (the first price not better than it). */
function positionOf(side: Side, price: number): number {
  const prices = side.prices;
  let low = 0;
  let high = prices.length;
  while (low < high) {
    const mid = (low + high) >>> 1;
    const better = side.descending ? prices[mid]! > price : prices[mid]! < price;
    if (better) low = mid + 1;
    else high = mid;
  }
  return low;
}

/** The best `count` levels of a side, best first. */
function best(side: Side, count: number): DepthLevel[] {
  const n = Math.min(count, side.prices.length);
  const out: DepthLevel[] = new Array(n);
  for (let i = 0; i < n; i++) {
    const priceNanos = side.prices[i]!;
    const level = side.levels.get(priceNanos)!;
    out[i] = { priceNanos, quantity: level.quantity, count: level.count };
  }
  return out;
}
