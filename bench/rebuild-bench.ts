// The operator's lifecycle rebuild (POST /admin/v1/projections/order-lifecycle/rebuild)
// timed on the real venue after N orders (about one trade per two orders): the route's
// wall time, three rebuilds, their median. Uses only the venue's HTTP API, so the same
// file times another checkout of the venue (a before/after comparison: decision 0045).
//
//   node --import tsx bench/rebuild-bench.ts [orders=30000]

import http from 'node:http';
import { crossingOrderBody } from './lib/order-body.ts';
import { startBenchVenue } from './load/venue.ts';

const ORDERS = Number(process.argv[2] ?? 30_000);
const TOKEN = 'dev-token-trader-a';
const OPERATOR = 'dev-token-operator';
const INSTRUMENTS = Array.from({ length: 8 }, (_, k) => `7c000000-0000-4000-8000-00000000000${k}`);

function request(baseUrl: string, method: string, path: string, token: string, agent: http.Agent, body?: string): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const headers: Record<string, string> = { authorization: `Bearer ${token}` };
    if (body !== undefined)
      Object.assign(headers, { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)), 'x-client-id': 'bench', 'idempotency-key': crypto.randomUUID() });
    const req = http.request(new URL(path, baseUrl), { method, agent, headers }, (response) => {
      let text = '';
      response.setEncoding('utf8');
      response.on('data', (chunk: string) => (text += chunk));
      response.on('end', () => resolve({ status: response.statusCode ?? 0, text }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

const venue = await startBenchVenue({});
const agent = new http.Agent({ keepAlive: true, maxSockets: 64 });
try {
  let next = 0;
  const lane = async () => {
    while (next < ORDERS) {
      const answer = await request(venue.baseUrl, 'POST', '/api/v1/orders/submit', TOKEN, agent, crossingOrderBody(next, INSTRUMENTS, `r-${next++}`));
      if (answer.status !== 200 && answer.status !== 202) throw new Error(`submit: ${answer.status} ${answer.text}`);
    }
  };
  await Promise.all(Array.from({ length: 64 }, lane));
  const times: number[] = [];
  let rows = 0;
  for (let k = 0; k < 3; k++) {
    const started = performance.now();
    const answer = await request(venue.baseUrl, 'POST', '/admin/v1/projections/order-lifecycle/rebuild', OPERATOR, agent);
    times.push(Math.round(performance.now() - started));
    if (answer.status !== 200) throw new Error(`rebuild: ${answer.status} ${answer.text}`);
    rows = (JSON.parse(answer.text) as { rowsRebuilt: number }).rowsRebuilt;
    if (rows !== ORDERS) throw new Error(`rebuilt ${rows} rows, not ${ORDERS}`);
  }
  const median = [...times].sort((a, b) => a - b)[1]!;
  console.log(JSON.stringify({ orders: ORDERS, rowsRebuilt: rows, rebuildMs: times, medianMs: median }));
} finally {
  agent.destroy();
  await venue.stop();
}
