// `npm start`: the main thread wires the venue's threads together, calling the start's
// phases (modules under runtime/) in order; it holds no domain logic.
//
// Start: PostgreSQL (DATABASE_URL, or the embedded server with data under DATA_DIR),
// migrations, the settings a restart must keep and the open venue session
// (runtime/storage-start.ts); the key filters sized (runtime/key-filter-sizing.ts) and the
// shared memory; GATEWAY_THREADS gateway threads listening on one port
// (runtime/gateway-threads.ts: /healthz answers, /readyz and the order routes say
// "starting"); the restore point (runtime/restore-point.ts); then at once MATCHING_SHARDS
// shard threads (runtime/shard-threads.ts), the persistence and read threads
// (runtime/storage-threads.ts) and the shared tables' learning of storage
// (runtime/table-learning.ts); each book brought to its journal's end
// (runtime/journal-replay.ts); the persistence thread takes the journal positions; the
// captured commands that never reached the journal re-driven (runtime/redrive.ts); a
// session roll cut short finished (runtime/session-roll-finish.ts); then the shards run
// and the venue is ready (runtime/go-live.ts).
//
// Stop (SIGINT/SIGTERM, runtime/graceful-stop.ts): no new commands, in-flight ones finish
// (answers wait for durability), the shards drain and stop, the persistence thread commits
// what is left, the database stops, exit 0.

import v8 from 'node:v8';
import { PersistenceControl } from './core/persistence-control.ts';
import { verifyShardMap } from './core/shard-map.ts';
import type { VenueConfig } from './core/config.ts';
import { loadConfig } from './runtime/config.ts';
import { DEFAULT_PRINCIPALS_FILE } from './gateway/principals.ts';
import { claimPort } from './gateway/port-claim.ts';
import { Principals } from './gateway/principals.ts';
import { createVenueMemory, VENUE_CONNECTION_LIMIT_WORD } from './gateway/venue-memory.ts';
import { MAIN_APPLICATION_NAME } from './persistence/connection-names.ts';
import { pgClient } from './persistence/pg-client.ts';
import { gatewaysListen, spawnGateways } from './runtime/gateway-threads.ts';
import { goLive } from './runtime/go-live.ts';
import { abandonStart, stopOnSignals } from './runtime/graceful-stop.ts';
import { restoreBooks } from './runtime/journal-replay.ts';
import { sizeKeyFilters } from './runtime/key-filter-sizing.ts';
import { redriveCaptured } from './runtime/redrive.ts';
import { chooseRestorePoint } from './runtime/restore-point.ts';
import { connectionGuard, watchWhileRunning } from './runtime/running-watch.ts';
import { finishSessionRoll } from './runtime/session-roll-finish.ts';
import { spawnShards } from './runtime/shard-threads.ts';
import { openStorage, startStorage, type OpenedSession } from './runtime/storage-start.ts';
import { handOverJournal, spawnPersistence, spawnRead } from './runtime/storage-threads.ts';
import { learnStorage } from './runtime/table-learning.ts';
import { logger, WORKER_ENTRIES, type ThreadEntry, type Venue } from './runtime/venue.ts';
import { buildWorkers } from './runtime/worker-build.ts';

// Every worker isolate created from here on starts with a 64 MB old-generation budget: with
// V8's default, grown from a few MB, the persistence thread's steady load runs a full
// mark-compact every half second (docs/decisions/0026-worker-heap-budget.md). Heap flags
// are read when an isolate is created: set before the first worker is spawned.
v8.setFlagsFromString('--initial-old-space-size=64');

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
  const { databaseUrl } = storage;
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
    await storage.stopDatabase();
    throw error;
  }

  const memory = createVenueMemory(config, filterBits.bits);
  storage.publishTo(memory.venueControl);
  started('migrated');
  const venue: Venue = {
    config,
    memory,
    shards: [],
    gateways: [],
    persistence: null,
    read: null,
    port,
    databaseUrl,
    stopDatabase: storage.stopDatabase,
    guardTimer: null,
    startedMs,
    checkpoints: null,
    keyFilterCheckpoints: null,
    tableSince: {},
    prefaulting: null,
  };
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
    const shards = spawnShards(config, memory, entry, restore, venue.shards);
    const control = new PersistenceControl(memory.persistenceControl);
    const threads = { config, memory, databaseUrl, principalIds, entry, ports: gatewayPorts };
    const persistence = spawnPersistence({ ...threads, restore });
    venue.persistence = persistence.worker;
    const read = spawnRead(threads);
    venue.read = read.worker;
    const tables = learnStorage(config, memory, databaseUrl, session);

    // -- shards: restored, then each book brought to its journal's end --
    const { shardsReady, journalDurable } = await restoreBooks({
      config,
      databaseUrl,
      client,
      shards: venue.shards,
      recovery: shards.recovery,
      restore,
      checkpointing: shards.checkpointing,
      started,
    });

    // -- persistence: once loaded and caught up, it takes the journal positions and starts writing --
    const { redrive, pendingIds } = await persistence.loaded;
    started('persistenceLoaded');
    await handOverJournal(persistence.worker, journalDurable);

    await redriveCaptured(redrive, shards.recovery, journalDurable, control);
    await finishSessionRoll(session.active, shards.recovery, journalDurable, control);
    const uncovered = await tables.learnedAtStart;
    if (pendingIds.commandIds.length > 0) await tables.learnPending(pendingIds); // after the pass: these are the newest
    started('tables');

    await client.end();
    await read.ready;

    // -- go --
    goLive(venue, {
      control,
      recovery: shards.recovery,
      checkpointing: shards.checkpointing,
      checkpointNotes: restore.checkpointNotes,
      bufferPorts: shards.bufferPorts,
      shardsReady,
      orderMemory: shards.orderMemory,
      uncovered,
      databaseReady: storage.databaseReady,
      started,
    });
    return venue;
  } catch (error) {
    await client.end().catch(() => undefined);
    throw error;
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
  if (config.principalsFile === DEFAULT_PRINCIPALS_FILE) {
    logger.warn({ principalsFile: config.principalsFile }, 'DEVELOPMENT PRINCIPALS IN EFFECT: their tokens are published in the README; set PRINCIPALS_FILE for anything but local use');
  }
  const venueRef: { venue: Venue | null } = { venue: null };
  stopOnSignals(venueRef);
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
    await abandonStart(venueRef.venue, error);
  }
}

void main();
