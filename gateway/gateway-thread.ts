// Worker entry of a gateway thread: one uWebSockets.js app on the shared port, the
// order flow, and the loop that reads results from the shards. The loop sleeps on
// the thread's doorbell (Atomics.waitAsync) when nothing is in flight, so an idle
// gateway costs no CPU.

import { parentPort, workerData, type MessagePort } from 'node:worker_threads';
import { setImmediate as yieldToLoop } from 'node:timers/promises';
import pino from 'pino';
import { loggerOptions } from '../core/log-format.ts';
import uWS from 'uWebSockets.js';
import type { VenueConfig } from '../core/config.ts';
import { setCauseLog } from './error-catalog.ts';
import { buildApp } from './http-server.ts';
import { HttpMetrics } from './http-metrics.ts';
import { MetricsExposition } from './metrics-exposition.ts';
import { MarketStream } from './market-stream.ts';
import { buildOpenApi } from './openapi.ts';
import { OrderFlow } from './order-flow.ts';
import { Principals } from './principals.ts';
import { QueueMarks } from '../core/queue-marks.ts';
import { SessionRegistry, type NumberedSession } from './sessions.ts';
import { SessionSwitches, type SessionMessage } from './session-roll.ts';
import { RequestValidator } from './validation.ts';
import type { VenueMemory } from './venue-memory.ts';

export interface GatewayThreadData {
  gatewayId: number;
  port: number;
  config: VenueConfig;
  memory: VenueMemory;
  /** The active session, and every session the venue ran (orders of earlier ones may still rest). */
  session: NumberedSession;
  knownSessions: NumberedSession[];
  /** To the read thread (status and replays from storage) and the persistence thread (operator rebuilds). */
  readPort: MessagePort;
  adminPort: MessagePort;
  /** To the persistence thread's own-order and fills model (persistence/own-reads.ts). */
  ownReadPort: MessagePort;
}

/** `bind`: ready to listen, waiting for the main thread to let go of the port's claim (gateway/port-claim.ts), which then sends `listen`. */
export type GatewayMessage = { type: 'bind'; gatewayId: number } | { type: 'ready'; gatewayId: number; port: number } | { type: 'drained'; gatewayId: number } | { type: 'error'; message: string };

const DRAIN_TIMEOUT_MS = 15_000;

const data = workerData as GatewayThreadData;
const { config, memory, gatewayId } = data;
const logger = pino(loggerOptions(`gateway-${gatewayId}`, config.logLevel));
setCauseLog((fields, message) => logger.error(fields, message));
const sessions = new SessionRegistry(data.session, data.knownSessions);
const flow = new OrderFlow(gatewayId, config, memory, sessions, { read: data.readPort, admin: data.adminPort, ownReads: data.ownReadPort });
const switches = new SessionSwitches(gatewayId, sessions, (message: SessionMessage) => parentPort!.postMessage(message));
const metrics = new HttpMetrics(memory.metrics, gatewayId);
// Built at the first scrape: prom-client's default metrics sample the event loop on a timer, which an unscraped gateway does without.
let exposition: MetricsExposition | null = null;
const stream = new MarketStream(memory.marketStream, memory.depthView, gatewayId);
const app = buildApp({
  config,
  flow,
  principals: Principals.load(config.principalsFile),
  validator: new RequestValidator(),
  sessions,
  switches,
  openApiJson: JSON.stringify(buildOpenApi()),
  venueControl: new Int32Array(memory.venueControl),
  metrics,
  exposition: () => (exposition ??= new MetricsExposition(memory, config, new QueueMarks(memory.queueMarks), metrics.routes)),
  stream,
});
let listenSocket: uWS.us_listen_socket | null = null;
let running = true;
/** Whether the main thread's connection guard lets this gateway accept connections (gateway/connection-guard.ts). */
let accepting = true;
let draining = false;
let relistenTimer: NodeJS.Timeout | null = null;

/** Listens on the venue's port; the first time, tells the main thread the outcome. */
function listen(first: boolean): void {
  app.listen(config.host, data.port, (socket) => {
    if (socket === false) {
      if (first) {
        parentPort!.postMessage({ type: 'error', message: `gateway ${gatewayId} cannot listen on ${config.host}:${data.port}` } satisfies GatewayMessage);
        return;
      }
      logger.error({ port: data.port }, 'cannot listen again after the connection limit; retrying');
      relistenTimer = setTimeout(() => {
        relistenTimer = null;
        if (accepting && !draining && listenSocket === null) listen(false);
      }, 100);
      return;
    }
    listenSocket = socket;
    const port = uWS.us_socket_local_port(socket as unknown as uWS.us_socket);
    logger.debug({ port }, 'gateway listening');
    if (first) parentPort!.postMessage({ type: 'ready', gatewayId, port } satisfies GatewayMessage);
  });
}

function stopListening(): void {
  if (listenSocket !== null) uWS.us_listen_socket_close(listenSocket);
  listenSocket = null;
  if (relistenTimer !== null) clearTimeout(relistenTimer);
  relistenTimer = null;
}

// The main thread holds the port (an exclusive bind) until a gateway is this close to
// listening: released earlier, before the threads started (about half a second), any
// socket of the machine could be given the port meanwhile (an outgoing connection's
// local port, another server asking for a free one) and the start failed.
parentPort!.postMessage({ type: 'bind', gatewayId } satisfies GatewayMessage);

async function resultLoop(): Promise<void> {
  while (running) {
    // The market-data stream is read in the same loop: the persistence thread rings this doorbell after appending to it.
    if (flow.pollResults() + stream.poll() > 0) {
      await yieldToLoop(); // let uWS write the answers and take new requests
      continue;
    }
    const seen = flow.doorbell.prepareSleep();
    if (flow.resultsWaiting() || stream.waiting()) {
      flow.doorbell.wake();
      continue;
    }
    // Replays waiting on another thread's command are checked every 2 ms. Results and
    // durability come with the persistence thread's wake-up after each commit (shards
    // wake a gateway only for state-query answers: core/shard-runner.ts publishResults);
    // commands in flight are still looked at every 50 ms for their deadline.
    await flow.doorbell.sleepAsync(seen, flow.waiting > 0 ? 2 : flow.inFlight > 0 ? 50 : 1000);
  }
}

resultLoop().catch((error: unknown) => {
  logger.fatal({ err: error }, 'result loop failed');
  process.exit(1);
});

parentPort!.on('message', (message: { type: string; accepting?: boolean }) => {
  if (message.type === 'listen') {
    listen(true);
    return;
  }
  if (message.type === 'accepting') {
    // The connection guard: at the limit new connections are refused by the kernel (no
    // listen socket); those open are served as before.
    accepting = message.accepting === true;
    if (draining) return;
    if (!accepting) stopListening();
    else if (listenSocket === null && relistenTimer === null) listen(false);
    return;
  }
  if (switches.handle(message)) return;
  if (message.type !== 'drain') return;
  draining = true;
  stopListening();
  const started = Date.now();
  const check = () => {
    if (flow.inFlight === 0 || Date.now() - started > DRAIN_TIMEOUT_MS) {
      if (flow.inFlight > 0) logger.warn({ inFlight: flow.inFlight }, 'drain timed out with commands in flight');
      running = false;
      flow.doorbell.ringAlways();
      // Close every connection (idle keep-alive ones too): a worker that ends with uWS
      // sockets open aborts the process. App#close exists in this build, missing from its typings.
      (app as unknown as { close(): void }).close();
      flow.close();
      stream.close();
      parentPort!.postMessage({ type: 'drained', gatewayId } satisfies GatewayMessage);
    } else {
      setTimeout(check, 5);
    }
  };
  check();
});
