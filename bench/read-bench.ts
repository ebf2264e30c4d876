// Reads beside matching: the real venue (fresh embedded PostgreSQL), an order load
// alone, then the same order load with a read load beside it (snapshot, depth and
// tape reads in a loop), each for a bounded time. Reports order commands/s in both
// phases (the drop should stay within 10%), and p50/p99 of each read under load.
// Both loads come from this process over keep-alive connections, on the same 2 cores.

import http from 'node:http';
import os from 'node:os';
import { fileURLToPath } from 'node:url';
import type { LatencySummary } from '../core/storage-protocol.ts';
import { LatencyHistogram } from '../persistence/latency-histogram.ts';
import { crossingOrderBody } from './lib/order-body.ts';
import { writeResult } from './lib/results.ts';
import { startBenchVenue } from './load/venue.ts';

const INSTRUMENTS = Array.from({ length: 4 }, (_, k) => `ab000000-0000-4000-8000-00000000000${k}`);

function call(agent: http.Agent, url: URL, method: string, token: string, body?: string, extra: Record<string, string> = {}): Promise<number> {
  return new Promise((resolve) => {
    const request = http.request(url, { method, agent, headers: { authorization: `Bearer ${token}`, ...extra } }, (response) => {
      response.resume();
      response.on('end', () => resolve(response.statusCode ?? 0));
    });
    request.on('error', () => resolve(0));
    request.end(body);
  });
}

async function orderLoad(baseUrl: string, seconds: number, inFlight: number): Promise<number> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: inFlight });
  const url = new URL('/api/v1/orders/submit', baseUrl);
  const deadline = performance.now() + seconds * 1000;
  let next = 0;
  let ok = 0;
  const lane = async () => {
    while (performance.now() < deadline) {
      const body = crossingOrderBody(next++, INSTRUMENTS);
      const status = await call(agent, url, 'POST', 'dev-token-trader-a', body, {
        'content-type': 'application/json',
        'content-length': String(Buffer.byteLength(body)),
        'x-client-id': 'bench',
        'idempotency-key': crypto.randomUUID(),
      });
      if (status === 200) ok++;
    }
  };
  const started = performance.now();
  await Promise.all(Array.from({ length: inFlight }, lane));
  agent.destroy();
  return Math.round(ok / ((performance.now() - started) / 1000));
}

async function readLoad(baseUrl: string, seconds: number, readers: number): Promise<Record<string, LatencySummary & { errors: number }>> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: readers });
  const kinds = {
    snapshot: (k: number) => `/api/v1/market-data/snapshots/${INSTRUMENTS[k % INSTRUMENTS.length]}`,
    depth: (k: number) => `/api/v1/market-data/depth/${INSTRUMENTS[k % INSTRUMENTS.length]}`,
    tape: (k: number) => `/api/v1/market-data/trades/${INSTRUMENTS[k % INSTRUMENTS.length]}?limit=50`,
  };
  const histograms = Object.fromEntries(Object.keys(kinds).map((kind) => [kind, { histogram: new LatencyHistogram(), errors: 0 }]));
  const deadline = performance.now() + seconds * 1000;
  let k = 0;
  const lane = async () => {
    while (performance.now() < deadline) {
      for (const [kind, pathOf] of Object.entries(kinds)) {
        const at = performance.now();
        const status = await call(agent, new URL(pathOf(k++), baseUrl), 'GET', 'dev-token-viewer');
        const entry = histograms[kind]!;
        if (status === 200) entry.histogram.record((performance.now() - at) * 1000);
        else entry.errors++;
      }
    }
  };
  await Promise.all(Array.from({ length: readers }, lane));
  agent.destroy();
  return Object.fromEntries(Object.entries(histograms).map(([kind, { histogram, errors }]) => [kind, { ...histogram.summary(), errors }]));
}

export async function runReadBench(quick: boolean): Promise<void> {
  const seconds = quick ? 3 : 8;
  const inFlight = 64;
  const readers = 4;
  const venue = await startBenchVenue({ GATEWAY_THREADS: '2', MATCHING_SHARDS: '2' });
  try {
    await orderLoad(venue.baseUrl, 1, 16); // warm-up, and books to read
    await call(new http.Agent(), new URL('/api/v1/market-data/snapshots', venue.baseUrl), 'POST', 'dev-token-viewer');
    const alone = await orderLoad(venue.baseUrl, seconds, inFlight);
    const [beside, reads] = await Promise.all([orderLoad(venue.baseUrl, seconds, inFlight), readLoad(venue.baseUrl, seconds, readers)]);
    const again = await orderLoad(venue.baseUrl, seconds, inFlight);
    const baseline = Math.round((alone + again) / 2);
    const dropPercent = Number((((baseline - beside) / baseline) * 100).toFixed(1));
    const readsPerSecond = Math.round(Object.values(reads).reduce((sum, r) => sum + r.count, 0) / seconds);
    console.log(`orders alone ${alone} and ${again} cmd/s, beside ${readsPerSecond} reads/s: ${beside} cmd/s (${dropPercent}% lower)`);
    for (const [kind, r] of Object.entries(reads)) console.log(`  ${kind.padEnd(9)} p50 ${(r.p50 / 1000).toFixed(2)} ms  p99 ${(r.p99 / 1000).toFixed(2)} ms  (${r.count} reads, ${r.errors} errors)`);
    writeResult('reads', {
      machine: { cpus: os.availableParallelism(), node: process.version },
      note: `orders: ${inFlight} in flight (sync-result); reads: ${readers} loops of snapshot, depth and tape reads; latencies in microseconds`,
      seconds,
      ordersAlonePerSecond: [alone, again],
      ordersBesideReadsPerSecond: beside,
      dropPercent,
      readsPerSecond,
      reads,
    });
  } finally {
    await venue.stop();
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) await runReadBench(process.argv.includes('--quick'));
