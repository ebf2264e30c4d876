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

import { randomInt, randomUUID } from 'node:crypto';
import v8 from 'node:v8';
import { MessageChannel, type MessagePort, type Worker } from 'node:worker_threads';
import pg from 'pg';
import { pgClient } from './persistence/pg-client.ts';
import pino from 'pino';
import { QUEUE_SLOTS, QueueMarks } from './core/queue-marks.ts';
import { SHARD_STOP_WORD } from './core/shard-runner.ts';
import type { RecoveryAnswer, RecoveryRequest, ShardCheckpoint, ShardHalted, ShardReady, ShardSave, ShardSaved, ShardThreadData } from './core/shard-messages.ts';
import { engineSnapshotPath } from './persistence/engine-snapshot.ts';
import { verifyShardMap } from './core/shard-map.ts';
import { Doorbell } from './core/doorbell.ts';
import { PersistenceControl } from './core/persistence-control.ts';
import { orderStoreBytes } from './core/order-store.ts';
import { prefaultInTurns, type Prefaulting } from './runtime/prefault.ts';
import { buildWorkers } from './runtime/worker-build.ts';
import { spawnWorker } from './runtime/worker-spawn.ts';
import { loadConfig, type VenueConfig } from './gateway/config.ts';
import { ConnectionGuard, fileLimit, GUARD_INTERVAL_MS, openFiles } from './gateway/connection-guard.ts';
import { claimPort } from './gateway/port-claim.ts';
import type { GatewayMessage, GatewayThreadData } from './gateway/gateway-thread.ts';
import { Principals } from './gateway/principals.ts';
import {
  attachForgotten,
  namedKeyFilters,
  createVenueMemory,
  rememberTableKeys,
  StoredMemory,
  tableKeeps,
  VENUE_CONNECTION_LIMIT_WORD,
  VENUE_DRAINING_WORD,
  VENUE_READY_WORD,
  type ForgettingTable,
  type VenueMemory,
} from './gateway/venue-memory.ts';
import { SessionRegistry } from './gateway/sessions.ts';
import { relaySessionRolls } from './gateway/session-roll.ts';
import { clientOrderDigest, wordsOf } from './gateway/keys.ts';
import { startEmbeddedPostgres } from './persistence/embedded-postgres.ts';
import { PostgresSupervisor, type SupervisorReport } from './persistence/postgres-supervisor.ts';
import { publishEmbeddedStorage } from './gateway/storage-state.ts';
import { migrate } from './persistence/migrations.ts';
import type { PersistenceLoaded, PersistenceSave, PersistenceSaved, PersistenceThreadData } from './persistence/persistence-messages.ts';
import { openOrdersPath } from './persistence/open-orders-snapshot.ts';
import { adoptSavedEngines, checkpointPath, EngineCheckpoints, readCheckpointNotes } from './persistence/engine-checkpoints.ts';
import type { ReadThreadData } from './persistence/read-thread.ts';
import { MAIN_APPLICATION_NAME } from './persistence/connection-names.ts';
import { openSession } from './persistence/venue-sessions.ts';
import { checkSettings, commandsById, intakeKeysSince, knownOrders, ordersById, readJournal, recentCommands, storedCommandKeys, storedKeyEstimate, storedOrderIds, type KnownOrder } from './persistence/recovery.ts';
import {
  BOOK_SNAPSHOT_SETTING,
  intakeCommit,
  journalSequences,
  KeyFilterCheckpoints,
  loadKeyFilters,
  noteSnapshot,
  saveKeyFilters,
  savedFilterBits,
  storageMark,
  takeSnapshotNote,
} from './persistence/key-filter-snapshot.ts';
import { filterBitsFor, KeyFilterFeed, ratedLoadWatch } from './core/key-filter.ts';

// Every worker isolate created from here on starts with a 64 MB old-generation budget.
// With V8's default (grown from a few MB by a factor near 1.1), the persistence thread,
// whose live heap is about 18 MB of order state, runs a full mark-compact every 0.5 s
// under a steady load, each freeing about 1 MB; with this it runs none in that time and
// the venue uses 7.5% less CPU at 1,500 commands/s (docs/decisions/0026-worker-heap-budget.md).
// Heap flags are read when an isolate is created, so setting them
// before the first worker is spawned is enough.
v8.setFlagsFromString('--initial-old-space-size=64');

/** The worker threads' entries, compiled to JavaScript at start (runtime/worker-build.ts). */
const WORKER_ENTRIES = {
  gateway: new URL('./gateway/gateway-thread.ts', import.meta.url),
  shard: new URL('./runtime/shard-thread.ts', import.meta.url),
  persistence: new URL('./persistence/persistence-thread.ts', import.meta.url),
  read: new URL('./persistence/read-thread.ts', import.meta.url),
};

const SHUTDOWN_TIMEOUT_MS = 30_000;
const RECOVERY_TIMEOUT_MS = 300_000;
/**
 * The most recent stored commands the shared tables learn at start (at most the tables'
 * keeps; the orders' part stays tableKeeps). A command the tables hold from storage
 * answers a retry by a read of storage, as one the key filters flag does, so holding more
 * of them spares no read: only an Idempotency-Key reused with another payload is refused
 * without one. The orders are what spares a cancel or modify its storage question. Reading
 * 2 × SHARED_TABLE_BUCKETS commands instead costs PostgreSQL about a CPU-second of a start
 * with a million resting orders (docs/decisions/0013-start-learns-recent-commands.md).
 */
const START_RECENT_COMMANDS = 16_384;

interface Venue {
  config: VenueConfig;
  memory: VenueMemory;
  shards: Worker[];
  gateways: Worker[];
  persistence: Worker | null;
  read: Worker | null;
  port: number;
  databaseUrl: string;
  stopDatabase: () => Promise<void>;
  /** The connection guard's count (gateway/connection-guard.ts), stopped when the venue drains. */
  guardTimer: NodeJS.Timeout | null;
  /** When each step of the start ended, in ms since the process started (logged with "venue listening"). */
  startedMs: Record<string, number>;
  /** The engines' checkpoints while running; null without DATA_DIR or with ENGINE_CHECKPOINT_COMMANDS=0. */
  checkpoints: EngineCheckpoints | null;
  /** The key filters' saves while running (persistence/key-filter-snapshot.ts); null until ready, or without DATA_DIR. */
  keyFilterCheckpoints: KeyFilterCheckpoints | null;
  /** Each shared table's stamp at the last save of the key filters: the next adds only the entries written since (rememberTableKeys). */
  tableSince: Partial<Record<ForgettingTable, number>>;
  /** The command and order stores' pages faulted in after ready (runtime/prefault.ts); stopped by a stop. */
  prefaulting: Prefaulting | null;
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
 * A shard's recovery port asked several requests at a time: answers come in the order of
 * the requests (the shard answers each before it reads the next), so each goes to the
 * oldest request waiting. `close` stops listening (ask() may then be used again).
 */
function pipelinedAsker(port: MessagePort): { ask: (request: RecoveryRequest, transfer?: ArrayBuffer[]) => Promise<Exclude<RecoveryAnswer, { type: 'failed' }>>; close: () => void } {
  const waiting: { resolve: (answer: Exclude<RecoveryAnswer, { type: 'failed' }>) => void; reject: (error: Error) => void }[] = [];
  const onMessage = (answer: RecoveryAnswer) => {
    const waiter = waiting.shift();
    if (waiter === undefined) return;
    if (answer.type === 'failed') waiter.reject(new Error(answer.message));
    else waiter.resolve(answer);
  };
  port.on('message', onMessage);
  return {
    ask: (request, transfer = []) =>
      new Promise((resolve, reject) => {
        waiting.push({ resolve, reject });
        port.postMessage(request, transfer);
      }),
    close: () => port.off('message', onMessage),
  };
}

/** One request to a shard's recovery port, one answer. */
function ask(port: MessagePort, request: RecoveryRequest, transfer: ArrayBuffer[] = []): Promise<Exclude<RecoveryAnswer, { type: 'failed' }>> {
  return new Promise((resolve, reject) => {
    port.once('message', (answer: RecoveryAnswer) => (answer.type === 'failed' ? reject(new Error(answer.message)) : resolve(answer)));
    port.postMessage(request, transfer);
  });
}

async function until(condition: () => boolean, what: string): Promise<void> {
  const deadline = Date.now() + RECOVERY_TIMEOUT_MS;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`recovery timed out: ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

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
  let databaseUrl = config.databaseUrl;
  let stopDatabase = async (): Promise<void> => undefined;
  let databaseReady = (): void => undefined;
  /** What the embedded server's supervisor last reported, published to the gateways once their memory exists. */
  let storageReport: SupervisorReport | null = null;
  let publishStorage = (_report: SupervisorReport): void => undefined;
  if (databaseUrl === '') {
    const pgLog = (message: string) => logger.info(message);
    const server = await startEmbeddedPostgres(config.dataDir, pgLog, { template: config.embeddedPostgresTemplate });
    const supervisor = new PostgresSupervisor(
      server,
      () => startEmbeddedPostgres(config.dataDir, pgLog, { port: server.port }),
      config.embeddedPostgresRestarts,
      (report) => {
        storageReport = report;
        publishStorage(report);
      },
      (level, message, fields) => logger[level](fields ?? {}, message),
    );
    storageReport = supervisor.report;
    databaseUrl = server.url;
    stopDatabase = () => supervisor.stop();
    databaseReady = () => supervisor.ready();
    logger.info({ dataDir: server.dataDir, port: server.port }, 'embedded PostgreSQL is up');
  }
  const startedMs: Record<string, number> = { database: Math.round(performance.now()) };
  const started = (step: string) => (startedMs[step] = Math.round(performance.now()));
  const client = pgClient({ connectionString: databaseUrl, application_name: MAIN_APPLICATION_NAME });
  await client.connect();
  let session: Awaited<ReturnType<typeof openSession>>;
  let entry: (name: keyof typeof WORKER_ENTRIES) => URL;
  let filterBits: ReturnType<typeof filterBitsFor>;
  try {
    const urls = await built; // a failed build stops the database started above, like a failed migration
    entry = (name) => urls.get(WORKER_ENTRIES[name].href)!;
    const applied = await migrate(client);
    if (applied.length > 0) logger.info({ applied }, 'migrations applied');
    await checkSettings(client, { matching_shards: String(config.matchingShards) });
    session = await openSession(client, { runId: config.venueRunId, venueSessionId: config.venueSessionId });
    if (session.resumed && (session.active.runId !== config.venueRunId || session.active.venueSessionId !== config.venueSessionId)) {
      logger.warn({ open: session.active, configured: { runId: config.venueRunId, venueSessionId: config.venueSessionId } }, 'the open venue session continues; a restart does not start a new one');
    }
    // The key filters must hold every stored key: sized for what storage holds now, with
    // room for as many again before their false positives grow (core/key-filter.ts).
    // Never smaller than the filters the last graceful stop saved (up to the maximum), so
    // that an estimate a little lower than the last start's does not cost a scan.
    const storedKeys = await storedKeyEstimate(client);
    const saved = config.dataDir === '' ? null : savedFilterBits(config.dataDir);
    const floorBits = Math.max(config.keyFilterBits, Math.min(saved ?? 0, config.keyFilterBitsMax));
    filterBits = filterBitsFor(storedKeys, floorBits, config.keyFilterBitsMax);
    if (filterBits.bits !== config.keyFilterBits || filterBits.short) {
      logger[filterBits.short ? 'warn' : 'info'](
        { storedKeys, keyFilterBits: filterBits.bits, savedBits: saved, KEY_FILTER_BITS: config.keyFilterBits, KEY_FILTER_BITS_MAX: config.keyFilterBitsMax },
        filterBits.short
          ? 'the key filters are at KEY_FILTER_BITS_MAX and rated for less than twice the stored keys: past their rated load more new commands are checked in storage'
          : 'key filters sized for the stored keys at half their rated load (and no smaller than those the last stop saved)',
      );
    }
  } catch (error) {
    await client.end().catch(() => undefined);
    await stopDatabase();
    throw error;
  }

  const memory = createVenueMemory(config, filterBits.bits);
  publishStorage = (report) => publishEmbeddedStorage(new Int32Array(memory.venueControl), report);
  if (storageReport !== null) publishStorage(storageReport);
  started('migrated');
  const venue: Venue = { config, memory, shards: [], gateways: [], persistence: null, read: null, port, databaseUrl, stopDatabase, guardTimer: null, startedMs, checkpoints: null, keyFilterCheckpoints: null, tableSince: {}, prefaulting: null };
  venueRef.venue = venue;
  try {
    const guard = connectionGuard(config, memory, venue);
    // The gateways listen first (/healthz answers, /readyz and the order routes say
    // "starting"); then every other thread starts at once and the phases that depend on
    // nothing overlap (a start with a million resting orders is bounded by the slowest of
    // them, not their sum):
    //   shards: each rebuilds its book from its journal, both read in parallel
    //   persistence: loads the open orders and the intake still waiting, projects what the
    //     projections lack, names the commands to re-drive; then takes the journal positions
    //     the replay reached and starts writing
    //   read thread: loads its books
    // then the re-drive, then the gateways' tables learn what storage holds.
    const readChannels = Array.from({ length: config.gatewayThreads }, () => new MessageChannel());
    const adminChannels = Array.from({ length: config.gatewayThreads }, () => new MessageChannel());
    const ownReadChannels = Array.from({ length: config.gatewayThreads }, () => new MessageChannel());
    for (let gatewayId = 0; gatewayId < config.gatewayThreads; gatewayId++) {
      const data: GatewayThreadData = {
        gatewayId,
        port,
        config,
        memory,
        session: session.active,
        knownSessions: session.known,
        readPort: readChannels[gatewayId]!.port1,
        adminPort: adminChannels[gatewayId]!.port1,
        ownReadPort: ownReadChannels[gatewayId]!.port1,
      };
      venue.gateways.push(spawnWorker(entry('gateway'), { ...data }, { transferList: [data.readPort, data.adminPort, data.ownReadPort] }, `gateway-${gatewayId}`));
    }
    relaySessionRolls(venue.gateways);
    // Listening first: /healthz answers (and /readyz says "starting") during the whole recovery.
    // The port's claim is let go when the first gateway is about to listen (its `bind`), not
    // before the threads start: the port is free only for a message's round trip.
    await Promise.all(
      venue.gateways.map(async (worker, gatewayId) => {
        const asked = await once<GatewayMessage>(worker, (m) => m.type === 'bind' || m.type === 'error', `gateway ${gatewayId}`);
        if (asked.type === 'error') throw new Error(asked.message);
        await claim.release();
        worker.postMessage({ type: 'listen' });
        logger.debug({ gatewayId }, 'the port claim let go: the gateway listens');
        const message = await once<GatewayMessage>(worker, (m) => m.type === 'ready' || m.type === 'error', `gateway ${gatewayId}`);
        if (message.type === 'error') throw new Error(message.message);
      }),
    );
    // Past its rated load a key filter's false positives grow (core/key-filter.ts), and each
    // sends a new command to a storage check: said once per filter, when it happens (at the
    // start's scan of storage or later, as the tables forget keys).
    const filterWatch = ratedLoadWatch(
      namedKeyFilters(memory),
      (filter, added, ratedKeys) =>
        logger.warn(
          { filter, added, ratedKeys },
          'a key filter holds more keys than it is rated for: more new commands are checked in storage (each waits for the projections); the next start sizes the filters for the stored keys, up to KEY_FILTER_BITS_MAX',
        ),
    );
    venue.guardTimer = setInterval(() => {
      guard.update(openFiles());
      filterWatch();
      venue.keyFilterCheckpoints?.poll();
    }, GUARD_INTERVAL_MS);
    started('listening');

    // The shards' engines and the projector's open orders saved at the last graceful stop serve
    // this start if storage is still where it was then (the note is consumed: one start per
    // save); else the projector reads the open orders' table and each shard replays its
    // journal: after its last checkpoint if the database names one the journal reaches
    // (persistence/engine-checkpoints.ts), else all of it.
    const books = config.dataDir === '' ? 'no DATA_DIR' : await takeSnapshotNote(client, BOOK_SNAPSHOT_SETTING, config.matchingShards);
    const checkpointNotes = config.dataDir === '' ? [] : await readCheckpointNotes(client, config.matchingShards);
    const journalEnd = typeof books === 'string' ? journalSequences(await storageMark(client, config.matchingShards)) : journalSequences(books.mark);
    // The checkpoint the database names for a shard, if the journal reaches it: what a crash would start from.
    const usableCheckpoint = (shardId: number) => {
      const note = checkpointNotes[shardId];
      return note === null || note === undefined || note.sequence > journalEnd[shardId]! ? null : note;
    };
    const shardSnapshot = (shardId: number): ShardThreadData['snapshot'] => {
      if (typeof books !== 'string') return { file: engineSnapshotPath(config.dataDir, shardId), token: books.token, sequence: journalEnd[shardId]!, source: 'stop' };
      const note = usableCheckpoint(shardId);
      return note === null ? null : { file: checkpointPath(config.dataDir, shardId, note.slot), token: note.token, sequence: note.sequence, source: 'checkpoint' };
    };
    // Each shard's order store, allocated here and faulted in by this thread after ready
    // (below): the shard fills only what its restored engine holds.
    const orderMemory = Array.from({ length: config.matchingShards }, () => new SharedArrayBuffer(orderStoreBytes(config.orderCapacity)));
    const recoveryChannels = Array.from({ length: config.matchingShards }, () => new MessageChannel());
    const checkpointing = config.dataDir !== '' && config.engineCheckpointCommands > 0;
    const bufferChannels = Array.from({ length: checkpointing ? config.matchingShards : 0 }, () => new MessageChannel());
    for (let shardId = 0; shardId < config.matchingShards; shardId++) {
      const data: ShardThreadData = {
        shardId,
        orderCapacity: config.orderCapacity,
        orderMemory: orderMemory[shardId]!,
        hashSeed: randomInt(0x7fffffff),
        batchMax: config.shardBatchMax,
        commandRings: memory.commandRings.map((perShard) => perShard[shardId]!),
        resultRings: memory.resultRings[shardId]!,
        doorbell: memory.shardDoorbells[shardId]!,
        gatewayDoorbells: memory.gatewayDoorbells,
        journalRing: memory.journalRings[shardId]!,
        journalDoorbell: memory.persistenceDoorbell,
        control: memory.shardControls[shardId]!,
        recoveryPort: recoveryChannels[shardId]!.port2,
        snapshot: shardSnapshot(shardId),
        checkpointCommands: checkpointing ? config.engineCheckpointCommands : 0,
        // A stop's saved engine becomes the shard's checkpoint once loaded (adoptSavedEngines).
        checkpointFrom: typeof books === 'string' ? (usableCheckpoint(shardId)?.sequence ?? 0) : journalEnd[shardId]!,
        checkpointBuffers: checkpointing ? bufferChannels[shardId]!.port2 : null,
      };
      const transferList = data.checkpointBuffers === null ? [data.recoveryPort!] : [data.recoveryPort!, data.checkpointBuffers];
      const shard = spawnWorker(entry('shard'), { ...data }, { transferList }, `shard-${shardId}`);
      shard.on('message', (message: { type: string }) => {
        if (message.type === 'halted') logger.fatal({ shard: shardId, err: (message as ShardHalted).message }, 'an internal check failed in a shard: it halted; its commands fail SHARD_HALTED until the venue is restarted');
      });
      venue.shards.push(shard);
    }
    const recovery = recoveryChannels.map((channel) => channel.port1);

    const control = new PersistenceControl(memory.persistenceControl);
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
      adminPorts: adminChannels.map((channel) => channel.port2),
      ownReadPorts: ownReadChannels.map((channel) => channel.port2),
      ownReadsWindow: config.ownReadsWindow,
      depthView: memory.depthView,
      tapeView: memory.tapeView,
      queueMarks: memory.queueMarks,
      openOrders: typeof books === 'string' ? null : { file: openOrdersPath(config.dataDir), token: books.token },
      openOrdersDir: config.dataDir === '' ? null : config.dataDir,
    };
    const persistence = spawnWorker(entry('persistence'), { ...persistenceData }, {
      transferList: [...persistenceData.adminPorts, ...persistenceData.ownReadPorts],
    }, 'persistence');
    venue.persistence = persistence;
    const loaded = once<PersistenceLoaded>(persistence, (m) => m.type === 'loaded', 'persistence');

    const readData: ReadThreadData = {
      databaseUrl,
      shardCount: config.matchingShards,
      control: memory.persistenceControl,
      principalIds,
      ports: readChannels.map((channel) => channel.port2),
      logLevel: config.logLevel,
      marketDataProjector: { enabled: config.marketDataProjectorEnabled, intervalMs: config.marketDataProjectorIntervalMs },
      snapshotView: memory.snapshotView,
      depthView: memory.depthView,
      competitionProfile: config.competitionProfile,
      projectionNamesPerPrincipal: config.marketDataProjectionNamesPerPrincipal,
      plannerStatisticsIntervalMs: config.plannerStatisticsIntervalMs,
    };
    venue.read = spawnWorker(entry('read'), { ...readData }, { transferList: readData.ports }, 'read');
    const readReady = once<{ type: string }>(venue.read, (m) => m.type === 'ready', 'read');

    // -- the gateways' tables learn what storage holds: four scans, four connections at once --
    const keeps = tableKeeps(memory);
    const registry = new SessionRegistry(session.active, session.known);
    const withReader = async <T>(read: (reader: pg.Client) => Promise<T>): Promise<T> => {
      const reader = pgClient({ connectionString: databaseUrl, application_name: MAIN_APPLICATION_NAME });
      await reader.connect();
      try {
        return await read(reader);
      } finally {
        await reader.end();
      }
    };
    const learnOrder = (stored: StoredMemory, order: KnownOrder) =>
      stored.order(order.ids, order.shard, order.participantId, order.clientOrderId, order.clientOrderId === null ? [0, 0] : registry.numbersOf(order.runId, order.venueSessionId));
    // Commands in storage that no saved key filter file covers: the next save comes when
    // KEY_FILTER_CHECKPOINT_COMMANDS more than these were taken (intake records committed) since the start.
    let uncovered = 0;
    const learnStorage = async () => {
      const stored = new StoredMemory(memory);
      // Every stored command's keys (and order's id) go into the filters of forgotten keys: a later miss
      // in the tables for one of them is checked in storage; any other miss is new, with no storage read.
      // The filters saved at a storage mark (a graceful stop, or a checkpoint while running: persistence/
      // key-filter-snapshot.ts) hold every key up to it, the intake records after it the rest; else
      // every stored command and order is scanned. Loaded before the tables, whose loading may evict into the filters.
      const saved = config.dataDir === '' ? 'no DATA_DIR' : await withReader((reader) => loadKeyFilters(config.dataDir, reader, memory.forgotten));
      // Fed in groups: millions of keys, each a cache miss (core/key-filter.ts addMany).
      const scopes = new KeyFilterFeed(attachForgotten(memory, 'idempotency'));
      const commandIds = new KeyFilterFeed(attachForgotten(memory, 'commandIds'));
      const orderIds = new KeyFilterFeed(attachForgotten(memory, 'orderDirectory'));
      const clientOrders = new KeyFilterFeed(attachForgotten(memory, 'clientOrders'));
      const scanned = typeof saved === 'string';
      const [remembered, , storedKeys, storedOrders, takenAfter] = await Promise.all([
        withReader((reader) => recentCommands(reader, Math.min(keeps, START_RECENT_COMMANDS), (scope, payloadHead, commandId) => stored.command(scope, payloadHead, commandId))),
        withReader((reader) => knownOrders(reader, keeps, (order) => learnOrder(stored, order))),
        !scanned
          ? -1
          : withReader((reader) =>
              storedCommandKeys(reader, (scope, commandId) => {
                scopes.push(scope, 0);
                commandIds.push(commandId, 0);
              }),
            ),
        !scanned
          ? -1
          : withReader((reader) =>
              storedOrderIds(
                reader,
                (orderId) => orderIds.push(orderId, 0),
                (participantId, clientOrderId) => clientOrders.push(wordsOf(clientOrderDigest(participantId, clientOrderId)), 0),
              ),
            ),
        scanned
          ? -1
          : withReader((reader) =>
              intakeKeysSince(reader, intakeCommit(saved.mark), (keys) => {
                scopes.push(keys.scope, 0);
                commandIds.push(keys.commandId, 0);
                if (keys.orderId !== null) orderIds.push(keys.orderId, 0);
                if (keys.clientOrder !== null) clientOrders.push(wordsOf(clientOrderDigest(keys.clientOrder.participantId, keys.clientOrder.clientOrderId)), 0);
              }),
            ),
      ]);
      for (const feed of [scopes, commandIds, orderIds, clientOrders]) feed.flush();
      uncovered = scanned ? storedKeys : takenAfter;
      logger.info(
        { remembered, storedKeys, storedOrders, takenAfter, keyFilters: scanned ? `scanned (${saved})` : `saved at ${saved.mark}` },
        'shared tables reloaded with the most recent commands; the key filters hold every stored one',
      );
    };
    // What storage held at start, read beside the replay. The commands taken but not yet in the
    // command log (a crash) enter storage during the start, as the persistence thread projects
    // what the journal holds and the re-drive below the rest: the tables learn those by id once
    // they are in (and their orders, as stored), not by a second pass over all of storage (2.7-
    // 3.0 s with a million stored orders, measured in a crash under load), nor by holding this
    // pass until the projections caught up (they first load the open orders: 2.5-4 s). What
    // the tables hold needs no filter: a key they evict goes into it.
    const learnedAtStart = learnStorage();
    learnedAtStart.catch(() => undefined); // awaited below, where its failure fails the start
    const learnPending = async (ids: { commandIds: string[]; orderIds: string[] }) => {
      const stored = new StoredMemory(memory);
      const commands = await withReader((reader) => commandsById(reader, ids.commandIds, (scope, payloadHead, commandId) => stored.command(scope, payloadHead, commandId)));
      const orders = await withReader((reader) => ordersById(reader, ids.orderIds, (order) => learnOrder(stored, order)));
      logger.info({ commands, orders }, 'the commands the start put in storage, and their orders, learned by the shared tables');
    };

    // -- shards: restored from the last stop, or each book rebuilt from its journal, every shard at once, each on its own connection --
    const shardsReady = await Promise.all(venue.shards.map((worker, id) => once<ShardReady>(worker, (m) => m.type === 'ready', `shard ${id}`)));
    let replayed = 0;
    started('shardsLoaded');
    const replayMs = recovery.map(() => 0);
    const journalDurable = await Promise.all(
      recovery.map(async (port, shard) => {
        const replayStarted = performance.now();
        const held = shardsReady[shard]!.restored === null ? 0 : shardsReady[shard]!.sequence;
        if (held === journalEnd[shard]) return held;
        const reader = pgClient({ connectionString: databaseUrl, application_name: MAIN_APPLICATION_NAME });
        await reader.connect();
        const replay = pipelinedAsker(port);
        try {
          return await readJournal(reader, shard, held, async (payload, bytes, lastSequence) => {
            const answer = await replay.ask({ type: 'replay', payload, bytes }, [payload]);
            if (answer.type !== 'replayed') throw new Error(`shard ${shard} answered a replay with ${answer.type}`);
            if (answer.sequence !== lastSequence) throw new Error(`shard ${shard} replayed up to ${answer.sequence}, the journal holds ${lastSequence}`);
            replayed += answer.commands;
            return answer.payload; // the page's buffer, back for the next page
          });
        } finally {
          replay.close();
          replayMs[shard] = Math.round(performance.now() - replayStarted);
          await reader.end();
        }
      }),
    );
    started('books');
    if (checkpointing && typeof books !== 'string') {
      const saved = shardsReady.filter((ready) => ready.restored === 'stop').map((ready) => ({ shard: ready.shardId, file: engineSnapshotPath(config.dataDir, ready.shardId), token: books.token, sequence: journalEnd[ready.shardId]! }));
      await adoptSavedEngines(client, config.dataDir, saved, checkpointNotes, logger);
    }
    logger.info(
      {
        replayed,
        journalDurable,
        loadMs: shardsReady.map((ready) => ready.loadMs),
        replayMs,
        books: shardsReady.map((ready) =>
          ready.restored === 'stop'
            ? 'saved at the last stop'
            : ready.restored === 'checkpoint'
              ? `checkpoint at ${ready.sequence}, then the journal to ${journalDurable[ready.shardId]}`
              : `replayed (${ready.why ?? (checkpointNotes[ready.shardId] ? `the checkpoint at ${checkpointNotes[ready.shardId]!.sequence} is past the journal's end` : (books as string))})`,
        ),
      },
      'order books restored',
    );

    // -- persistence: once loaded and caught up, it takes the journal positions and starts writing --
    const { redrive, pendingIds } = await loaded;
    started('persistenceLoaded');
    persistence.postMessage({ type: 'journal', journalDurable: [...journalDurable] });
    await once<{ type: string }>(persistence, (m) => m.type === 'ready', 'persistence');

    // -- re-drive what was captured (maybe acknowledged) but never journaled --
    let redriven = 0;
    for (const { shard, slots, count } of redrive) {
      const answer = await ask(recovery[shard]!, { type: 'redrive', slots }, [slots]);
      if (answer.commands !== count) throw new Error(`shard ${shard} re-drove ${answer.commands} of ${count} commands`);
      journalDurable[shard] = answer.sequence;
      redriven += count;
    }
    if (redriven > 0) {
      await until(
        () => journalDurable.every((sequence, shard) => control.journalCommitted(shard) >= sequence && control.projected(shard) >= sequence),
        're-driven commands did not become durable',
      );
      logger.info({ commands: redriven }, 'captured commands re-driven to a terminal status');
    }
    // -- a session roll the venue stopped in the middle of (or before its expiry began): finished before ready --
    const expiries = await Promise.all(recovery.map((port) => ask(port, { type: 'expire', floor: session.active.sessionNo })));
    if (expiries.some((answer) => answer.type !== 'expired')) throw new Error('a shard answered the expiry with something else');
    if (expiries.some((answer) => answer.commands > 0)) {
      expiries.forEach((answer, shard) => {
        if (answer.commands > 0) journalDurable[shard] = answer.sequence;
      });
      await until(
        () => journalDurable.every((sequence, shard) => control.journalCommitted(shard) >= sequence && control.projected(shard) >= sequence),
        'the ended session\'s expiry did not become durable',
      );
      logger.info({ orders: expiries.map((answer) => (answer.type === 'expired' ? answer.orders : 0)), session: session.active }, 'the DAY orders of ended sessions expired (a roll the venue stopped during)');
    }
    await learnedAtStart;
    if (pendingIds.commandIds.length > 0) await learnPending(pendingIds); // after the pass: these are the newest
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
        buffers: bufferChannels.map((channel) => channel.port1),
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

/**
 * The bound on open connections (gateway/connection-guard.ts): counted from the files open
 * now, before the gateways listen; the gateways stop and start accepting when it says.
 */
function connectionGuard(config: VenueConfig, memory: VenueMemory, venue: Venue): ConnectionGuard {
  const marks = new QueueMarks(memory.queueMarks);
  const slot = QUEUE_SLOTS.connections(config.gatewayThreads);
  const guard = new ConnectionGuard(
    { maxConnections: config.maxConnections, fileLimit: fileLimit(), baseline: openFiles() },
    (accepting, connections) => {
      if (accepting) logger.info({ connections, limit: guard.limit }, 'open connections fell below the limit: accepting new connections again');
      else logger.warn({ connections, limit: guard.limit }, 'open connections reached the limit: new connections are refused until some close');
      for (const worker of venue.gateways) worker.postMessage({ type: 'accepting', accepting });
    },
    (connections) => marks.note(slot, connections),
  );
  Atomics.store(new Int32Array(memory.venueControl), VENUE_CONNECTION_LIMIT_WORD, guard.limit);
  return guard;
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
