import assert from 'node:assert/strict';
import { test } from 'node:test';
import { spawnWorker } from '../../runtime/worker-spawn.ts';
import { createVenueMetrics, GatewayCounters, HISTOGRAM_BOUNDS_SECONDS, MetricsReader, metricsGatewayCount, OUTCOME_REJECTED, PersistenceCounters } from '../../core/venue-metrics.ts';

test('a value on a bucket bound counts in that bucket (le), one above it in the next', () => {
  const buffer = createVenueMetrics(1);
  const counters = new GatewayCounters(buffer, 0);
  counters.duration(2, 3, 0.001);
  counters.duration(2, 3, 0.0010001);
  counters.duration(2, 3, 60); // past the last bound: +Inf only
  const reading = new MetricsReader(buffer).duration(2, 3);
  const at = HISTOGRAM_BOUNDS_SECONDS.indexOf(0.001);
  assert.equal(reading.cumulative[at - 1], 0);
  assert.equal(reading.cumulative[at], 1);
  assert.equal(reading.cumulative[at + 1], 2);
  assert.equal(reading.cumulative[HISTOGRAM_BOUNDS_SECONDS.length - 1], 2);
  assert.equal(reading.cumulative[HISTOGRAM_BOUNDS_SECONDS.length], 3, '+Inf holds all');
  assert.equal(reading.count, 3);
  assert.ok(Math.abs(reading.sum - 60.0020001) < 1e-9);
  assert.equal(new MetricsReader(buffer).duration(2, 2).count, 0, 'another mode is untouched');
});

test('regions do not overlap: each gateway, command route and the persistence thread count apart', () => {
  const buffer = createVenueMetrics(3);
  assert.equal(metricsGatewayCount(buffer), 3);
  const reader = new MetricsReader(buffer);
  new GatewayCounters(buffer, 2).command(3, OUTCOME_REJECTED);
  new PersistenceCounters(buffer).journalCommit(0.5);
  assert.equal(reader.commands(3, OUTCOME_REJECTED), 1);
  assert.equal(reader.commands(2, OUTCOME_REJECTED), 0);
  assert.equal(reader.journalCommits().count, 1);
  for (let route = 0; route < 4; route++) for (let mode = 0; mode < 4; mode++) assert.equal(reader.duration(route, mode).count, 0);
});

test('four threads counting into their own regions at once: the reader sums every count exactly', async () => {
  const gateways = 4;
  const count = 200_000;
  const buffer = createVenueMetrics(gateways);
  const workers = Array.from({ length: gateways }, (_, gateway) => spawnWorker(new URL('./fixtures/metrics-writer.worker.ts', import.meta.url), { buffer, gateway, count }));
  const reader = new MetricsReader(buffer);
  let lastSeen = 0;
  const exited = workers.map((worker) => new Promise<number>((resolve, reject) => (worker.on('error', reject), worker.on('exit', resolve))));
  // Readings while they write never go backwards.
  for (let k = 0; k < 50; k++) {
    const seen = reader.answers(1, 0);
    assert.ok(seen >= lastSeen, `${seen} after ${lastSeen}`);
    lastSeen = seen;
    await new Promise((resolve) => setTimeout(resolve, 1));
  }
  assert.deepEqual(await Promise.all(exited), new Array(gateways).fill(0));
  assert.equal(reader.answers(1, 0), gateways * count);
  assert.equal(reader.commands(0, 0), gateways * count);
  const durations = reader.duration(0, 1);
  assert.equal(durations.count, gateways * count);
  assert.equal(durations.cumulative[HISTOGRAM_BOUNDS_SECONDS.indexOf(0.001)], gateways * count);
  assert.equal(reader.journalCommits().count, count);
});
