import assert from 'node:assert/strict';
import { test } from 'node:test';
import { bucketsBetween, LatencyHistogram, percentileOfBuckets } from '../../persistence/latency-histogram.ts';

test('percentiles land within 6.25% above the exact value, never below', () => {
  const histogram = new LatencyHistogram();
  const values: number[] = [];
  for (let k = 1; k <= 10_000; k++) values.push(((k * 7919) % 100_000) + 1);
  for (const value of values) histogram.record(value);
  const sorted = [...values].sort((a, b) => a - b);
  for (const p of [50, 90, 99]) {
    const exact = sorted[Math.ceil((p / 100) * sorted.length) - 1]!;
    const reported = histogram.percentile(p);
    assert.ok(reported >= exact && reported <= exact * 1.0625 + 1, `p${p}: ${reported} vs ${exact}`);
  }
  assert.equal(histogram.summary().max, Math.max(...values));
  assert.equal(histogram.count, values.length);
});

test('an empty histogram reports zeros; tiny and huge values stay in range', () => {
  const histogram = new LatencyHistogram();
  assert.deepEqual(histogram.summary(), { count: 0, p50: 0, p90: 0, p99: 0, max: 0 });
  histogram.record(0);
  histogram.record(1e12);
  assert.equal(histogram.percentile(50), 1);
  assert.equal(histogram.percentile(100), 1e12);
});

test('two bucket readings give the percentiles of what was recorded in between, not since the start', () => {
  const histogram = new LatencyHistogram();
  // Before: 10,000 fast values (100..199 µs). In between: 1,000 slow ones (20,000..59,960 µs).
  for (let k = 0; k < 10_000; k++) histogram.record(100 + (k % 100));
  const before = histogram.buckets();
  const window: number[] = [];
  for (let k = 0; k < 1_000; k++) window.push(20_000 + ((k * 7919) % 1_000) * 40);
  for (const value of window) histogram.record(value);
  const after = histogram.buckets();
  const between = bucketsBetween(before, after);
  assert.equal(between.reduce((sum, [, count]) => sum + count, 0), 1_000);
  const sorted = [...window].sort((a, b) => a - b);
  for (const p of [50, 90, 99]) {
    const exact = sorted[Math.ceil((p / 100) * sorted.length) - 1]!;
    const reported = percentileOfBuckets(between, p);
    assert.ok(reported >= exact && reported <= exact * 1.0625 + 1, `p${p}: ${reported} vs ${exact}`);
  }
  // The cumulative p50 is still a fast value: only the difference isolates the window.
  assert.ok(histogram.percentile(50) < 200, `cumulative p50 ${histogram.percentile(50)}`);
  // The whole reading agrees with the histogram's own percentiles.
  for (const p of [50, 90, 99]) assert.equal(percentileOfBuckets(after, p), histogram.percentile(p));
  assert.deepEqual(percentileOfBuckets([], 99), 0);
});

test('bucket readings refuse to be subtracted the wrong way round', () => {
  const histogram = new LatencyHistogram();
  histogram.record(10);
  const before = histogram.buckets();
  histogram.record(10);
  histogram.record(5_000);
  const after = histogram.buckets();
  assert.deepEqual(bucketsBetween(before, after), [[10, 1], [5_119, 1]]);
  assert.throws(() => bucketsBetween(after, before), /fell from 2 to 1|only in the earlier reading/);
  assert.throws(() => bucketsBetween([[7, 1]], after), /only in the earlier reading/);
});
