import assert from 'node:assert/strict';
import { test } from 'node:test';
import { LatencyHistogram } from '../../persistence/latency-histogram.ts';

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
