// `npm start`: the main thread wires the venue together and holds no domain logic.
//
// Start: PostgreSQL (DATABASE_URL, or the embedded server with data under DATA_DIR),
// migrations, the settings a restart must keep and the open venue session; shared
// memory; GATEWAY_THREADS gateway threads listening on one port (/healthz answers,
// /readyz and the order routes say "starting"); MATCHING_SHARDS shard threads, each
// rebuilding its book from its journal; the persistence thread (it materializes what
// the projections lack, and names the captured commands that never reached the
// journal); re-driving of those, until durable and projected; the gateways' shared tables reloaded
// from storage; the read thread; then the shards run and the venue is ready.
//
// Stop (SIGINT/SIGTERM): no new commands, in-flight ones finish (answers wait for
// durability), the shards drain and stop, the persistence thread commits what is left,
// the database stops, exit 0.

import { randomUUID } from 'node:crypto';
import v8 from 'node:v8';
import { type Worker } from 'node:worker_threads';
import { pgClient } from './persistence/pg-client.ts';
import { SHARD_STOP_WORD } from './core/shard-runner.ts';
import type { RecoveryRequest, ShardCheckpoint, ShardSave, ShardSaved } from './core/shard-messages.ts';
import { engineSnapshotPath } from './persistence/engine-snapshot.ts';
import { verifyShardMap } from './core/shard-map.ts';
import { Doorbell } from './core/doorbell.ts';
import { PersistenceControl } from './core/persistence-control.ts';
import { prefaultInTurns } from './runtime/prefault.ts';
import { buildWorkers } from './runtime/worker-build.ts';
import { restoreBooks } from './runtime/journal-replay.ts';
import { redriveCaptured } from './runtime/redrive.ts';
import { finishSessionRoll } from './runtime/session-roll-finish.ts';
import { learnStorage } from './runtime/table-learning.ts';
import { gatewaysListen, spawnGateways } from './runtime/gateway-threads.ts';
import { connectionGuard, watchWhileRunning } from './runtime/running-watch.ts';
import { spawnShards } from './runtime/shard-threads.ts';
import { handOverJournal, spawnPersistence, spawnRead } from './runtime/storage-threads.ts';
import { sizeKeyFilters } from './runtime/key-filter-sizing.ts';
import { chooseRestorePoint } from './runtime/restore-point.ts';
import { openStorage, startStorage, type OpenedSession } from './runtime/storage-start.ts';
import { ask, once } from './runtime/thread-messages.ts';
import { logger, WORKER_ENTRIES, type ThreadEntry, type Venue } from './runtime/venue.ts';
import { loadConfig, type VenueConfig } from './gateway/config.ts';
import { claimPort } from './gateway/port-claim.ts';
import type { GatewayMessage } from './gateway/gateway-thread.ts';
import { Principals } from './gateway/principals.ts';
import {
  createVenueMemory,
  rememberTableKeys,
  VENUE_CONNECTION_LIMIT_WORD,
  VENUE_DRAINING_WORD,
  VENUE_READY_WORD,
} from './gateway/venue-memory.ts';
import type { PersistenceSave, PersistenceSaved } from './persistence/persistence-thread.ts';
import { openOrdersPath } from './persistence/open-orders-snapshot.ts';
import { EngineCheckpoints } from './persistence/engine-checkpoints.ts';
import { MAIN_APPLICATION_NAME } from './persistence/connection-names.ts';
import {
  BOOK_SNAPSHOT_SETTING,
  journalSequences,
  KeyFilterCheckpoints,
  noteSnapshot,
  saveKeyFilters,
  storageMark,
} from './persistence/key-filter-snapshot.ts';

// Every worker isolate created from here on starts with a 64 MB old-generation budget.
// With V8's default (grown from a few MB by a factor near 1.1), the persistence thread,
// whose live heap is about 18 MB of order state, runs a full mark-compact every 0.5 s
// under a steady load, each freeing about 1 MB; with this it runs none in that time and
// the venue uses 7.5% less CPU at 1,500 commands/s (docs/decisions/0026-worker-heap-budget.md).
// Heap flags are read when an isolate is created, so setting them
// before the first worker is spawned is enough.
v8.setFlagsFromString('--initial-old-space-size=64');

const SHUTDOWN_TIMEOUT_MS = 30_000;

async function startVenue(config: VenueConfig, venueRef: { venue: Venue | null }): Promise<Venue> {
  verifyShardMap();
  const claim = await claimPort(config.host, config.port); // held until the first gateway is about to listen: see gateway/port-claim.ts
  const port = claim.port;
  const principals = Principals.load(config.principalsFile); // fail fast on a bad file, before any thread starts
  const principalIds = principals.list.map((principal) => principal.principalId);
  // Compiled beside the database's start; awaited before the migrations.
  const built = buildWorkers(Object.values(WORKER_ENTRIES));
  built.catch(() => undefined); // its failure is reported where it is awaited

  // -- storage --
  const storage = await startStorage(config);
  const { databaseUrl, stopDatabase, databaseReady } = storage;
  const startedMs: Record<string, number> = { database: Math.round(performance.now()) };
  const started = (step: string) => (startedMs[step] = Math.round(performance.now()));
  const client = pgClient({ connectionString: databaseUrl, application_name: MAIN_APPLICATION_NAME });
  await client.connect();
  let session: OpenedSession;
  let entry: ThreadEntry;
  let filterBits: Awaited<ReturnType<typeof sizeKeyFilters>>;
  try {
    const urls = await built; // a failed build stops the database started above, like a failed migration
    entry = (name) => urls.get(WORKER_ENTRIES[name].href)!;
    session = await openStorage(client, config);
    filterBits = await sizeKeyFilters(client, config);
  } catch (error) {
    await client.end().catch(() => undefined);
    await stopDatabase();
    throw error;
  }

  const memory = createVenueMemory(config, filterBits.bits);
  storage.publishTo(memory.venueControl);
  started('migrated');
  const venue: Venue = { config, memory, shards: [], gateways: [], persistence: null, read: null, port, databaseUrl, stopDatabase, guardTimer: null, startedMs, checkpoints: null, keyFilterCheckpoints: null, tableSince: {}, prefaulting: null };
  venueRef.venue = venue;
  try {
    // The gateways listen first; then every other thread starts at once and the phases that
    // depend on nothing overlap (a start with a million resting orders is bounded by the
    // slowest of them, not their sum): the shards' books, the persistence thread's load and
    // catch-up, the read thread's books, the tables' learning of storage.
    const guard = connectionGuard(config, memory, venue.gateways);
    const gatewayPorts = spawnGateways({ config, memory, session, port, entry }, venue.gateways);
    await gatewaysListen(venue.gateways, claim);
    venue.guardTimer = watchWhileRunning(venue, guard);
    started('listening');

    const restore = await chooseRestorePoint(client, config);
    const { checkpointNotes } = restore;
    const { orderMemory, recovery, checkpointing, bufferPorts } = spawnShards(config, memory, entry, restore, venue.shards);
    const control = new PersistenceControl(memory.persistenceControl);
    const threads = { config, memory, databaseUrl, principalIds, entry, ports: gatewayPorts };
    const { worker: persistence, loaded } = spawnPersistence({ ...threads, restore });
    venue.persistence = persistence;
    const read = spawnRead(threads);
    venue.read = read.worker;
    const readReady = read.ready;

    const tables = learnStorage(config, memory, databaseUrl, session);

    // -- shards: restored, then each book brought to its journal's end --
    const { shardsReady, journalDurable } = await restoreBooks({ config, databaseUrl, client, shards: venue.shards, recovery, restore, checkpointing, started });

    // -- persistence: once loaded and caught up, it takes the journal positions and starts writing --
    const { redrive, pendingIds } = await loaded;
    started('persistenceLoaded');
    await handOverJournal(persistence, journalDurable);

    await redriveCaptured(redrive, recovery, journalDurable, control);
    await finishSessionRoll(session.active, recovery, journalDurable, control);
    const uncovered = await tables.learnedAtStart;
    if (pendingIds.commandIds.length > 0) await tables.learnPending(pendingIds); // after the pass: these are the newest
    started('tables');

    await client.end();
    await readReady;

    // -- go --
    let checkpoints: EngineCheckpoints | null = null;
    if (checkpointing) {
      checkpoints = new EngineCheckpoints({
        dataDir: config.dataDir,
        databaseUrl,
        shardControls: memory.shardControls,
        journalCommitted: (shard) => control.journalCommitted(shard),
        notes: checkpointNotes,
        logger,
        buffers: bufferPorts,
      });
      venue.checkpoints = checkpoints;
      for (const worker of venue.shards) worker.on('message', (message: ShardCheckpoint) => message.type === 'checkpoint' && checkpoints!.take(message));
    }
    for (const port of recovery) port.postMessage({ type: 'start' } satisfies RecoveryRequest);
    for (const worker of [...venue.shards, ...venue.gateways, venue.persistence, venue.read]) {
      worker.on('error', (error) => {
        logger.fatal({ err: error }, 'a venue thread failed');
        void venue.stopDatabase().finally(() => process.exit(1));
      });
    }
    if (config.dataDir !== '') {
      venue.keyFilterCheckpoints = new KeyFilterCheckpoints({
        every: config.keyFilterCheckpointCommands,
        taken: () => {
          let sum = 0;
          for (let gateway = 0; gateway < config.gatewayThreads; gateway++) sum += control.intakeCommitted(gateway);
          return sum;
        },
        uncovered,
        save: () => checkpointKeyFilters(venue),
        onFailure: (error) => logger.warn({ err: error.message }, 'the key filters could not be saved: a start after a crash reads more of storage (the next save tries again)'),
      });
    }
    Atomics.store(new Int32Array(memory.venueControl), VENUE_READY_WORD, 1);
    started('ready');
    databaseReady();
    venue.persistence.postMessage({ type: 'venue-ready' }); // it writes the open orders it loaded as the next checkpoint
    // After ready, not before: the first copies' buffers, room for the engine's state at start and as much again.
    checkpoints?.provide(shardsReady.map((ready) => 2 * ready.stateBytes));
    // And the rest of the fresh memory: the gateways' command stores and the shards' order
    // stores, faulted in here a slice per turn of the event loop (runtime/prefault.ts): taken
    // before ready, by the threads that use them, they cost a crash start 0.6 s a gateway and
    // 1.6-1.9 s a shard on two busy cores. A page a thread reaches first is faulted there.
    venue.prefaulting = prefaultInTurns([...memory.commandStores, ...orderMemory]);
    void venue.prefaulting.done.then((ms) => logger.info({ ms: Math.round(ms) }, 'the command and order stores faulted in'));
    return venue;
  } catch (error) {
    await client.end().catch(() => undefined);
    throw error;
  }
}

async function stopVenue(venue: Venue): Promise<void> {
  if (venue.guardTimer !== null) clearInterval(venue.guardTimer);
  venue.prefaulting?.stop(); // nothing more to fault in for a venue that stops
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
  for (const worker of [venue.persistence, venue.read]) {
    if (worker === null) continue;
    const stopped = once<{ type: string }>(worker, (m) => m.type === 'stopped', 'storage thread stop');
    worker.postMessage({ type: 'stop' });
    await stopped;
  }
  // Every command is journaled now: a checkpoint being written is named (or dropped) before the stop goes on.
  await venue.checkpoints?.close();
  await venue.keyFilterCheckpoints?.close(); // the stop saves the filters itself, below
  // A stop during recovery keeps nothing: the books and filters may not be whole yet.
  const keep = venue.config.dataDir !== '' && Atomics.load(control, VENUE_READY_WORD) === 1;
  const books = keep ? await saveBooks(venue) : null;
  const all = [...venue.gateways, ...venue.shards, venue.persistence, venue.read].filter((worker): worker is Worker => worker !== null);
  await Promise.all(all.map((worker) => worker.terminate()));
  if (keep) await keepForNextStart(venue, books);
  await venue.stopDatabase();
}

/**
 * Each stopped shard writes its engine (persistence/engine-snapshot.ts) and the stopped
 * persistence thread the projector's open orders (persistence/open-orders-snapshot.ts),
 * all at once, under one token; null if any could not.
 */
async function saveBooks(venue: Venue): Promise<{ token: string; sequences: number[]; bytes: number; openOrders: number } | null> {
  const token = randomUUID();
  const ask = <T extends { type: string }>(worker: Worker, request: ShardSave | PersistenceSave, what: string) => {
    const answer = once<T>(worker, (m) => m.type === 'saved' || m.type === 'save-failed', what);
    worker.postMessage(request);
    return answer;
  };
  const [projector, ...shards] = await Promise.all([
    ask<PersistenceSaved>(venue.persistence!, { type: 'save', file: openOrdersPath(venue.config.dataDir), token }, 'open orders save'),
    ...venue.shards.map((worker, id) => ask<ShardSaved>(worker, { type: 'save', file: engineSnapshotPath(venue.config.dataDir, id), token }, `shard ${id} save`)),
  ]);
  if (projector!.type === 'save-failed' || shards.some((answer) => answer.type === 'save-failed')) {
    const failed = [projector!, ...shards].find((answer) => answer.type === 'save-failed') as { message: string };
    logger.warn({ err: failed.message }, 'the order books could not be saved: the next start replays the journals and reads the open orders from storage');
    return null;
  }
  const saved = shards as Extract<ShardSaved, { type: 'saved' }>[];
  const openOrders = projector as Extract<PersistenceSaved, { type: 'saved' }>;
  return { token, sequences: saved.map((answer) => answer.sequence), bytes: openOrders.bytes + saved.reduce((sum, answer) => sum + answer.bytes, 0), openOrders: openOrders.count };
}

/**
 * Every command is committed and projected now. The shards' saved engines are noted if
 * they hold exactly the journal storage holds; the keys the tables still hold go into
 * the filters, which then hold every stored key, and are saved (persistence/key-filter-snapshot.ts).
 * A failure costs the next start its replay or its full scan only.
 */
async function keepForNextStart(venue: Venue, books: { token: string; sequences: number[]; bytes: number; openOrders: number } | null): Promise<void> {
  const client = pgClient({ connectionString: venue.databaseUrl, application_name: MAIN_APPLICATION_NAME });
  try {
    await client.connect();
    if (books !== null) {
      const mark = await storageMark(client, venue.config.matchingShards);
      if (journalSequences(mark).join() === books.sequences.join()) {
        await noteSnapshot(client, BOOK_SNAPSHOT_SETTING, books.token, mark);
        logger.info({ mark, bytes: books.bytes, openOrders: books.openOrders }, 'order books and open orders saved for the next start');
      } else logger.warn({ mark, sequences: books.sequences }, 'the saved order books are not at the journal\'s end: the next start replays the journals');
    }
    const { file, mark, tableKeys } = await saveKeyFilters(venue.config.dataDir, client, venue.config.matchingShards, venue.memory.forgotten, () =>
      rememberTableKeys(venue.memory, venue.tableSince),
    );
    logger.info({ file, mark, tableKeys }, 'key filters saved for the next start');
  } catch (error) {
    logger.warn({ err: (error as Error).message }, 'what the next start could reuse was not saved: it replays the journals and scans storage');
  } finally {
    await client.end().catch(() => undefined);
  }
}

/**
 * A save of the key filters while the venue runs (persistence/key-filter-snapshot.ts): the
 * tables' keys written since the last save go into the filters, on this thread between
 * pauses, then the filters go to DATA_DIR/key-filters.bin on the thread pool.
 */
async function checkpointKeyFilters(venue: Venue): Promise<void> {
  const began = performance.now();
  const client = pgClient({ connectionString: venue.databaseUrl, application_name: MAIN_APPLICATION_NAME });
  await client.connect();
  try {
    const pause = () => new Promise<void>((resolve) => setImmediate(resolve));
    const { mark, tableKeys, bytes } = await saveKeyFilters(venue.config.dataDir, client, venue.config.matchingShards, venue.memory.forgotten, () =>
      rememberTableKeys(venue.memory, venue.tableSince, pause),
    );
    logger.info({ mark, tableKeys, bytes, ms: Math.round(performance.now() - began) }, 'key filters saved (a checkpoint while running)');
  } finally {
    await client.end().catch(() => undefined);
  }
}

async function main(): Promise<void> {
  let config: VenueConfig;
  try {
    config = loadConfig();
  } catch (error) {
    logger.fatal((error as Error).message);
    process.exit(2);
  }
  const venueRef: { venue: Venue | null } = { venue: null };
  let stopping = false;
  const shutdown = (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'shutting down: no new commands, finishing those in flight');
    const timer = setTimeout(() => {
      logger.error('shutdown timed out');
      void (venueRef.venue?.stopDatabase() ?? Promise.resolve()).finally(() => process.exit(1));
    }, SHUTDOWN_TIMEOUT_MS);
    const venue = venueRef.venue;
    (venue === null ? Promise.resolve() : stopVenue(venue)).then(
      () => {
        clearTimeout(timer);
        logger.info('venue stopped');
        process.exit(0);
      },
      (error: unknown) => {
        logger.error({ err: error }, 'shutdown failed');
        void (venue?.stopDatabase() ?? Promise.resolve()).finally(() => process.exit(1));
      },
    );
  };
  process.on('SIGINT', () => shutdown('SIGINT'));
  process.on('SIGTERM', () => shutdown('SIGTERM'));
  try {
    const venue = await startVenue(config, venueRef);
    logger.info(
      {
        host: config.host,
        port: venue.port,
        gatewayThreads: config.gatewayThreads,
        matchingShards: config.matchingShards,
        processingMode: config.processingMode,
        connectionLimit: Atomics.load(new Int32Array(venue.memory.venueControl), VENUE_CONNECTION_LIMIT_WORD),
        // npm start asks glibc to back large allocations (the order stores, rings, tables) with transparent huge pages.
        hugePages: /(^|:)glibc\.malloc\.hugetlb=[12](:|$)/.test(process.env.GLIBC_TUNABLES ?? ''),
        startedMs: venue.startedMs,
      },
      `venue listening on http://${config.host}:${venue.port}`,
    );
  } catch (error) {
    logger.fatal({ err: error }, 'the venue could not start');
    const venue = venueRef.venue;
    if (venue !== null) await Promise.all([...venue.gateways, ...venue.shards, venue.persistence, venue.read].map((worker) => worker?.terminate()));
    await (venue?.stopDatabase() ?? Promise.resolve()).catch(() => undefined);
    process.exit(1);
  }
}

void main();
