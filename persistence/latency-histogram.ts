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
      if (seen >= rank) {
        if (index === this.counts.length - 1) return this.maximum; // the overflow bucket
        const power = Math.floor(index / SUB_BUCKETS);
        const base = 2 ** power;
        const upper = Math.ceil(base + ((index % SUB_BUCKETS) + 1) * (base / SUB_BUCKETS)) - 1; // the largest integer in the bucket
        return Math.min(upper, this.maximum);
      }
    }
    return this.maximum;
  }

  summary(): LatencySummary {
    return { count: this.total, p50: this.percentile(50), p90: this.percentile(90), p99: this.percentile(99), max: this.maximum };
  }
}
