// Planner statistics of the venue's tables, kept fresh by the venue itself.
//
// The tables grow by thousands of rows a second, and PostgreSQL plans every read on
// the statistics of the last ANALYZE. Autovacuum takes them on its own schedule: on
// this machine, after 80 s of order load (530,000 command-log rows, 220,000 trades),
// none of the venue's tables had been analyzed once. Planned on no statistics, the
// tape read (`ORDER BY tape_sequence DESC LIMIT 50` of one instrument) sorted every
// trade of the instrument: 1.5 ms of PostgreSQL's CPU per read after 4 s of load and
// 37 ms at the median in a full benchmark run, against 0.2 ms on fresh statistics.
// So the start analyzes what it plans on (persistence-start.ts), and the read thread
// keeps the tables its reads use analyzed as they grow (keepAnalyzed).

import type pg from 'pg';

/**
 * How long an ANALYZE waits for its table's lock before it gives up (an operator's
 * LOCK TABLE, a migration): it must never hold up a start or a stop. Its own work is
 * bounded by its sample (3,000 rows at ANALYZE_STATISTICS_TARGET).
 */
export const ANALYZE_LOCK_TIMEOUT_MS = 2_000;

/**
 * The statistics target of these ANALYZEs (PostgreSQL's default is 100): an ANALYZE
 * samples 300 rows per unit of it, so 10 reads 3,000 rows instead of 30,000. Measured
 * after 30 s of order load (120,000-300,000 rows a table): 170-216 ms an ANALYZE at
 * 100 against 19-22 ms at 10 (three rounds each). The growing tables go stale every
 * few seconds, and a round's half second of PostgreSQL's CPU on two busy cores showed
 * in the order latencies: open-loop `sync-result` at 7,500/s, 5 alternating pairs of
 * fresh venues, p99 38, 39, 71, 32 and 36 ms at 10 against 37, 70, 88, 94 and 69 ms at
 * 100 (p90 lower in 4 of the 5 pairs too). The read tables' queries take the same plans
 * on the smaller sample (their read routes on one loaded venue, analyzed at 100 and 10
 * in turn: medians within each other's noise): index scans in an index's order with a
 * LIMIT, on columns of few distinct values (instrument, participant, side, state) or
 * by key. Only columns without a target of their own use it.
 */
export const ANALYZE_STATISTICS_TARGET = 10;

/**
 * ANALYZEs each of `tables` whose planner statistics are missing or stale (more rows
 * changed since the last analyze than a tenth of the table and 1,000; autovacuum's
 * own rule is a tenth and 50). At start: after a million orders and a restart within
 * a minute, the displayed books' GROUP BY, planned for 26 rows, sorted a million on
 * disk (2.1 s instead of 0.35). Returns the tables analyzed.
 */
export async function analyzeStale(client: pg.ClientBase, tables: readonly string[]): Promise<string[]> {
  const stats = await client.query<{ name: string; live: string; changed: string; analyzed: boolean }>(
    `SELECT schemaname || '.' || relname AS name, n_live_tup::text AS live, n_mod_since_analyze::text AS changed,
            (last_analyze IS NOT NULL OR last_autoanalyze IS NOT NULL) AS analyzed
       FROM pg_stat_user_tables WHERE (schemaname || '.' || relname) = ANY($1)`,
    [tables],
  );
  const analyzed: string[] = [];
  for (const table of tables) {
    const row = stats.rows.find((candidate) => candidate.name === table);
    if (row === undefined) continue;
    const changed = Number(row.changed);
    if (changed > 1000 && (!row.analyzed || changed * 10 > Number(row.live))) {
      await analyzeBounded(client, table);
      analyzed.push(table);
    }
  }
  return analyzed;
}

/** ANALYZE in a transaction of its own, waiting at most ANALYZE_LOCK_TIMEOUT_MS for the table's lock. */
async function analyzeBounded(client: pg.ClientBase, table: string): Promise<void> {
  await client.query('BEGIN');
  try {
    await client.query(`SET LOCAL lock_timeout = ${ANALYZE_LOCK_TIMEOUT_MS}`);
    await client.query(`SET LOCAL default_statistics_target = ${ANALYZE_STATISTICS_TARGET}`);
    await client.query(`ANALYZE ${table}`);
    await client.query('COMMIT');
  } catch (error) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw error;
  }
}

export interface StatisticsKeeper {
  /** Ends the loop; resolves once an ANALYZE in progress, if any, has finished. */
  stop(): Promise<void>;
}

/**
 * Every `intervalMs`, analyzes those of `tables` whose statistics went stale
 * (analyzeStale), on a connection of `pool` held only for that. `onAnalyzed` hears of
 * each round that analyzed something, `onError` of each that failed (the next round
 * tries again: stale statistics only make reads slower).
 */
export function keepAnalyzed(pool: pg.Pool, tables: readonly string[], intervalMs: number, onAnalyzed: (tables: string[], ms: number) => void, onError: (error: Error) => void): StatisticsKeeper {
  let running = true;
  let timer: NodeJS.Timeout | null = null;
  let wake: (() => void) | null = null;
  const loop = (async () => {
    while (running) {
      await new Promise<void>((resolve) => {
        wake = resolve;
        timer = setTimeout(resolve, intervalMs);
      });
      if (!running) break;
      const started = performance.now();
      try {
        const client = await pool.connect();
        let failed: Error | undefined;
        try {
          const analyzed = await analyzeStale(client, tables);
          if (analyzed.length > 0) onAnalyzed(analyzed, Math.round(performance.now() - started));
        } catch (error) {
          failed = error as Error;
          throw error;
        } finally {
          client.release(failed); // a connection that failed is closed, not handed to a read
        }
      } catch (error) {
        onError(error as Error);
      }
    }
  })();
  return {
    stop: async () => {
      running = false;
      if (timer !== null) clearTimeout(timer);
      wake?.();
      await loop;
    },
  };
}
