// Where the two cores go during a load run: CPU time read from Linux's /proc for each
// part of the run (the venue's threads by their names, its PostgreSQL's processes, the
// load generator, which is this process), turned into microseconds of CPU per answered
// command. The end-to-end targets are ratios to a ceiling measured on the same cores, so
// what each part costs per command says how far the venue is from them, and why.
//
// /proc counts CPU time in USER_HZ ticks, 100 a second on Linux whatever the kernel's
// own HZ (an ABI constant): 10 ms each, so an 8-second window on 2 cores holds about
// 1,600 of them and a part's figure is good to about 1%.

import { readdirSync, readFileSync } from 'node:fs';

const TICK_US = 10_000;

/** CPU ticks (user + system) per part. */
export type CpuSample = Map<string, number>;

/** The fields after the name of a /proc/<pid>/stat line (the name, in parentheses, may itself hold spaces and parentheses). */
function fieldsAfterName(stat: string): string[] {
  return stat.slice(stat.lastIndexOf(')') + 2).split(' ');
}

/** user + system ticks of a /proc/.../stat line. */
export function statTicks(stat: string): number {
  const fields = fieldsAfterName(stat);
  return Number(fields[11]) + Number(fields[12]);
}

/** The parent pid of a /proc/<pid>/stat line. */
export function statParent(stat: string): number {
  return Number(fieldsAfterName(stat)[1]);
}

/** The process's state letter (R, S, Z, ...) of a /proc/<pid>/stat line. */
export function statState(stat: string): string {
  return fieldsAfterName(stat)[0]!;
}

/** Reads a /proc file, or null when the process or thread has gone meanwhile. */
function readProc(path: string): string | null {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return null;
  }
}

/** The pids whose parent is `parent` (the processes a PostgreSQL postmaster started). */
export function childrenOf(parent: number): number[] {
  const children: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const stat = readProc(`/proc/${entry}/stat`);
    if (stat !== null && statParent(stat) === parent) children.push(Number(entry));
  }
  return children;
}

/**
 * The part a venue thread belongs to, by the name the venue gives it (core/worker-spawn.ts):
 * every thread it does not name (the main thread, V8's compiler and garbage-collector helpers,
 * libuv's pool) is "main and V8".
 */
export function venuePart(threadName: string): string {
  if (/^gateway-\d+$/.test(threadName)) return 'gateways';
  if (/^shard-\d+$/.test(threadName)) return 'shards';
  if (threadName === 'persistence') return 'persistence thread';
  if (threadName === 'read') return 'read thread';
  return 'main and V8';
}

function addTicks(into: CpuSample, part: string, ticks: number): void {
  into.set(part, (into.get(part) ?? 0) + ticks);
}

/** A whole process's ticks (every thread's), or 0 when it has gone. */
function processTicks(pid: number): number {
  const stat = readProc(`/proc/${pid}/stat`);
  return stat === null ? 0 : statTicks(stat);
}

export interface CpuTargets {
  /** The venue's process: its threads are told apart by name. */
  venuePid?: number;
  /** Another server measured whole (the bare ceiling server). */
  serverPid?: number;
  /** The venue's embedded PostgreSQL: the postmaster and every process it started (null: an outside database, not counted). */
  postgresPid?: number | null;
  /** The load generator's process (this one): its main thread and its load threads. */
  generatorPid: number;
}

/** The thread ids of a process, or none when it has gone (a venue killed in a crash test). */
function threadsOf(pid: number): string[] {
  try {
    return readdirSync(`/proc/${pid}/task`);
  } catch {
    return [];
  }
}

/** The CPU ticks each part has used so far (a part whose processes have gone is left out). */
export function sampleCpu(targets: CpuTargets): CpuSample {
  const sample: CpuSample = new Map();
  if (targets.venuePid !== undefined) {
    for (const thread of threadsOf(targets.venuePid)) {
      const name = readProc(`/proc/${targets.venuePid}/task/${thread}/comm`);
      const stat = readProc(`/proc/${targets.venuePid}/task/${thread}/stat`);
      if (name === null || stat === null) continue;
      addTicks(sample, venuePart(name.trim()), statTicks(stat));
    }
  }
  if (targets.serverPid !== undefined) addTicks(sample, 'server', processTicks(targets.serverPid));
  if (targets.postgresPid != null) {
    for (const pid of [targets.postgresPid, ...childrenOf(targets.postgresPid)]) addTicks(sample, 'PostgreSQL', processTicks(pid));
  }
  addTicks(sample, 'generator', processTicks(targets.generatorPid));
  return sample;
}

export interface CpuUse {
  /** Commands (or requests) answered in the window the two samples bound. */
  commands: number;
  windowMs: number;
  /** µs of CPU per answered command, per part, largest first. */
  perCommandUs: Record<string, number>;
  totalUs: number;
  /** Cores kept busy on average over the window by the parts measured. */
  coresBusy: number;
}

/** What each part used between two samples, per answered command. */
export function cpuPerCommand(before: CpuSample, after: CpuSample, commands: number, windowMs: number): CpuUse {
  if (!(commands > 0) || !(windowMs > 0)) throw new RangeError(`cpuPerCommand needs answered commands and a window, got ${commands} in ${windowMs} ms`);
  const parts: [string, number][] = [];
  let ticks = 0;
  for (const [part, after_] of after) {
    // A part may appear only in the later sample (a PostgreSQL backend started meanwhile); one
    // that ended meanwhile takes its ticks with it, which undercounts it (never overcounts).
    const used = Math.max(0, after_ - (before.get(part) ?? 0));
    ticks += used;
    parts.push([part, used]);
  }
  parts.sort((a, b) => b[1] - a[1]);
  const round = (us: number) => Math.round(us * 10) / 10;
  return {
    commands,
    windowMs: Math.round(windowMs),
    perCommandUs: Object.fromEntries(parts.map(([part, used]) => [part, round((used * TICK_US) / commands)])),
    totalUs: round((ticks * TICK_US) / commands),
    coresBusy: Math.round(((ticks * TICK_US) / (windowMs * 1000)) * 100) / 100,
  };
}
