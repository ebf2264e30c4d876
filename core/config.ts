// Every setting the venue reads from its environment: one table that parsing, the
// errors of a bad value and the configuration reference (docs/configuration.md and the
// README, written by runtime/config-docs.ts) all come from, so they cannot drift.

import { PROCESSING_MODE_NAMES, type ProcessingMode } from './outcome-format.ts';
import { TAPE_ROWS_MAX } from './tape-view.ts';

export const PROCESSING_MODES = PROCESSING_MODE_NAMES;
export type { ProcessingMode };

export interface VenueConfig {
  host: string;
  port: number;
  gatewayThreads: number;
  matchingShards: number;
  processingMode: ProcessingMode;
  /** Empty: the development principals (runtime/config.ts names them). */
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
  /** Threads of the settlement pool (persistence/settlement-pool.ts): settlement reads and operator requests run there. */
  settlementThreads: number;
  /** Settlement requests waiting for a pool thread before the next is 503 OVERLOADED. */
  settlementQueue: number;
  /** Open connections before the gateways stop accepting new ones (the file-descriptor limit may bound it lower: gateway/connection-guard.ts). */
  maxConnections: number;
}

export const SESSION_ID_PATTERN = /^[A-Za-z0-9._:-]{1,64}$/;
const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

/** The most trades the tape view may hold (about 900 MiB of shared memory). */
export const TAPE_VIEW_TRADES_MAX = 1 << 24;

export type SettingSection = 'listening' | 'storage' | 'bounds' | 'market-data-loop';

export interface Setting {
  env: string;
  key: keyof VenueConfig;
  section: SettingSection;
  /** text: any string; pattern: empty or SESSION_ID_PATTERN; choice: one of `choices`. */
  kind: 'integer' | 'power-of-two' | 'flag' | 'text' | 'pattern' | 'choice';
  /** The value when unset or empty; 'cores': the machine's available parallelism. */
  fallback: number | string | boolean;
  min?: number;
  max?: number;
  choices?: readonly string[];
  /** How the reference shows the default, when not the fallback itself. */
  defaultText?: string;
  /** A bound beyond the range, checked across settings in parseConfig. */
  rangeNote?: string;
  /** The line of the README's table of the most used settings; absent: not in that table. */
  brief?: string;
  meaning: string;
}

export const SETTINGS: readonly Setting[] = [
  { env: 'HOST', key: 'host', section: 'listening', kind: 'text', fallback: '127.0.0.1', brief: 'listen address', meaning: 'listen address' },
  {
    env: 'PORT',
    key: 'port',
    section: 'listening',
    kind: 'integer',
    fallback: 8080,
    min: 0,
    max: 65535,
    brief: 'listen port; `0` picks a free port (logged); a port in use is refused',
    meaning:
      "listen port; `0` picks a free one (logged at start). The start binds it exclusively before anything else and holds it until the first gateway thread is about to listen, so a port in use (another venue's included) is refused and neither the embedded PostgreSQL nor another socket can be handed it (`gateway/port-claim.ts`)",
  },
  {
    env: 'GATEWAY_THREADS',
    key: 'gatewayThreads',
    section: 'listening',
    kind: 'integer',
    fallback: 'cores',
    min: 1,
    max: 64,
    brief: 'HTTP threads',
    meaning: 'HTTP threads, all on one port (`SO_REUSEPORT`)',
  },
  {
    env: 'MATCHING_SHARDS',
    key: 'matchingShards',
    section: 'listening',
    kind: 'integer',
    fallback: 'cores',
    min: 1,
    max: 64,
    brief: 'matching threads; fixed by the first start on a database',
    meaning: "matching threads; an instrument's shard is a stable hash of its id",
  },
  {
    env: 'PROCESSING_MODE',
    key: 'processingMode',
    section: 'listening',
    kind: 'choice',
    fallback: 'sync-result',
    choices: PROCESSING_MODE_NAMES,
    brief: 'default mode; `X-Processing-Mode` overrides it per request',
    meaning: 'default mode; the `X-Processing-Mode` header overrides it per request',
  },
  {
    env: 'PRINCIPALS_FILE',
    key: 'principalsFile',
    section: 'listening',
    kind: 'text',
    fallback: '',
    defaultText: '`gateway/principals.dev.json`',
    brief: 'principals, token SHA-256 hashes, roles, participants and accounts',
    meaning: 'principals: token SHA-256 hashes, roles, participants and accounts',
  },
  {
    env: 'VENUE_RUN_ID',
    key: 'venueRunId',
    section: 'listening',
    kind: 'pattern',
    fallback: 'run-local',
    brief: "the initial venue session's run; a restart keeps the open session",
    meaning: "the initial venue session's pair; a restart keeps the open session whatever they say; `POST /admin/v1/venue/sessions` rolls it",
  },
  {
    env: 'VENUE_SESSION_ID',
    key: 'venueSessionId',
    section: 'listening',
    kind: 'pattern',
    fallback: 'session-1',
    brief: 'the initial venue session',
    meaning: "the initial venue session's pair; a restart keeps the open session whatever they say; `POST /admin/v1/venue/sessions` rolls it",
  },
  {
    env: 'LOG_LEVEL',
    key: 'logLevel',
    section: 'listening',
    kind: 'choice',
    fallback: 'info',
    choices: LOG_LEVELS,
    brief: 'pino level; JSON lines on stdout',
    meaning: 'JSON lines on stdout; nothing per command at `info`',
  },
  {
    env: 'COMPETITION_PROFILE',
    key: 'competitionProfile',
    section: 'listening',
    kind: 'pattern',
    fallback: '',
    defaultText: 'unset',
    meaning: 'a name serves the public settlement leaderboard and lists it in the availability inventory',
  },
  {
    env: 'DATABASE_URL',
    key: 'databaseUrl',
    section: 'storage',
    kind: 'text',
    fallback: '',
    defaultText: 'unset',
    brief: 'use this PostgreSQL; unset: the embedded server in `DATA_DIR/postgres`',
    meaning: 'use this PostgreSQL; unset: start the embedded server with its data in `DATA_DIR/postgres`, stopped on exit',
  },
  {
    env: 'DATA_DIR',
    key: 'dataDir',
    section: 'storage',
    kind: 'text',
    fallback: '.data',
    brief: "the embedded server's folder, and where a stop saves engines, open orders and key filters",
    meaning:
      "the embedded server's folder (created on first start; reached over a Unix socket in `DATA_DIR/run`, mode 0700, and on 127.0.0.1 for `psql`; a path too deep for a socket means TCP alone), and where the venue saves what a start can reuse (below; with `DATABASE_URL` too; empty: nothing saved)",
  },
  {
    env: 'EMBEDDED_POSTGRES_RESTARTS',
    key: 'embeddedPostgresRestarts',
    section: 'storage',
    kind: 'integer',
    fallback: 10,
    min: 0,
    max: 1000,
    brief: 'tries in a row to start the embedded server again after it died; then 503 until restarted',
    meaning:
      'tries in a row to start the embedded PostgreSQL again after it exited on its own (a try counts until the server stayed up 60 s); past them the venue gives up (fatal log, `/readyz` and the status route say so, orders 503) until restarted; 0: never start it again',
  },
  {
    env: 'EMBEDDED_POSTGRES_TEMPLATE',
    key: 'embeddedPostgresTemplate',
    section: 'storage',
    kind: 'flag',
    fallback: false,
    meaning:
      '`true`: a fresh embedded cluster is a copy of one initialised once per machine (`<tmpdir>/venue-postgres-template-<key>`) instead of its own `initdb`; for tests and benchmarks (shared password and system identifier, not fsynced). A template not owned by the user, writable by others, or missing a file is refused',
  },
  {
    env: 'DURABLE_WAIT_MS',
    key: 'durableWaitMs',
    section: 'storage',
    kind: 'integer',
    fallback: 5_000,
    min: 10,
    max: 600_000,
    brief: "the bound on an order command's answer; past it 503 with `Retry-After`",
    meaning:
      "the bound on an order command's answer from when it is queued to its shard: its result and its durability together (and a retry's wait for an original in flight); past it 503 `UNAVAILABLE` with `Retry-After`, the command going on",
  },
  {
    env: 'PERSISTENCE_BYTES_MAX',
    key: 'persistenceBytesMax',
    section: 'storage',
    kind: 'integer',
    fallback: 16 * 1024 * 1024,
    min: 4096,
    max: 1 << 30,
    meaning: 'most journal bytes in one commit (a commit also closes whenever the writer is free)',
  },
  {
    env: 'PROJECTION_GROUP_MS',
    key: 'projectionGroupMs',
    section: 'storage',
    kind: 'integer',
    fallback: 50,
    min: 1,
    max: 10_000,
    meaning:
      'age at which tier 2 seals its open group of projection rows (`command_log`, `executions`, `trades`, `order_lifecycle_state`): the most those tables lag the journal while storage keeps up; a read that needs them seals the group at once (docs/decisions/0042)',
  },
  {
    env: 'REBUILD_LOCK_TIMEOUT_MS',
    key: 'rebuildLockTimeoutMs',
    section: 'storage',
    kind: 'integer',
    fallback: 30_000,
    min: 100,
    max: 600_000,
    meaning: 'how long the lifecycle rebuild waits for its lock on `order_lifecycle_state`; past it 503 and nothing changed',
  },
  {
    env: 'OWN_READS_WINDOW',
    key: 'ownReadsWindow',
    section: 'storage',
    kind: 'integer',
    fallback: 2000,
    min: 1,
    max: 1_000_000,
    meaning: 'closed orders and fills kept in memory per participant for own-order reads; a read these and the open orders cannot answer exactly goes to PostgreSQL (docs/decisions/0038)',
  },
  {
    env: 'REBUILD_HELD_BYTES_MAX',
    key: 'rebuildHeldBytesMax',
    section: 'storage',
    kind: 'integer',
    fallback: 256 * 1024 * 1024,
    min: 4096,
    max: 1 << 30,
    meaning: "most bytes of durable commits whose ingest a running rebuild holds; at it the writer waits for the rebuild's end (commands answer 503)",
  },
  {
    env: 'ENGINE_CHECKPOINT_COMMANDS',
    key: 'engineCheckpointCommands',
    section: 'storage',
    kind: 'integer',
    fallback: 250_000,
    min: 0,
    max: 1 << 30,
    brief: "commands between saves of a shard's engine while running (0: none)",
    meaning: "commands of a shard's journal between checkpoints of its engine while running (with `DATA_DIR`; 0: none); a start after a crash replays at most about this many per shard",
  },
  {
    env: 'KEY_FILTER_CHECKPOINT_COMMANDS',
    key: 'keyFilterCheckpointCommands',
    section: 'storage',
    kind: 'integer',
    fallback: 250_000,
    min: 0,
    max: 1 << 30,
    brief: 'commands between saves of the key filters while running (0: at a stop only)',
    meaning: 'commands between two saves of the key filters while running (with `DATA_DIR`; 0: only at a graceful stop); a start after a crash reads the intake records after the last save',
  },
  {
    env: 'PLANNER_STATISTICS_INTERVAL_MS',
    key: 'plannerStatisticsIntervalMs',
    section: 'storage',
    kind: 'integer',
    fallback: 10_000,
    min: 0,
    max: 3_600_000,
    meaning: 'how often the read thread analyzes read tables whose planner statistics went stale (0: never, autovacuum alone)',
  },
  {
    env: 'SETTLEMENT_THREADS',
    key: 'settlementThreads',
    section: 'storage',
    kind: 'integer',
    fallback: 1,
    min: 1,
    max: 16,
    meaning:
      'threads of the settlement pool (piscina), where settlement reads and operator requests run, off the read thread; each keeps its own replayed runs (up to 100,000 facts, about 190 MiB) and two PostgreSQL connections',
  },
  { env: 'MAX_BODY_BYTES', key: 'maxBodyBytes', section: 'bounds', kind: 'integer', fallback: 16 * 1024, min: 256, max: 1024 * 1024, meaning: 'larger order and session-roll bodies are 413' },
  {
    env: 'ADMIN_MAX_BODY_BYTES',
    key: 'adminMaxBodyBytes',
    section: 'bounds',
    kind: 'integer',
    fallback: 1024 * 1024,
    min: 1024,
    max: 64 * 1024 * 1024,
    meaning: 'larger settlement operator bodies are 413; a fact bundle also holds at most 1,000 facts',
  },
  {
    env: 'MAX_CONNECTIONS',
    key: 'maxConnections',
    section: 'bounds',
    kind: 'integer',
    fallback: 10_000,
    min: 1,
    max: 1 << 20,
    brief: 'open connections before new ones are refused',
    meaning:
      'open connections before the gateways stop listening (new ones refused by the kernel until the count falls 5% below); the file-descriptor limit less 256 may bound it lower; the limit in force is logged and reported with the queues',
  },
  {
    env: 'MAX_IN_FLIGHT',
    key: 'maxInFlight',
    section: 'bounds',
    kind: 'integer',
    fallback: 16384,
    min: 1,
    max: 1 << 20,
    meaning: 'commands awaiting a result per gateway thread; full → 503 `OVERLOADED`',
  },
  {
    env: 'MAX_WAITING_READS',
    key: 'maxWaitingReads',
    section: 'bounds',
    kind: 'integer',
    fallback: 4096,
    min: 1,
    max: 1 << 20,
    meaning:
      'requests a gateway lets wait for the read thread at once (reads from storage, command status, replays, claim checks); full → 503 `OVERLOADED` (operator requests to the persistence thread: 64)',
  },
  {
    env: 'SETTLEMENT_QUEUE',
    key: 'settlementQueue',
    section: 'bounds',
    kind: 'integer',
    fallback: 64,
    min: 1,
    max: 4096,
    meaning: 'settlement requests waiting for a thread of the settlement pool; full → 503 `OVERLOADED`',
  },
  { env: 'COMMAND_RING_SLOTS', key: 'commandRingSlots', section: 'bounds', kind: 'power-of-two', fallback: 4096, min: 1, max: 1 << 20, meaning: '128-byte slots per gateway→shard ring; full → 503' },
  { env: 'RESULT_RING_SLOTS', key: 'resultRingSlots', section: 'bounds', kind: 'power-of-two', fallback: 16384, min: 16, max: 1 << 22, meaning: 'records per shard→gateway ring' },
  {
    env: 'INTAKE_RING_SLOTS',
    key: 'intakeRingSlots',
    section: 'bounds',
    kind: 'power-of-two',
    fallback: 8192,
    min: 16,
    max: 1 << 20,
    meaning: 'intake records (832 bytes) per gateway→persistence ring; full → 503',
  },
  {
    env: 'BODY_RING_SLOTS',
    key: 'bodyRingSlots',
    section: 'bounds',
    kind: 'power-of-two',
    fallback: 1 << 17,
    min: 1 << 10,
    max: 1 << 24,
    rangeNote: 'at least two bodies of `MAX_BODY_BYTES`',
    meaning: "64-byte slots per gateway of the commands' JSON texts on their way to the journal (the audit trail); full → 503 `OVERLOADED`",
  },
  {
    env: 'JOURNAL_RING_SLOTS',
    key: 'journalRingSlots',
    section: 'bounds',
    kind: 'power-of-two',
    fallback: 65536,
    min: 64,
    max: 1 << 22,
    meaning: '64-byte journal records per shard→persistence ring; full → the shard waits, its rings fill, 503',
  },
  {
    env: 'SHARD_BATCH_MAX',
    key: 'shardBatchMax',
    section: 'bounds',
    kind: 'integer',
    fallback: 64,
    min: 1,
    max: 4096,
    meaning: 'commands a shard takes from one ring at a time (and prefetches together)',
  },
  {
    env: 'ORDER_CAPACITY',
    key: 'orderCapacity',
    section: 'bounds',
    kind: 'integer',
    fallback: 1 << 21,
    min: 16,
    max: 1 << 24,
    brief: 'orders held per shard, resting plus retained terminal ones',
    meaning: 'orders held per shard, resting plus retained terminal ones (184 MiB of order store at the default)',
  },
  {
    env: 'COMMAND_STORE_RECORDS',
    key: 'commandStoreRecords',
    section: 'bounds',
    kind: 'power-of-two',
    fallback: 1 << 17,
    min: 16,
    max: 1 << 24,
    meaning: 'command records each gateway keeps in shared memory',
  },
  {
    env: 'COMMAND_STORE_ARENA_BYTES',
    key: 'commandStoreArenaBytes',
    section: 'bounds',
    kind: 'integer',
    fallback: 128 * 1024 * 1024,
    min: 64 * 1024,
    max: 2 ** 31 - 8,
    meaning: 'bytes of answers and status text each gateway keeps',
  },
  {
    env: 'SHARED_TABLE_BUCKETS',
    key: 'sharedTableBuckets',
    section: 'bounds',
    kind: 'power-of-two',
    fallback: 1 << 17,
    min: 16,
    max: 1 << 22,
    meaning: 'buckets (8 entries) of the shared idempotency, commandId, orderId and clientOrderId tables',
  },
  {
    env: 'KEY_FILTER_BITS',
    key: 'keyFilterBits',
    section: 'bounds',
    kind: 'power-of-two',
    fallback: 1 << 27,
    min: 1 << 10,
    max: 1 << 30,
    meaning:
      'the least bits of each of the four filters of keys the tables forgot (16 MiB each, rated for 13.4 M keys at about 1% false positives; past the rating the false positives grow: about 5.5% at 1.5 times, 14% at twice, 64% at 4 times); each start sizes them above this floor for what storage holds',
  },
  {
    env: 'KEY_FILTER_BITS_MAX',
    key: 'keyFilterBitsMax',
    section: 'bounds',
    kind: 'power-of-two',
    fallback: 1 << 30,
    min: 1 << 10,
    max: 1 << 30,
    rangeNote: '≥ `KEY_FILTER_BITS`',
    meaning: 'the most bits a start may give each filter (128 MiB each, rated for 107 M keys); a start whose stored keys want more warns',
  },
  {
    env: 'MARKET_DATA_INSTRUMENTS',
    key: 'marketDataInstruments',
    section: 'bounds',
    kind: 'integer',
    fallback: 4096,
    min: 1,
    max: 1 << 20,
    meaning: 'instruments whose depth the gateways serve from shared memory (2.5 KB each); beyond, depth is 503 `OVERLOADED`',
  },
  {
    env: 'MARKET_DATA_SNAPSHOTS',
    key: 'marketDataSnapshots',
    section: 'bounds',
    kind: 'integer',
    fallback: 16384,
    min: 1,
    max: 1 << 22,
    meaning: 'stored snapshots (instrument × projection name) served from shared memory; beyond, read from PostgreSQL',
  },
  {
    env: 'MARKET_DATA_PROJECTION_NAMES_PER_PRINCIPAL',
    key: 'marketDataProjectionNamesPerPrincipal',
    section: 'bounds',
    kind: 'integer',
    fallback: 4,
    min: 0,
    max: 1024,
    meaning:
      'snapshot projection names one principal may create; a refresh naming a new one past it is 409 `LIMIT_EXCEEDED`; the default name and existing names always refresh; kept in `runtime.snapshot_projections`',
  },
  {
    env: 'MARKET_DATA_TAPE_ROWS',
    key: 'marketDataTapeRows',
    section: 'bounds',
    kind: 'integer',
    fallback: 128,
    min: 0,
    max: TAPE_ROWS_MAX,
    meaning:
      'most recent trades per instrument the gateways answer tape reads from (56 B a trade; 29 MiB at the defaults); older pages are read from PostgreSQL; 0: every tape read from PostgreSQL; `MARKET_DATA_INSTRUMENTS` × this at most 2^24',
  },
  {
    env: 'MARKET_DATA_PROJECTOR_ENABLED',
    key: 'marketDataProjectorEnabled',
    section: 'market-data-loop',
    kind: 'flag',
    fallback: false,
    brief: '`true` runs the loop that keeps the default top-of-book snapshots fresh',
    meaning: '`true` runs the loop that refreshes the default top-of-book snapshots whenever the books moved; status at `GET /internal/market-data/projector/status`',
  },
  {
    env: 'MARKET_DATA_PROJECTOR_INTERVAL_MS',
    key: 'marketDataProjectorIntervalMs',
    section: 'market-data-loop',
    kind: 'integer',
    fallback: 100,
    min: 10,
    max: 60_000,
    meaning: 'how often that loop looks',
  },
];

type Env = Record<string, string | undefined>;

function parseSetting(setting: Setting, env: Env, cores: number): number | string | boolean {
  const name = setting.env;
  const raw = env[name];
  const unset = raw === undefined || raw === '';
  switch (setting.kind) {
    case 'flag':
      if (unset || raw === 'false') return false;
      if (raw === 'true') return true;
      throw new Error(`${name} must be true or false, got "${raw}"`);
    case 'integer':
    case 'power-of-two': {
      const min = setting.min!;
      const max = setting.max!;
      if (unset) return setting.fallback === 'cores' ? Math.min(max, Math.max(min, cores)) : (setting.fallback as number);
      if (!/^[0-9]+$/.test(raw)) throw new Error(`${name} must be an integer, got "${raw}"`);
      const value = Number(raw);
      if (value < min || value > max) throw new Error(`${name} must be between ${min} and ${max}, got ${value}`);
      if (setting.kind === 'power-of-two' && (value & (value - 1)) !== 0) throw new Error(`${name} must be a power of two, got ${value}`);
      return value;
    }
    default: {
      const value = raw ?? (setting.fallback as string);
      if (setting.kind === 'choice' && !setting.choices!.includes(value)) throw new Error(`${name} must be one of ${setting.choices!.join(', ')}, got "${value}"`);
      if (setting.kind === 'pattern' && value !== '' && !SESSION_ID_PATTERN.test(value)) throw new Error(`${name} must match ${SESSION_ID_PATTERN}, got "${value}"`);
      return value;
    }
  }
}

/** The venue's settings from `env`; a bad value throws an error naming its variable. `cores`: the default thread counts. */
export function parseConfig(env: Env, cores: number): VenueConfig {
  const parsed = {} as Record<keyof VenueConfig, number | string | boolean>;
  for (const setting of SETTINGS) parsed[setting.key] = parseSetting(setting, env, cores);
  const config = parsed as unknown as VenueConfig;
  if (config.venueRunId === '') throw new Error(`VENUE_RUN_ID must match ${SESSION_ID_PATTERN}, got ""`);
  if (config.venueSessionId === '') throw new Error(`VENUE_SESSION_ID must match ${SESSION_ID_PATTERN}, got ""`);
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
