// Latencies in microseconds in an HdrHistogram (3 significant digits, 1 µs to 60 s: fixed
// memory, percentiles never optimistic), with the exact maximum kept beside it.

import { build, type Histogram, type JsHistogram } from 'hdr-histogram-js';

import type { LatencySummary } from '../core/storage-protocol.ts';

/** 60 s: anything slower is counted at 60 s (fixed memory: no auto-resize); the maximum stays exact. */
const HIGHEST_US = 60_000_000;

// The pure-JS build: the WebAssembly one needs set-up before use and explicit freeing, for no
// gain at the rate these are recorded.
function histogram(significantDigits: 1 | 3): JsHistogram {
  return build({
    useWebAssembly: false,
    autoResize: false,
    bitBucketSize: 64,
    lowestDiscernibleValue: 1,
    highestTrackableValue: HIGHEST_US,
    numberOfSignificantValueDigits: significantDigits,
  }) as Histogram as JsHistogram;
}

export class LatencyHistogram {
  private readonly histogram = histogram(3);
  private readonly topValue = this.histogram.highestEquivalentValue(HIGHEST_US);
  private maximum = 0;

  record(micros: number): void {
    const value = micros < 1 ? 1 : Math.round(micros);
    this.histogram.recordValue(Math.min(value, HIGHEST_US));
    if (value > this.maximum) this.maximum = value;
  }

  get count(): number {
    return this.histogram.totalCount;
  }

  /** The highest value (µs) of the bucket holding the p-th percentile (0 < p ≤ 100), at most the maximum; 0 when empty. */
  percentile(p: number): number {
    if (this.histogram.totalCount === 0) return 0;
    const value = this.histogram.getValueAtPercentile(p);
    return value >= this.topValue ? this.maximum : Math.min(value, this.maximum);
  }

  /**
   * The recorded values on a fixed grid of 16 linear buckets per power of two (every
   * value within 1/16 = 6.25% of its bucket's bounds), smallest first, as [upper bound
   * in µs, count]: at most 368 pairs, so the status stays small. Two of these taken at
   * different times give the distribution of what was recorded in between
   * (bucketsBetween), which cumulative percentiles cannot.
   */
  buckets(): [number, number][] {
    const coarse = histogram(1);
    const fine = this.histogram.recordedValuesIterator;
    fine.reset();
    while (fine.hasNext()) {
      const step = fine.next();
      coarse.recordValueWithCount(step.valueIteratedTo, step.countAtValueIteratedTo);
    }
    const out: [number, number][] = [];
    const grid = coarse.recordedValuesIterator;
    grid.reset();
    while (grid.hasNext()) {
      const step = grid.next();
      out.push([step.valueIteratedTo, step.countAtValueIteratedTo]);
    }
    return out;
  }

  summary(): LatencySummary {
    return { count: this.count, p50: this.percentile(50), p90: this.percentile(90), p99: this.percentile(99), max: this.maximum };
  }
}

/**
 * What was recorded between two buckets() readings of the same histogram (`before`
 * taken first): each bucket's count in `after` less its count in `before`. Throws
 * when a count fell (not the same histogram, or the readings swapped).
 */
export function bucketsBetween(before: [number, number][], after: [number, number][]): [number, number][] {
  const earlier = new Map(before);
  const out: [number, number][] = [];
  for (const [upper, count] of after) {
    const difference = count - (earlier.get(upper) ?? 0);
    if (difference < 0) throw new RangeError(`bucket ${upper} µs fell from ${earlier.get(upper)} to ${count}: not a later reading of the same histogram`);
    earlier.delete(upper);
    if (difference > 0) out.push([upper, difference]);
  }
  if (earlier.size > 0) throw new RangeError(`bucket ${earlier.keys().next().value} µs is only in the earlier reading: not a later reading of the same histogram`);
  return out;
}

/** The upper bound (µs) of the bucket holding the p-th percentile of buckets() pairs (0 < p ≤ 100); 0 when empty. */
export function percentileOfBuckets(buckets: [number, number][], p: number): number {
  let total = 0;
  for (const [, count] of buckets) total += count;
  if (total === 0) return 0;
  const rank = Math.ceil((p / 100) * total);
  let seen = 0;
  for (const [upper, count] of buckets) {
    seen += count;
    if (seen >= rank) return upper;
  }
  return buckets.at(-1)![0];
}
