// What one durable order costs the machine, part by part and thread by thread, beside the
// cheapest HTTP answer on the same machine in the same run, in each processing mode: closed
// loops of the realistic order flow (64 connections, 1 load thread; submits around the mid,
// some crossing, cancels and modifies) against the venue, alternating with the same load
// against a bare uWebSockets.js server answering a canned envelope of the venue's answer
// size. Each round runs the bare server, then the venue in every mode in turn, so all see
// the same hour of the machine; the figures are medians over the rounds. Each venue run is
// verified against its database.
//
//   npx tsx bench/durable-submit-bench.ts [--rounds 3] [--seconds 8] [--rate 0] [--warmup 80]
//       [--modes sync-result,captured-ack,stream-ack,accepted-async] [--out durable-submit]
//
// --rate N runs the venue's loads open loop at N submits a second (0: closed loop): two
// versions compared at one rate see the same batching, so their CPU per command compares.
//
// Result: bench/results/<out>.json: per round, mode and part the CPU µs per answered command
// (gateways, shards, persistence thread, read thread, main and V8, PostgreSQL, the
// generator), per venue thread by name (V8's and libuv's helpers together), per PostgreSQL
// process by connection name or server process, PostgreSQL's transactions and WAL per
// command, the answers a second, and per mode the medians with the venue's ratio to the
// bare server.

import { fileURLToPath } from 'node:url';
import { answerBytes, cpuLine, runLoadWithCpu, startBareServer } from './lib/cpu-runs.ts';
import { writeResult } from './lib/results.ts';
import type { CpuUse } from './load/cpu-use.ts';
import { PROCESSING_MODE_NAMES } from '../core/outcome-format.ts';
import { describe, runLoad, type LoadOptions, type LoadResult } from './load/load-generator.ts';
import { startBenchVenue } from './load/venue.ts';
import { verifyLoad } from './load/verify.ts';

const CONNECTIONS = 64;
/** Load before the first measured run, shared among the modes. */
const WARMUP_SECONDS = 80;

interface VenueRun {
  answersPerSecond: number;
  usPerAnswer: number;
  venueAndPostgresUs: number;
  parts: Record<string, number>;
  threads: Record<string, number>;
  /** PostgreSQL's CPU by process (connection or server process) and its transactions and WAL, per answered command. */
  postgres: Record<string, number>;
  postgresStats: Record<string, number>;
  verified: boolean;
}

interface Round {
  bare: { answersPerSecond: number; usPerAnswer: number; parts: Record<string, number> };
  venue: Record<string, VenueRun>;
}

const argument = (name: string, fallback: number): number => {
  const at = process.argv.indexOf(`--${name}`);
  return at < 0 ? fallback : Number(process.argv[at + 1]);
};
const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
const round1 = (n: number) => Math.round(n * 10) / 10;

export async function runDurableSubmitBench(
  rounds: number,
  seconds: number,
  venueRate = 0,
  modes: readonly string[] = PROCESSING_MODE_NAMES,
  warmupSeconds = WARMUP_SECONDS,
): Promise<Record<string, unknown>> {
  const base = (label: string, baseUrl: string, extra: Partial<LoadOptions> = {}): LoadOptions => ({
    mode: 'sync-result',
    threads: 1,
    connections: CONNECTIONS,
    warmupMs: 1000,
    durationMs: seconds * 1000,
    ratePerSecond: 0,
    seed: 7,
    record: true,
    label,
    baseUrl,
    ...extra,
  });
  const bytes = answerBytes();
  const venue = await startBenchVenue({ PROCESSING_MODE: 'sync-result' });
  const results: Round[] = [];
  try {
    // The main thread faults the stores in after ready: measured once it is done.
    for (let waited = 0; !/the command and order stores faulted in/.test(venue.log()); waited += 100) {
      if (waited > 120_000) throw new Error('the venue did not fault its stores in within 120 s');
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    // Not measured, but verified with the rest: the stores faulted in after ready, the books filling up, and
    // V8's optimizing compiler, which keeps re-optimizing functions as rarer paths reach them for a minute or two
    // (decision 0049); each mode's own paths get their share.
    const venueRuns: LoadResult[] = [];
    for (const [k, mode] of modes.entries()) {
      venueRuns.push(await runLoad(base(`venue, warm-up, ${mode}`, venue.baseUrl, { mode, seed: 3 + k, quiet: true, warmupMs: 1000, durationMs: (warmupSeconds * 1000) / modes.length })));
    }
    for (let round = 0; round < rounds; round++) {
      const bare = await startBareServer(2, bytes);
      let bareCpu: CpuUse | null;
      let bareRate: number;
      try {
        const { run, cpu } = await runLoadWithCpu(base(`bare server, round ${round + 1}`, bare.baseUrl, { record: false, parseAnswers: false }), { serverPid: bare.pid, generatorPid: process.pid });
        console.log(`${describe(run)}${cpuLine(cpu)}`);
        bareCpu = cpu;
        bareRate = run.okPerSecond;
      } finally {
        await bare.stop();
      }
      if (bareCpu === null) throw new Error('the bare run was answered nothing or its window did not close');
      const venueByMode: Record<string, VenueRun> = {};
      for (const mode of modes) {
        const { run, cpu } = await runLoadWithCpu(
          base(`venue, ${mode}, round ${round + 1}`, venue.baseUrl, { mode, seed: 7 + 100 * round, ratePerSecond: venueRate, ...(venueRate > 0 ? { connections: 256 } : {}) }),
          { venuePid: venue.child.pid!, postgresPid: venue.postgresPid, generatorPid: process.pid },
          venue.databaseUrl,
        );
        console.log(`${describe(run)}${cpuLine(cpu)}`);
        venueRuns.push(run);
        const verification = await verifyLoad(venue.databaseUrl, venueRuns);
        if (!verification.ok) console.log(`verification failed: ${JSON.stringify(verification)}`);
        if (cpu === null) throw new Error(`the ${mode} run was answered nothing or its window did not close`);
        venueByMode[mode] = {
          answersPerSecond: run.okPerSecond,
          usPerAnswer: cpu.totalUs,
          venueAndPostgresUs: round1(cpu.totalUs - (cpu.perCommandUs.generator ?? 0)),
          parts: cpu.perCommandUs,
          threads: cpu.threadsUs ?? {},
          postgres: cpu.postgresUs ?? {},
          postgresStats: cpu.postgresPerCommand ?? {},
          verified: verification.ok,
        };
      }
      results.push({ bare: { answersPerSecond: bareRate, usPerAnswer: round1(bareCpu.perCommandUs.server ?? 0), parts: bareCpu.perCommandUs }, venue: venueByMode });
    }
  } finally {
    await venue.stop();
  }
  const bareUs = median(results.map((r) => r.bare.usPerAnswer));
  const bareRate = median(results.map((r) => r.bare.answersPerSecond));
  const medianOf = (runs: VenueRun[], pick: (run: VenueRun) => Record<string, number>) => {
    const names = [...new Set(runs.flatMap((run) => Object.keys(pick(run))))];
    return Object.fromEntries(names.map((name) => [name, median(runs.map((run) => pick(run)[name] ?? 0))]).sort((a, b) => (b[1] as number) - (a[1] as number)));
  };
  const perMode = Object.fromEntries(
    modes.map((mode) => {
      const runs = results.map((r) => r.venue[mode]!);
      const venueUs = median(runs.map((run) => run.venueAndPostgresUs));
      const rate = median(runs.map((run) => run.answersPerSecond));
      return [
        mode,
        {
          venueAndPostgresUsPerAnswer: venueUs,
          venueAnswersPerSecond: rate,
          ratioToBare: round1(venueUs / bareUs),
          throughputRatio: Math.round((rate / bareRate) * 1000) / 1000,
          verified: runs.every((run) => run.verified),
          partsUs: medianOf(runs, (run) => run.parts),
          threadsUs: medianOf(runs, (run) => run.threads),
          postgresUs: medianOf(runs, (run) => run.postgres),
          postgresPerCommand: medianOf(runs, (run) => run.postgresStats),
        },
      ];
    }),
  );
  const summary = {
    rounds,
    seconds,
    warmupSeconds,
    connections: CONNECTIONS,
    loadThreads: 1,
    venueRatePerSecond: venueRate,
    medians: { bareServerUsPerAnswer: bareUs, bareAnswersPerSecond: bareRate, modes: perMode },
    results,
  };
  console.log(JSON.stringify(summary.medians));
  return summary;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const at = process.argv.indexOf('--out');
  const out = at < 0 ? 'durable-submit' : process.argv[at + 1]!;
  const modesAt = process.argv.indexOf('--modes');
  const modes = modesAt < 0 ? PROCESSING_MODE_NAMES : process.argv[modesAt + 1]!.split(',');
  for (const mode of modes) if (!(PROCESSING_MODE_NAMES as readonly string[]).includes(mode)) throw new Error(`--modes: ${mode} is not one of ${PROCESSING_MODE_NAMES.join(', ')}`);
  writeResult(out, await runDurableSubmitBench(argument('rounds', 3), argument('seconds', 8), argument('rate', 0), modes, argument('warmup', WARMUP_SECONDS)));
  process.exit(0);
}
