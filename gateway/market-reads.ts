// Depth and snapshot reads answered by the gateway thread itself, from shared memory
// (core/market-view.ts): the persistence thread keeps the books' best levels there,
// the read thread the stored snapshots. Same answers as the read thread gave from its
// own copy, without the message to it or the wait for its turn.
//
// Depth is read-your-writes (API contract): it waits, bounded, until the view shows
// the journal position that was durable when the read arrived (the persistence thread
// publishes the books right after each commit, so the wait is rarely more than a turn).
// The tape likewise, from the tape view (core/tape-view.ts), which holds what storage
// holds: it waits for the projection of the instrument's shard, as the read thread's
// tape query did, and leaves pages older than the view's rows to that query.

import { unpackCurrency } from '../core/command-slot.ts';
import type { DepthView, SnapshotView, ViewLevel } from '../core/market-view.ts';
import type { TapeView } from '../core/tape-view.ts';
import { occurredAtOf } from '../core/outcome-format.ts';
import type { PersistenceControl } from '../core/persistence-control.ts';
import { shardOf } from '../core/shard-map.ts';
import { answered, refused, SNAPSHOT_NOT_FOUND, type PlaneAnswer } from '../core/storage-protocol.ts';
import { formatUuid, uuidWords } from '../core/uuid.ts';

/** How long a depth or tape read waits for its view to reach the journal position of its arrival. */
const VIEW_WAIT_MS = 2_000;

const currencyText = (packed: number) => (packed === 0 ? '' : unpackCurrency(packed));
const behind = () => refused('UNAVAILABLE', 'the market data view is behind the journal; retry shortly');

/** Waits, bounded, until `reached()` is at least `target` (a turn of the event loop at a time, then 1 ms); false past the bound. */
async function reaches(reached: () => number, target: number, waiting?: () => void): Promise<boolean> {
  const deadline = Date.now() + VIEW_WAIT_MS;
  for (let turns = 0; reached() < target; turns++) {
    if (Date.now() > deadline) return false;
    waiting?.();
    await new Promise((resolve) => (turns < 16 ? setImmediate(resolve) : setTimeout(resolve, 1)));
  }
  return true;
}

export async function depthAnswer(view: DepthView, control: PersistenceControl, shardCount: number, instrumentId: string, levels: number): Promise<PlaneAnswer> {
  const words = uuidWords(instrumentId);
  const shard = shardOf(words, 0, shardCount);
  if (!(await reaches(() => view.watermark(shard), control.journalCommitted(shard)))) return behind();
  const book = view.read(words, levels);
  if (book === null) {
    return view.full ? refused('OVERLOADED', 'more instruments than MARKET_DATA_INSTRUMENTS: this one has no depth view') : refused('NOT_FOUND', 'market data depth not found');
  }
  const currency = currencyText(book.currency);
  const level = (entry: ViewLevel) => ({ price: { nanos: String(entry.priceNanos), currency }, quantity: { units: String(entry.quantity) }, orderCount: entry.count });
  return answered(JSON.stringify({ instrumentId, levels, bids: book.bids.map(level), asks: book.asks.map(level), watermark: view.watermark(book.shard) }));
}

/** The stored snapshot from the view; null when the view cannot tell (it is full: storage holds the rest). */
export function snapshotAnswer(view: SnapshotView, instrumentId: string, projectionName: string): PlaneAnswer | null {
  const snapshot = view.read(uuidWords(instrumentId), projectionName);
  if (snapshot === null) return view.full ? null : refused('NOT_FOUND', SNAPSHOT_NOT_FOUND);
  const currency = currencyText(snapshot.currency);
  const side = (entry: { priceNanos: number; quantity: bigint } | null) =>
    entry === null ? null : { price: { nanos: String(entry.priceNanos), currency }, quantity: { units: String(entry.quantity) } };
  return answered(
    JSON.stringify({
      instrumentId,
      projectionName,
      bestBid: side(snapshot.bid),
      bestAsk: side(snapshot.ask),
      openQuantity: { bid: { units: String(snapshot.openQuantity.bid) }, ask: { units: String(snapshot.openQuantity.ask) } },
      sourceWatermark: snapshot.sourceWatermark,
      refreshedAt: occurredAtOf(snapshot.refreshedAtUs),
    }),
  );
}

/**
 * A tape page from the tape view, once the instrument's shard is projected as far as the
 * journal was durable at arrival (the view is written before the projection watermark
 * moves); null when the view cannot answer it (older than its rows): storage answers.
 */
export async function tapeAnswer(view: TapeView, control: PersistenceControl, shardCount: number, instrumentId: string, limit: number, before: number | null): Promise<PlaneAnswer | null> {
  const words = uuidWords(instrumentId);
  const shard = shardOf(words, 0, shardCount);
  if (
    !(await reaches(
      () => control.projected(shard),
      control.journalCommitted(shard),
      () => control.requestSeal(),
    ))
  )
    return behind();
  const tape = view.read(words, limit, before);
  if (tape === null) return null;
  const rows = tape.map((row) => {
    const currency = currencyText(row.currency);
    return {
      tradeId: formatUuid(row.tradeId, 0),
      price: { nanos: String(row.priceNanos), currency },
      quantity: { units: String(row.quantity) },
      currency,
      occurredAt: occurredAtOf(row.occurredAtUs),
      sequence: row.sequence,
    };
  });
  const last = rows[rows.length - 1];
  return answered(JSON.stringify({ instrumentId, rows, nextBefore: rows.length === limit && last !== undefined ? last.sequence : null }));
}
