// Settlement's heavy work beside the reads: the real venue (fresh embedded PostgreSQL), a
// scenario run of TRADES trades written to runtime.trades, then its materialization and
// its first reads (proof: the whole replay and the trail's checksum; obligations; facts),
// each timed. Meanwhile two probes read in a loop, one request in flight each: the
// projector's status (answered by the read thread, no I/O: how long its event loop is
// held) and depth (answered by a gateway from shared memory: the CPU the work takes from
// the other threads). Reports each step's latency and the probes' p50/p99/max while the
// steps ran and while idle. Usage: tsx bench/settlement-bench.ts [--trades N] [--quick];
// `--compare label=run.json,... label=...` writes the medians of saved runs of two builds.

import { readFileSync } from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { writeResult } from './lib/results.ts';
import { startBenchVenue } from './load/venue.ts';

const OPERATOR = 'dev-token-operator';
const VIEWER = 'dev-token-viewer';
const INSTRUMENT = '11111111-1111-4111-8111-111111111111';

interface Sample {
  at: number;
  ms: number;
  status: number;
}

function call(agent: http.Agent, url: URL, method: string, token: string, body?: string): Promise<{ status: number; bytes: number }> {
  return new Promise((resolve) => {
    const headers: Record<string, string> = { authorization: `Bearer ${token}` };
    if (body !== undefined) Object.assign(headers, { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)) });
    const request = http.request(url, { method, agent, headers }, (response) => {
      let bytes = 0;
      response.on('data', (chunk: Buffer) => (bytes += chunk.length));
      response.on('end', () => resolve({ status: response.statusCode ?? 0, bytes }));
    });
    request.on('error', () => resolve({ status: 0, bytes: 0 }));
    request.end(body);
  });
}

/** `count` trades of run `runId` between a few participants (as test/persistence/settlement-reads.test.ts writes them). */
async function writeTrades(databaseUrl: string, runId: string, count: number): Promise<void> {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    await client.query(
      `INSERT INTO runtime.trades (trade_id, shard_id, stream_sequence, command_id, execution_id, run_id, venue_session_id, instrument_id, buy_order_id, sell_order_id,
         buy_participant_id, buy_account_id, sell_participant_id, sell_account_id, aggressor_side, quantity_units, price_nanos, currency, occurred_at)
       SELECT gen_random_uuid(), 0, 1000000000 + g, gen_random_uuid(), gen_random_uuid(), $1, 's', '10000000-0000-4000-8000-000000000001',
              gen_random_uuid(), gen_random_uuid(), md5('p' || g % 3)::uuid, md5('p' || g % 3)::uuid, md5('q' || g % 2)::uuid, md5('q' || g % 2)::uuid, 'BUY',
              1 + g % 7, 100000000000 + (g % 50) * 1000000, 'USD', timestamptz '2026-11-23 10:00:00+00' + g * interval '1 ms'
         FROM generate_series(1, $2::int) g`,
      [runId, count],
    );
  } finally {
    await client.end();
  }
}

/** Reads `path` in a loop, one at a time, until stopped. */
function probe(baseUrl: string, path: string): { samples: Sample[]; stop: () => Promise<void> } {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const url = new URL(path, baseUrl);
  const samples: Sample[] = [];
  let running = true;
  const loop = (async () => {
    while (running) {
      const at = performance.now();
      const { status } = await call(agent, url, 'GET', VIEWER);
      samples.push({ at, ms: performance.now() - at, status });
      if (samples.length > 1_000_000) samples.splice(0, 500_000); // bounded
      await new Promise((resolve) => setTimeout(resolve, 2));
    }
  })();
  return {
    samples,
    stop: async () => {
      running = false;
      await loop;
      agent.destroy();
    },
  };
}

function summary(samples: readonly Sample[], from: number, to: number) {
  const inside = samples.filter((s) => s.at >= from && s.at < to);
  const ms = inside.map((s) => s.ms).sort((a, b) => a - b);
  const at = (q: number) => (ms.length === 0 ? null : Number(ms[Math.min(ms.length - 1, Math.floor(q * ms.length))]!.toFixed(2)));
  return { count: ms.length, errors: inside.filter((s) => s.status !== 200).length, p50: at(0.5), p99: at(0.99), max: ms.length === 0 ? null : Number(ms[ms.length - 1]!.toFixed(2)) };
}

export async function runSettlementBench(trades: number): Promise<Record<string, unknown>> {
  const venue = await startBenchVenue({ GATEWAY_THREADS: '1', MATCHING_SHARDS: '1' });
  const run = `bench-settlement-${trades}`;
  try {
    await writeTrades(venue.databaseUrl, run, trades);
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    const probes = { projectorStatus: probe(venue.baseUrl, '/internal/market-data/projector/status'), depth: probe(venue.baseUrl, `/api/v1/market-data/depth/${INSTRUMENT}`) };
    await new Promise((resolve) => setTimeout(resolve, 1000));
    const idle = { from: performance.now() - 800, to: performance.now() };
    const steps: Record<string, { ms: number; status: number; bytes: number; from: number; to: number }> = {};
    const step = async (name: string, method: string, path: string, body?: unknown) => {
      const from = performance.now();
      const answer = await call(agent, new URL(path, venue.baseUrl), method, OPERATOR, body === undefined ? undefined : JSON.stringify(body));
      const to = performance.now();
      steps[name] = { ms: Math.round(to - from), status: answer.status, bytes: answer.bytes, from, to };
      console.log(`${name.padEnd(18)} ${String(Math.round(to - from)).padStart(6)} ms  ${answer.status}  ${answer.bytes} bytes`);
    };
    await step('materialize', 'POST', '/admin/v1/settlement/obligations/materialize', { scenarioRunId: run });
    await step('proofFirst', 'GET', `/api/v1/settlement/proof/${run}`);
    await step('proofAgain', 'GET', `/api/v1/settlement/proof/${run}`);
    await step('obligations', 'GET', `/api/v1/settlement/obligations/${run}`);
    await step('facts', 'GET', `/api/v1/settlement/facts/${run}`);
    await Promise.all(Object.values(probes).map((p) => p.stop()));
    agent.destroy();
    const heavy = { from: steps.materialize!.from, to: steps.facts!.to };
    const probesOut = Object.fromEntries(
      Object.entries(probes).map(([name, p]) => [
        name,
        {
          idle: summary(p.samples, idle.from, idle.to),
          duringAll: summary(p.samples, heavy.from, heavy.to),
          ...Object.fromEntries(Object.entries(steps).map(([s, w]) => [s, summary(p.samples, w.from, w.to)])),
        },
      ]),
    );
    for (const [name, p] of Object.entries(probesOut))
      console.log(`${name}: idle p99 ${p.idle.p99} ms; during the steps p50 ${p.duringAll.p50} p99 ${p.duringAll.p99} max ${p.duringAll.max} ms (${p.duringAll.count} reads)`);
    return {
      trades,
      steps: Object.fromEntries(Object.entries(steps).map(([name, s]) => [name, { ms: s.ms, status: s.status, bytes: s.bytes }])),
      probes: probesOut,
    };
  } finally {
    await venue.stop();
  }
}

type RunResult = Awaited<ReturnType<typeof runSettlementBench>> & { steps: Record<string, { ms: number }>; probes: Record<string, Record<string, { p99: number | null; max: number | null }>> };
const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

/** Medians over runs (result files of this bench): each step's ms, each probe window's p99 and max. */
function medians(runs: RunResult[]) {
  const first = runs[0]!;
  return {
    stepsMs: Object.fromEntries(Object.keys(first.steps).map((step) => [step, median(runs.map((r) => r.steps[step]!.ms))])),
    probes: Object.fromEntries(
      Object.entries(first.probes).map(([probe, windows]) => [
        probe,
        Object.fromEntries(Object.keys(windows).map((w) => [w, { p99: median(runs.map((r) => r.probes[probe]![w]!.p99 ?? 0)), max: median(runs.map((r) => r.probes[probe]![w]!.max ?? 0)) }])),
      ]),
    ),
  };
}

if (process.argv[1] === fileURLToPath(import.meta.url) && process.argv[2] === '--compare') {
  // `--compare before=a.json,b.json,c.json after=d.json,e.json,f.json`: runs of two builds, alternated, summarized as medians.
  const groups = Object.fromEntries(
    process.argv.slice(3).map((arg) => {
      const [label, files] = arg.split('=') as [string, string];
      const runs = files.split(',').map((file) => JSON.parse(readFileSync(file, 'utf8')) as RunResult);
      return [label, { runs: runs.length, trades: runs[0]!.trades, median: medians(runs), each: runs.map((r) => ({ steps: r.steps, probes: r.probes })) }];
    }),
  );
  writeResult('settlement', {
    machine: { cpus: os.availableParallelism(), node: process.version },
    note: 'settlement steps on one run of 20,000 trades (profile ops-realistic-v1: one fact per trade), runs of each build alternated; probes: one request in flight each, latencies in ms; medians of the runs',
    ...groups,
  });
} else if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const at = process.argv.indexOf('--trades');
  const trades = at > 0 ? Number(process.argv[at + 1]) : process.argv.includes('--quick') ? 2_000 : 20_000;
  const result = await runSettlementBench(trades);
  writeResult('settlement', {
    machine: { cpus: os.availableParallelism(), node: process.version },
    note: 'settlement steps on one run (profile ops-realistic-v1: one fact per trade); probes: one request in flight each, latencies in ms',
    ...result,
  });
}
