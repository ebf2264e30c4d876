// Load runs with the CPU each part of the machine spent per answer, and the bare
// uWebSockets.js server they are compared with: shared by the benchmarks that ask what a
// command costs (bench/load-bench.ts, bench/durable-submit-bench.ts).

import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { EVENT_ACCEPTED, STATE_OPEN } from '../../core/codes.ts';
import { renderEnvelope } from '../../core/outcome-format.ts';
import pg from 'pg';
import {
  cpuPerCommand,
  sampleCpu,
  samplePostgresCpu,
  sampleThreadCpu,
  sampleMachine,
  sampleSleeps,
  sampleWaits,
  sleepsPerCommand,
  waitsPerCommand,
  type CpuSample,
  type CpuTargets,
  type CpuUse,
  type MachineSample,
} from '../load/cpu-use.ts';
import { runLoad, type LoadOptions, type LoadResult } from '../load/load-generator.ts';
import { reapAtExit } from './leftovers.ts';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

/** The size of the venue's answer to a submit, for the bare server's canned envelope. */
export function answerBytes(): number {
  const header = { token: 1, eventCount: 1, currency: 0x555344, queryState: -1, timestampUs: Date.now() * 1000, engineOrderId: 123_456, batch: 1 };
  const accepted = { kind: EVENT_ACCEPTED, state: STATE_OPEN, aggressor: 0, side: 0, code: 0, orderA: crypto.randomUUID(), orderB: crypto.randomUUID(), sequence: 123_456, quantity: 0, price: 0 };
  return renderEnvelope({ shard: 0, instrumentId: crypto.randomUUID(), currency: 'USD' }, header, [accepted]).json.length;
}

export async function startBareServer(threads: number, bytes: number): Promise<{ baseUrl: string; pid: number; stop: () => Promise<void> }> {
  const child = reapAtExit(
    spawn(process.execPath, ['--import', 'tsx', 'bench/load/bare-server.ts', '--threads', String(threads), '--bytes', String(bytes)], { cwd: ROOT, stdio: ['ignore', 'pipe', 'inherit'] }),
  );
  const baseUrl = await new Promise<string>((resolve, reject) => {
    let seen = '';
    child.stdout!.on('data', (chunk: Buffer) => {
      seen += chunk.toString();
      const match = /listening on (http:\/\/\S+)/.exec(seen);
      if (match !== null) resolve(match[1]!);
    });
    child.once('exit', (code) => reject(new Error(`the bare server exited with ${code}`)));
  });
  return {
    baseUrl,
    pid: child.pid!,
    stop: () =>
      new Promise((resolve) => {
        child.once('exit', () => resolve());
        child.kill('SIGTERM');
      }),
  };
}

/**
 * A load run and the CPU each part of the machine used over its measured window
 * (bench/load/cpu-use.ts), per 2xx answer, with the times each part's threads slept and
 * the µs they waited for a core per answer; null if the window did not open and close (a
 * run stopped in its warm-up) or nothing was answered.
 */
export async function runLoadWithCpu(options: LoadOptions, targets: CpuTargets, databaseUrl?: string): Promise<{ run: LoadResult; cpu: CpuUse | null }> {
  type Edge = { parts: CpuSample; threads: CpuSample | null; postgres: CpuSample | null; sleeps: CpuSample; waits: CpuSample; machine: MachineSample | null; at: number };
  const database = databaseUrl === undefined || targets.postgresPid == null ? null : new pg.Client({ connectionString: databaseUrl, application_name: 'bench-stats' });
  const names = database === null ? new Map<number, string>() : await postgresProcessNames(database);
  const postmaster = targets.postgresPid;
  const sample = (): Edge => ({
    parts: sampleCpu(targets),
    threads: targets.venuePid === undefined ? null : sampleThreadCpu(targets.venuePid),
    postgres: database === null || postmaster == null ? null : samplePostgresCpu(postmaster, names),
    sleeps: sampleSleeps(targets),
    waits: sampleWaits(targets),
    machine: sampleMachine(),
    at: performance.now(),
  });
  const edges: { opened?: Edge; closed?: Edge; stats?: [PostgresStats, PostgresStats] } = {};
  const stats: { opened?: Promise<PostgresStats>; closed?: Promise<PostgresStats> } = {};
  let run: LoadResult;
  try {
    run = await runLoad({
      ...options,
      window: {
        opened: () => {
          edges.opened = sample();
          if (database !== null) stats.opened = postgresStats(database);
        },
        closed: () => {
          edges.closed = sample();
          if (database !== null) stats.closed = postgresStats(database);
        },
      },
    });
  } finally {
    // Awaited before the client ends, whether the run finished or not.
    const [before, after] = await Promise.allSettled([stats.opened, stats.closed]);
    if (before?.status === 'fulfilled' && after?.status === 'fulfilled' && before.value !== undefined && after.value !== undefined) edges.stats = [before.value, after.value];
    await database?.end();
  }
  const answered = Object.entries(run.statuses).reduce((sum, [code, n]) => sum + (code.startsWith('2') ? n : 0), 0);
  const { opened, closed } = edges;
  if (opened === undefined || closed === undefined || answered === 0) return { run, cpu: null };
  const cpu = cpuPerCommand(opened.parts, closed.parts, answered, closed.at - opened.at, { before: opened.machine, after: closed.machine });
  const threadsUs = opened.threads !== null && closed.threads !== null ? cpuPerCommand(opened.threads, closed.threads, answered, closed.at - opened.at).perCommandUs : undefined;
  const postgresUs = opened.postgres !== null && closed.postgres !== null ? cpuPerCommand(opened.postgres, closed.postgres, answered, closed.at - opened.at).perCommandUs : undefined;
  const postgresPerCommand = edges.stats === undefined ? undefined : statsPerCommand(edges.stats[0], edges.stats[1], answered);
  return {
    run,
    cpu: {
      ...cpu,
      sleepsPerCommand: sleepsPerCommand(opened.sleeps, closed.sleeps, answered),
      waitUsPerCommand: waitsPerCommand(opened.waits, closed.waits, answered),
      ...(threadsUs === undefined ? {} : { threadsUs }),
      ...(postgresUs === undefined ? {} : { postgresUs }),
      ...(postgresPerCommand === undefined ? {} : { postgresPerCommand }),
    },
  };
}

/** pid → what a PostgreSQL process is: its connection's application_name, or its backend_type. */
async function postgresProcessNames(database: pg.Client): Promise<Map<number, string>> {
  await database.connect();
  const { rows } = await database.query<{ pid: number; name: string }>("SELECT pid, coalesce(nullif(application_name, ''), backend_type) AS name FROM pg_stat_activity");
  return new Map(rows.map((row) => [row.pid, row.name]));
}

type PostgresStats = Record<'transactions' | 'walRecords' | 'walFullPages' | 'walBytes' | 'walWrites' | 'walSyncs', number>;

/** Cumulative server statistics; backends report theirs at most a second late, so an 8 s window is read to about a tenth. */
async function postgresStats(database: pg.Client): Promise<PostgresStats> {
  const { rows } = await database.query<Record<string, string>>(
    `SELECT (SELECT sum(xact_commit + xact_rollback) FROM pg_stat_database) AS transactions,
            wal_records, wal_fpi, wal_bytes, wal_write, wal_sync FROM pg_stat_wal`,
  );
  const row = rows[0]!;
  return {
    transactions: Number(row.transactions),
    walRecords: Number(row.wal_records),
    walFullPages: Number(row.wal_fpi),
    walBytes: Number(row.wal_bytes),
    walWrites: Number(row.wal_write),
    walSyncs: Number(row.wal_sync),
  };
}

/** Each statistic's growth per answered command (three decimals; never below zero). */
export function statsPerCommand(before: Record<string, number>, after: Record<string, number>, commands: number): Record<string, number> {
  if (!(commands > 0)) throw new RangeError(`statsPerCommand needs answered commands, got ${commands}`);
  return Object.fromEntries(Object.keys(after).map((name) => [name, Math.round((Math.max(0, after[name]! - (before[name] ?? 0)) / commands) * 1000) / 1000]));
}

/** "; CPU per answer: gateways 51 µs, ... (197 µs in all, 1.9 cores busy); sleeps per answer: gateways 0.05, ...; waited for a core per answer: gateways 80 µs, ..." for the progress output. */
export function cpuLine(cpu: CpuUse | null): string {
  if (cpu === null) return '';
  const parts = Object.entries(cpu.perCommandUs).map(([part, us]) => `${part} ${us} µs`);
  const machine =
    cpu.machine === null ? '' : `; the machine: ${cpu.machine.busyCores} cores busy, ${cpu.machine.iowaitCores} in I/O wait, ${cpu.machine.stealCores} stolen, ${cpu.machine.idleCores} idle`;
  const slept = cpu.sleepsPerCommand;
  const sleeps =
    slept === undefined
      ? ''
      : `; sleeps per answer: ${Object.keys(cpu.perCommandUs)
          .map((part) => `${part} ${slept[part] ?? 0}`)
          .join(', ')}`;
  const waited = cpu.waitUsPerCommand;
  const waits =
    waited === undefined
      ? ''
      : `; waited for a core per answer: ${Object.keys(cpu.perCommandUs)
          .map((part) => `${part} ${waited[part] ?? 0} µs`)
          .join(', ')}`;
  const byProcess =
    cpu.postgresUs === undefined
      ? ''
      : `; PostgreSQL per answer: ${Object.entries(cpu.postgresUs)
          .map(([name, us]) => `${name} ${us} µs`)
          .join(', ')}`;
  const stats =
    cpu.postgresPerCommand === undefined
      ? ''
      : `; PostgreSQL statistics per answer: ${Object.entries(cpu.postgresPerCommand)
          .map(([name, n]) => `${name} ${n}`)
          .join(', ')}`;
  return `; CPU per answer: ${parts.join(', ')} (${cpu.totalUs} µs in all, ${cpu.coresBusy} cores busy${machine})${sleeps}${waits}${byProcess}${stats}`;
}
