// Depth and snapshot reads answered by the gateway thread itself, from shared memory
// (core/market-view.ts): the persistence thread keeps the books' best levels there,
// the read thread the stored snapshots. Same answers as the read thread gave from its
// own copy, without the message to it or the wait for its turn.
//
// Depth is read-your-writes (API contract): it waits, bounded, until the view shows
// the journal position that was durable when the read arrived (the persistence thread
// publishes the books right after each commit, so the wait is rarely more than a turn).

import { unpackCurrency } from '../core/command-slot.ts';
import type { DepthView, SnapshotView, ViewLevel } from '../core/market-view.ts';
import { occurredAtOf } from '../core/outcome-format.ts';
import type { PersistenceControl } from '../core/persistence-control.ts';
import { shardOf } from '../core/shard-map.ts';
import type { ReadAnswerBody } from '../core/storage-protocol.ts';
import { uuidWords } from '../core/uuid.ts';
import { errorBody } from './error-catalog.ts';

/** How long a depth read waits for the view to reach the journal position of its arrival. */
const DEPTH_WAIT_MS = 2_000;

const currencyText = (packed: number) => (packed === 0 ? '' : unpackCurrency(packed));

export async function depthAnswer(view: DepthView, control: PersistenceControl, shardCount: number, instrumentId: string, levels: number): Promise<ReadAnswerBody> {
  const words = uuidWords(instrumentId);
  const shard = shardOf(words, 0, shardCount);
  const target = control.journalCommitted(shard);
  const deadline = Date.now() + DEPTH_WAIT_MS;
  for (let turns = 0; view.watermark(shard) < target; turns++) {
    if (Date.now() > deadline) return { status: 503, body: errorBody('UNAVAILABLE', 'the market data view is behind the journal; retry shortly') };
    await new Promise((resolve) => (turns < 16 ? setImmediate(resolve) : setTimeout(resolve, 1)));
  }
  const book = view.read(words, levels);
  if (book === null) {
    return view.full
      ? { status: 503, body: errorBody('OVERLOADED', 'more instruments than MARKET_DATA_INSTRUMENTS: this one has no depth view') }
      : { status: 404, body: errorBody('NOT_FOUND', 'market data depth not found') };
  }
  const currency = currencyText(book.currency);
  const level = (entry: ViewLevel) => ({ price: { nanos: String(entry.priceNanos), currency }, quantity: { units: String(entry.quantity) }, orderCount: entry.count });
  return {
    status: 200,
    body: JSON.stringify({ instrumentId, levels, bids: book.bids.map(level), asks: book.asks.map(level), watermark: view.watermark(book.shard) }),
  };
}

/** The stored snapshot from the view; null when the view cannot tell (it is full: storage holds the rest). */
export function snapshotAnswer(view: SnapshotView, instrumentId: string, projectionName: string): ReadAnswerBody | null {
  const snapshot = view.read(uuidWords(instrumentId), projectionName);
  if (snapshot === null) return view.full ? null : { status: 404, body: errorBody('NOT_FOUND', 'market data snapshot not found') };
  const currency = currencyText(snapshot.currency);
  const side = (entry: { priceNanos: number; quantity: bigint } | null) =>
    entry === null ? null : { price: { nanos: String(entry.priceNanos), currency }, quantity: { units: String(entry.quantity) } };
  return {
    status: 200,
    body: JSON.stringify({
      instrumentId,
      projectionName,
      bestBid: side(snapshot.bid),
      bestAsk: side(snapshot.ask),
      sourceWatermark: snapshot.sourceWatermark,
      refreshedAt: occurredAtOf(snapshot.refreshedAtUs),
    }),
  };
}
