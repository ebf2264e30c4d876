// The market-data snapshot refresh (persistence/market-data.ts refreshSnapshots, run
// by the read thread every MARKET_DATA_PROJECTOR_INTERVAL_MS while the book moves,
// when the snapshot loop is on) against the number of open orders, on a fresh
// embedded PostgreSQL: 8 instruments, open orders at 2,000 prices per side, one in ten
// hidden. The refresh reads the books in memory (loaded here from the table as a start
// loads them) and writes the rows. Beside it, in the same run and on the same rows, a
// query over the table (a window sum over every open order of each side, then the first
// row per instrument): both must return the same best prices and quantities, and each
// is timed (median of the repetitions). The refresh's open quantity of each whole side
// must equal a plain grouped sum. Writes bench/results/snapshot-refresh.json.

import { rmSync } from 'node:fs';
import os from 'node:os';
import pg from 'pg';
import { startEmbeddedPostgres } from '../persistence/embedded-postgres.ts';
import { DepthView } from '../core/market-view.ts';
import { BookModel } from '../persistence/book-model.ts';
import { refreshSnapshots } from '../persistence/market-data.ts';
import { migrate } from '../persistence/migrations.ts';
import { scratchFolder } from './lib/leftovers.ts';
import { writeResult } from './lib/results.ts';

const INSTRUMENTS = 8;
const OPEN = "state IN ('OPEN', 'PARTIALLY_FILLED')";

/** The select the refresh replaced: every open order of a side is read and summed. */
const WINDOW_SUM_QUERY = `
  WITH bids AS (
    SELECT DISTINCT ON (o.instrument_id) o.instrument_id, o.limit_price_nanos AS p,
           sum(o.remaining_quantity_units) OVER (PARTITION BY o.instrument_id, o.limit_price_nanos) AS q
      FROM runtime.order_lifecycle_state o JOIN runtime.instruments t ON t.instrument_id = o.instrument_id
     WHERE o.${OPEN} AND o.side = 'BUY' AND o.order_type = 'LIMIT'
     ORDER BY o.instrument_id, o.limit_price_nanos DESC
  ),
  asks AS (
    SELECT DISTINCT ON (o.instrument_id) o.instrument_id, o.limit_price_nanos AS p,
           sum(o.remaining_quantity_units) OVER (PARTITION BY o.instrument_id, o.limit_price_nanos) AS q
      FROM runtime.order_lifecycle_state o JOIN runtime.instruments t ON t.instrument_id = o.instrument_id
     WHERE o.${OPEN} AND o.side = 'SELL' AND o.order_type = 'LIMIT'
     ORDER BY o.instrument_id, o.limit_price_nanos ASC
  )
  SELECT t.instrument_id, b.p::text AS bid_p, b.q::text AS bid_q, a.p::text AS ask_p, a.q::text AS ask_q
    FROM runtime.instruments t LEFT JOIN bids b ON b.instrument_id = t.instrument_id LEFT JOIN asks a ON a.instrument_id = t.instrument_id`;

/** The open displayed quantity of each side per instrument, summed plainly. */
const OPEN_QUANTITY_QUERY = `
  SELECT t.instrument_id,
         coalesce(sum(o.remaining_quantity_units) FILTER (WHERE o.side = 'BUY'), 0)::text AS bid_open,
         coalesce(sum(o.remaining_quantity_units) FILTER (WHERE o.side = 'SELL'), 0)::text AS ask_open
    FROM runtime.instruments t LEFT JOIN runtime.order_lifecycle_state o ON o.instrument_id = t.instrument_id AND o.${OPEN} AND o.order_type = 'LIMIT'
   GROUP BY t.instrument_id`;

type Best = Record<string, string>;

const key = (row: { instrument_id: string; bid_p: string | null; bid_q: string | null; ask_p: string | null; ask_q: string | null }) => `${row.bid_p}/${row.bid_q}/${row.ask_p}/${row.ask_q}`;

async function timeMs(run: () => Promise<unknown>): Promise<number> {
  const at = performance.now();
  await run();
  return performance.now() - at;
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

/** Adds `count` open orders (ids from `from`) spread over the instruments, 2,000 prices per side. */
async function addOpenOrders(db: pg.Client, from: number, count: number): Promise<void> {
  await db.query(
    `INSERT INTO runtime.order_lifecycle_state
       (order_id, run_id, venue_session_id, instrument_id, participant_id, account_id, side, order_type, time_in_force, state,
        limit_price_nanos, currency, original_quantity_units, remaining_quantity_units, filled_quantity_units, engine_order_id,
        shard_id, last_sequence, created_at, updated_at)
     SELECT ('00000000-0000-4000-8000-' || lpad(to_hex(g), 12, '0'))::uuid, 'bench', 'session-1',
            ('5eed0000-0000-4000-8000-' || lpad(to_hex(g % ${INSTRUMENTS}), 12, '0'))::uuid,
            '11111111-1111-4111-8111-111111111111', '22222222-2222-4222-8222-222222222222',
            CASE WHEN g % 2 = 0 THEN 'BUY' ELSE 'SELL' END, CASE WHEN g % 10 = 3 THEN 'LIMIT_HIDDEN' ELSE 'LIMIT' END, 'DAY',
            CASE WHEN g % 7 = 0 THEN 'PARTIALLY_FILLED' ELSE 'OPEN' END,
            CASE WHEN g % 2 = 0 THEN 100000000000 - ((g / 16) % 2000) * 10000000 ELSE 100010000000 + ((g / 16) % 2000) * 10000000 END,
            'USD', 100, 1 + g % 100, 99 - g % 100, g::text, (g % ${INSTRUMENTS}) % 2, g, now(), now()
       FROM generate_series($1::bigint, $2::bigint) g`,
    [from, from + count - 1],
  );
  await db.query('ANALYZE runtime.order_lifecycle_state');
}

export async function runSnapshotRefreshBench(quick: boolean): Promise<void> {
  const sizes = quick ? [10_000, 100_000] : [10_000, 100_000, 400_000];
  const repetitions = quick ? 3 : 5;
  const dataDir = scratchFolder('venue-bench-snapshots-');
  const server = await startEmbeddedPostgres(dataDir, () => undefined, { template: true });
  const db = new pg.Client({ connectionString: server.url });
  const results: { openOrders: number; refreshMsMedian: number; windowSumMsMedian: number; sameAnswers: boolean }[] = [];
  try {
    await db.connect();
    await migrate(db);
    await db.query(
      `INSERT INTO runtime.instruments (instrument_id, currency, shard_id, first_sequence)
       SELECT ('5eed0000-0000-4000-8000-' || lpad(to_hex(i), 12, '0'))::uuid, 'USD', i % 2, 1 FROM generate_series(0, ${INSTRUMENTS - 1}) i`,
    );
    let orders = 0;
    for (const size of sizes) {
      await addOpenOrders(db, orders + 1, size - orders);
      orders = size;
      const books = new BookModel(2);
      await books.load(db);
      const view = new DepthView(DepthView.create(INSTRUMENTS));
      books.publish(view, null, books.watermarkEntries());
      const refreshed: Best = {};
      const open: Best = {};
      for (const row of (await refreshSnapshots(db, 'market-data-snapshot', view, [1, 1], null))!) {
        refreshed[row.instrument_id] = key(row);
        open[row.instrument_id] = `${row.bid_open}/${row.ask_open}`;
      }
      for (const row of (await db.query(OPEN_QUANTITY_QUERY)).rows) {
        if (open[row.instrument_id] !== `${row.bid_open}/${row.ask_open}`) throw new Error(`the refresh's open quantity of ${row.instrument_id} is not the grouped sum at ${size} open orders`);
      }
      const reference: Best = {};
      for (const row of (await db.query(WINDOW_SUM_QUERY)).rows) reference[row.instrument_id] = key(row);
      const sameAnswers = Object.keys(reference).length === INSTRUMENTS && JSON.stringify(refreshed, Object.keys(reference).sort()) === JSON.stringify(reference, Object.keys(reference).sort());
      if (!sameAnswers) throw new Error(`the refresh and the window-sum query disagree at ${size} open orders`);
      const refresh: number[] = [];
      const windowSum: number[] = [];
      for (let r = 0; r < repetitions; r++) {
        refresh.push(await timeMs(() => refreshSnapshots(db, 'market-data-snapshot', view, [1, 1], null)));
        windowSum.push(await timeMs(() => db.query(WINDOW_SUM_QUERY)));
      }
      results.push({ openOrders: size, refreshMsMedian: Number(median(refresh).toFixed(2)), windowSumMsMedian: Number(median(windowSum).toFixed(2)), sameAnswers });
    }
  } finally {
    await db.end().catch(() => undefined);
    await server.stop();
    rmSync(dataDir, { recursive: true, force: true });
  }
  console.table(
    results.map((r) => ({ 'open orders': r.openOrders.toLocaleString('en-US'), 'refresh ms (median)': r.refreshMsMedian, 'window sum ms (median)': r.windowSumMsMedian, same: r.sameAnswers })),
  );
  writeResult('snapshot-refresh', {
    description:
      "market-data snapshot refresh of 8 instruments against the open orders (best levels and each side's whole open quantity from the books in memory, the rows written), beside a window-sum query over the table (same rows, same answers)",
    machine: { cpus: os.cpus().length, cpuModel: os.cpus()[0]?.model ?? 'unknown', node: process.version },
    repetitions,
    results,
  });
}

if (import.meta.url === `file://${process.argv[1]}`) {
  await runSnapshotRefreshBench(process.argv.includes('--quick'));
}
