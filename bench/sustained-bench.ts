// Sustained load: one fresh venue (sync-result, 2 gateway threads, 2 shards) under a
// closed loop for minutes, measured window by window. The load benchmark's runs are 8 s
// (30 s beside the reads) on a young database, which flatters a venue that runs for
// long: its rate falls and its projection lag grows with the database (random-key index
// leaves, full-page images after each checkpoint, autovacuum; docs/performance.md,
// "Projection lag over minutes"). So the suite measures the trend
// itself, in every full run: per window the answers a second, the projection lag (the
// venue's own histogram, read at each window's edges), PostgreSQL's WAL and full-page
// images per command, its checkpoints, the autovacuum workers seen at work (sampled
// every second), and the projection backend's time running and waiting for a core
// (its /proc schedstat at the edges). Results: bench/results/sustained.json.
//
// Bounded: WINDOWS windows of WINDOW_MS, the load generator's own bounds; the run is not
// kept for the verification against the database (2 M commands and more; every run of
// the load benchmark is verified).

import pg from 'pg';
import { readFileSync } from 'node:fs';
import os from 'node:os';
import { fileURLToPath } from 'node:url';
import { describe, runLoad, SLOT_MS } from './load/load-generator.ts';
import { startBenchVenue } from './load/venue.ts';
import { bucketsBetween, percentileOfBuckets } from '../persistence/latency-histogram.ts';
import { writeResult } from './lib/results.ts';
import { persistenceStatus } from './load-bench.ts';
import { parseSchedstat } from './load/cpu-use.ts';
import { PROJECTOR_APPLICATION_NAME } from '../persistence/connection-names.ts';

/** Windows of the run and their length: 4 minutes in a full run, 4 s in a quick one (the path exercised, no trend). */
const WINDOWS = { full: 8, quick: 2 };
const WINDOW_MS = { full: 30_000, quick: 2_000 };
const CONNECTIONS = 64;
const LOAD_THREADS = 2;
/** The projection lag target (issue 7), for the count of windows above it. */
export const LAG_TARGET_US = 250_000;
/** How often the autovacuum workers at work are sampled. */
const AUTOVACUUM_SAMPLE_MS = 1_000;

/** What is read at each window's edge. */
export interface EdgeSample {
  /** The venue's projection lag histogram (GET /admin/v1/persistence/status `projections.lagBuckets`). */
  lagBuckets: [number, number][];
  walBytes: number;
  fullPageImages: number;
  checkpoints: number;
  /**
   * The projection backend (the venue's connection named PROJECTOR_APPLICATION_NAME) and its
   * run time and run-queue wait so far (/proc/<pid>/schedstat); null when it was not found or
   * PostgreSQL is not the venue's embedded server (a DATABASE_URL's pids are another machine's).
   */
  projector: { pid: number; runNs: number; waitNs: number } | null;
}

export interface SustainedWindow {
  /** Seconds from the measured window's start to this window's end. */
  endsAtSecond: number;
  okPerSecond: number;
  projectionLagUs: { count: number; p50: number; p99: number };
  walKBPerCommand: number | null;
  fullPageImagesPerCommand: number | null;
  checkpoints: number;
  /** Relations an autovacuum worker was seen at work on in this window, with the samples (about seconds) each. */
  autovacuum: Record<string, number>;
  /**
   * The projection backend's ms a second running and waiting, runnable, for a core over the
   * window: how much of the projections' delay is their turn at a core (null when the same
   * backend was not read at both edges).
   */
  projectorMsPerSecond: { run: number; waitedForCore: number } | null;
}

/**
 * The windows of a sustained run: `okPerSlot` (2xx answers per slot of `slotMs` from the
 * measured window's start), the readings at the windows' edges (`edges[k]` at the start of
 * window k, `edges[windows]` at the end of the last), and the autovacuum samples of each
 * window. A window's answers are the slots within it; its lag, WAL and checkpoints are what
 * changed between its two edges.
 */
export function sustainedWindows(okPerSlot: number[], slotMs: number, windowMs: number, edges: EdgeSample[], autovacuum: Record<string, number>[]): SustainedWindow[] {
  if (!(windowMs > 0 && windowMs % slotMs === 0)) throw new RangeError(`windows of whole slots, got ${windowMs} ms windows of ${slotMs} ms slots`);
  const windows = edges.length - 1;
  if (windows < 1 || autovacuum.length !== windows) throw new RangeError(`${edges.length} edges and ${autovacuum.length} autovacuum samples for ${windows} windows`);
  const perWindow = windowMs / slotMs;
  const out: SustainedWindow[] = [];
  for (let w = 0; w < windows; w++) {
    let ok = 0;
    for (let slot = w * perWindow; slot < (w + 1) * perWindow; slot++) ok += okPerSlot[slot] ?? 0;
    const from = edges[w]!;
    const to = edges[w + 1]!;
    const lag = bucketsBetween(from.lagBuckets, to.lagBuckets);
    const count = lag.reduce((sum, [, n]) => sum + n, 0);
    out.push({
      endsAtSecond: ((w + 1) * windowMs) / 1000,
      okPerSecond: Math.round(ok / (windowMs / 1000)),
      projectionLagUs: { count, p50: percentileOfBuckets(lag, 50), p99: percentileOfBuckets(lag, 99) },
      walKBPerCommand: ok === 0 ? null : Number(((to.walBytes - from.walBytes) / 1024 / ok).toFixed(2)),
      fullPageImagesPerCommand: ok === 0 ? null : Number(((to.fullPageImages - from.fullPageImages) / ok).toFixed(3)),
      checkpoints: to.checkpoints - from.checkpoints,
      autovacuum: autovacuum[w]!,
      projectorMsPerSecond:
        from.projector === null || to.projector === null || from.projector.pid !== to.projector.pid
          ? null
          : { run: Math.round((to.projector.runNs - from.projector.runNs) / 1e3 / windowMs), waitedForCore: Math.round((to.projector.waitNs - from.projector.waitNs) / 1e3 / windowMs) },
    });
  }
  return out;
}

/** `localPostgres`: the venue's PostgreSQL runs on this machine (its embedded server), so its pids are this machine's. */
async function edgeSample(baseUrl: string, db: pg.Client, localPostgres: boolean): Promise<EdgeSample> {
  const [status, wal] = await Promise.all([
    persistenceStatus(baseUrl),
    db.query<{ bytes: string; fpi: string; checkpoints: number; projector: number | null }>(
      'SELECT wal_bytes::text AS bytes, wal_fpi::text AS fpi, (SELECT (num_timed + num_requested)::int FROM pg_stat_checkpointer) AS checkpoints, ' +
        '(SELECT min(pid) FROM pg_stat_activity WHERE application_name = $1) AS projector FROM pg_stat_wal',
      [PROJECTOR_APPLICATION_NAME],
    ),
  ]);
  if (status === null) throw new Error('the venue did not answer its persistence status');
  const row = wal.rows[0]!;
  return {
    lagBuckets: status.projectionLagBuckets,
    walBytes: Number(row.bytes),
    fullPageImages: Number(row.fpi),
    checkpoints: row.checkpoints,
    projector: row.projector === null || !localPostgres ? null : schedOf(row.projector),
  };
}

/** A process's run time and run-queue wait, or null when it is not on this machine (or has gone). */
function schedOf(pid: number): EdgeSample['projector'] {
  try {
    return { pid, ...parseSchedstat(readFileSync(`/proc/${pid}/schedstat`, 'utf8')) };
  } catch {
    return null;
  }
}

export async function runSustainedBench(quick: boolean): Promise<Record<string, unknown>> {
  const windows = WINDOWS[quick ? 'quick' : 'full'];
  const windowMs = WINDOW_MS[quick ? 'quick' : 'full'];
  const venue = await startBenchVenue({ PROCESSING_MODE: 'sync-result', GATEWAY_THREADS: '2', MATCHING_SHARDS: '2' });
  try {
    const { run, edges, autovacuum } = await sustainedRun(venue.baseUrl, venue.databaseUrl, venue.postgresPid !== null, windows, windowMs, quick);
    const databaseBytes = await databaseSize(venue.databaseUrl);
    console.log(describe(run));
    const each = sustainedWindows(run.okPerSlot, SLOT_MS, windowMs, edges, autovacuum);
    for (const w of each) {
      const vacuums = Object.entries(w.autovacuum)
        .map(([what, n]) => `${what} ${n}`)
        .join(', ');
      console.log(
        `  to ${w.endsAtSecond} s: ${w.okPerSecond}/s, projection lag p50 ${(w.projectionLagUs.p50 / 1000).toFixed(1)} ms, p99 ${(w.projectionLagUs.p99 / 1000).toFixed(1)} ms; ` +
          `WAL ${w.walKBPerCommand} KB and ${w.fullPageImagesPerCommand} full-page images a command, ${w.checkpoints} checkpoints` +
          (w.projectorMsPerSecond === null ? '' : `; the projection backend ran ${w.projectorMsPerSecond.run} and waited for a core ${w.projectorMsPerSecond.waitedForCore} ms a second`) +
          (vacuums ? `; autovacuum: ${vacuums}` : ''),
      );
    }
    const result = {
      description: 'one fresh venue (sync-result, 2 gateway threads, 2 shards, the embedded PostgreSQL) under a closed loop, window by window',
      machine: { cpus: os.availableParallelism(), node: process.version },
      quick,
      loadThreads: LOAD_THREADS,
      connectionsPerThread: CONNECTIONS,
      windowMs,
      okPerSecond: run.okPerSecond,
      latencyUs: run.latencyUs,
      statuses: run.statuses,
      windows: each,
      windowsOverLagTarget: each.filter((w) => w.projectionLagUs.p99 >= LAG_TARGET_US).length,
      databaseBytes,
    };
    writeResult('sustained', result);
    return result;
  } finally {
    await venue.stop();
  }
}

/** The closed loop, with the readings at the windows' edges and the autovacuum samples taken beside it. */
async function sustainedRun(baseUrl: string, databaseUrl: string, localPostgres: boolean, windows: number, windowMs: number, quick: boolean) {
  // Two clients: the edges' readings must not queue behind an autovacuum sample, nor the other way round.
  const edgesDb = new pg.Client({ connectionString: databaseUrl });
  const samplesDb = new pg.Client({ connectionString: databaseUrl });
  await Promise.all([edgesDb.connect(), samplesDb.connect()]);
  const edges: EdgeSample[] = [];
  const autovacuum: Record<string, number>[] = Array.from({ length: windows }, () => ({}));
  // Every reading taken while the load runs, each with its failure caught (and reported after the run).
  const pending: Promise<void>[] = [];
  const failures: string[] = [];
  const track = (reading: Promise<unknown>) =>
    pending.push(
      reading.then(
        () => undefined,
        (error: unknown) => void failures.push(error instanceof Error ? error.message : String(error)),
      ),
    );
  let opened = 0;
  let edgeTimer: NodeJS.Timeout | null = null;
  let sampleTimer: NodeJS.Timeout | null = null;
  const sampleAutovacuum = async () => {
    const at = Math.floor((performance.now() - opened) / windowMs);
    if (at < 0 || at >= windows) return;
    const rows = await samplesDb.query<{ query: string }>("SELECT coalesce(query, '') AS query FROM pg_stat_activity WHERE backend_type = 'autovacuum worker'");
    for (const { query } of rows.rows) {
      // "autovacuum: VACUUM ANALYZE runtime.order_lifecycle_state" and the like.
      const what = query.replace(/^autovacuum:\s*/, '').trim() || 'starting';
      autovacuum[at]![what] = (autovacuum[at]![what] ?? 0) + 1;
    }
  };
  try {
    const run = await runLoad({
      baseUrl,
      mode: 'sync-result',
      threads: LOAD_THREADS,
      connections: CONNECTIONS,
      warmupMs: quick ? 500 : 2_000,
      durationMs: windows * windowMs,
      ratePerSecond: 0,
      seed: 41,
      record: false,
      quiet: true,
      label: `sustained, ${windows} windows of ${windowMs / 1000} s`,
      window: {
        opened: () => {
          opened = performance.now();
          // The window's start, then each window's end (the last one's end is read after the run if the close came first).
          let taken = 0;
          const take = () => {
            if (taken++ > windows) return;
            track(edgeSample(baseUrl, edgesDb, localPostgres).then((sample) => edges.push(sample)));
          };
          take();
          edgeTimer = setInterval(take, windowMs);
          sampleTimer = setInterval(() => track(sampleAutovacuum()), AUTOVACUUM_SAMPLE_MS);
        },
        closed: () => {
          if (edgeTimer !== null) clearInterval(edgeTimer);
          if (sampleTimer !== null) clearInterval(sampleTimer);
        },
      },
    });
    await Promise.all(pending);
    if (failures.length > 0) throw new Error(`${failures.length} readings beside the sustained load failed, the first: ${failures[0]}`);
    while (edges.length < windows + 1) edges.push(await edgeSample(baseUrl, edgesDb, localPostgres));
    edges.length = windows + 1;
    return { run, edges, autovacuum };
  } finally {
    if (edgeTimer !== null) clearInterval(edgeTimer);
    if (sampleTimer !== null) clearInterval(sampleTimer);
    await Promise.all([edgesDb.end(), samplesDb.end()]);
  }
}

async function databaseSize(databaseUrl: string): Promise<number> {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    return Number((await client.query<{ bytes: string }>('SELECT pg_database_size(current_database())::text AS bytes')).rows[0]!.bytes);
  } finally {
    await client.end();
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) await runSustainedBench(process.argv.includes('--quick'));
