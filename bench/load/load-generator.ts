// The HTTP load generator: worker threads (worker.ts) driving the real routes for a
// bounded time, a progress line while they run, their histograms merged, and the
// verification against the database afterwards (verify.ts). `npm run load` (cli.ts)
// points it at any running venue.

import * as hdr from 'hdr-histogram-js';
import type { Worker } from 'node:worker_threads';
import { buildWorkers } from '../../runtime/worker-build.ts';
import { spawnWorker } from '../../runtime/worker-spawn.ts';
import { INSTRUMENTS, TRADERS, type Trader } from './flow.ts';
import type { AnswerSample, WorkerOptions, WorkerReport } from './worker.ts';

export interface LoadOptions {
  baseUrl: string;
  mode: string | null;
  threads: number;
  /** Connections per thread (= requests in flight per thread). */
  connections: number;
  warmupMs: number;
  durationMs: number;
  /** Open-loop total rate (requests/s over all threads); 0: closed-loop. */
  ratePerSecond: number;
  /** Closed loop: each connection's pause between an answer and its next request (worker.ts; 0 or unset: none). */
  pauseMs?: number;
  seed: number;
  record: boolean;
  parseAnswers?: boolean;
  role?: 'orders' | 'reads' | 'fill';
  /** A bound on the requests of the whole run, shared out exactly among the threads (0 or unset: the time bounds it). */
  maxRequests?: number;
  /** The principals the orders act as, and the instruments (unset: the development traders, the benches' 8 instruments). */
  traders?: readonly Trader[];
  instruments?: readonly string[];
  /** The venue session the cancels and modifies quote (unset: read from the venue with the development viewer's token). */
  session?: { runId: string; venueSessionId: string };
  /** Keep a uniform sample of up to this many 2xx order answers (LoadResult.sample; 0 or unset: none). */
  checkSample?: number;
  label: string;
  quiet?: boolean;
  /** Ends the run early when aborted (each thread stops sending; its window ends there). */
  signal?: AbortSignal;
  /** Called when the measured window opens (the first thread's) and when it closes (the last thread's). */
  window?: { opened(): void; closed(): void };
  /** Open loop: on for this long, then off for as long, in turn, from the window's start (worker.ts; 0 or unset: always on). */
  onOffMs?: number;
  /**
   * Open loop: requests fall due in groups of this many at one instant, a group every
   * burst / ratePerSecond seconds (the rate unchanged; 1 or unset: each on its own). Latency
   * still counts from when each request was due.
   */
  burst?: number;
  /** Runs started at once with the same gate start together: their windows, seconds and slots are the same spans. */
  startGate?: StartGate;
}

/**
 * A common start for runs made side by side (an order load and a read load beside it): each
 * run arrives once all its threads are ready, and all start at one instant once every run has.
 * Bounded: a run that waits longer than `timeoutMs` for the others fails (one of them failed
 * to start, or was never made).
 */
export class StartGate {
  private readonly waiting: { go: (startAt: number) => void; timer: NodeJS.Timeout }[] = [];

  constructor(
    private readonly runs: number,
    private readonly timeoutMs = 60_000,
  ) {
    if (!Number.isInteger(runs) || runs < 1) throw new RangeError(`a start gate is for 1 run or more, got ${runs}`);
  }

  /** Resolves with the common start (performance.now() time) once every run has arrived. */
  arrive(): Promise<number> {
    if (this.waiting.length >= this.runs) return Promise.reject(new Error(`more than ${this.runs} runs arrived at one start gate`));
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`the other runs did not reach the start gate within ${this.timeoutMs} ms (${this.waiting.length} of ${this.runs} arrived)`)), this.timeoutMs);
      this.waiting.push({ go: resolve, timer });
      if (this.waiting.length < this.runs) return;
      const startAt = performance.now() + START_AHEAD_MS;
      for (const { go, timer: wait } of this.waiting) {
        clearTimeout(wait);
        go(startAt);
      }
    });
  }
}

export interface Percentiles {
  count: number;
  p50: number;
  p90: number;
  p99: number;
  p999: number;
  max: number;
}

export interface LoadResult {
  label: string;
  mode: string | null;
  threads: number;
  connections: number;
  ratePerSecond: number;
  seconds: number;
  /** Answers with a 2xx status per second of the measured window (of its on phases, with onOffMs: onPhaseSeconds). */
  okPerSecond: number;
  requestsPerSecond: number;
  /** Client latency in microseconds (open loop: from when each request was due). */
  latencyUs: Percentiles;
  readLatencyUs: Record<string, Percentiles>;
  /** The same reads from when each was sent: what the venue and the network took, without the generator's own wait to send it. */
  readLatencyFromSendUs: Record<string, Percentiles>;
  statuses: Record<string, number>;
  kinds: Record<string, number>;
  transportErrors: number;
  /** The first transport error's message, or null. */
  firstTransportError: string | null;
  queuedBehind: number;
  dropped: number;
  recorded: WorkerReport['recorded'];
  recordedTruncated: boolean;
  /**
   * Order latency per second of the measured window (every thread's requests due in that
   * second, merged), in µs: a stall of the venue shows as a bad second that the whole
   * run's percentiles average away.
   */
  perSecond: { second: number; count: number; p50: number; p99: number; max: number }[];
  /** 2xx answers per slot of SLOT_MS of the measured window (every thread's, by when each request was due). */
  okPerSlot: number[];
  /** Each thread's measured window as epoch milliseconds: one span for all, as the threads start together. */
  threadWindows: { from: number; to: number }[];
  /** Up to checkSample 2xx order answers, whole (LoadOptions.checkSample). */
  sample: AnswerSample[];
}

const WORKER = new URL('./worker.ts', import.meta.url);
/**
 * The worker compiled once per process (runtime/worker-build.ts, as the venue does its own):
 * under tsx each thread compiled it through a loader of its own, 260-300 ms from spawn to
 * ready against 130-165 ms built, for every thread of every run.
 */
let builtWorker: Promise<URL> | null = null;
const workerModule = (): Promise<URL> =>
  (builtWorker ??= buildWorkers([WORKER]).then(
    (built) => built.get(WORKER.href)!,
    (error: unknown) => {
      builtWorker = null; // the next run tries again
      throw error;
    },
  ));
/** The slot of `okPerSlot`, in ms: fine enough to leave out the edges of a read load's on and off phases. */
export const SLOT_MS = 100;
/** How far ahead of the start message the threads' common start lies (a message takes well under this). */
const START_AHEAD_MS = 20;

/** The workers' histogram shape (worker.ts): 1 µs to 60 s, 3 significant digits. */
const newHistogram = () => hdr.build({ useWebAssembly: false, lowestDiscernibleValue: 1, highestTrackableValue: 60_000_000, numberOfSignificantValueDigits: 3 });

export function percentiles(histogram: hdr.Histogram): Percentiles {
  return {
    count: histogram.totalCount,
    p50: histogram.getValueAtPercentile(50),
    p90: histogram.getValueAtPercentile(90),
    p99: histogram.getValueAtPercentile(99),
    p999: histogram.getValueAtPercentile(99.9),
    max: histogram.maxValue,
  };
}

async function venueSession(baseUrl: string): Promise<{ runId: string; venueSessionId: string }> {
  const answer = await fetch(`${baseUrl}/api/v1/venue/session`, { headers: { authorization: 'Bearer dev-token-viewer' } });
  if (answer.status !== 200) return { runId: 'run-local', venueSessionId: 'session-1' }; // the bare ceiling server
  return (await answer.json()) as { runId: string; venueSessionId: string };
}

export interface OnOffThroughput {
  /** 2xx answers per second in the load's on phases, and in its off phases (the slots compared). */
  onPerSecond: number;
  offPerSecond: number;
  /** How much lower the throughput was with the load on, in % of it with the load off (one decimal). */
  dropPercent: number;
  /** Slots compared in each (whole on-and-off cycles only, less each phase's first edgeMs). */
  slotsEach: number;
}

/**
 * The order throughput beside a load that was on and off in turn (onOffMs phases from the
 * window's start, phase 0 on; LoadOptions.onOffMs): the answers per slot of the on phases
 * against those of the off phases next to them, so that a drift of the machine over the run
 * is in both. Each phase's first `edgeMs` is left out: the last reads of an on phase are still
 * answered early in the off phase after it, and the venue takes a moment to turn with them.
 * Only whole cycles count, so on and off have as many slots.
 */
export function onOffThroughput(okPerSlot: number[], slotMs: number, onOffMs: number, edgeMs: number): OnOffThroughput {
  if (!(onOffMs > 0 && onOffMs % slotMs === 0 && edgeMs >= 0 && edgeMs % slotMs === 0 && edgeMs < onOffMs)) {
    throw new RangeError(`on and off phases of whole slots with an edge shorter than a phase, got ${onOffMs} ms phases, ${edgeMs} ms edges, ${slotMs} ms slots`);
  }
  const perPhase = onOffMs / slotMs;
  const edge = edgeMs / slotMs;
  const cycles = Math.floor(okPerSlot.length / (2 * perPhase));
  if (cycles < 1) throw new RangeError(`a window of ${okPerSlot.length} slots holds no whole on-and-off cycle of ${2 * perPhase}`);
  let on = 0;
  let off = 0;
  let slotsEach = 0;
  for (let slot = 0; slot < cycles * 2 * perPhase; slot++) {
    const inPhase = slot % perPhase;
    if (inPhase < edge) continue;
    if (Math.floor(slot / perPhase) % 2 === 0) {
      on += okPerSlot[slot]!;
      slotsEach++;
    } else off += okPerSlot[slot]!;
  }
  if (off === 0) throw new RangeError('no answers in the off phases: nothing to compare the on phases with');
  const seconds = (slotsEach * slotMs) / 1000;
  const onPerSecond = Math.round(on / seconds);
  const offPerSecond = Math.round(off / seconds);
  return { onPerSecond, offPerSecond, dropPercent: Number((((off - on) / off) * 100).toFixed(1)), slotsEach };
}

/**
 * The seconds of a measured window of `seconds` in which an open loop with on and off phases
 * of `onOffMs` each (phase 0 on, from the window's start: worker.ts) was on; the whole window
 * without phases. A run's rates (okPerSecond) are taken over these seconds, as its requests
 * fall due in them only: the suite's reads beside orders were once the answers over half the
 * window, right only for whole cycles (a quick run's 3 s window is on for 2 s of them, and
 * its reads were reported at 667/s when due at 500/s).
 */
export function onPhaseSeconds(seconds: number, onOffMs: number): number {
  if (!(onOffMs > 0)) return seconds;
  const ms = Math.round(seconds * 1000);
  const cycleMs = 2 * onOffMs;
  return (Math.floor(ms / cycleMs) * onOffMs + Math.min(onOffMs, ms % cycleMs)) / 1000;
}

export async function runLoad(options: LoadOptions): Promise<LoadResult> {
  const onOffMs = options.onOffMs ?? 0;
  if (!(Number.isFinite(onOffMs) && onOffMs >= 0) || (onOffMs > 0 && !(options.ratePerSecond > 0))) {
    throw new RangeError(`on and off phases are for an open loop (a rate above 0), of 0 ms or more; got ${onOffMs} ms at ${options.ratePerSecond}/s`);
  }
  const burst = options.burst ?? 1;
  if (!(Number.isInteger(burst) && burst >= 1) || (burst > 1 && !(options.ratePerSecond > 0 && burst <= options.connections))) {
    throw new RangeError(`a burst is a whole number of requests, 1 or more; above 1 only in an open loop, and at most a thread's connections (${options.connections}); got ${burst}`);
  }
  const maxRequests = options.maxRequests ?? 0;
  if (!(Number.isInteger(maxRequests) && maxRequests >= 0) || (maxRequests > 0 && maxRequests < options.threads)) {
    throw new RangeError(`a request bound is a whole number, 0 (none) or at least one per thread (${options.threads}); got ${maxRequests}`);
  }
  const session = options.session ?? (await venueSession(options.baseUrl));
  const entry = await workerModule();
  const completed = new Array<number>(options.threads).fill(0);
  // Each thread's window: 0 not yet open, 1 open, 2 closed (it says so at its deadline and again when its run ends).
  const windows = new Array<number>(options.threads).fill(0);
  let windowOpened = false;
  const windowEdge = (thread: number, open: boolean): void => {
    if (open) {
      if (windows[thread] !== 0) return;
      windows[thread] = 1;
      if (!windowOpened) options.window?.opened();
      windowOpened = true;
    } else if (windows[thread] !== 2) {
      windows[thread] = 2;
      if (windowOpened && windows.every((state) => state === 2)) options.window?.closed();
    }
  };
  // The threads start together once every one is ready (see worker.ts); until then the run has not started.
  let started = Infinity;
  const workers: Worker[] = [];
  let ready = 0;
  let gateFailed: (error: unknown) => void = () => {};
  const gate = new Promise<never>((_, reject) => (gateFailed = reject));
  const threadReady = (): void => {
    if (++ready < options.threads) return;
    const go = (startAt: number) => {
      started = startAt;
      const at = performance.timeOrigin + started;
      for (const worker of workers) worker.postMessage({ type: 'start', at });
    };
    if (options.startGate === undefined) go(performance.now() + START_AHEAD_MS);
    else options.startGate.arrive().then(go, gateFailed);
  };
  const progress = setInterval(() => {
    if (options.quiet || started === Infinity) return;
    const seconds = (performance.now() - started) / 1000;
    const total = completed.reduce((a, b) => a + b, 0);
    process.stderr.write(`\r  ${options.label}: ${seconds.toFixed(0)} s, ${total} answered in the window     `);
  }, 1000);
  const reports = await Promise.race([
    gate,
    Promise.all(
      Array.from({ length: options.threads }, (_, k) => {
        const data: WorkerOptions = {
          role: options.role ?? 'orders',
          // Exactly the bound in all: the first threads take one more where it does not divide.
          maxRequests: Math.floor(maxRequests / options.threads) + (k < maxRequests % options.threads ? 1 : 0),
          baseUrl: options.baseUrl,
          mode: options.mode,
          connections: options.connections,
          warmupMs: options.warmupMs,
          durationMs: options.durationMs,
          ratePerSecond: options.ratePerSecond / options.threads,
          pauseMs: options.pauseMs ?? 0,
          phase: k / options.threads,
          onOffMs,
          burst,
          slotMs: SLOT_MS,
          seed: options.seed * 1000 + k,
          session,
          traders: options.traders ?? TRADERS,
          instruments: options.instruments ?? INSTRUMENTS,
          checkSample: Math.ceil((options.checkSample ?? 0) / options.threads),
          record: options.record,
          maxRecorded: 2_000_000,
          parseAnswers: options.parseAnswers ?? true,
        };
        return new Promise<WorkerReport>((resolve, reject) => {
          const worker = spawnWorker(entry, { ...data }, {}, `load-${data.role}-${k}`); // top -H tells the load's threads apart
          workers.push(worker);
          options.signal?.addEventListener('abort', () => worker.postMessage({ type: 'stop' }), { once: true });
          worker.on('message', (message: { type: 'ready' } | { type: 'progress'; completed: number } | { type: 'window'; open: boolean } | { type: 'done'; report: WorkerReport }) => {
            if (message.type === 'ready') threadReady();
            else if (message.type === 'progress') completed[k] = message.completed;
            else if (message.type === 'window') windowEdge(k, message.open);
            else resolve(message.report);
          });
          worker.once('error', reject);
          worker.once('exit', (code) => (code === 0 ? undefined : reject(new Error(`load worker exited with ${code}`))));
        });
      }),
    ),
  ]).catch(async (error: unknown) => {
    // One thread failed (or the runs beside it never came to the start gate): the others may be waiting for a start that will not come.
    clearInterval(progress);
    await Promise.all(workers.map((worker) => worker.terminate()));
    throw error;
  });
  clearInterval(progress);
  if (!options.quiet) process.stderr.write('\n');

  const merged = newHistogram();
  const reads: Record<string, hdr.Histogram> = {};
  const readsFromSend: Record<string, hdr.Histogram> = {};
  const bySecond: hdr.Histogram[] = [];
  const okPerSlot: number[] = [];
  const statuses: Record<string, number> = {};
  const kinds: Record<string, number> = {};
  const recorded: WorkerReport['recorded'] = { commandIds: [], statuses: [], bodyMd5: [], tradeIds: [], kinds: [] };
  let transportErrors = 0;
  let firstTransportError: string | null = null;
  let queuedBehind = 0;
  let dropped = 0;
  let recordedTruncated = false;
  const sample: AnswerSample[] = [];
  for (const report of reports) {
    for (const kept of report.sample) if (sample.length < (options.checkSample ?? 0)) sample.push(kept);
    merged.add(hdr.decodeFromCompressedBase64(report.histogram, 32, false));
    report.perSecond.forEach((encoded, second) => {
      if (encoded === '') return;
      bySecond[second] ??= newHistogram();
      bySecond[second]!.add(hdr.decodeFromCompressedBase64(encoded, 32, false));
    });
    report.okPerSlot.forEach((n, slot) => (okPerSlot[slot] = (okPerSlot[slot] ?? 0) + n));
    for (const [into, from] of [
      [reads, report.histograms],
      [readsFromSend, report.sendHistograms],
    ] as const) {
      for (const [kind, encoded] of Object.entries(from)) {
        into[kind] ??= newHistogram();
        into[kind]!.add(hdr.decodeFromCompressedBase64(encoded, 32, false));
      }
    }
    for (const [code, n] of Object.entries(report.statuses)) statuses[code] = (statuses[code] ?? 0) + n;
    for (const [kind, n] of Object.entries(report.kinds)) kinds[kind] = (kinds[kind] ?? 0) + n;
    transportErrors += report.transportErrors;
    firstTransportError ??= report.firstTransportError;
    queuedBehind += report.queuedBehind;
    dropped += report.dropped;
    recordedTruncated ||= report.recordedTruncated;
    // A loop, not push(...items): a spread of a few hundred thousand items overflows the stack.
    for (const key of Object.keys(recorded) as (keyof WorkerReport['recorded'])[]) {
      const into = recorded[key] as unknown[];
      for (const item of report.recorded[key]) into.push(item);
    }
  }
  // The measured window's length: the threads' common start to the last one's end (its deadline, or
  // earlier for a run stopped or bounded by its request count: a count-bounded fill of 1,000,000
  // orders reported 3 answers a second over the 600 s it was allowed).
  const windowEnd = Math.max(...reports.map((report) => report.window.to));
  const seconds = Math.round(Math.max(0, windowEnd - reports[0]!.window.from)) / 1000;
  const ok = Object.entries(statuses).reduce((sum, [code, n]) => sum + (code.startsWith('2') ? n : 0), 0);
  const all = Object.values(statuses).reduce((a, b) => a + b, 0);
  const sendingSeconds = onPhaseSeconds(seconds, onOffMs); // requests are due in the on phases only
  return {
    label: options.label,
    mode: options.mode,
    threads: options.threads,
    connections: options.connections,
    ratePerSecond: options.ratePerSecond,
    seconds,
    okPerSecond: sendingSeconds > 0 ? Math.round(ok / sendingSeconds) : 0,
    requestsPerSecond: sendingSeconds > 0 ? Math.round(all / sendingSeconds) : 0,
    latencyUs: percentiles(merged),
    readLatencyUs: Object.fromEntries(Object.entries(reads).map(([kind, h]) => [kind, percentiles(h)])),
    readLatencyFromSendUs: Object.fromEntries(Object.entries(readsFromSend).map(([kind, h]) => [kind, percentiles(h)])),
    statuses,
    kinds,
    transportErrors,
    firstTransportError,
    queuedBehind,
    dropped,
    recorded,
    recordedTruncated,
    threadWindows: reports.map((report) => report.window),
    sample,
    okPerSlot,
    perSecond: bySecond.flatMap((h, second) => (h === undefined ? [] : [{ second, count: h.totalCount, p50: h.getValueAtPercentile(50), p99: h.getValueAtPercentile(99), max: h.maxValue }])),
  };
}

/** The second of the run with the highest p99 (null if no second had a request). */
export function worstSecond(result: LoadResult): LoadResult['perSecond'][number] | null {
  let worst: LoadResult['perSecond'][number] | null = null;
  for (const second of result.perSecond) if (worst === null || second.p99 > worst.p99) worst = second;
  return worst;
}

export function describe(result: LoadResult): string {
  const l = result.latencyUs;
  const ms = (us: number) => (us / 1000).toFixed(2);
  const codes = Object.entries(result.statuses)
    .map(([code, n]) => `${code}:${n}`)
    .join(' ');
  const worst = worstSecond(result);
  const worstText = worst === null || result.perSecond.length < 2 ? '' : `; worst second ${worst.second}: p50 ${ms(worst.p50)} p99 ${ms(worst.p99)} ms`;
  return `${result.label}: ${result.okPerSecond} ok/s (${result.requestsPerSecond} req/s), p50 ${ms(l.p50)} p90 ${ms(l.p90)} p99 ${ms(l.p99)} p99.9 ${ms(l.p999)} max ${ms(l.max)} ms [${codes}]${worstText}${result.transportErrors ? ` transport errors ${result.transportErrors} (first: ${result.firstTransportError})` : ''}`;
}
