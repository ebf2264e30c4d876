// Configuration from the environment, validated once at start-up with clear errors.
// Every knob the API contract names, plus the bounds of the in-memory structures.

import os from 'node:os';
import { fileURLToPath } from 'node:url';

import { PROCESSING_MODE_NAMES, type ProcessingMode } from '../core/outcome-format.ts';
import { TAPE_ROWS_MAX } from '../core/tape-view.ts';

export const PROCESSING_MODES = PROCESSING_MODE_NAMES;
export type { ProcessingMode };

export interface VenueConfig {
  host: string;
  port: number;
  gatewayThreads: number;
  matchingShards: number;
  processingMode: ProcessingMode;
  principalsFile: string;
  venueRunId: string;
  venueSessionId: string;
  logLevel: string;
  maxBodyBytes: number;
  /** Command ring slots per gateway x shard (power of two). */
  commandRingSlots: number;
  /** Result ring records per shard x gateway (power of two). */
  resultRingSlots: number;
  /** Orders held per shard (resting plus retained terminal ones). */
  orderCapacity: number;
  /** Commands a shard runs between checkpoints of its engine (persistence/engine-checkpoints.ts); 0: none. */
  engineCheckpointCommands: number;
  /** Commands between two saves of the key filters while running (persistence/key-filter-snapshot.ts); 0: only at a graceful stop. */
  keyFilterCheckpointCommands: number;
  /** Commands in flight per gateway thread before it answers 503. */
  maxInFlight: number;
  /** Requests a gateway thread lets wait for the read thread at once (reads, status, replays from storage) before it answers 503. */
  maxWaitingReads: number;
  /** Command records each gateway keeps in shared memory (power of two). */
  commandStoreRecords: number;
  /** Bytes of response and status text each gateway keeps in shared memory. */
  commandStoreArenaBytes: number;
  /** Buckets (8 entries each) of the shared idempotency, command, order and clientOrderId tables. */
  sharedTableBuckets: number;
  /** Least bits of each filter of forgotten idempotency keys, commandIds and orderIds (core/key-filter.ts); the start sizes them for the stored keys. */
  keyFilterBits: number;
  /** Most bits the start may give each of those filters. */
  keyFilterBitsMax: number;
  /** Instruments whose depth the gateways serve from shared memory; more: their depth is 503. */
  marketDataInstruments: number;
  /** Stored snapshots (instrument, projection name) the gateways serve from shared memory; more are read from storage. */
  marketDataSnapshots: number;
  /** Snapshot projection names one principal may create (the default name is the venue's); past it a refresh naming a new one is 409. */
  marketDataProjectionNamesPerPrincipal: number;
  /** Trades per instrument the gateways answer tape reads from (shared memory); 0: every tape read from storage. */
  marketDataTapeRows: number;
  shardBatchMax: number;
  /** PostgreSQL to use; empty: start the embedded server with data under dataDir. */
  databaseUrl: string;
  dataDir: string;
  /** A fresh embedded cluster is a copy of the machine's template instead of an initdb (tests, benchmarks). */
  embeddedPostgresTemplate: boolean;
  /** Tries in a row to start the embedded PostgreSQL again after it exited on its own; then the venue gives up (503) until restarted. 0: never. */
  embeddedPostgresRestarts: number;
  /** Intake records per gateway -> persistence ring (power of two). */
  intakeRingSlots: number;
  /** 64-byte slots of each gateway's ring of command bodies (the audit trail's text; power of two); full: 503 OVERLOADED. */
  bodyRingSlots: number;
  /** Journal records per shard -> persistence ring (power of two). */
  journalRingSlots: number;
  /** Most journal bytes in one persistence transaction (intake is bounded by its rings). */
  persistenceBytesMax: number;
  /** Most bytes of durable commits held un-ingested while a rebuild runs; at it, tier 1 waits (the rings fill, 503). */
  rebuildHeldBytesMax: number;
  /** Closed orders and fills the persistence thread keeps in memory per participant for own-order reads (persistence/own-reads.ts). */
  ownReadsWindow: number;
  /** How long a rebuild waits for its lock on order_lifecycle_state before it gives up (readers of the table queue behind that wait). */
  rebuildLockTimeoutMs: number;
  /** Age at which tier 2 seals its open group: the most the projection tables lag the journal while storage keeps up. */
  projectionGroupMs: number;
  /** How long an answer may wait for durability before it becomes a 503. */
  durableWaitMs: number;
  /** Largest JSON body of an operator route (settlement fact bundles). */
  adminMaxBodyBytes: number;
  /** COMPETITION_PROFILE: a name turns on the public settlement leaderboard; empty: off. */
  competitionProfile: string;
  /** The background loop that keeps the default top-of-book snapshots fresh. */
  marketDataProjectorEnabled: boolean;
  marketDataProjectorIntervalMs: number;
  /** How often the read thread looks for tables whose planner statistics went stale (persistence/planner-statistics.ts); 0: never. */
  plannerStatisticsIntervalMs: number;
  /** Open connections before the gateways stop accepting new ones (the file-descriptor limit may bound it lower: gateway/connection-guard.ts). */
  maxConnections: number;
}

export const DEFAULT_PRINCIPALS_FILE = fileURLToPath(new URL('./principals.dev.json', import.meta.url));
export const SESSION_ID_PATTERN = /^[A-Za-z0-9._:-]{1,64}$/;

type Env = Record<string, string | undefined>;

function integer(env: Env, name: string, fallback: number, min: number, max: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (!/^[0-9]+$/.test(raw)) throw new Error(`${name} must be an integer, got "${raw}"`);
  const value = Number(raw);
  if (value < min || value > max) throw new Error(`${name} must be between ${min} and ${max}, got ${value}`);
  return value;
}

function competition(env: Env): string {
  const raw = env.COMPETITION_PROFILE ?? '';
  if (raw !== '' && !/^[A-Za-z0-9._:-]{1,64}$/.test(raw)) throw new Error(`COMPETITION_PROFILE must match [A-Za-z0-9._:-]{1,64}, got "${raw}"`);
  return raw;
}

function flag(env: Env, name: string): boolean {
  const raw = env[name];
  if (raw === undefined || raw === '' || raw === 'false') return false;
  if (raw === 'true') return true;
  throw new Error(`${name} must be true or false, got "${raw}"`);
}

function powerOfTwo(env: Env, name: string, fallback: number, min: number, max: number): number {
  const value = integer(env, name, fallback, min, max);
  if ((value & (value - 1)) !== 0) throw new Error(`${name} must be a power of two, got ${value}`);
  return value;
}

export function loadConfig(env: Env = process.env): VenueConfig {
  const cores = os.availableParallelism();
  const mode = env.PROCESSING_MODE ?? 'sync-result';
  if (!(PROCESSING_MODES as readonly string[]).includes(mode)) {
    throw new Error(`PROCESSING_MODE must be one of ${PROCESSING_MODES.join(', ')}, got "${mode}"`);
  }
  const venueRunId = env.VENUE_RUN_ID ?? 'run-local';
  const venueSessionId = env.VENUE_SESSION_ID ?? 'session-1';
  for (const [name, value] of [['VENUE_RUN_ID', venueRunId], ['VENUE_SESSION_ID', venueSessionId]] as const) {
    if (!SESSION_ID_PATTERN.test(value)) throw new Error(`${name} must match ${SESSION_ID_PATTERN}, got "${value}"`);
  }
  const config: VenueConfig = {
    host: env.HOST ?? '127.0.0.1',
    port: integer(env, 'PORT', 8080, 0, 65535),
    gatewayThreads: integer(env, 'GATEWAY_THREADS', Math.max(1, cores), 1, 64),
    matchingShards: integer(env, 'MATCHING_SHARDS', Math.max(1, cores), 1, 64),
    processingMode: mode as ProcessingMode,
    principalsFile: env.PRINCIPALS_FILE ?? DEFAULT_PRINCIPALS_FILE,
    venueRunId,
    venueSessionId,
    logLevel: env.LOG_LEVEL ?? 'info',
    maxBodyBytes: integer(env, 'MAX_BODY_BYTES', 16 * 1024, 256, 1024 * 1024),
    commandRingSlots: powerOfTwo(env, 'COMMAND_RING_SLOTS', 4096, 1, 1 << 20),
    resultRingSlots: powerOfTwo(env, 'RESULT_RING_SLOTS', 16384, 16, 1 << 22),
    orderCapacity: integer(env, 'ORDER_CAPACITY', 1 << 21, 16, 1 << 24),
    engineCheckpointCommands: integer(env, 'ENGINE_CHECKPOINT_COMMANDS', 250_000, 0, 1 << 30),
    keyFilterCheckpointCommands: integer(env, 'KEY_FILTER_CHECKPOINT_COMMANDS', 250_000, 0, 1 << 30),
    maxInFlight: integer(env, 'MAX_IN_FLIGHT', 16384, 1, 1 << 20),
    maxWaitingReads: integer(env, 'MAX_WAITING_READS', 4096, 1, 1 << 20),
    commandStoreRecords: powerOfTwo(env, 'COMMAND_STORE_RECORDS', 1 << 17, 16, 1 << 24),
    commandStoreArenaBytes: integer(env, 'COMMAND_STORE_ARENA_BYTES', 128 * 1024 * 1024, 64 * 1024, 2 ** 31 - 8),
    sharedTableBuckets: powerOfTwo(env, 'SHARED_TABLE_BUCKETS', 1 << 17, 16, 1 << 22),
    keyFilterBits: powerOfTwo(env, 'KEY_FILTER_BITS', 1 << 27, 1 << 10, 1 << 30),
    keyFilterBitsMax: powerOfTwo(env, 'KEY_FILTER_BITS_MAX', 1 << 30, 1 << 10, 1 << 30),
    marketDataInstruments: integer(env, 'MARKET_DATA_INSTRUMENTS', 4096, 1, 1 << 20),
    marketDataSnapshots: integer(env, 'MARKET_DATA_SNAPSHOTS', 16384, 1, 1 << 22),
    marketDataProjectionNamesPerPrincipal: integer(env, 'MARKET_DATA_PROJECTION_NAMES_PER_PRINCIPAL', 4, 0, 1024),
    marketDataTapeRows: integer(env, 'MARKET_DATA_TAPE_ROWS', 128, 0, TAPE_ROWS_MAX),
    shardBatchMax: integer(env, 'SHARD_BATCH_MAX', 64, 1, 4096),
    databaseUrl: env.DATABASE_URL ?? '',
    dataDir: env.DATA_DIR ?? '.data',
    embeddedPostgresTemplate: flag(env, 'EMBEDDED_POSTGRES_TEMPLATE'),
    embeddedPostgresRestarts: integer(env, 'EMBEDDED_POSTGRES_RESTARTS', 10, 0, 1000),
    intakeRingSlots: powerOfTwo(env, 'INTAKE_RING_SLOTS', 8192, 16, 1 << 20),
    bodyRingSlots: powerOfTwo(env, 'BODY_RING_SLOTS', 1 << 17, 1 << 10, 1 << 24),
    journalRingSlots: powerOfTwo(env, 'JOURNAL_RING_SLOTS', 65536, 64, 1 << 22),
    persistenceBytesMax: integer(env, 'PERSISTENCE_BYTES_MAX', 16 * 1024 * 1024, 4096, 1 << 30),
    rebuildHeldBytesMax: integer(env, 'REBUILD_HELD_BYTES_MAX', 256 * 1024 * 1024, 4096, 1 << 30),
    ownReadsWindow: integer(env, 'OWN_READS_WINDOW', 2000, 1, 1_000_000),
    rebuildLockTimeoutMs: integer(env, 'REBUILD_LOCK_TIMEOUT_MS', 30_000, 100, 600_000),
    projectionGroupMs: integer(env, 'PROJECTION_GROUP_MS', 50, 1, 10_000),
    durableWaitMs: integer(env, 'DURABLE_WAIT_MS', 5_000, 10, 600_000),
    adminMaxBodyBytes: integer(env, 'ADMIN_MAX_BODY_BYTES', 1024 * 1024, 1024, 64 * 1024 * 1024),
    competitionProfile: competition(env),
    marketDataProjectorEnabled: flag(env, 'MARKET_DATA_PROJECTOR_ENABLED'),
    marketDataProjectorIntervalMs: integer(env, 'MARKET_DATA_PROJECTOR_INTERVAL_MS', 100, 10, 60_000),
    plannerStatisticsIntervalMs: integer(env, 'PLANNER_STATISTICS_INTERVAL_MS', 10_000, 0, 3_600_000),
    maxConnections: integer(env, 'MAX_CONNECTIONS', 10_000, 1, 1 << 20),
  };
  if (config.bodyRingSlots * 64 < 2 * config.maxBodyBytes) {
    throw new Error(`BODY_RING_SLOTS must hold two bodies of MAX_BODY_BYTES (${config.maxBodyBytes}): at least ${Math.ceil((2 * config.maxBodyBytes) / 64)} slots, got ${config.bodyRingSlots}`);
  }
  if (config.keyFilterBitsMax < config.keyFilterBits) {
    throw new Error(`KEY_FILTER_BITS_MAX must be at least KEY_FILTER_BITS (${config.keyFilterBits}), got ${config.keyFilterBitsMax}`);
  }
  const tapeTrades = config.marketDataInstruments * config.marketDataTapeRows;
  if (tapeTrades > TAPE_VIEW_TRADES_MAX) {
    throw new Error(`MARKET_DATA_INSTRUMENTS × MARKET_DATA_TAPE_ROWS must be at most ${TAPE_VIEW_TRADES_MAX} (the tape view: 56 B a trade in shared memory), got ${tapeTrades}`);
  }
  return config;
}

/** The most trades the tape view may hold (about 900 MiB of shared memory). */
export const TAPE_VIEW_TRADES_MAX = 1 << 24;
