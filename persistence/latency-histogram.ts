// A bounded histogram of latencies in microseconds: 16 linear sub-buckets per power of
// two (every value lands within 1/16 = 6.25% of its bucket's bounds), from 1 µs to
// about 18 hours. Fixed memory whatever it records; percentiles read the upper bound
// of the bucket holding them (never optimistic).

import type { LatencySummary } from '../core/storage-protocol.ts';

const SUB_BUCKETS = 16;
const POWERS = 36;


export class LatencyHistogram {
  private readonly counts = new Float64Array(POWERS * SUB_BUCKETS);
  private total = 0;
  private maximum = 0;

  record(micros: number): void {
    const value = micros < 1 ? 1 : Math.round(micros);
    const power = Math.min(POWERS - 1, Math.floor(Math.log2(value)));
    const base = 2 ** power;
    const sub = Math.min(SUB_BUCKETS - 1, Math.floor(((value - base) / base) * SUB_BUCKETS));
    this.counts[power * SUB_BUCKETS + sub]!++;
    this.total++;
    if (value > this.maximum) this.maximum = value;
  }

  get count(): number {
    return this.total;
  }

  /** The upper bound (µs) of the bucket holding the p-th percentile (0 < p ≤ 100); 0 when empty. */
  percentile(p: number): number {
    if (this.total === 0) return 0;
    const rank = Math.ceil((p / 100) * this.total);
    let seen = 0;
    for (let index = 0; index < this.counts.length; index++) {
      seen += this.counts[index]!;
      if (seen >= rank) return index === this.counts.length - 1 ? this.maximum : Math.min(this.upperBound(index), this.maximum);
    }
    return this.maximum;
  }

  /**
   * The non-empty buckets, smallest first, as [upper bound in µs, count]: at most
   * 576 pairs. Two of these taken at different times give the distribution of what
   * was recorded in between (bucketsBetween), which cumulative percentiles cannot.
   */
  buckets(): [number, number][] {
    const out: [number, number][] = [];
    for (let index = 0; index < this.counts.length; index++) {
      if (this.counts[index]! > 0) out.push([this.upperBound(index), this.counts[index]!]);
    }
    return out;
  }

  /**
   * The largest integer in bucket `index`. The last bucket also holds everything
   * above it (from about 18 hours), so percentile() reports the maximum there.
   */
  private upperBound(index: number): number {
    const power = Math.floor(index / SUB_BUCKETS);
    const base = 2 ** power;
    return Math.ceil(base + ((index % SUB_BUCKETS) + 1) * (base / SUB_BUCKETS)) - 1;
  }

  summary(): LatencySummary {
    return { count: this.total, p50: this.percentile(50), p90: this.percentile(90), p99: this.percentile(99), max: this.maximum };
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
