// What the market-data stream delivers and what it costs the order path: the real venue,
// one instrument, a closed-loop order load (sync-result: each answer is durable), and 0,
// 10, 100 and 1,000 stream subscribers (trades and depth), each point for a few seconds.
// Reports the order answers/s at each point (0 subscribers before and after: the same
// run's baseline), the messages/s the subscribers received, and the latency from an
// order's answer to its trade message (HDR p50/p99, over every subscriber's copy).
// Each taker order gets a quantity of its own, so its trade names it. Subscribers run in
// a worker thread (bench/stream-subscribers.ts); all of it shares the machine's cores.

import http from 'node:http';
import os from 'node:os';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import { buildWorkers } from '../runtime/worker-build.ts';
import { writeResult } from './lib/results.ts';
import { startBenchVenue } from './load/venue.ts';
import type { SubscriberData, SubscriberReport } from './stream-subscribers.ts';

const INSTRUMENT = '5b000000-0000-4000-8000-000000000001';
const TAKER_QUANTITIES = 20_000;
const MAKER_QUANTITY = 1_000_000_000;
const IN_FLIGHT = 16;
const A = { participantId: 'a1000000-0000-4000-8000-000000000001', accountId: 'a2000000-0000-4000-8000-000000000001' };
const B = { participantId: 'b1000000-0000-4000-8000-000000000001', accountId: 'b2000000-0000-4000-8000-000000000001' };

function orderBody(side: 'BUY' | 'SELL', quantity: number): string {
  return JSON.stringify({
    commandId: crypto.randomUUID(),
    traceId: crypto.randomUUID(),
    causationId: crypto.randomUUID(),
    correlationId: crypto.randomUUID(),
    actorId: 'bench',
    occurredAt: '2026-11-22T00:00:00Z',
    orderId: crypto.randomUUID(),
    instrumentId: INSTRUMENT,
    ...(side === 'BUY' ? A : B),
    side,
    orderType: 'LIMIT',
    quantityUnits: String(quantity),
    limitPrice: '100',
    currency: 'USD',
    timeInForce: 'DAY',
  });
}

function post(agent: http.Agent, url: URL, token: string, body: string): Promise<number> {
  return new Promise((resolve) => {
    const headers = {
      authorization: `Bearer ${token}`,
      'content-type': 'application/json',
      'content-length': String(Buffer.byteLength(body)),
      'x-client-id': 'stream-bench',
      'idempotency-key': crypto.randomUUID(),
      'x-processing-mode': 'sync-result',
    };
    const request = http.request(url, { method: 'POST', agent, headers }, (response) => {
      response.resume();
      response.on('end', () => resolve(response.statusCode ?? 0));
    });
    request.on('error', () => resolve(0));
    request.end(body);
  });
}

/** The order load: IN_FLIGHT lanes of taker sells against resting maker buys at one price. */
class OrderLoad {
  private readonly agent = new http.Agent({ keepAlive: true, maxSockets: IN_FLIGHT + 1 });
  private readonly url: URL;
  private next = 0;
  private taken = 0;
  private makerLeft = 0;
  private topping: Promise<void> | null = null;

  constructor(
    baseUrl: string,
    private readonly answeredAt: Float64Array,
  ) {
    this.url = new URL('/api/v1/orders/submit', baseUrl);
  }

  /** A new maker once the resting ones are mostly taken (one at a time). */
  private topUp(): Promise<void> {
    if (this.makerLeft - this.taken > MAKER_QUANTITY / 2) return Promise.resolve();
    this.topping ??= post(this.agent, this.url, 'dev-token-trader-a', orderBody('BUY', MAKER_QUANTITY)).then((status) => {
      if (status !== 200) throw new Error(`the maker order was answered ${status}`);
      this.makerLeft += MAKER_QUANTITY;
      this.topping = null;
    });
    return this.topping;
  }

  /** Runs for `seconds`; returns the answers per second (200s only) and the errors. */
  async run(seconds: number): Promise<{ answersPerSecond: number; errors: number }> {
    const deadline = performance.now() + seconds * 1000;
    let ok = 0;
    let errors = 0;
    const lane = async () => {
      while (performance.now() < deadline) {
        await this.topUp();
        const k = (this.next++ % TAKER_QUANTITIES) + 1;
        this.answeredAt[k] = 0;
        this.taken += k;
        const status = await post(this.agent, this.url, 'dev-token-trader-b', orderBody('SELL', k));
        this.answeredAt[k] = performance.timeOrigin + performance.now();
        if (status === 200) ok++;
        else errors++;
      }
    };
    const started = performance.now();
    await Promise.all(Array.from({ length: IN_FLIGHT }, lane));
    return { answersPerSecond: Math.round(ok / ((performance.now() - started) / 1000)), errors };
  }

  close(): void {
    this.agent.destroy();
  }
}

function ask<T>(worker: Worker, message: object, answer: string): Promise<T> {
  return new Promise((resolve) => {
    const listen = (reply: { type: string }) => {
      if (reply.type !== answer) return;
      worker.off('message', listen);
      resolve(reply as T);
    };
    worker.on('message', listen);
    worker.postMessage(message);
  });
}

export async function runStreamBench(quick: boolean): Promise<void> {
  const seconds = quick ? 2 : 4;
  const counts = [10, 100, 1000];
  const venue = await startBenchVenue({ GATEWAY_THREADS: '2', MATCHING_SHARDS: '2' });
  const answeredAt = new Float64Array(new SharedArrayBuffer(8 * (TAKER_QUANTITIES + 1)));
  const load = new OrderLoad(venue.baseUrl, answeredAt);
  const data: SubscriberData = {
    url: `${venue.baseUrl.replace(/^http/, 'ws')}/api/v1/market-data/stream`,
    token: 'dev-token-viewer',
    instrumentId: INSTRUMENT,
    answeredAt: answeredAt.buffer as SharedArrayBuffer,
  };
  const entry = new URL('./stream-subscribers.ts', import.meta.url);
  const built = (await buildWorkers([entry])).get(entry.href)!; // compiled as the load generator's workers are: no tsx in a worker
  const worker = new Worker(built, { workerData: data, execArgv: [] });
  try {
    // Warm-up long enough for the threads' code to be optimized: a 1 s one left the first baseline at a third of the last.
    await load.run(quick ? 2 : 15);
    const baselineBefore = await load.run(seconds);
    console.log(`0 subscribers: ${baselineBefore.answersPerSecond} answers/s`);
    const points = [];
    for (const count of counts) {
      const { subscribed } = await ask<{ subscribed: number }>(worker, { type: 'open', count }, 'opened');
      worker.postMessage({ type: 'start' });
      const started = performance.now();
      const orders = await load.run(seconds);
      await new Promise((resolve) => setTimeout(resolve, 200)); // the last messages in flight
      const report = await ask<SubscriberReport>(worker, { type: 'stop' }, 'report');
      const elapsed = (performance.now() - started) / 1000;
      const point = {
        subscribers: subscribed,
        answersPerSecond: orders.answersPerSecond,
        orderErrors: orders.errors,
        messagesPerSecond: Math.round(report.messages / elapsed),
        tradeMessages: report.trades,
        tradesPerSubscriberPerSecond: Math.round(report.trades / subscribed / elapsed),
        latencyUs: report.latencyUs,
        tradeMessagesBeforeAnswer: report.beforeAnswer,
        closes: report.closes,
      };
      console.log(
        `${subscribed} subscribers: ${point.answersPerSecond} answers/s, ${point.messagesPerSecond} messages/s delivered, ` +
          `answer->trade message p50 ${(report.latencyUs.p50 / 1000).toFixed(2)} ms p99 ${(report.latencyUs.p99 / 1000).toFixed(2)} ms ` +
          `(${report.beforeAnswer} before the answer, closes ${JSON.stringify(report.closes)})`,
      );
      points.push(point);
      await ask(worker, { type: 'close' }, 'closed');
    }
    const baselineAfter = await load.run(seconds);
    console.log(`0 subscribers again: ${baselineAfter.answersPerSecond} answers/s`);
    writeResult('stream', {
      machine: { cpus: os.availableParallelism(), node: process.version },
      note:
        `one instrument; ${IN_FLIGHT} order lanes in flight (sync-result takers against a resting maker: every order trades); ` +
        "each subscriber takes trades and depth; latency from the order answer to each subscriber's trade message, microseconds; " +
        'the venue, the load and the subscribers share the machine',
      seconds,
      answersPerSecondWithoutSubscribers: [baselineBefore.answersPerSecond, baselineAfter.answersPerSecond],
      points,
    });
  } finally {
    load.close();
    await worker.terminate();
    await venue.stop();
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) await runStreamBench(process.argv.includes('--quick'));
