// End-to-end HTTP figures, each beside the ceiling measured in the same run with the
// same load generator (bench/load/):
//  - the HTTP ceiling: a bare uWebSockets.js server answering a canned envelope of the
//    venue's answer size (bench/load/bare-server.ts);
//  - the storage ceiling: tier 1's commit alone (intake and journal rows of synthetic
//    commands, one transaction per commit) into PostgreSQL (bench/persistence-bench.ts
//    copyCapacity);
//  - the venue, closed-loop (64 connections) in sync-result and accepted-async with 1
//    and 2 gateway threads and 1 and 2 shards, each run verified against the database;
//  - open-loop at fractions of the closed-loop rate (latency from when each request was
//    due), which gives the throughput/latency curves (bench/results/load.svg) and the
//    durable acknowledgement at half load;
//  - a read load (snapshot, depth, tape) beside the order load, on and off in turn;
//  - the floor under those latencies: one request at a time onto the otherwise idle venue
//    (a sync-result submit; then snapshot, depth, tape and /healthz), in the same run.
// Results: bench/results/load.json. Everything is bounded in time.

import pg from 'pg';
import { rmSync } from 'node:fs';
import os from 'node:os';
import { fileURLToPath } from 'node:url';
import { describe, onOffThroughput, runLoad, SLOT_MS, StartGate, worstSecond, type LoadOptions, type LoadResult, type Percentiles } from './load/load-generator.ts';
import { startBenchVenue } from './load/venue.ts';
import type { CpuUse } from './load/cpu-use.ts';
import { verifyLoad, type Verification } from './load/verify.ts';
import { copyCapacity } from './persistence-bench.ts';
import { bucketsBetween, percentileOfBuckets } from '../persistence/latency-histogram.ts';
import { writeResult, RESULTS_DIR } from './lib/results.ts';
import { writeLatencyPlot } from './lib/plot.ts';
import { answerBytes, cpuLine, runLoadWithCpu, startBareServer } from './lib/cpu-runs.ts';
import { scratchFolder } from './lib/leftovers.ts';

const CONNECTIONS = 64;
/**
 * Connections per load thread for the open-loop points. Each connection has one request
 * in flight, so 64 carry at most 64 / latency requests a second: at 10,000/s that is a
 * 6.4 ms budget, and a stall of the venue of a few ms made the generator queue requests
 * on its own side (24% of them in a 30 s run at 10,000/s, with a worst second's p50 of
 * 83 ms against 22 ms with 256). Latency is counted from when a
 * request was due, so that queue was charged to the venue; with 256 it is the venue's
 * own queueing that shows. `queuedBehind` in each run still says how many waited for a
 * connection.
 */
const OPEN_LOOP_CONNECTIONS = 256;
/**
 * The idle floor: one connection, this pause between an answer and the next request, so
 * that every request meets a venue with nothing else to do (at about 2 ms a sync-result
 * answer, 150-200 a second: far below any load point).
 */
const IDLE_PAUSE_MS = 4;
/**
 * The read load beside the orders: an open loop at this rate (snapshot, depth, tape of 50
 * trades and /healthz in turn), so that every pair compares the orders against the same
 * work: a closed loop's rate follows the tape's wait for the projection, and the drop
 * with it (docs/decisions/0029-reads-drop-measured-within-one-run.md).
 */
const READS_PER_SECOND = 500;
/** Enough that reads seldom wait for a connection behind tape reads held by a projection spike (`readsQueuedBehind` counts those that do). */
const READ_CONNECTIONS = 64;
/**
 * The read load is on for a phase and off for the next, in turn, through one closed-loop
 * order run (the orders counted per 100 ms slot), and the drop compares the on phases with
 * the off phases beside them (load-generator.ts `onOffThroughput`), each phase less its first
 * READ_EDGE_MS (the last reads of an on phase are answered early in the off phase after it;
 * a tape read's p99 is 100-200 ms). The read thread sleeps through the off phases.
 * Within one run, phases of 1 s put the machine's drift (about 10% from one run to the
 * next) into both sides; 2 s phases measured worse on runs without reads
 * (docs/decisions/0029-reads-drop-measured-within-one-run.md).
 */
const READ_PHASE_MS = 1_000;
const READ_EDGE_MS = 300;
/** The order run beside the reads: whole on-and-off cycles. */
const READ_RUN_MS = { full: 30_000, quick: 3_000 };

function summary(result: LoadResult) {
  const { recorded: _recorded, ...rest } = result;
  return rest;
}

/**
 * The size of the venue's answer to a resting submit, for the ceiling's canned answer:
 * rendered by the venue's own renderer (core/outcome-format.ts), as the gateway does.
 */
/** What the venue and its PostgreSQL spent per answered command: every part but the generator. */
function venueAndPostgresUs(cpu: CpuUse): number {
  return Math.round((cpu.totalUs - (cpu.perCommandUs.generator ?? 0)) * 10) / 10;
}

/** Each mode's target ratio to the HTTP ceiling. */
const CEILING_TARGETS: Record<string, number> = { 'sync-result': 0.5, 'accepted-async': 0.7 };

/**
 * What the cores allow at each mode's target, beside what the run spent: at the target's
 * rate the machine has cores × 1 s ÷ rate of CPU per command; the load generator's cost
 * per request at the ceiling (its cheapest: no answers parsed or recorded) comes off
 * that, and the rest is what the venue and its PostgreSQL could spend per command. Their
 * measured cost is everything but the generator in the mode's median closed-loop run at
 * 2 gateway threads and 2 shards.
 */
function cpuBudget(ceiling: number, ceilingCpu: CpuUse | null, runs: Record<string, VenueRun>) {
  const cores = os.availableParallelism();
  const round = (us: number) => Math.round(us * 10) / 10;
  const generatorAtCeilingUs = ceilingCpu?.perCommandUs.generator ?? null;
  return {
    cores,
    ceiling: ceilingCpu,
    generatorAtCeilingUs,
    modes: Object.fromEntries(
      Object.entries(runs).map(([mode, run]) => {
        const cpu = run.closedLoopCpu;
        const target = CEILING_TARGETS[mode]!;
        const cpuPerCommandAtTargetUs = round((cores * 1e6) / (ceiling * target));
        return [
          mode,
          {
            target,
            targetRate: Math.round(ceiling * target),
            cpuPerCommandAtTargetUs,
            leftForVenueAndPostgresUs: generatorAtCeilingUs === null ? null : round(cpuPerCommandAtTargetUs - generatorAtCeilingUs),
            venueAndPostgresUs: cpu === null ? null : venueAndPostgresUs(cpu),
            measured: cpu,
          },
        ];
      }),
    ),
  };
}

type OpenLoopPoint = ReturnType<typeof summary> & {
  repeats: { okPerSecond: number; p50Us: number; p99Us: number; queuedBehind: number; worstSecond: LoadResult['perSecond'][number] | null; cpu: CpuUse | null }[];
  /** The venue's and PostgreSQL's CPU per answered command (everything but the generator), the median over the repeats. */
  venueAndPostgresUs: number | null;
};

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

/** One order run beside the read load on and off (the drop of each run; the medians in medianReadRuns). */
interface ReadRun {
  /** Orders answered per second in the read load's on phases, and in its off phases (onOffThroughput). */
  ordersBesideReads: number;
  ordersAlone: number;
  dropPercent: number;
  /** Slots of SLOT_MS compared on each side. */
  slotsEach: number;
  /** Orders answered per second over the whole run. */
  ordersPerSecond: number;
  /** Answered reads per second of the on phases (the load is due at READS_PER_SECOND then). */
  readsPerSecond: number;
  /** Reads that were due while every read connection was busy (their latency includes the wait). */
  readsQueuedBehind: number;
  readLatencyUs: Record<string, Percentiles>;
  readLatencyFromSendUs: Record<string, Percentiles>;
}

/** Each read kind's percentiles, the median over the runs of each. */
function medianPercentiles(runs: Record<string, Percentiles>[]): Record<string, Percentiles> {
  const medians: Record<string, Percentiles> = {};
  for (const kind of Object.keys(runs[0]!)) {
    const of = runs.map((run) => run[kind]).filter((v): v is Percentiles => v !== undefined);
    medians[kind] = {
      count: median(of.map((v) => v.count)),
      p50: median(of.map((v) => v.p50)),
      p90: median(of.map((v) => v.p90)),
      p99: median(of.map((v) => v.p99)),
      p999: median(of.map((v) => v.p999)),
      max: median(of.map((v) => v.max)),
    };
  }
  return medians;
}

/** The medians over the runs, field by field (each read kind's percentiles too); every run in `runs`. */
function medianReadRuns(runs: ReadRun[]) {
  return {
    readsDuePerSecond: READS_PER_SECOND,
    phaseMs: READ_PHASE_MS,
    edgeMs: READ_EDGE_MS,
    dropPercent: median(runs.map((run) => run.dropPercent)),
    readsPerSecond: median(runs.map((run) => run.readsPerSecond)),
    ordersBesideReads: median(runs.map((run) => run.ordersBesideReads)),
    ordersAlone: median(runs.map((run) => run.ordersAlone)),
    readLatencyUs: medianPercentiles(runs.map((run) => run.readLatencyUs)),
    readLatencyFromSendUs: medianPercentiles(runs.map((run) => run.readLatencyFromSendUs)),
    runs,
  };
}

/** Several open-loop runs at one rate as one point: the median answers/s and the median of each percentile. */
function medianOpenLoop(tries: { run: LoadResult; cpu: CpuUse | null }[]): OpenLoopPoint {
  const first = summary(tries[0]!.run);
  const latencyUs = { ...first.latencyUs };
  for (const key of Object.keys(latencyUs) as (keyof typeof latencyUs)[]) latencyUs[key] = median(tries.map((t) => t.run.latencyUs[key]));
  const venueCosts = tries.flatMap(({ cpu }) => (cpu === null ? [] : [venueAndPostgresUs(cpu)]));
  return {
    ...first,
    okPerSecond: median(tries.map((t) => t.run.okPerSecond)),
    latencyUs,
    repeats: tries.map(({ run, cpu }) => ({ okPerSecond: run.okPerSecond, p50Us: run.latencyUs.p50, p99Us: run.latencyUs.p99, queuedBehind: run.queuedBehind, worstSecond: worstSecond(run), cpu })),
    venueAndPostgresUs: venueCosts.length === 0 ? null : median(venueCosts),
  };
}

export interface PersistenceFigures {
  captureLatencyUs: unknown;
  journalLatencyUs: unknown;
  projectionLagUs: { count: number; p50: number; p99: number };
  projectionLagBuckets: [number, number][];
}

interface RunLag {
  count: number;
  p50: number;
  p99: number;
}

/** The projection lag recorded between two status readings. */
function lagBetween(before: PersistenceFigures | null, after: PersistenceFigures | null): RunLag | null {
  if (before === null || after === null) return null;
  const window = bucketsBetween(before.projectionLagBuckets, after.projectionLagBuckets);
  return { count: window.reduce((sum, [, count]) => sum + count, 0), p50: percentileOfBuckets(window, 50), p99: percentileOfBuckets(window, 99) };
}

interface VenueRun {
  gatewayThreads: number;
  shards: number;
  mode: string;
  /** The median of the closed-loop runs (by answers per second); all of them in closedLoopOkPerSecond. */
  closedLoop: ReturnType<typeof summary>;
  closedLoopOkPerSecond: number[];
  /** The CPU each part used per answered command over that median run's window (null: not measured). */
  closedLoopCpu: CpuUse | null;
  /** The venue's own figures since its start, read after the closed-loop runs (GET /admin/v1/persistence/status). */
  persistence: Omit<PersistenceFigures, 'projectionLagBuckets'> | null;
  /** Projection lag during each closed-loop run alone (the status's lag buckets read before and after it). */
  closedLoopProjectionLagUs: RunLag[];
  /** One entry per rate; where a rate ran several times, its percentiles are the medians of the runs (in `repeats`). */
  openLoop: OpenLoopPoint[];
  /** One request at a time onto the otherwise idle venue (sync-result at 2/2 only; null elsewhere). */
  idle: IdleFloor | null;
  verification: Verification;
  readyMs: number;
}

interface IdleFloor {
  pauseMs: number;
  /** sync-result submits, cancels and modifies of the flow, each sent after the last was answered and a pause. */
  orders: Percentiles;
  /** snapshot, depth, tape (50 trades) and /healthz, likewise. */
  reads: Record<string, Percentiles>;
}

/** The venue's persistence figures (GET /admin/v1/persistence/status), or null if it did not answer 200. */
export async function persistenceStatus(baseUrl: string): Promise<PersistenceFigures | null> {
  const answer = await fetch(`${baseUrl}/admin/v1/persistence/status`, { headers: { authorization: 'Bearer dev-token-operator' } });
  if (answer.status !== 200) return null;
  const status = (await answer.json()) as {
    journal: { captureLatencyUs: unknown; journalLatencyUs: unknown };
    projections: { lagUs: PersistenceFigures['projectionLagUs']; lagBuckets: [number, number][] };
  };
  return {
    captureLatencyUs: status.journal.captureLatencyUs,
    journalLatencyUs: status.journal.journalLatencyUs,
    projectionLagUs: status.projections.lagUs,
    projectionLagBuckets: status.projections.lagBuckets,
  };
}

/** PostgreSQL's WAL since its last checkpoint's redo point (what its crash recovery replays) and its max_wal_size, in bytes. */
async function walSinceCheckpoint(databaseUrl: string): Promise<{ bytes: number; maxBytes: number }> {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    const row = await client.query<{ bytes: string; max: string }>(
      "SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), redo_lsn)::int8::text AS bytes, (SELECT setting::int8 * 1048576 FROM pg_settings WHERE name = 'max_wal_size')::text AS max FROM pg_control_checkpoint()",
    );
    return { bytes: Number(row.rows[0]!.bytes), maxBytes: Number(row.rows[0]!.max) };
  } finally {
    await client.end();
  }
}

/**
 * A crash under an order load: the load runs until PostgreSQL's WAL since its last
 * checkpoint reaches `walFraction` of its max_wal_size (late in a checkpoint cycle, where
 * PostgreSQL's own crash recovery has the most to replay: under a steady load its redo
 * distance runs between about half of max_wal_size and all of it) or for `loadMsMax`;
 * then the venue and its PostgreSQL are killed (kill -9) with the load still running,
 * and the load stops.
 */
export async function crashUnderLoad(venue: Awaited<ReturnType<typeof startBenchVenue>>, walFraction: number, loadMsMax: number, seed: number) {
  // A start after a crash asks for its PostgreSQL's checkpoint once ready (persistence/postgres-recovery.ts,
  // recoverAsStandby): until it completes, the WAL since the last one is still the crashed run's.
  // The load starts after it, so that each crash comes after a load, as the first did.
  const waitStarted = performance.now();
  for (let wal = await walSinceCheckpoint(venue.databaseUrl); wal.bytes >= walFraction * wal.maxBytes; wal = await walSinceCheckpoint(venue.databaseUrl)) {
    if (performance.now() - waitStarted > 60_000) throw new Error("PostgreSQL's WAL since its last checkpoint stayed past the crash's mark for 60 s after the start");
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  const checkpointWaitMs = Math.round(performance.now() - waitStarted);
  const stop = new AbortController();
  const started = performance.now();
  const load = runLoad({
    baseUrl: venue.baseUrl,
    mode: 'accepted-async',
    threads: 1,
    connections: 64,
    warmupMs: 0,
    durationMs: loadMsMax + 5_000,
    ratePerSecond: 0,
    seed,
    record: false,
    quiet: true,
    label: 'load before a crash',
    signal: stop.signal,
  });
  let wal = await walSinceCheckpoint(venue.databaseUrl);
  while (performance.now() - started < loadMsMax && wal.bytes < walFraction * wal.maxBytes) {
    await new Promise((resolve) => setTimeout(resolve, 200));
    wal = await walSinceCheckpoint(venue.databaseUrl);
  }
  const loadMs = Math.round(performance.now() - started);
  await venue.kill({ database: true });
  stop.abort();
  const loaded = await load;
  return {
    checkpointWaitMs,
    loadMs,
    loadAnswered: (loaded.statuses['202'] ?? 0) + (loaded.statuses['200'] ?? 0),
    walMiB: Math.round(wal.bytes / 2 ** 20),
    maxWalMiB: Math.round(wal.maxBytes / 2 ** 20),
  };
}

/**
 * Fills a venue with resting orders, stops it, and starts it again on the same data
 * `times` times (each after a graceful stop of the one before: the saved engines, open
 * orders and key filters are used), then `times` times after a crash under load of the
 * one before (crashUnderLoad: kill -9 of the venue and its PostgreSQL late in a checkpoint cycle;
 * nothing a stop saves is used, PostgreSQL replays its WAL, each shard loads its last
 * engine checkpoint and replays the journal after it, the projections catch up, storage
 * is scanned, what was taken but never journaled is re-driven). The figures are the
 * medians of the times to /readyz; every start is in `starts`.
 */
export async function restartBench(orders: number, times: number, crash: { walFraction: number; loadMsMax: number }): Promise<Record<string, unknown>> {
  const dataDir = scratchFolder('venue-bench-restart-');
  try {
    const env = { PROCESSING_MODE: 'accepted-async', ORDER_CAPACITY: String(Math.max(1 << 21, orders * 2)) };
    const venue = await startBenchVenue(env, dataDir);
    const fillStarted = performance.now();
    // A fill request that is not accepted (a 503 while the venue is busy, a connection that
    // failed) would leave the book short of `orders`; the rest is sent again, at most three
    // times, so that the restart is timed with the book it is for. (Two full runs counted
    // 999,999 and 999,998: a thread's first request had gone out a hair before the common
    // start and was not counted, since fixed in worker.ts; the top-up then added orders.)
    let accepted = 0;
    for (let pass = 0; pass < 3 && accepted < orders; pass++) {
      const fill = await runLoad({
        baseUrl: venue.baseUrl,
        mode: 'accepted-async',
        threads: 2,
        connections: 64,
        warmupMs: 0,
        durationMs: 600_000,
        ratePerSecond: 0,
        seed: 99 + pass,
        record: false,
        role: 'fill',
        maxRequests: orders - accepted,
        label: pass === 0 ? `filling ${orders} resting orders` : `filling the ${orders - accepted} resting orders not accepted before`,
      });
      console.log(describe(fill));
      accepted += fill.statuses['202'] ?? 0;
    }
    const fillSeconds = (performance.now() - fillStarted) / 1000;
    await venue.stop({ keepData: true });
    const steps = (log: string) => ({
      startedMs: JSON.parse(/"startedMs":(\{[^}]*\})/.exec(log)?.[1] ?? 'null') as Record<string, number> | null,
      persistenceMs: JSON.parse(/"phaseMs":(\{[^}]*\})/.exec(log)?.[1] ?? 'null') as Record<string, number> | null,
      books: /"books":(\[[^\]]*\])/.exec(log)?.[1] ?? null,
      openOrders: /"openOrders":"([^"]*)"/.exec(log)?.[1] ?? null,
      keyFilters: /"keyFilters":"([^"]*)"/.exec(log)?.[1] ?? null,
      takenAfter: Number(/"takenAfter":(-?\d+)/.exec(log)?.[1] ?? Number.NaN),
    });
    const graceful: { readyMs: number; booksRestored: boolean; steps: ReturnType<typeof steps> }[] = [];
    const crashed: ({ readyMs: number; steps: ReturnType<typeof steps> } & Awaited<ReturnType<typeof crashUnderLoad>>)[] = [];
    let ownOrdersReadStatus = 0;
    let last: Awaited<ReturnType<typeof startBenchVenue>> | null = null;
    for (let k = 0; k < times; k++) {
      if (last !== null) await last.stop({ keepData: true });
      last = await startBenchVenue(env, dataDir);
      const log = last.log();
      graceful.push({ readyMs: Math.round(last.readyMs), booksRestored: /"books":\["saved at the last stop"(,"saved at the last stop")*\]/.test(log), steps: steps(log) });
      if (k === 0) ownOrdersReadStatus = await fetch(`${last.baseUrl}/api/v1/orders/current?limit=1`, { headers: { authorization: 'Bearer dev-token-trader-a' } }).then((r) => r.status);
    }
    // A crash under load, as a machine's crash would come, late in a checkpoint cycle: the next
    // start has PostgreSQL's WAL to replay, each shard's journal after its last checkpoint, the
    // projections' lag to catch up and the intake never journaled to re-drive (a crash of an idle,
    // just restarted venue has none of that: 4.2 s where this took 9.7 s, and a crash after 5 s
    // of load left PostgreSQL 150 MiB of WAL where a steady load reaches up to max_wal_size).
    for (let k = 0; k < times; k++) {
      const venueNow = last!;
      const load = await crashUnderLoad(venueNow, crash.walFraction, crash.loadMsMax, 300 + k);
      last = await startBenchVenue(env, dataDir);
      crashed.push({ readyMs: Math.round(last.readyMs), ...load, steps: steps(last.log()) });
    }
    await last!.stop({ keepData: true });
    const readyMs = median(graceful.map((start) => start.readyMs));
    const readyAfterCrashMs = median(crashed.map((start) => start.readyMs));
    console.log(
      `restart with ${accepted} resting orders: /readyz after ${graceful.map((start) => start.readyMs).join(', ')} ms (median ${readyMs}; books restored: ${graceful.map((start) => start.booksRestored).join(', ')}); ` +
        `after a crash ${crashed.map((start) => start.readyMs).join(', ')} ms (median ${readyAfterCrashMs})`,
    );
    return {
      restingOrders: accepted,
      fillPerSecond: Math.round(accepted / fillSeconds),
      readyMs,
      booksRestored: graceful.every((start) => start.booksRestored),
      readyAfterCrashMs,
      starts: { afterGracefulStop: graceful, afterCrash: crashed },
      firstStartReadyMs: Math.round(venue.readyMs),
      ownOrdersReadStatus,
    };
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
  }
}

export async function runLoadBench(quick: boolean): Promise<Record<string, unknown>> {
  const repeats = quick ? 1 : 3;
  const seconds = quick ? 3 : 8;
  const warmupMs = quick ? 500 : 2000;
  const base = (label: string, extra: Partial<LoadOptions> & { baseUrl: string }): LoadOptions => ({
    mode: null,
    threads: 1,
    connections: CONNECTIONS,
    warmupMs,
    durationMs: seconds * 1000,
    ratePerSecond: 0,
    seed: 7,
    record: true,
    label,
    ...extra,
  });

  // The answer size, from the real venue, for the ceiling's canned envelope.
  const bytes = answerBytes();

  // HTTP ceiling: the same generator (1 and 2 threads; the quick run, whose bar is 2
  // minutes in all, 2 only: on these 2 cores it has been the faster in every run), the same connections.
  const bare = await startBareServer(2, bytes);
  const ceilingRuns: LoadResult[] = [];
  const ceilingCpu: (CpuUse | null)[] = [];
  const generatorThreads = quick ? [2] : [1, 2];
  try {
    for (const threads of generatorThreads) {
      const { run, cpu } = await runLoadWithCpu(base(`ceiling, ${threads} load thread(s)`, { baseUrl: bare.baseUrl, threads, record: false, parseAnswers: false }), {
        serverPid: bare.pid,
        generatorPid: process.pid,
      });
      console.log(`${describe(run)}${cpuLine(cpu)}`);
      ceilingRuns.push(run);
      ceilingCpu.push(cpu);
    }
  } finally {
    await bare.stop();
  }
  const ceiling = Math.max(...ceilingRuns.map((r) => r.okPerSecond));
  const loadThreads = ceilingRuns.length === 1 ? generatorThreads[0]! : ceilingRuns[1]!.okPerSecond > ceilingRuns[0]!.okPerSecond * 1.05 ? 2 : 1;

  // Storage ceiling: COPY alone, the batch sizes group commit makes under load.
  const storage = await copyCapacity([64, 512], quick ? 20_000 : 200_000);
  const storageCeiling = Math.max(...storage.map((s) => s.commandsPerSecond));
  console.log(`storage ceiling (tier 1 alone): ${storage.map((s) => `${s.commandsPerSecond} commands/s at ${s.batchCommands} per commit`).join(', ')}`);

  const configs = quick
    ? [{ gatewayThreads: 2, shards: 2 }]
    : [
        { gatewayThreads: 1, shards: 1 },
        { gatewayThreads: 1, shards: 2 },
        { gatewayThreads: 2, shards: 1 },
        { gatewayThreads: 2, shards: 2 },
      ];
  const fractions = quick ? [0.5, 0.8] : [0.25, 0.5, 0.8, 1.0];
  const runs: VenueRun[] = [];
  let readsBeside: ReturnType<typeof medianReadRuns> | null = null;
  for (const { gatewayThreads, shards } of configs) {
    for (const mode of ['sync-result', 'accepted-async']) {
      const venue = await startBenchVenue({ GATEWAY_THREADS: String(gatewayThreads), MATCHING_SHARDS: String(shards), PROCESSING_MODE: mode });
      try {
        const label = `${mode}, ${gatewayThreads} gateway / ${shards} shard`;
        const all: LoadResult[] = [];
        // A warm-up run first (JIT, connections, the books filling up); verified with the rest, not reported.
        all.push(await runLoad(base(`${label}, warm-up`, { baseUrl: venue.baseUrl, mode, threads: loadThreads, seed: 3, quiet: true, ...(quick ? { warmupMs: 500, durationMs: 500 } : {}) })));
        const closedRuns: LoadResult[] = [];
        const closedCpu: (CpuUse | null)[] = [];
        const closedLags: RunLag[] = [];
        for (let k = 0; k < repeats; k++) {
          const before = await persistenceStatus(venue.baseUrl);
          const { run, cpu } = await runLoadWithCpu(
            base(`${label}, closed loop${repeats > 1 ? ` ${k + 1}/${repeats}` : ''}`, { baseUrl: venue.baseUrl, mode, threads: loadThreads, seed: 7 + 100 * k }),
            { venuePid: venue.child.pid!, postgresPid: venue.postgresPid, generatorPid: process.pid },
          );
          const lag = lagBetween(before, await persistenceStatus(venue.baseUrl));
          console.log(`${describe(run)}${lag === null ? '' : `; projection lag p50 ${(lag.p50 / 1000).toFixed(1)} ms, p99 ${(lag.p99 / 1000).toFixed(1)} ms`}${cpuLine(cpu)}`);
          closedRuns.push(run);
          closedCpu.push(cpu);
          if (lag !== null) closedLags.push(lag);
          all.push(run);
        }
        const closedAt = closedRuns.findIndex((r) => r.okPerSecond === median(closedRuns.map((c) => c.okPerSecond)));
        const closed = closedRuns[closedAt]!;
        const status = await persistenceStatus(venue.baseUrl);
        const persistence = status === null ? null : { captureLatencyUs: status.captureLatencyUs, journalLatencyUs: status.journalLatencyUs, projectionLagUs: status.projectionLagUs };
        const open: OpenLoopPoint[] = [];
        const curve = gatewayThreads === 2 && shards === 2;
        let idle: IdleFloor | null = null;
        if (curve && mode === 'sync-result') {
          // The floor: what one request costs in time when nothing else runs (the closed loops'
          // projection backlog given a second to drain first). The half-load and read targets are
          // judged against what is left above it.
          await new Promise((resolve) => setTimeout(resolve, 1000));
          const idleSeconds = quick ? 1.5 : 5;
          const orders = await runLoad(
            base(`${label}, one at a time (idle floor)`, {
              baseUrl: venue.baseUrl,
              mode,
              threads: 1,
              connections: 1,
              pauseMs: IDLE_PAUSE_MS,
              warmupMs: 200,
              durationMs: idleSeconds * 1000,
              seed: 30,
            }),
          );
          console.log(describe(orders));
          all.push(orders);
          await fetch(`${venue.baseUrl}/api/v1/market-data/snapshots`, { method: 'POST', headers: { authorization: 'Bearer dev-token-viewer' } });
          const reads = await runLoad(
            base('reads one at a time (idle floor)', {
              baseUrl: venue.baseUrl,
              role: 'reads',
              threads: 1,
              connections: 1,
              pauseMs: IDLE_PAUSE_MS,
              warmupMs: 200,
              durationMs: idleSeconds * 1000,
              record: false,
              quiet: true,
            }),
          );
          idle = { pauseMs: IDLE_PAUSE_MS, orders: orders.latencyUs, reads: reads.readLatencyUs };
          console.log(
            `  reads one at a time: ${Object.entries(reads.readLatencyUs)
              .map(([name, v]) => `${name} p50 ${(v.p50 / 1000).toFixed(2)} ms, p99 ${(v.p99 / 1000).toFixed(2)} ms`)
              .join('; ')}`,
          );
        }
        if (curve) {
          for (const fraction of fractions) {
            const rate = Math.max(100, Math.round(closed.okPerSecond * fraction));
            // The targets' points (half load, 80%) are run three times in a full run and reported as medians.
            const times = !quick && (fraction === 0.5 || fraction === 0.8) ? 3 : 1;
            const tries: { run: LoadResult; cpu: CpuUse | null }[] = [];
            for (let t = 0; t < times; t++) {
              const { run, cpu } = await runLoadWithCpu(
                base(`${label}, open loop at ${Math.round(fraction * 100)}% (${rate}/s)${times > 1 ? ` ${t + 1}/${times}` : ''}`, {
                  baseUrl: venue.baseUrl,
                  mode,
                  threads: loadThreads,
                  connections: OPEN_LOOP_CONNECTIONS,
                  ratePerSecond: rate,
                  seed: 8 + open.length * 10 + t,
                  ...(quick ? { durationMs: 2000 } : {}), // the quick run's curve is a sketch; its bar is 2 minutes in all
                }),
                { venuePid: venue.child.pid!, postgresPid: venue.postgresPid, generatorPid: process.pid },
              );
              console.log(`${describe(run)}${cpuLine(cpu)}`);
              tries.push({ run, cpu });
              all.push(run);
            }
            open.push(medianOpenLoop(tries));
          }
          if (mode === 'sync-result') {
            // Reads beside the order load: the same closed loop with a reads thread (an open loop at
            // READS_PER_SECOND, on and off in phases of READ_PHASE_MS), after a snapshot refresh so that
            // every instrument has a stored snapshot to read. Each run's drop compares its on phases with
            // its off phases; the figures are the medians over the runs.
            await fetch(`${venue.baseUrl}/api/v1/market-data/snapshots`, { method: 'POST', headers: { authorization: 'Bearer dev-token-viewer' } });
            const readRuns: ReadRun[] = [];
            for (let k = 0; k < repeats; k++) {
              const of = repeats > 1 ? ` ${k + 1}/${repeats}` : '';
              const gate = new StartGate(2);
              const durationMs = READ_RUN_MS[quick ? 'quick' : 'full'];
              const [orders, reads] = await Promise.all([
                runLoad(base(`${label}, closed loop beside reads on and off${of}`, { baseUrl: venue.baseUrl, mode, threads: loadThreads, seed: 20 + 100 * k, durationMs, startGate: gate })),
                runLoad(
                  base('reads', {
                    baseUrl: venue.baseUrl,
                    role: 'reads',
                    connections: READ_CONNECTIONS,
                    ratePerSecond: READS_PER_SECOND,
                    onOffMs: READ_PHASE_MS,
                    durationMs,
                    record: false,
                    quiet: true,
                    startGate: gate,
                  }),
                ),
              ]);
              console.log(describe(orders));
              all.push(orders);
              const compared = onOffThroughput(orders.okPerSlot, SLOT_MS, READ_PHASE_MS, READ_EDGE_MS);
              readRuns.push({
                ordersBesideReads: compared.onPerSecond,
                ordersAlone: compared.offPerSecond,
                dropPercent: compared.dropPercent,
                slotsEach: compared.slotsEach,
                ordersPerSecond: orders.okPerSecond,
                readsPerSecond: reads.okPerSecond,
                readsQueuedBehind: reads.queuedBehind,
                readLatencyUs: reads.readLatencyUs,
                readLatencyFromSendUs: reads.readLatencyFromSendUs,
              });
              console.log(
                `  reads on and off: orders ${compared.onPerSecond}/s with reads, ${compared.offPerSecond}/s without (${compared.dropPercent}% lower); ${Object.entries(reads.readLatencyUs)
                  .map(([name, v]) => `${name} p99 ${(v.p99 / 1000).toFixed(2)} ms`)
                  .join(', ')}`,
              );
            }
            readsBeside = medianReadRuns(readRuns);
          }
        }
        const verification = await verifyLoad(venue.databaseUrl, all);
        console.log(`  verified: ${JSON.stringify(verification)}`);
        runs.push({
          gatewayThreads,
          shards,
          mode,
          closedLoop: summary(closed),
          closedLoopOkPerSecond: closedRuns.map((r) => r.okPerSecond),
          closedLoopCpu: closedCpu[closedAt] ?? null,
          persistence,
          closedLoopProjectionLagUs: closedLags,
          openLoop: open,
          idle,
          verification,
          readyMs: Math.round(venue.readyMs),
        });
      } finally {
        await venue.stop();
      }
    }
  }

  const restart = await restartBench(quick ? 2_000 : 1_000_000, repeats, quick ? { walFraction: 0.9, loadMsMax: 2_000 } : { walFraction: 0.9, loadMsMax: 90_000 });

  const at = (mode: string) => runs.find((r) => r.mode === mode && r.gatewayThreads === 2 && r.shards === 2)!;
  const sync = at('sync-result');
  const async_ = at('accepted-async');
  const half = sync.openLoop.find((r) => Math.abs(r.ratePerSecond - sync.closedLoop.okPerSecond * 0.5) < 2) ?? null;
  const eighty = sync.openLoop.find((r) => Math.abs(r.ratePerSecond - sync.closedLoop.okPerSecond * 0.8) < 2) ?? null;
  const ratios = {
    syncToHttpCeiling: Number((sync.closedLoop.okPerSecond / ceiling).toFixed(3)),
    asyncToHttpCeiling: Number((async_.closedLoop.okPerSecond / ceiling).toFixed(3)),
    syncToStorageCeiling: Number((sync.closedLoop.okPerSecond / storageCeiling).toFixed(3)),
  };
  const plot = writeLatencyPlot(
    `${RESULTS_DIR}/load.svg`,
    'Client latency against throughput (open loop, 2 gateway threads, 2 shards)',
    [
      { name: 'sync-result', points: sync.openLoop.map((r) => ({ x: r.okPerSecond, p50: r.latencyUs.p50, p99: r.latencyUs.p99 })) },
      { name: 'accepted-async', points: async_.openLoop.map((r) => ({ x: r.okPerSecond, p50: r.latencyUs.p50, p99: r.latencyUs.p99 })) },
    ],
    ceiling,
  );
  const result = {
    machine: { cpus: os.availableParallelism(), node: process.version },
    note: `load generator: ${loadThreads} worker thread(s) of keep-alive connections (http-connection.ts) (${CONNECTIONS} each, ${OPEN_LOOP_CONNECTIONS} each in the open-loop points) on the same 2 cores as the venue and PostgreSQL; latencies in microseconds; ${seconds} s measured after ${warmupMs} ms of warm-up`,
    quick,
    answerBytes: bytes,
    httpCeiling: { okPerSecond: ceiling, runs: ceilingRuns.map((run, k) => ({ ...summary(run), cpu: ceilingCpu[k] ?? null })) },
    cpuBudget: cpuBudget(ceiling, ceilingCpu[ceilingRuns.findIndex((r) => r.okPerSecond === ceiling)] ?? null, { 'sync-result': sync, 'accepted-async': async_ }),
    storageCeiling: { commandsPerSecond: storageCeiling, runs: storage },
    ratios,
    // With the CPU the venue and PostgreSQL spent per command there, beside what they spent at saturation (the median closed loop).
    durableAckAtHalfLoad:
      half === null
        ? null
        : {
            rate: half.ratePerSecond,
            p50Us: half.latencyUs.p50,
            p99Us: half.latencyUs.p99,
            venueAndPostgresUs: half.venueAndPostgresUs,
            atSaturationUs: sync.closedLoopCpu === null ? null : venueAndPostgresUs(sync.closedLoopCpu),
          },
    // The floor under the latency targets: one request at a time onto the otherwise idle venue.
    idleFloor: sync.idle,
    syncAt80Percent: eighty === null ? null : { rate: eighty.ratePerSecond, p99Us: eighty.latencyUs.p99 },
    readsBeside,
    restart,
    // The median over the closed-loop runs of each one's own lag (full load); since the start in projectionLagSinceStartUs.
    projectionLagUs:
      sync.closedLoopProjectionLagUs.length === 0
        ? null
        : {
            p50: median(sync.closedLoopProjectionLagUs.map((r) => r.p50)),
            p99: median(sync.closedLoopProjectionLagUs.map((r) => r.p99)),
            runs: sync.closedLoopProjectionLagUs,
          },
    projectionLagSinceStartUs: sync.persistence?.projectionLagUs ?? null,
    runs,
    plot,
  };
  writeResult('load', result);
  return result;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) await runLoadBench(process.argv.includes('--quick'));
