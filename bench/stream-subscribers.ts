// The market-data stream benchmark's subscribers (bench/stream-bench.ts), in a worker
// thread of their own so that their parsing does not share the order load's event loop.
// Each socket subscribes to the trades and depth of one instrument; a trade's quantity
// names the order that made it (the load gives each taker its own), whose answer time the
// load wrote to shared memory: the latency is the trade message's arrival minus it.

import { parentPort, workerData } from 'node:worker_threads';
import * as hdr from 'hdr-histogram-js';
import WebSocket from 'ws';

export interface SubscriberData {
  url: string;
  token: string;
  instrumentId: string;
  /** Per taker quantity k: the absolute time (ms) its answer arrived; 0 while it is in flight. */
  answeredAt: SharedArrayBuffer;
}

export interface SubscriberReport {
  type: 'report';
  messages: number;
  trades: number;
  /** Trade messages that arrived before the load had the order's answer (not in the histogram). */
  beforeAnswer: number;
  latencyUs: { count: number; p50: number; p99: number; max: number };
  closes: Record<string, number>;
}

const data = workerData as SubscriberData;
const answeredAt = new Float64Array(data.answeredAt);
const sockets: WebSocket[] = [];
const closes: Record<string, number> = {};
const QUANTITY = '"quantity":{"units":"';
let histogram = hdr.build({ useWebAssembly: false, lowestDiscernibleValue: 1, highestTrackableValue: 60_000_000, numberOfSignificantValueDigits: 3 });
let messages = 0;
let trades = 0;
let beforeAnswer = 0;

function onMessage(raw: WebSocket.RawData): void {
  messages++;
  const text = raw.toString();
  if (!text.startsWith('{"type":"trade"')) return;
  trades++;
  const at = text.indexOf(QUANTITY) + QUANTITY.length;
  const k = Number(text.slice(at, text.indexOf('"', at)));
  const answered = answeredAt[k] ?? 0;
  if (answered === 0) {
    beforeAnswer++;
    return;
  }
  const delayUs = Math.round((performance.timeOrigin + performance.now() - answered) * 1000);
  if (delayUs < 0) beforeAnswer++;
  else histogram.recordValue(Math.max(1, delayUs));
}

async function open(count: number): Promise<number> {
  let subscribed = 0;
  const one = () =>
    new Promise<void>((resolve, reject) => {
      const socket = new WebSocket(data.url, { headers: { authorization: `Bearer ${data.token}` }, perMessageDeflate: false });
      let answers = 0;
      socket.on('error', reject);
      socket.on('close', (code) => (closes[code] = (closes[code] ?? 0) + 1));
      socket.on('open', () => {
        socket.send(JSON.stringify({ op: 'subscribe', channel: 'trades', instrumentId: data.instrumentId }));
        socket.send(JSON.stringify({ op: 'subscribe', channel: 'depth', instrumentId: data.instrumentId }));
      });
      socket.on('message', (raw) => {
        if (answers < 2 && raw.toString().startsWith('{"type":"subscribed"') && ++answers === 2) {
          subscribed++;
          socket.on('message', onMessage);
          resolve();
        }
      });
      sockets.push(socket);
    });
  for (let opened = 0; opened < count; opened += 50) await Promise.all(Array.from({ length: Math.min(50, count - opened) }, one));
  return subscribed;
}

async function handle(message: { type: string; count?: number }): Promise<void> {
  if (message.type === 'open') parentPort!.postMessage({ type: 'opened', subscribed: await open(message.count!) });
  if (message.type === 'start') {
    histogram = hdr.build({ useWebAssembly: false, lowestDiscernibleValue: 1, highestTrackableValue: 60_000_000, numberOfSignificantValueDigits: 3 });
    messages = trades = beforeAnswer = 0;
    for (const key of Object.keys(closes)) delete closes[key];
  }
  if (message.type === 'stop') {
    const report: SubscriberReport = {
      type: 'report',
      messages,
      trades,
      beforeAnswer,
      latencyUs: { count: histogram.totalCount, p50: histogram.getValueAtPercentile(50), p99: histogram.getValueAtPercentile(99), max: histogram.maxValue },
      closes: { ...closes },
    };
    parentPort!.postMessage(report);
  }
  if (message.type === 'close') {
    await Promise.all(
      sockets.splice(0).map((socket) =>
        socket.readyState === WebSocket.CLOSED
          ? Promise.resolve()
          : new Promise((resolve) => {
              socket.once('close', resolve);
              socket.close();
            }),
      ),
    );
    parentPort!.postMessage({ type: 'closed' });
  }
}

// A failed step is reported to the bench (which then stops), never left as an unhandled rejection.
parentPort!.on('message', (message: { type: string; count?: number }) => {
  handle(message).catch((error: unknown) => parentPort!.postMessage({ type: 'error', message: String(error) }));
});
