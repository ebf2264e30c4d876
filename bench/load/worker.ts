// One load-generator thread: keep-alive connections (http-connection.ts, one request
// per connection at a time), the order flow of flow.ts, closed-loop (each connection sends
// its next request when the previous one is answered) or open-loop (requests are due at
// a fixed rate; latency counts from when a request was due, so a slow venue cannot hide
// its queueing: no coordinated omission). Every latency in an HDR histogram (µs); every
// status code counted; the commands answered kept for the verification at the end.
// A reads worker instead sends snapshot, depth and tape reads, and /healthz (the floor),
// in turn: closed-loop, or open-loop at a fixed rate (a read load that does not grow or
// shrink with the venue's own read latency).

import { hash } from 'node:crypto';
import { parentPort, workerData } from 'node:worker_threads';
import * as hdr from 'hdr-histogram-js';
import { HttpConnection, type HttpAnswer } from './http-connection.ts';
import { SeededRandom } from '../lib/seeded-random.ts';
import { OrderFlow, type FlowRequest, type Trader } from './flow.ts';

export interface WorkerOptions {
  /** orders: the flow; reads: snapshot, depth, tape; fill: resting buys only, up to maxRequests. */
  role: 'orders' | 'reads' | 'fill';
  /** A bound on the requests this worker sends (0: only the time bounds it). */
  maxRequests: number;
  baseUrl: string;
  /** X-Processing-Mode, or null for the venue's default. */
  mode: string | null;
  connections: number;
  warmupMs: number;
  durationMs: number;
  /** Open-loop requests per second of this worker; 0: closed-loop. */
  ratePerSecond: number;
  /**
   * Closed loop (orders and reads): each connection waits this long after an answer before
   * its next request (0: at once). With one connection, one request at a time onto a venue
   * doing nothing else: the floor of its latencies on this machine.
   */
  pauseMs: number;
  /**
   * Open loop: where in its interval this worker's schedule lies (k / threads for thread k),
   * so that the threads, started together, take turns instead of sending at the same instants.
   */
  phase: number;
  seed: number;
  session: { runId: string; venueSessionId: string };
  /** The principals the orders act as, and the instruments the orders and reads go round. */
  traders: readonly Trader[];
  instruments: readonly string[];
  /** Keep a uniform sample of up to this many 2xx order answers, whole, for a check against the venue's reads (0: none). */
  checkSample: number;
  /**
   * Open loop only: the load is on for this long, then off for as long, in turn, from the
   * start of the measured window (0: always on). The orders beside it are counted in slots
   * (okPerSlot), so the throughput with reads and without is compared second by second.
   */
  onOffMs: number;
  /** Open loop: requests due together in groups of this many, a group every burst intervals (1: each on its own). */
  burst: number;
  /** The slot of okPerSlot, in ms. */
  slotMs: number;
  /** Keep each answered command for the verification (bounded by maxRecorded). */
  record: boolean;
  maxRecorded: number;
  /** Whether the answers are venue answers to parse (false against the bare ceiling server). */
  parseAnswers: boolean;
}

export interface WorkerReport {
  histogram: string;
  histograms: Record<string, string>;
  /** The same reads' latencies counted from when each was sent (the wait of a read due while the thread or its connection was busy left out). */
  sendHistograms: Record<string, string>;
  statuses: Record<string, number>;
  kinds: Record<string, number>;
  transportErrors: number;
  /** The first transport error's message (null if none), so that a failed run says what failed. */
  firstTransportError: string | null;
  completed: number;
  /** Open loop: requests that were due while every connection was busy (they waited; their latency includes it). */
  queuedBehind: number;
  /** Open loop: due requests given up because more than 100,000 were waiting (the venue fell far behind). */
  dropped: number;
  recorded: { commandIds: string[]; statuses: number[]; bodyMd5: (string | null)[]; tradeIds: string[]; kinds: string[] };
  recordedTruncated: boolean;
  /** Order latency per second of the measured window, by when each request was due (encoded histograms; "" for a second without one). */
  perSecond: string[];
  /** 2xx answers per slot (slotMs) of the measured window, by when each request was due (the first PER_SECOND_MAX seconds). */
  okPerSlot: number[];
  /** This thread's measured window as epoch milliseconds (its end where a stop cut it short). */
  window: { from: number; to: number };
  /** Up to checkSample 2xx order answers of the window, a uniform sample (reservoir) of them. */
  sample: AnswerSample[];
}

/** One order command as sent and as answered, for a check against the venue's own reads. */
export interface AnswerSample {
  commandId: string;
  token: string;
  path: string;
  orderId: string;
  status: number;
  body: string;
}

/** Seconds of the measured window that get a histogram of their own (a longer run's later seconds are in the totals only). */
export const PER_SECOND_MAX = 3600;

const options = workerData as WorkerOptions;
const newHistogram = () => hdr.build({ useWebAssembly: false, lowestDiscernibleValue: 1, highestTrackableValue: 60_000_000, numberOfSignificantValueDigits: 3 });
const histogram = newHistogram();
/** The same latencies by the second of the window they were due in: stalls show here, averaged away in the totals. */
const perSecond: (hdr.Histogram | undefined)[] = new Array(Math.min(PER_SECOND_MAX, Math.ceil(options.durationMs / 1000))).fill(undefined);
const okPerSlot: number[] = new Array(Math.min(Math.ceil((PER_SECOND_MAX * 1000) / options.slotMs), Math.ceil(options.durationMs / options.slotMs))).fill(0);
const readHistograms: Record<string, hdr.Histogram> = {};
const sendHistograms: Record<string, hdr.Histogram> = {};
const statuses: Record<string, number> = {};
const kinds: Record<string, number> = {};
const recorded: WorkerReport['recorded'] = { commandIds: [], statuses: [], bodyMd5: [], tradeIds: [], kinds: [] };
let recordedTruncated = false;
let transportErrors = 0;
let firstTransportError: string | null = null;
const transportError = (error: unknown) => {
  transportErrors++;
  firstTransportError ??= error instanceof Error ? error.message : String(error);
};
let completed = 0;
let queuedBehind = 0;
let dropped = 0;

const target = new URL(options.baseUrl);
const connections = Array.from({ length: options.connections }, () => new HttpConnection(target.hostname, Number(target.port || 80)));
/** Open loop: the connections with no request in flight (the others are in flight). */
const idle = [...connections];
const modeHeader = options.mode === null ? '' : `X-Processing-Mode: ${options.mode}\r\n`;
const flow = new OrderFlow(options.seed, options.session, options.traders, options.instruments);
const sample: AnswerSample[] = [];
/** 2xx answers seen by the reservoir; its own generator, so that sampling leaves the flow's sequence as it is. */
let sampleSeen = 0;
const sampleRandom = new SeededRandom(options.seed ^ 0x5a5a5a5a);
let deadline = Infinity;
// 'stop': the run ends now (its window too), as a crash test stops its load before the kill.
// 'start': every thread of a run starts at the one instant the parent gives once all are
// ready (an epoch time: each thread has its own performance clock), so their warm-ups,
// measured windows and per-second histograms are the same wall-clock spans. Started on
// their own, a slow thread start (100 ms on a busy machine) made the union of the windows
// hold answers no window counted, and second k of one thread a different second than another's.
const startAt = await new Promise<number>((resolve) => {
  parentPort!.on('message', (message: { type: 'stop' } | { type: 'start'; at: number }) => {
    if (message.type === 'stop') deadline = Math.min(deadline, performance.now());
    else if (message.type === 'start') resolve(message.at);
  });
  parentPort!.postMessage({ type: 'ready' });
});
parentPort!.unref(); // the listener alone does not keep the thread: it exits once its run is over
// The instant is a little ahead of the message; one that came late is kept all the same
// (this thread catches up within its warm-up), so every thread's window is the same span.
const started = startAt - performance.timeOrigin;
const measureFrom = started + options.warmupMs;
deadline = Math.min(deadline, measureFrom + options.durationMs);

const progress = setInterval(() => parentPort!.postMessage({ type: 'progress', completed }), 1000);
// The measured window's edges, for whoever samples something over exactly that window (cpu-use.ts).
const windowOpens = setTimeout(() => parentPort!.postMessage({ type: 'window', open: true }), Math.max(0, measureFrom - performance.now()));
const windowCloses = setTimeout(() => parentPort!.postMessage({ type: 'window', open: false }), Math.max(0, deadline - performance.now()));

async function send(connection: HttpConnection, request: FlowRequest, dueAt: number): Promise<void> {
  let status = 0;
  let text = '';
  try {
    const headers = `Authorization: Bearer ${request.token}\r\nContent-Type: application/json\r\nX-Client-Id: load\r\nIdempotency-Key: ${request.commandId}\r\n${modeHeader}`;
    const answer: HttpAnswer = await connection.request('POST', request.path, headers, request.body);
    status = answer.status;
    text = answer.body;
  } catch (error) {
    transportError(error);
  }
  const done = performance.now();
  if (dueAt >= measureFrom && dueAt < deadline) {
    completed++;
    const latencyUs = Math.max(1, Math.round((done - dueAt) * 1000));
    histogram.recordValue(latencyUs);
    const second = Math.floor((dueAt - measureFrom) / 1000);
    if (second < perSecond.length) (perSecond[second] ??= newHistogram()).recordValue(latencyUs);
    const slot = Math.floor((dueAt - measureFrom) / options.slotMs);
    if (status >= 200 && status < 300 && slot < okPerSlot.length) okPerSlot[slot]!++;
    statuses[status] = (statuses[status] ?? 0) + 1;
    kinds[request.kind] = (kinds[request.kind] ?? 0) + 1;
    if (options.checkSample > 0 && status >= 200 && status < 300) keepSample(request, status, text);
  }
  let trades: string[] = [];
  if (status === 200 && options.parseAnswers) {
    const body = JSON.parse(text) as { outcome: { accepted?: unknown }; executions: { orderId: string; quantity: { units: string } }[]; trades: { tradeId: string }[] };
    trades = body.trades.map((t) => t.tradeId);
    if (body.outcome.accepted !== undefined) {
      const filled = body.executions.filter((e) => e.orderId === request.orderId).reduce((sum, e) => sum + Number(e.quantity.units), 0);
      flow.answered(request, filled);
    } else flow.failed(request);
  } else if (status === 202) flow.answered(request, null);
  else flow.failed(request);
  if (options.record && status !== 0) {
    if (recorded.commandIds.length < options.maxRecorded) {
      recorded.commandIds.push(request.commandId);
      recorded.statuses.push(status);
      recorded.kinds.push(request.kind);
      recorded.bodyMd5.push(status === 200 ? hash('md5', text, 'hex') : null);
      for (const trade of trades) recorded.tradeIds.push(trade);
    } else recordedTruncated = true;
  }
}

/** Reservoir sampling (Algorithm R): each 2xx answer of the window is kept with the same chance, in bounded memory. */
function keepSample(request: FlowRequest, status: number, body: string): void {
  const at = sampleSeen < options.checkSample ? sampleSeen : sampleRandom.below(sampleSeen + 1);
  sampleSeen++;
  if (at >= options.checkSample) return;
  sample[at] = { commandId: request.commandId, token: request.token, path: request.path, orderId: request.orderId, status, body };
}

const pause = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

async function closedLoop(): Promise<void> {
  let sent = 0;
  const lane = async (connection: HttpConnection) => {
    while (performance.now() < deadline && (options.maxRequests === 0 || sent < options.maxRequests)) {
      sent++;
      const at = performance.now();
      await send(connection, options.role === 'fill' ? flow.fill() : flow.next(), at);
      if (options.pauseMs > 0) await pause(options.pauseMs);
    }
  };
  await Promise.all(connections.map(lane));
}

/**
 * Whether the open loop's load is on at `dueAt`: always without onOffMs; with it, in the even
 * phases counted from the measured window's start (phase 0 on; the warm-up's last phase off).
 */
function loadOn(dueAt: number): boolean {
  return options.onOffMs === 0 || Math.floor((dueAt - measureFrom) / options.onOffMs) % 2 === 0;
}

/** The start of the on phase after the off phase `at` lies in (onOffMs > 0). */
function nextOnAt(at: number): number {
  return measureFrom + (Math.floor((at - measureFrom) / options.onOffMs) + 1) * options.onOffMs;
}

/** Open loop: a request due every interval (`sendNext` sends it on an idle connection), queued while none is idle; none while the load is off (onOffMs). */
async function openLoop(sendNext: (connection: HttpConnection, dueAt: number) => Promise<void>): Promise<void> {
  const intervalMs = 1000 / options.ratePerSecond;
  const first = started + options.phase * intervalMs;
  const burst = options.burst;
  /** When request n falls due: its group's instant. */
  const dueOf = (n: number): number => first + (n - (n % burst)) * intervalMs;
  let sent = 0;
  const queue: number[] = []; // due times waiting for a free connection
  await new Promise<void>((resolve) => {
    const pump = () => {
      while (queue.length > 0 && idle.length > 0) {
        const dueAt = queue.shift()!;
        const connection = idle.pop()!;
        void sendNext(connection, dueAt).finally(() => {
          idle.push(connection);
          pump();
        });
      }
    };
    const counted = () => options.maxRequests > 0 && sent >= options.maxRequests;
    const tick = () => {
      const now = performance.now();
      const end = Math.min(now, deadline);
      while (dueOf(sent) <= end && !counted()) {
        const dueAt = dueOf(sent);
        sent++;
        if (!loadOn(dueAt)) continue;
        if (idle.length === 0) queuedBehind += dueAt >= measureFrom ? 1 : 0;
        queue.push(dueAt);
      }
      if (queue.length > 100_000) dropped += queue.splice(0, queue.length - 100_000).length; // bounded: the oldest are given up, and counted
      pump();
      // While the load is off the thread sleeps until its next on phase, so that an off phase
      // carries none of the load's work (its wake-ups included).
      // Grouped, the thread sleeps until the next group is due (a tick each ms would be most of its wake-ups).
      if (now < deadline && !counted()) setTimeout(tick, loadOn(now) ? (burst === 1 ? 1 : Math.max(1, Math.min(dueOf(sent), deadline) - now)) : Math.max(1, Math.min(nextOnAt(now), deadline) - now));
      else {
        const wait = () => (idle.length === connections.length && queue.length === 0 ? resolve() : setTimeout(wait, 5));
        wait();
      }
    };
    tick();
  });
}

const READ_PATHS: Record<string, (instrument: string) => string> = {
  snapshot: (instrument) => `/api/v1/market-data/snapshots/${instrument}`,
  depth: (instrument) => `/api/v1/market-data/depth/${instrument}`,
  tape: (instrument) => `/api/v1/market-data/trades/${instrument}?limit=50`,
  // No work at all: the floor any read's latency has under the same load (scheduling on these cores).
  healthz: () => '/healthz',
};
const READ_KINDS = Object.keys(READ_PATHS);
let readsSent = 0;

/**
 * The next read: the kinds in turn (snapshot, depth, tape, /healthz), each kind going round
 * the instruments. Its latency counts from `dueAt` (open loop: when it was due).
 */
async function sendRead(connection: HttpConnection, dueAt: number): Promise<void> {
  const k = readsSent++;
  const kind = READ_KINDS[k % READ_KINDS.length]!;
  const instrument = options.instruments[Math.floor(k / READ_KINDS.length) % options.instruments.length]!;
  let status = 0;
  const sentAt = performance.now();
  try {
    status = (await connection.request('GET', READ_PATHS[kind]!(instrument), 'Authorization: Bearer dev-token-viewer\r\n', null)).status;
  } catch (error) {
    transportError(error);
  }
  if (dueAt >= measureFrom && dueAt < deadline) {
    completed++;
    statuses[status] = (statuses[status] ?? 0) + 1;
    kinds[kind] = (kinds[kind] ?? 0) + 1;
    if (status === 200) {
      const answeredAt = performance.now();
      readHistograms[kind]!.recordValue(Math.max(1, Math.round((answeredAt - dueAt) * 1000)));
      sendHistograms[kind]!.recordValue(Math.max(1, Math.round((answeredAt - sentAt) * 1000)));
    }
  }
}

/** Closed-loop reads: each connection sends its next read when the last is answered (and its pause is over). */
async function readLoop(): Promise<void> {
  const lane = async (connection: HttpConnection) => {
    while (performance.now() < deadline) {
      await sendRead(connection, performance.now());
      if (options.pauseMs > 0) await pause(options.pauseMs);
    }
  };
  await Promise.all(connections.map(lane));
}

// Nothing is sent before the common start, so a run without a warm-up counts from its first request.
// A timer may fire up to a millisecond early (it is kept in whole ms): waited out again until the
// start has come, as a request sent before it would fall outside the window and go uncounted.
while (started > performance.now()) await new Promise((resolve) => setTimeout(resolve, Math.max(1, started - performance.now())));
if (options.role === 'reads') {
  for (const kind of READ_KINDS) {
    readHistograms[kind] = newHistogram();
    sendHistograms[kind] = newHistogram();
  }
}
const sendOrder = (connection: HttpConnection, dueAt: number) => send(connection, flow.next(), dueAt);
if (options.role === 'reads') await (options.ratePerSecond > 0 ? openLoop(sendRead) : readLoop());
else await (options.ratePerSecond > 0 ? openLoop(sendOrder) : closedLoop());
const endedAt = performance.now();
clearInterval(progress);
// A run stopped early (or bounded by its request count) ends its window here.
clearTimeout(windowOpens);
clearTimeout(windowCloses);
parentPort!.postMessage({ type: 'window', open: false });
for (const connection of connections) connection.close();
const report: WorkerReport = {
  histogram: hdr.encodeIntoCompressedBase64(histogram),
  perSecond: perSecond.map((h) => (h === undefined ? '' : hdr.encodeIntoCompressedBase64(h))),
  okPerSlot,
  histograms: Object.fromEntries(Object.entries(readHistograms).map(([kind, h]) => [kind, hdr.encodeIntoCompressedBase64(h)])),
  sendHistograms: Object.fromEntries(Object.entries(sendHistograms).map(([kind, h]) => [kind, hdr.encodeIntoCompressedBase64(h)])),
  statuses,
  kinds,
  transportErrors,
  firstTransportError,
  completed,
  queuedBehind,
  dropped,
  recorded,
  recordedTruncated,
  // Its end: the deadline, or where the run ended before it (stopped, or bounded by its request count).
  window: { from: performance.timeOrigin + measureFrom, to: performance.timeOrigin + Math.min(deadline, endedAt) },
  sample,
};
parentPort!.postMessage({ type: 'done', report });
