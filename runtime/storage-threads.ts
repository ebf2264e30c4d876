// The persistence and read threads: spawned beside the shards' recovery, and the
// persistence thread's hand-over once it loaded (the journal positions, then it writes).

import type { Worker } from 'node:worker_threads';
import type { VenueConfig } from '../core/config.ts';
import type { VenueMemory } from '../gateway/venue-memory.ts';
import type { PersistenceLoaded, PersistenceThreadData } from '../persistence/persistence-messages.ts';
import type { ReadThreadData } from '../persistence/read-thread.ts';
import type { GatewayPorts } from './gateway-threads.ts';
import type { RestorePoint } from './restore-point.ts';
import { once } from './thread-messages.ts';
import type { ThreadEntry } from './venue.ts';
import { spawnWorker, WORKER_BOOTSTRAP } from './worker-spawn.ts';

interface StorageThreadStart {
  config: VenueConfig;
  memory: VenueMemory;
  databaseUrl: string;
  principalIds: string[];
  entry: ThreadEntry;
  ports: GatewayPorts;
}

/**
 * It loads the open orders and the intake still waiting, projects what the projections
 * lack and names the commands to re-drive (`loaded`); then it waits for the journal positions.
 */
export function spawnPersistence(start: StorageThreadStart & { restore: RestorePoint }): { worker: Worker; loaded: Promise<PersistenceLoaded> } {
  const { config, memory, databaseUrl, principalIds, entry, ports, restore } = start;
  const persistenceData: PersistenceThreadData = {
    databaseUrl,
    shardCount: config.matchingShards,
    intakeRings: memory.intakeRings,
    bodyRings: memory.bodyRings,
    journalRings: memory.journalRings,
    doorbell: memory.persistenceDoorbell,
    gatewayDoorbells: memory.gatewayDoorbells,
    control: memory.persistenceControl,
    principalIds,
    limits: { journalBytesMax: config.persistenceBytesMax },
    heldBytesMax: config.rebuildHeldBytesMax,
    rebuildLockTimeoutMs: config.rebuildLockTimeoutMs,
    projectionGroupMs: config.projectionGroupMs,
    logLevel: config.logLevel,
    adminPorts: ports.adminPorts,
    ownReadPorts: ports.ownReadPorts,
    ownReadsWindow: config.ownReadsWindow,
    depthView: memory.depthView,
    tapeView: memory.tapeView,
    marketStream: memory.marketStream,
    queueMarks: memory.queueMarks,
    metrics: memory.metrics,
    openOrders: restore.openOrders,
    openOrdersDir: config.dataDir === '' ? null : config.dataDir,
  };
  const worker = spawnWorker(
    entry('persistence'),
    { ...persistenceData },
    {
      transferList: [...persistenceData.adminPorts, ...persistenceData.ownReadPorts],
    },
    'persistence',
  );
  return { worker, loaded: once<PersistenceLoaded>(worker, (m) => m.type === 'loaded', 'persistence') };
}

/** It loads its books; `ready` when it serves reads. */
export function spawnRead(start: StorageThreadStart): { worker: Worker; ready: Promise<{ type: string }> } {
  const { config, memory, databaseUrl, principalIds, entry, ports } = start;
  const readData: ReadThreadData = {
    databaseUrl,
    shardCount: config.matchingShards,
    control: memory.persistenceControl,
    principalIds,
    ports: ports.readPorts,
    logLevel: config.logLevel,
    marketDataProjector: { enabled: config.marketDataProjectorEnabled, intervalMs: config.marketDataProjectorIntervalMs },
    snapshotView: memory.snapshotView,
    depthView: memory.depthView,
    competitionProfile: config.competitionProfile,
    projectionNamesPerPrincipal: config.marketDataProjectionNamesPerPrincipal,
    plannerStatisticsIntervalMs: config.plannerStatisticsIntervalMs,
    settlementPool: { bootstrap: WORKER_BOOTSTRAP.href, entryUrl: entry('settlement').href, threads: config.settlementThreads, maxQueue: config.settlementQueue },
  };
  const worker = spawnWorker(entry('read'), { ...readData }, { transferList: readData.ports }, 'read');
  return { worker, ready: once<{ type: string }>(worker, (m) => m.type === 'ready', 'read') };
}

/** The journal positions the replay reached go to the loaded persistence thread, which then starts writing. */
export async function handOverJournal(persistence: Worker, journalDurable: readonly number[]): Promise<void> {
  persistence.postMessage({ type: 'journal', journalDurable: [...journalDurable] });
  await once<{ type: string }>(persistence, (m) => m.type === 'ready', 'persistence');
}
