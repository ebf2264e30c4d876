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

/** A count per part: CPU ticks (user + system), or sleeps. */
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

/**
 * The ticks of a process's children that have ended and that it has reaped (cutime + cstime
 * of a /proc/<pid>/stat line): PostgreSQL's postmaster reaps every process it starts, so a
 * backend or an autovacuum worker that ends within a window leaves its ticks here.
 */
export function statReapedTicks(stat: string): number {
  const fields = fieldsAfterName(stat);
  return Number(fields[13]) + Number(fields[14]);
}

/** The parent pid of a /proc/<pid>/stat line. */
export function statParent(stat: string): number {
  return Number(fieldsAfterName(stat)[1]);
}

/**
 * The times a thread slept (blocked, then was woken) of its /proc/.../status file: its
 * voluntary context switches. On this VM a sleep and wake-up costs tens of µs of CPU, so
 * a part's CPU per command is partly its sleeps per command (docs/performance.md, "Latency
 * at half load and at 80%").
 */
export function statusSleeps(status: string): number {
  const match = /^voluntary_ctxt_switches:\s*(\d+)$/m.exec(status);
  if (match === null) throw new Error('no voluntary_ctxt_switches line in a /proc status file');
  return Number(match[1]);
}

/**
 * A thread's /proc/.../schedstat line: the nanoseconds it has run, and those it has waited,
 * runnable, for a core (then its time slices). On two saturated cores every thread takes
 * turns; the wait is how long its turns kept it waiting.
 */
export function parseSchedstat(schedstat: string): { runNs: number; waitNs: number } {
  const fields = schedstat.trim().split(/\s+/);
  const [runNs, waitNs] = [Number(fields[0]), Number(fields[1])];
  if (fields.length < 3 || !Number.isSafeInteger(runNs) || runNs < 0 || !Number.isSafeInteger(waitNs) || waitNs < 0) {
    throw new Error(`not a schedstat line: ${JSON.stringify(schedstat.slice(0, 80))}`);
  }
  return { runNs, waitNs };
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
 * The part a venue thread belongs to, by the name the venue gives it (runtime/worker-spawn.ts):
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

/**
 * A venue thread by itself: the threads the venue names keep their names; of the rest, the
 * main thread (its id is the process's) is "main", every other one (V8's compiler and
 * garbage-collector helpers, libuv's pool) "V8 and libuv helpers".
 */
export function venueThread(threadName: string, thread: string, pid: number): string {
  if (venuePart(threadName) !== 'main and V8') return threadName;
  return thread === String(pid) ? 'main' : 'V8 and libuv helpers';
}

/** The CPU ticks each venue thread has used so far, by venueThread (nothing when the process has gone). */
export function sampleThreadCpu(venuePid: number): CpuSample {
  const sample: CpuSample = new Map();
  for (const thread of threadsOf(venuePid)) {
    const name = readProc(`/proc/${venuePid}/task/${thread}/comm`);
    const count = TICKS.thread(venuePid, thread);
    if (name === null || count === null) continue;
    addCount(sample, venueThread(name.trim(), thread, venuePid), count);
  }
  return sample;
}

/**
 * CPU ticks of the embedded PostgreSQL by process, each named from `names` (pid → the
 * connection's application_name or the server process's backend_type, from
 * pg_stat_activity); the postmaster, processes not in `names` and those reaped are "other".
 */
export function samplePostgresCpu(postmaster: number, names: ReadonlyMap<number, string>): CpuSample {
  const sample: CpuSample = new Map();
  addCount(sample, 'other', TICKS.reaped(postmaster) + TICKS.process(postmaster));
  for (const pid of childrenOf(postmaster)) addCount(sample, names.get(pid) ?? 'other', TICKS.process(pid));
  return sample;
}

function addCount(into: CpuSample, part: string, count: number): void {
  into.set(part, (into.get(part) ?? 0) + count);
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

/** What a sample counts: of one thread (null when it has gone), of a whole process (0 when it has gone), and of its reaped children. */
interface Counter {
  thread(pid: number, thread: string): number | null;
  process(pid: number): number;
  reaped(pid: number): number;
}

/** CPU ticks; a process's from its own stat line, which keeps the ticks of its threads that ended. */
const TICKS: Counter = {
  thread: (pid, thread) => {
    const stat = readProc(`/proc/${pid}/task/${thread}/stat`);
    return stat === null ? null : statTicks(stat);
  },
  process: (pid) => {
    const stat = readProc(`/proc/${pid}/stat`);
    return stat === null ? 0 : statTicks(stat);
  },
  reaped: (pid) => {
    const stat = readProc(`/proc/${pid}/stat`);
    return stat === null ? 0 : statReapedTicks(stat);
  },
};

/** Sleeps; a process's status counts its first thread's only, so its threads are added up. Those of an ended child are not kept anywhere. */
const SLEEPS: Counter = {
  thread: (pid, thread) => {
    const status = readProc(`/proc/${pid}/task/${thread}/status`);
    return status === null ? null : statusSleeps(status);
  },
  process: (pid) => threadsOf(pid).reduce((sum, thread) => sum + (SLEEPS.thread(pid, thread) ?? 0), 0),
  reaped: () => 0,
};

/**
 * Run-queue waits in ns; a process's /proc/<pid>/schedstat is its first thread's only, so its
 * threads are added up. Those of an ended child are not kept anywhere.
 */
const WAITS: Counter = {
  thread: (pid, thread) => {
    const schedstat = readProc(`/proc/${pid}/task/${thread}/schedstat`);
    return schedstat === null ? null : parseSchedstat(schedstat).waitNs;
  },
  process: (pid) => threadsOf(pid).reduce((sum, thread) => sum + (WAITS.thread(pid, thread) ?? 0), 0),
  reaped: () => 0,
};

function samplePerPart(targets: CpuTargets, counter: Counter): CpuSample {
  const sample: CpuSample = new Map();
  if (targets.venuePid !== undefined) {
    for (const thread of threadsOf(targets.venuePid)) {
      const name = readProc(`/proc/${targets.venuePid}/task/${thread}/comm`);
      const count = counter.thread(targets.venuePid, thread);
      if (name === null || count === null) continue;
      addCount(sample, venuePart(name.trim()), count);
    }
  }
  if (targets.serverPid !== undefined) addCount(sample, 'server', counter.process(targets.serverPid));
  if (targets.postgresPid != null) {
    // The live processes, and those that ended and were reaped: a process that ends between two
    // samples (an autovacuum worker, a backend) is then counted in full, its ticks before the
    // first sample in that sample and the rest in the reaped ticks of the second.
    addCount(sample, 'PostgreSQL', counter.reaped(targets.postgresPid));
    for (const pid of [targets.postgresPid, ...childrenOf(targets.postgresPid)]) addCount(sample, 'PostgreSQL', counter.process(pid));
  }
  addCount(sample, 'generator', counter.process(targets.generatorPid));
  return sample;
}

/** The CPU ticks each part has used so far (a part whose processes have gone is left out). */
export function sampleCpu(targets: CpuTargets): CpuSample {
  return samplePerPart(targets, TICKS);
}

/** The times each part's threads have slept so far (a part whose processes have gone is left out). */
export function sampleSleeps(targets: CpuTargets): CpuSample {
  return samplePerPart(targets, SLEEPS);
}

/** The ns each part's threads have waited for a core so far (a part whose processes have gone is left out). */
export function sampleWaits(targets: CpuTargets): CpuSample {
  return samplePerPart(targets, WAITS);
}

/** µs each part waited for a core per answered command, between two samples of sampleWaits (one decimal; never below zero). */
export function waitsPerCommand(before: CpuSample, after: CpuSample, commands: number): Record<string, number> {
  if (!(commands > 0)) throw new RangeError(`waitsPerCommand needs answered commands, got ${commands}`);
  return Object.fromEntries([...after].map(([part, ns]) => [part, Math.round(Math.max(0, ns - (before.get(part) ?? 0)) / commands / 100) / 10]));
}

/** Sleeps per answered command, per part, between two samples (two decimals; never below zero). */
export function sleepsPerCommand(before: CpuSample, after: CpuSample, commands: number): Record<string, number> {
  if (!(commands > 0)) throw new RangeError(`sleepsPerCommand needs answered commands, got ${commands}`);
  return Object.fromEntries([...after].map(([part, count]) => [part, Math.round((Math.max(0, count - (before.get(part) ?? 0)) / commands) * 100) / 100]));
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
  /** The whole machine over the same window (null where /proc/stat was not read). */
  machine: MachineUse | null;
  /** Sleeps per answered command, per part, over the same window (where they were sampled). */
  sleepsPerCommand?: Record<string, number>;
  /** µs each part waited, runnable, for a core per answered command, over the same window (where it was sampled). */
  waitUsPerCommand?: Record<string, number>;
  /** µs of CPU per answered command of each venue thread by name (venueThread), where a venue was measured. */
  threadsUs?: Record<string, number>;
  /** µs of CPU per answered command of each PostgreSQL process by what it is (samplePostgresCpu), where a database was named. */
  postgresUs?: Record<string, number>;
  /** PostgreSQL's transactions, WAL records, full-page images, WAL bytes, writes and syncs per answered command, where a database was named. */
  postgresPerCommand?: Record<string, number>;
}

/** What each part used between two samples, per answered command (`machine`: the whole machine's two samples over the same window). */
export function cpuPerCommand(before: CpuSample, after: CpuSample, commands: number, windowMs: number, machine?: { before: MachineSample | null; after: MachineSample | null }): CpuUse {
  if (!(commands > 0) || !(windowMs > 0)) throw new RangeError(`cpuPerCommand needs answered commands and a window, got ${commands} in ${windowMs} ms`);
  const parts: [string, number][] = [];
  let ticks = 0;
  for (const [part, after_] of after) {
    // A part may appear only in the later sample (a PostgreSQL backend started meanwhile); a venue
    // thread that ended meanwhile takes its ticks with it, which undercounts it (never overcounts).
    // PostgreSQL's processes that end are kept (its postmaster's reaped ticks).
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
    machine: machine?.before && machine.after ? machineUse(machine.before, machine.after, windowMs) : null,
  };
}

/** The whole machine's CPU ticks by state, from the first line of /proc/stat. */
export interface MachineSample {
  busy: number;
  idle: number;
  iowait: number;
  steal: number;
}

/**
 * The `cpu` line of /proc/stat: user nice system idle iowait irq softirq steal ...
 * (guest time is counted in user already). Busy is user, nice, system, irq and softirq.
 */
export function parseMachine(procStat: string): MachineSample {
  const line = procStat.slice(0, procStat.indexOf('\n'));
  const fields = line.split(/\s+/);
  if (fields[0] !== 'cpu') throw new Error(`not the machine's cpu line of /proc/stat: ${line.slice(0, 40)}`);
  const n = (k: number) => Number(fields[k] ?? 0);
  return { busy: n(1) + n(2) + n(3) + n(6) + n(7), idle: n(4), iowait: n(5), steal: n(8) };
}

export function sampleMachine(): MachineSample | null {
  const stat = readProc('/proc/stat');
  return stat === null ? null : parseMachine(stat);
}

/**
 * Cores the whole machine spent in each state over a window: busy (anything running,
 * this load's parts or not), waiting for the disk with nothing to run (iowait), taken by
 * the hypervisor (steal), idle. A stall with cores neither busy nor stolen is a wait.
 */
export interface MachineUse {
  busyCores: number;
  iowaitCores: number;
  stealCores: number;
  idleCores: number;
}

export function machineUse(before: MachineSample, after: MachineSample, windowMs: number): MachineUse {
  if (!(windowMs > 0)) throw new RangeError(`machineUse needs a window, got ${windowMs} ms`);
  const cores = (field: keyof MachineSample) => Math.round(((Math.max(0, after[field] - before[field]) * TICK_US) / (windowMs * 1000)) * 100) / 100;
  return { busyCores: cores('busy'), iowaitCores: cores('iowait'), stealCores: cores('steal'), idleCores: cores('idle') };
}
