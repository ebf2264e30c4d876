// The read plane's queries (run by the read thread): top-of-book snapshots and their
// refresh, the public trade tape, OHLCV bars, own orders and fills, and the
// availability inventory. Each answers its 200 body already as JSON, or a refusal's code.
//
// Numbers stay exact: PostgreSQL's bigint and numeric come back as strings and are
// passed through; no value is ever turned into a float. Prices render as
// { nanos, currency }, quantities as { units }, as in the result envelope.

import type pg from 'pg';
import { packCurrency, unpackCurrency } from '../core/command-slot.ts';
import type { DepthView } from '../core/market-view.ts';
import { occurredAtOf } from '../core/outcome-format.ts';
import type { TapeRow, TapeView } from '../core/tape-view.ts';
import { formatUuid, parseUuidInto, uuidWords } from '../core/uuid.ts';
import { answered, BAR_INTERVALS, refused, SNAPSHOT_NOT_FOUND, type Answered, type BarInterval, type OwnOrdersView, type PlaneAnswer } from '../core/storage-protocol.ts';

type Db = pg.Pool | pg.ClientBase;

const OPEN = "state IN ('OPEN', 'PARTIALLY_FILLED')";

const price = (nanos: string, currency: string) => ({ nanos, currency });
const units = (value: string) => ({ units: value });
const ok = (value: unknown): Answered => answered(JSON.stringify(value));
/** Microseconds since the epoch of a timestamptz column, as text (exact). */
const micros = (column: string) => `((extract(epoch FROM ${column}) * 1000000)::bigint)::text`;

// ---- snapshots ----

/** A snapshot row as stored (numbers as text, exact). */
export interface SnapshotRow {
  instrument_id: string;
  bid_p: string | null;
  bid_q: string | null;
  ask_p: string | null;
  ask_q: string | null;
  /** The open displayed LIMIT quantity of each whole side ("0" when empty). */
  bid_open: string;
  ask_open: string;
  currency: string | null;
  source_watermark: string;
  refreshed_us: string;
}

const SNAPSHOT_COLUMNS = `instrument_id, best_bid_price_nanos::text AS bid_p, best_bid_quantity_units::text AS bid_q, best_ask_price_nanos::text AS ask_p,
  best_ask_quantity_units::text AS ask_q, open_bid_quantity_units::text AS bid_open, open_ask_quantity_units::text AS ask_open, currency, source_watermark::text,
  ${micros('refreshed_at')} AS refreshed_us`;

export async function readSnapshot(db: Db, instrumentId: string, projectionName: string): Promise<PlaneAnswer> {
  const rows = await db.query<SnapshotRow>(`SELECT ${SNAPSHOT_COLUMNS} FROM runtime.market_data_snapshots WHERE instrument_id = $1 AND projection_name = $2`, [instrumentId, projectionName]);
  const row = rows.rows[0];
  if (row === undefined) return refused('NOT_FOUND', SNAPSHOT_NOT_FOUND);
  const side = (p: string | null, q: string | null) => (p === null || q === null ? null : { price: price(p, row.currency ?? ''), quantity: units(q) });
  return ok({
    instrumentId,
    projectionName,
    bestBid: side(row.bid_p, row.bid_q),
    bestAsk: side(row.ask_p, row.ask_q),
    openQuantity: { bid: units(row.bid_open), ask: units(row.ask_open) },
    sourceWatermark: Number(row.source_watermark),
    refreshedAt: occurredAtOf(Number(row.refreshed_us)),
  });
}

/** Every stored snapshot of a projection name (or of all names, with their names): the gateways' view is loaded with them. */
export async function storedSnapshots(db: Db): Promise<(SnapshotRow & { projection_name: string })[]> {
  return (await db.query<SnapshotRow & { projection_name: string }>(`SELECT projection_name, ${SNAPSHOT_COLUMNS} FROM runtime.market_data_snapshots`)).rows;
}

/**
 * Recomputes the snapshots of one instrument, or of every instrument the venue has a book
 * for (every one it took an order for, as depth answers), from the persistence thread's
 * books in shared memory (core/market-view.ts DepthView): the best displayed (LIMIT) price per side and
 * the open quantity at it, and the open displayed quantity of each whole side; hidden
 * orders never count. `watermarks[shard]`, read before the books, is how far that shard's
 * books had reached at least (record 0039). Returns the rows written, or null when the
 * view cannot tell: it is full and does not hold the instrument named.
 */
export async function refreshSnapshots(db: Db, projectionName: string, view: DepthView, watermarks: readonly number[], instrumentId: string | null): Promise<SnapshotRow[] | null> {
  const ids = instrumentId === null ? view.instruments() : [uuidWords(instrumentId)];
  const columns: (string | null)[][] = Array.from({ length: 9 }, () => []);
  for (const words of ids) {
    const book = view.read(words, 1);
    if (book === null) {
      if (instrumentId !== null && view.full) return null;
      continue;
    }
    const bid = book.bids[0];
    const ask = book.asks[0];
    const row = [
      formatUuid(words, 0),
      bid === undefined ? null : String(bid.priceNanos),
      bid === undefined ? null : String(bid.quantity),
      ask === undefined ? null : String(ask.priceNanos),
      ask === undefined ? null : String(ask.quantity),
      String(book.open.bid),
      String(book.open.ask),
      unpackCurrency(book.currency),
      String(watermarks[book.shard] ?? 0),
    ];
    row.forEach((value, column) => columns[column]!.push(value));
  }
  if (columns[0]!.length === 0) return [];
  const result = await db.query(
    `INSERT INTO runtime.market_data_snapshots
       (instrument_id, projection_name, best_bid_price_nanos, best_bid_quantity_units, best_ask_price_nanos, best_ask_quantity_units,
        open_bid_quantity_units, open_ask_quantity_units, currency, source_watermark, refreshed_at)
     SELECT f.instrument_id, $1, f.bid_p, f.bid_q, f.ask_p, f.ask_q, f.bid_open, f.ask_open, f.currency, f.source_watermark, clock_timestamp()
       FROM unnest($2::uuid[], $3::bigint[], $4::bigint[], $5::bigint[], $6::bigint[], $7::bigint[], $8::bigint[], $9::text[], $10::bigint[])
            AS f (instrument_id, bid_p, bid_q, ask_p, ask_q, bid_open, ask_open, currency, source_watermark)
     ON CONFLICT (instrument_id, projection_name) DO UPDATE SET
       best_bid_price_nanos = EXCLUDED.best_bid_price_nanos, best_bid_quantity_units = EXCLUDED.best_bid_quantity_units,
       best_ask_price_nanos = EXCLUDED.best_ask_price_nanos, best_ask_quantity_units = EXCLUDED.best_ask_quantity_units,
       open_bid_quantity_units = EXCLUDED.open_bid_quantity_units, open_ask_quantity_units = EXCLUDED.open_ask_quantity_units,
       currency = EXCLUDED.currency, source_watermark = EXCLUDED.source_watermark, refreshed_at = EXCLUDED.refreshed_at
     RETURNING ${SNAPSHOT_COLUMNS}`,
    [projectionName, ...columns],
  );
  return result.rows as SnapshotRow[];
}

// ---- trade tape ----

export async function readTape(db: Db, instrumentId: string, limit: number, before: number | null): Promise<Answered> {
  const rows = await db.query<{ trade_id: string; p: string; q: string; currency: string; us: string; sequence: string }>({
    name: 'tape',
    text: `SELECT trade_id, price_nanos::text AS p, quantity_units::text AS q, currency, ${micros('occurred_at')} AS us, tape_sequence::text AS sequence
       FROM runtime.trades
      WHERE instrument_id = $1 AND ($2::bigint IS NULL OR tape_sequence < $2)
      ORDER BY tape_sequence DESC LIMIT $3`,
    values: [instrumentId, before, limit],
  });
  const tape = rows.rows.map((row) => ({
    tradeId: row.trade_id,
    price: price(row.p, row.currency),
    quantity: units(row.q),
    currency: row.currency,
    occurredAt: occurredAtOf(Number(row.us)),
    sequence: Number(row.sequence),
  }));
  const last = tape[tape.length - 1];
  return ok({ instrumentId, rows: tape, nextBefore: tape.length === limit && last !== undefined ? last.sequence : null });
}

/**
 * At start: the most recent trades of the instruments the view can hold (at most its
 * rows each: bounded whatever storage holds) into the gateways' tape view, marked
 * complete where that is all the instrument has. With more instruments in storage than
 * the view holds, the view is marked full: the others' tapes are read here.
 */
export async function loadTapeView(db: Db, view: TapeView): Promise<void> {
  const rows = view.rowsPerInstrument;
  if (rows === 0) return;
  const more = await db.query<{ more: boolean }>('SELECT EXISTS (SELECT 1 FROM runtime.instruments OFFSET $1) AS more', [view.bound]);
  if (more.rows[0]!.more) view.markFull();
  const result = await db.query<{ id: string; trade: string; p: string; q: string; currency: string; us: string; sequence: string }>(
    `SELECT i.instrument_id::text AS id, t.trade_id::text AS trade, t.price_nanos::text AS p, t.quantity_units::text AS q, t.currency,
            ${micros('t.occurred_at')} AS us, t.tape_sequence::text AS sequence
       FROM (SELECT instrument_id FROM runtime.instruments ORDER BY instrument_id LIMIT $2) i
       CROSS JOIN LATERAL (SELECT trade_id, price_nanos, quantity_units, currency, occurred_at, tape_sequence FROM runtime.trades t
                            WHERE t.instrument_id = i.instrument_id ORDER BY tape_sequence DESC LIMIT $1) t
      ORDER BY i.instrument_id, t.tape_sequence`,
    [rows + 1, view.bound],
  );
  const instrument = new Int32Array(4);
  for (let first = 0; first < result.rows.length;) {
    let end = first;
    while (end < result.rows.length && result.rows[end]!.id === result.rows[first]!.id) end++;
    const complete = end - first <= rows; // one more than the ring holds was asked for: fewer means none older
    const tape: TapeRow[] = result.rows.slice(complete ? first : first + 1, end).map((row) => {
      const tradeId = new Int32Array(4);
      parseUuidInto(row.trade, tradeId, 0);
      return { tradeId, priceNanos: Number(row.p), quantity: Number(row.q), occurredAtUs: Number(row.us), sequence: Number(row.sequence), currency: packCurrency(row.currency) };
    });
    parseUuidInto(result.rows[first]!.id, instrument, 0);
    view.load(instrument, tape, complete);
    first = end;
  }
}

// ---- bars ----

/** $1 instrument, $2/$3 window start/end (epoch seconds, end exclusive), $4 interval in seconds. */
export const BARS_SQL = `SELECT extract(epoch FROM date_bin(make_interval(secs => $4), occurred_at, timestamptz 'epoch'))::bigint::text AS bucket,
          (min(ARRAY[stream_sequence, price_nanos]))[2]::text AS o,
          max(price_nanos)::text AS h, min(price_nanos)::text AS l,
          (max(ARRAY[stream_sequence, price_nanos]))[2]::text AS c,
          sum(quantity_units)::text AS v, count(*)::int AS n, min(currency) AS currency
     FROM runtime.trades
    WHERE instrument_id = $1 AND occurred_at >= to_timestamp($2) AND occurred_at < to_timestamp($3)
    GROUP BY date_bin(make_interval(secs => $4), occurred_at, timestamptz 'epoch') ORDER BY 1`;

/**
 * start/end: whole seconds since the epoch, start aligned to the interval, end exclusive.
 * The window is found through the BRIN index on occurred_at (migration 007). Each bar's
 * open and close are the prices of its first and last trade in tape order (an
 * instrument's trades all come from one shard, in stream_sequence order): the least and
 * greatest (stream_sequence, price) pair, with no sort; date_bin buckets on timestamps,
 * where extract(epoch) would compute in numeric. Half the time of the previous form
 * (array_agg ORDER BY twice per bar), same answers (test/persistence/bars.test.ts).
 */
export async function readBars(db: Db, instrumentId: string, interval: BarInterval, startSeconds: number, endSeconds: number): Promise<Answered> {
  const rows = await db.query<{ bucket: string; o: string; h: string; l: string; c: string; v: string; n: number; currency: string }>(BARS_SQL, [
    instrumentId,
    startSeconds,
    endSeconds,
    BAR_INTERVALS[interval],
  ]);
  const iso = (epochSeconds: number) => new Date(epochSeconds * 1000).toISOString().replace('.000Z', 'Z');
  return ok({
    instrumentId,
    interval,
    start: iso(startSeconds),
    end: iso(endSeconds),
    bars: rows.rows.map((row) => ({
      start: iso(Number(row.bucket)),
      open: price(row.o, row.currency),
      high: price(row.h, row.currency),
      low: price(row.l, row.currency),
      close: price(row.c, row.currency),
      volume: units(row.v),
      tradeCount: row.n,
    })),
  });
}

// ---- own orders and fills ----

/**
 * The own-orders query, for reads the in-memory model (persistence/own-reads.ts) cannot
 * answer: per participant of the principal, its most recently updated orders (LIMIT
 * each), then the merge of those (LIMIT). No index serves it (migration 017): it scans
 * the table, one read at a time (persistence/read-thread.ts).
 */
export function ownOrdersQuery(view: OwnOrdersView): string {
  return `SELECT o.* FROM (SELECT DISTINCT unnest($1::uuid[]) AS participant_id) p
     CROSS JOIN LATERAL (
       SELECT order_id, client_order_id, run_id, venue_session_id, instrument_id, participant_id, account_id, side, order_type, time_in_force, state,
              limit_price_nanos::text AS p, currency, original_quantity_units::text AS oq, remaining_quantity_units::text AS rq,
              filled_quantity_units::text AS fq, ${micros('updated_at')} AS us, updated_at
         FROM runtime.order_lifecycle_state
        WHERE participant_id = p.participant_id AND ($2::uuid IS NULL OR instrument_id = $2) ${view === 'current' ? `AND ${OPEN}` : ''}
        ORDER BY updated_at DESC, order_id LIMIT $3) o
    ORDER BY o.updated_at DESC, o.order_id LIMIT $3`;
}

export async function readOwnOrders(db: Db, view: OwnOrdersView, participants: string[], instrumentId: string | null, limit: number): Promise<Answered> {
  const rows = await db.query(ownOrdersQuery(view), [participants, instrumentId, limit]);
  return ok({
    rows: rows.rows.map((row) => ({
      orderId: row.order_id,
      clientOrderId: row.client_order_id,
      runId: row.run_id,
      venueSessionId: row.venue_session_id,
      instrumentId: row.instrument_id,
      participantId: row.participant_id,
      accountId: row.account_id,
      side: row.side,
      orderType: row.order_type,
      timeInForce: row.time_in_force,
      state: row.state,
      limitPrice: price(row.p, row.currency),
      originalQuantity: units(row.oq),
      remainingQuantity: units(row.rq),
      filledQuantity: units(row.fq),
      updatedAt: occurredAtOf(Number(row.us)),
    })),
    limit,
  });
}

/**
 * The fills query, for reads the in-memory model cannot answer: per participant of the
 * principal, its most recent executions (LIMIT each; no index serves it since migration
 * 017: a scan), then the merge (LIMIT), then their orders' side. The orders are looked
 * up after the LIMIT, one primary-key probe per row (the LIMIT 1 keeps the planner from
 * turning it into a hash join over every order).
 */
export function fillsQuery(instrumentFiltered: boolean): string {
  return `SELECT f.execution_id, f.trade_id, f.order_id, f.instrument_id, o.side, f.q, f.p, f.currency, f.us
     FROM (SELECT e.* FROM (SELECT DISTINCT unnest($1::uuid[]) AS participant_id) p
             CROSS JOIN LATERAL (
               SELECT execution_id, trade_id, order_id, instrument_id, participant_id, quantity_units::text AS q, price_nanos::text AS p, currency,
                      ${micros('occurred_at')} AS us, occurred_at, shard_id, stream_sequence
                 FROM runtime.executions
                WHERE participant_id = p.participant_id${instrumentFiltered ? ' AND instrument_id = $3' : ''}
                ORDER BY occurred_at DESC, shard_id, stream_sequence DESC LIMIT $2) e
            ORDER BY e.occurred_at DESC, e.shard_id, e.stream_sequence DESC LIMIT $2) f
     CROSS JOIN LATERAL (SELECT side FROM runtime.order_lifecycle_state WHERE order_id = f.order_id AND participant_id = f.participant_id LIMIT 1) o
    ORDER BY f.occurred_at DESC, f.shard_id, f.stream_sequence DESC`;
}

export async function readFills(db: Db, participants: string[], instrumentId: string | null, limit: number): Promise<Answered> {
  const rows = await db.query(fillsQuery(instrumentId !== null), instrumentId === null ? [participants, limit] : [participants, limit, instrumentId]);
  return ok({
    rows: rows.rows.map((row) => ({
      executionId: row.execution_id,
      tradeId: row.trade_id,
      orderId: row.order_id,
      instrumentId: row.instrument_id,
      side: row.side,
      quantity: units(row.q),
      executionPrice: price(row.p, row.currency),
      occurredAt: occurredAtOf(Number(row.us)),
    })),
    limit,
  });
}
