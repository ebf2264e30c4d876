// What counting one order command costs its gateway thread (gateway/http-metrics.ts): the
// answer by route and status, the command by outcome and its duration (one clock read at
// the answer) into the histogram, as UwsReply does them, against the same loop without
// the counting (both read the arrival clock, which the intake reads anyway). Alternates
// the two loops and takes medians; checks the counts it made.
//
//   npx tsx bench/metrics-recording-bench.ts [--rounds 7] [--commands 2000000]
//
// Result: bench/results/metrics-recording.json: ns per command counted, per round and median.

import { fileURLToPath } from 'node:url';
import { createVenueMetrics, MetricsReader, OUTCOME_ACCEPTED } from '../core/venue-metrics.ts';
import { HttpMetrics } from '../gateway/http-metrics.ts';
import { writeResult } from './lib/results.ts';

const argument = (name: string, fallback: number): number => {
  const at = process.argv.indexOf(`--${name}`);
  return at < 0 ? fallback : Number(process.argv[at + 1]);
};
const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

/** Work a command does anyway, so neither loop is empty: a sum over its fields. */
function work(k: number): number {
  return (k * 2654435761) >>> 16;
}

export function runMetricsRecordingBench(rounds: number, commands: number): Record<string, unknown> {
  const buffer = createVenueMetrics(2);
  const metrics = new HttpMetrics(buffer, 1);
  const routes = ['/api/v1/orders/submit', '/api/v1/orders/cancel', '/api/v1/orders/modify', '/api/v1/orders/cancel-by-client-order'].map((path) => metrics.routeOf(path));
  let sink = 0;
  const bare = (): number => {
    const started = performance.now();
    for (let k = 0; k < commands; k++) sink += work(k) + (performance.timeOrigin + performance.now()) * 1000;
    return ((performance.now() - started) * 1e6) / commands;
  };
  const counted = (): number => {
    const started = performance.now();
    for (let k = 0; k < commands; k++) {
      const arrivedUs = (performance.timeOrigin + performance.now()) * 1000; // the intake's own clock read, which the counting shares
      sink += work(k);
      const command = k & 3;
      metrics.answered(routes[command]!, 200);
      metrics.command(command, k & 1, 200, OUTCOME_ACCEPTED, arrivedUs);
    }
    return ((performance.now() - started) * 1e6) / commands;
  };
  bare();
  counted(); // JIT, both
  const perRound: { bareNs: number; countedNs: number; addedNs: number }[] = [];
  for (let round = 0; round < rounds; round++) {
    const bareNs = bare();
    const countedNs = counted();
    perRound.push({ bareNs: Math.round(bareNs * 10) / 10, countedNs: Math.round(countedNs * 10) / 10, addedNs: Math.round((countedNs - bareNs) * 10) / 10 });
  }
  const reader = new MetricsReader(buffer);
  const expected = commands * (rounds + 1);
  const answered = routes.reduce((total, route) => total + reader.answers(route, 0), 0) + routes.reduce((total, route) => total + reader.answers(route, 1), 0);
  const timed = [0, 1, 2, 3].reduce((total, route) => total + reader.duration(route, 0).count + reader.duration(route, 1).count, 0);
  if (answered !== expected || timed !== expected) throw new Error(`counted ${answered} answers and timed ${timed} commands, expected ${expected} of each`);
  const result = { rounds, commands, addedNsPerCommand: median(perRound.map((r) => r.addedNs)), perRound, verified: true, sink: sink % 10 };
  console.log(JSON.stringify({ addedNsPerCommand: result.addedNsPerCommand, perRound }));
  return result;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  writeResult('metrics-recording', runMetricsRecordingBench(argument('rounds', 7), argument('commands', 2_000_000)));
}
