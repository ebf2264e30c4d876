// The venue's metrics counters, in one shared block so that the gateway thread serving
// GET /metrics reads every thread's figures without asking any of them. Each region has
// one writer, the thread it belongs to, which counts with plain stores on its own words
// (no lock, no message, no read-modify-write shared with another thread); readers take a
// snapshot at scrape time. Float64 words keep counts exact to 2^53, and an aligned
// 8-byte store does not tear on the machines V8 runs on (x86-64, arm64).
//
//   region g (gateway g), Float64 words:
//     [0, ROUTES_MAX × STATUS_SLOTS)                 HTTP answers by route × status slot
//     COMMANDS_AT + route × OUTCOMES + outcome       order-command answers
//     DURATIONS_AT + (route × MODES + mode) × H      arrival-to-answer histograms
//   region `gateways` (the persistence thread): a histogram of journal commit durations
//
//   a histogram (H = HISTOGRAM_WORDS words): one count per bound of HISTOGRAM_BOUNDS_SECONDS
//   (values at or below it and above the bound before), one above the last, the sum of
//   the values in seconds. Counts are per bucket, not cumulative (one store); the count
//   is their total, so a reading's +Inf bucket always equals its count.
//
// Every region starts on its own 64-byte line, so two writers never share one.

import { PROCESSING_MODES } from './config.ts';

/** Upper bounds (seconds) of the latency histograms' buckets: 50 µs to 10 s. */
export const HISTOGRAM_BOUNDS_SECONDS = [0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10] as const;
const BUCKETS = HISTOGRAM_BOUNDS_SECONDS.length + 1;
export const HISTOGRAM_WORDS = BUCKETS + 1;
const SUM_WORD = BUCKETS;

/** Routes a gateway can count (every registered path pattern, plus "unmatched"). */
export const ROUTES_MAX = 64;
/** HTTP statuses a gateway can tell apart (the error catalog's and 200/202; the last slot: any other). */
export const STATUS_SLOTS = 24;
/** The order routes, by their route code (gateway/status-view.ts ROUTE_*). */
export const COMMAND_ROUTES = ['submit', 'cancel', 'modify', 'cancel-by-client-order'] as const;
export const MODES = PROCESSING_MODES;
/**
 * What an order command's answer was: taken (200 with an accepted outcome, or 202),
 * rejected by the engine (200 with outcome.rejected), the original's answer again,
 * refused before recording (400, 403, 413), an idempotency conflict (409), or not
 * taken for now (503).
 */
export const OUTCOMES = ['accepted', 'rejected', 'replayed', 'invalid', 'conflict', 'unavailable'] as const;
export const OUTCOME_ACCEPTED = 0;
export const OUTCOME_REJECTED = 1;
export const OUTCOME_REPLAYED = 2;
export const OUTCOME_INVALID = 3;
export const OUTCOME_CONFLICT = 4;
export const OUTCOME_UNAVAILABLE = 5;

const COMMANDS_AT = ROUTES_MAX * STATUS_SLOTS;
const DURATIONS_AT = COMMANDS_AT + COMMAND_ROUTES.length * OUTCOMES.length;
const GATEWAY_WORDS = DURATIONS_AT + COMMAND_ROUTES.length * MODES.length * HISTOGRAM_WORDS;
const LINE_WORDS = 8;
const roundUp = (words: number) => Math.ceil(words / LINE_WORDS) * LINE_WORDS;
const GATEWAY_REGION_WORDS = roundUp(GATEWAY_WORDS);
const PERSISTENCE_REGION_WORDS = roundUp(HISTOGRAM_WORDS);

export function createVenueMetrics(gateways: number): SharedArrayBuffer {
  return new SharedArrayBuffer((gateways * GATEWAY_REGION_WORDS + PERSISTENCE_REGION_WORDS) * 8);
}

function gatewayRegion(buffer: SharedArrayBuffer, gateway: number): Float64Array {
  return new Float64Array(buffer, gateway * GATEWAY_REGION_WORDS * 8, GATEWAY_REGION_WORDS);
}

/** The persistence thread's region (after the gateways' ones). */
function persistenceRegion(buffer: SharedArrayBuffer): Float64Array {
  const gateways = (buffer.byteLength / 8 - PERSISTENCE_REGION_WORDS) / GATEWAY_REGION_WORDS;
  return new Float64Array(buffer, gateways * GATEWAY_REGION_WORDS * 8, PERSISTENCE_REGION_WORDS);
}

export function metricsGatewayCount(buffer: SharedArrayBuffer): number {
  return (buffer.byteLength / 8 - PERSISTENCE_REGION_WORDS) / GATEWAY_REGION_WORDS;
}

/** Adds one value (seconds) to the histogram at `at` of `words`: two stores, no allocation. */
function recordInto(words: Float64Array, at: number, seconds: number): void {
  let bucket = 0;
  while (bucket < HISTOGRAM_BOUNDS_SECONDS.length && seconds > HISTOGRAM_BOUNDS_SECONDS[bucket]!) bucket++;
  words[at + bucket]!++;
  words[at + SUM_WORD]! += seconds;
}

/** A snapshot of one histogram: cumulative counts per bound (the last, +Inf, equals count), the sum. */
export interface HistogramReading {
  cumulative: number[];
  sum: number;
  count: number;
}

function readHistogram(words: Float64Array, at: number): HistogramReading {
  const cumulative: number[] = [];
  let total = 0;
  for (let bucket = 0; bucket < BUCKETS; bucket++) {
    total += words[at + bucket]!;
    cumulative.push(total);
  }
  return { cumulative, sum: words[at + SUM_WORD]!, count: total };
}

/** A gateway thread's writer of its own region. */
export class GatewayCounters {
  private readonly words: Float64Array;

  constructor(buffer: SharedArrayBuffer, gateway: number) {
    this.words = gatewayRegion(buffer, gateway);
  }

  answer(route: number, statusSlot: number): void {
    this.words[route * STATUS_SLOTS + statusSlot]!++;
  }

  command(route: number, outcome: number): void {
    this.words[COMMANDS_AT + route * OUTCOMES.length + outcome]!++;
  }

  duration(route: number, mode: number, seconds: number): void {
    recordInto(this.words, DURATIONS_AT + (route * MODES.length + mode) * HISTOGRAM_WORDS, seconds);
  }
}

/** The persistence thread's writer of its own region. */
export class PersistenceCounters {
  private readonly words: Float64Array;

  constructor(buffer: SharedArrayBuffer) {
    this.words = persistenceRegion(buffer);
  }

  journalCommit(seconds: number): void {
    recordInto(this.words, 0, seconds);
  }
}

/** Reads every region (any thread, at scrape time). */
export class MetricsReader {
  private readonly gateways: Float64Array[];
  private readonly persistence: Float64Array;

  constructor(buffer: SharedArrayBuffer) {
    this.gateways = Array.from({ length: metricsGatewayCount(buffer) }, (_, gateway) => gatewayRegion(buffer, gateway));
    this.persistence = persistenceRegion(buffer);
  }

  /** HTTP answers of a route and status slot, summed over the gateways. */
  answers(route: number, statusSlot: number): number {
    return this.sum(route * STATUS_SLOTS + statusSlot);
  }

  commands(route: number, outcome: number): number {
    return this.sum(COMMANDS_AT + route * OUTCOMES.length + outcome);
  }

  /** A route and mode's arrival-to-answer histogram, summed over the gateways. */
  duration(route: number, mode: number): HistogramReading {
    const at = DURATIONS_AT + (route * MODES.length + mode) * HISTOGRAM_WORDS;
    const readings = this.gateways.map((words) => readHistogram(words, at));
    return {
      cumulative: readings[0]!.cumulative.map((_, bucket) => readings.reduce((total, reading) => total + reading.cumulative[bucket]!, 0)),
      sum: readings.reduce((total, reading) => total + reading.sum, 0),
      count: readings.reduce((total, reading) => total + reading.count, 0),
    };
  }

  journalCommits(): HistogramReading {
    return readHistogram(this.persistence, 0);
  }

  private sum(word: number): number {
    let total = 0;
    for (const words of this.gateways) total += words[word]!;
    return total;
  }
}
