import assert from 'node:assert/strict';
import { test } from 'node:test';
import { bucketsBetween, LatencyHistogram, percentileOfBuckets } from '../../persistence/latency-histogram.ts';

const exactPercentile = (sorted: number[], p: number) => sorted[Math.ceil((p / 100) * sorted.length) - 1]!;

test('below 2,048 µs every value has its own bucket: percentiles are exact', () => {
  const histogram = new LatencyHistogram();
  for (let value = 1_000; value >= 1; value--) histogram.record(value);
  assert.deepEqual(histogram.summary(), { count: 1_000, p50: 500, p90: 900, p99: 990, max: 1_000 });
});

test('above that, percentiles read the top of a bucket at most 0.1% wide, never below the exact value', () => {
  const histogram = new LatencyHistogram();
  for (let value = 1; value <= 10_000; value++) histogram.record(value);
  // 5,000 lies in [5,000, 5,003] (buckets 4 µs wide from 4,096), 9,000 in [9,000, 9,007] and 9,900 in [9,896, 9,903] (8 µs wide from 8,192).
  assert.deepEqual(histogram.summary(), { count: 10_000, p50: 5_003, p90: 9_007, p99: 9_903, max: 10_000 });

  const spread = new LatencyHistogram();
  const values: number[] = [];
  for (let k = 1; k <= 10_000; k++) values.push(((k * 7919) % 5_000_000) + 1);
  for (const value of values) spread.record(value);
  const sorted = [...values].sort((a, b) => a - b);
  for (const p of [50, 90, 99]) {
    const exact = exactPercentile(sorted, p);
    const reported = spread.percentile(p);
    assert.ok(reported >= exact && reported <= exact * 1.001, `p${p}: ${reported} vs ${exact}`);
  }
  assert.equal(spread.summary().max, Math.max(...values));
});

test('an empty histogram reports zeros; values round to whole µs; tiny and huge values stay in range', () => {
  const histogram = new LatencyHistogram();
  assert.deepEqual(histogram.summary(), { count: 0, p50: 0, p90: 0, p99: 0, max: 0 });
  histogram.record(0);
  histogram.record(0.4);
  histogram.record(1_499.6);
  assert.deepEqual(histogram.summary(), { count: 3, p50: 1, p90: 1_500, p99: 1_500, max: 1_500 });
  // Beyond 60 s a value counts in the top bucket, and the percentiles there report the exact maximum.
  histogram.record(1e12);
  assert.equal(histogram.percentile(50), 1);
  assert.equal(histogram.percentile(100), 1e12);
  assert.deepEqual(histogram.summary(), { count: 4, p50: 1, p90: 1e12, p99: 1e12, max: 1e12 });
});

test('bucket readings stay within the status schema and hold every recorded value', () => {
  const histogram = new LatencyHistogram();
  for (let value = 1; value <= 70_000_000; value = Math.ceil(value * 1.001)) histogram.record(value);
  const buckets = histogram.buckets();
  assert.ok(buckets.length <= 576, `${buckets.length} buckets`);
  assert.equal(
    buckets.reduce((sum, [, count]) => sum + count, 0),
    histogram.count,
  );
  for (let k = 1; k < buckets.length; k++) assert.ok(buckets[k]![0] > buckets[k - 1]![0], 'smallest first');
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
  assert.equal(
    between.reduce((sum, [, count]) => sum + count, 0),
    1_000,
  );
  const sorted = [...window].sort((a, b) => a - b);
  for (const p of [50, 90, 99]) {
    const exact = exactPercentile(sorted, p);
    const reported = percentileOfBuckets(between, p);
    assert.ok(reported >= exact && reported <= exact * 1.0625 + 1, `p${p}: ${reported} vs ${exact}`);
  }
  // The cumulative p50 is still a fast value: only the difference isolates the window.
  assert.ok(histogram.percentile(50) < 200, `cumulative p50 ${histogram.percentile(50)}`);
  // The whole reading's percentiles sit at most one 6.25% bucket above the histogram's own.
  for (const p of [50, 90, 99]) {
    const own = histogram.percentile(p);
    const read = percentileOfBuckets(after, p);
    assert.ok(read >= own && read <= own * 1.0625 + 1, `p${p}: ${read} vs ${own}`);
  }
  assert.deepEqual(percentileOfBuckets([], 99), 0);
});

test('bucket readings refuse to be subtracted the wrong way round', () => {
  const histogram = new LatencyHistogram();
  histogram.record(10);
  const before = histogram.buckets();
  histogram.record(10);
  histogram.record(5_000);
  const after = histogram.buckets();
  assert.deepEqual(bucketsBetween(before, after), [
    [10, 1],
    [5_119, 1],
  ]);
  assert.throws(() => bucketsBetween(after, before), /fell from 2 to 1|only in the earlier reading/);
  assert.throws(() => bucketsBetween([[7, 1]], after), /only in the earlier reading/);
});
