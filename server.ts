// `npm start`: the main thread wires the venue together and holds no domain logic.
// It creates the shared memory, starts MATCHING_SHARDS shard threads and
// GATEWAY_THREADS gateway threads (all listening on one port), marks the venue ready,
// and on SIGINT/SIGTERM stops accepting, lets in-flight commands finish, stops the
// shards after they drained their rings, and exits 0.

import { randomInt } from 'node:crypto';
import { createServer } from 'node:net';
import type { Worker } from 'node:worker_threads';
import pino from 'pino';
import { SHARD_STOP_WORD } from './core/shard-runner.ts';
import type { ShardThreadData } from './core/shard-thread.ts';
import { verifyShardMap } from './core/shard-map.ts';
import { Doorbell } from './core/doorbell.ts';
import { spawnWorker } from './core/worker-spawn.ts';
import { loadConfig, type VenueConfig } from './gateway/config.ts';
import type { GatewayMessage, GatewayThreadData } from './gateway/gateway-thread.ts';
import { Principals } from './gateway/principals.ts';
import { createVenueMemory, VENUE_DRAINING_WORD, VENUE_READY_WORD, type VenueMemory } from './gateway/venue-memory.ts';

const SHUTDOWN_TIMEOUT_MS = 20_000;

interface Venue {
  config: VenueConfig;
  memory: VenueMemory;
  shards: Worker[];
  gateways: Worker[];
  port: number;
}

const logger = pino({ level: process.env.LOG_LEVEL ?? 'info', base: { thread: 'main' } });

function once<T>(worker: Worker, accept: (message: T) => boolean, what: string): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const onMessage = (message: T) => {
      if (!accept(message)) return;
      cleanup();
      resolve(message);
    };
    const onError = (error: Error) => {
      cleanup();
      reject(new Error(`${what}: ${error.message}`));
    };
    const onExit = (code: number) => {
      cleanup();
      reject(new Error(`${what}: the thread exited with code ${code}`));
    };
    const cleanup = () => {
      worker.off('message', onMessage);
      worker.off('error', onError);
      worker.off('exit', onExit);
    };
    worker.on('message', onMessage);
    worker.on('error', onError);
    worker.on('exit', onExit);
  });
}

/**
 * uWebSockets.js listens with SO_REUSEPORT, so a second venue on a busy port would
 * silently share it with the first: a plain exclusive bind first refuses that. PORT=0
 * takes the free port this bind gets (uWS does not share a port it picked itself).
 */
function claimPort(host: string, port: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once('error', (error: NodeJS.ErrnoException) =>
      reject(new Error(error.code === 'EADDRINUSE' ? `${host}:${port} is already in use (another venue?)` : error.message)),
    );
    probe.listen({ host, port, exclusive: true }, () => {
      const bound = (probe.address() as { port: number }).port;
      probe.close(() => resolve(bound));
    });
  });
}

async function startVenue(config: VenueConfig): Promise<Venue> {
  verifyShardMap();
  const port = await claimPort(config.host, config.port);
  Principals.load(config.principalsFile); // fail fast on a bad file, before any thread starts
  const memory = createVenueMemory(config);
  const session = { runId: config.venueRunId, venueSessionId: config.venueSessionId, startedAt: new Date().toISOString() };
  const shards: Worker[] = [];
  for (let shardId = 0; shardId < config.matchingShards; shardId++) {
    const data: ShardThreadData = {
      shardId,
      orderCapacity: config.orderCapacity,
      hashSeed: randomInt(0x7fffffff),
      batchMax: config.shardBatchMax,
      commandRings: memory.commandRings.map((perShard) => perShard[shardId]!),
      resultRings: memory.resultRings[shardId]!,
      doorbell: memory.shardDoorbells[shardId]!,
      gatewayDoorbells: memory.gatewayDoorbells,
      control: memory.shardControls[shardId]!,
    };
    shards.push(spawnWorker(new URL('./core/shard-thread.ts', import.meta.url), { ...data }));
  }
  await Promise.all(shards.map((worker, id) => once<{ type: string }>(worker, (m) => m.type === 'ready', `shard ${id}`)));

  const gateways: Worker[] = [];
  const startGateway = async (gatewayId: number, port: number): Promise<void> => {
    const data: GatewayThreadData = { gatewayId, port, config, memory, session };
    const worker = spawnWorker(new URL('./gateway/gateway-thread.ts', import.meta.url), { ...data });
    gateways.push(worker);
    const message = await once<GatewayMessage>(worker, (m) => m.type === 'ready' || m.type === 'error', `gateway ${gatewayId}`);
    if (message.type === 'error') throw new Error(message.message);
  };
  for (let gatewayId = 0; gatewayId < config.gatewayThreads; gatewayId++) await startGateway(gatewayId, port);
  for (const worker of [...shards, ...gateways]) {
    worker.on('error', (error) => {
      logger.fatal({ err: error }, 'a venue thread failed');
      process.exit(1);
    });
  }
  Atomics.store(new Int32Array(memory.venueControl), VENUE_READY_WORD, 1);
  return { config, memory, shards, gateways, port };
}

async function stopVenue(venue: Venue): Promise<void> {
  const control = new Int32Array(venue.memory.venueControl);
  Atomics.store(control, VENUE_DRAINING_WORD, 1);
  await Promise.all(
    venue.gateways.map((worker, id) => {
      const drained = once<GatewayMessage>(worker, (m) => m.type === 'drained', `gateway ${id} drain`);
      worker.postMessage({ type: 'drain' });
      return drained;
    }),
  );
  await Promise.all(
    venue.shards.map((worker, id) => {
      const stopped = once<{ type: string }>(worker, (m) => m.type === 'stopped', `shard ${id} stop`);
      Atomics.store(new Int32Array(venue.memory.shardControls[id]!), SHARD_STOP_WORD, 1);
      new Doorbell(venue.memory.shardDoorbells[id]!).ringAlways();
      return stopped;
    }),
  );
  await Promise.all([...venue.gateways, ...venue.shards].map((worker) => worker.terminate()));
}

async function main(): Promise<void> {
  let config: VenueConfig;
  try {
    config = loadConfig();
  } catch (error) {
    logger.fatal((error as Error).message);
    process.exit(2);
  }
  const venue = await startVenue(config);
  logger.info(
    { host: config.host, port: venue.port, gatewayThreads: config.gatewayThreads, matchingShards: config.matchingShards, processingMode: config.processingMode },
    `venue listening on http://${config.host}:${venue.port}`,
  );
  let stopping = false;
  const shutdown = (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'shutting down: no new commands, finishing those in flight');
    const timer = setTimeout(() => {
      logger.error('shutdown timed out');
      process.exit(1);
    }, SHUTDOWN_TIMEOUT_MS);
    stopVenue(venue).then(
      () => {
        clearTimeout(timer);
        logger.info('venue stopped');
        process.exit(0);
      },
      (error: unknown) => {
        logger.error({ err: error }, 'shutdown failed');
        process.exit(1);
      },
    );
  };
  process.on('SIGINT', () => shutdown('SIGINT'));
  process.on('SIGTERM', () => shutdown('SIGTERM'));
}

main().catch((error: unknown) => {
  logger.fatal({ err: error }, 'the venue could not start');
  process.exit(1);
});
