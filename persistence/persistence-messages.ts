// The messages between the main thread and the persistence thread: the data it starts
// with, what it says once storage is loaded, and the save of its open orders at a stop.

import type { MessagePort } from 'node:worker_threads';
import type { WriterLimits } from './journal-writer.ts';
import type { RedriveShard } from './pending-intake.ts';

/**
 * The thread's first message: storage loaded and the projections caught up, with what
 * recovery must re-drive. It then waits for { type: 'journal', journalDurable } (the
 * last sequence per shard the replay reached), starts writing and says { type: 'ready' }.
 */
export interface PersistenceLoaded {
  type: 'loaded';
  redrive: RedriveShard[];
  /** Journal batches the projections lacked and now hold. */
  projectedBatches: number;
  /** The commands taken but not in the command log at start (the catch-up projected them, the re-drive will): ids for the tables. */
  pendingIds: { commandIds: string[]; orderIds: string[] };
}

export interface PersistenceThreadData {
  databaseUrl: string;
  shardCount: number;
  intakeRings: SharedArrayBuffer[];
  bodyRings: SharedArrayBuffer[];
  journalRings: SharedArrayBuffer[];
  doorbell: SharedArrayBuffer;
  gatewayDoorbells: SharedArrayBuffer[];
  control: SharedArrayBuffer;
  principalIds: string[];
  limits: WriterLimits;
  /** REBUILD_HELD_BYTES_MAX: while a rebuild holds the ingest, the writer takes no commit once the held ones reach it. */
  heldBytesMax: number;
  /** REBUILD_LOCK_TIMEOUT_MS: the rebuild's lock_timeout. */
  rebuildLockTimeoutMs: number;
  /** PROJECTION_GROUP_MS: the open group is sealed at this age. */
  projectionGroupMs: number;
  logLevel: string;
  /** One port per gateway thread, for operator requests. */
  adminPorts: MessagePort[];
  /** One port per gateway thread, for own-order and fills reads (the in-memory model). */
  ownReadPorts: MessagePort[];
  /** OWN_READS_WINDOW: closed orders and fills kept in memory per participant. */
  ownReadsWindow: number;
  /** The gateways' view of the books (core/market-view.ts): this thread writes it. */
  depthView: SharedArrayBuffer;
  /** The gateways' view of the trade tape (core/tape-view.ts): this thread writes it. */
  tapeView: SharedArrayBuffer;
  /** The market-data stream's ring (core/market-stream.ts): this thread writes it after each durable commit. */
  marketStream: SharedArrayBuffer;
  /** The queues' marks (core/queue-marks.ts): this thread notes its sealed groups. */
  queueMarks: SharedArrayBuffer;
  /** The metrics block (core/venue-metrics.ts): this thread writes its journal commit durations. */
  metrics: SharedArrayBuffer;
  /** The open orders saved at the last graceful stop, if the database still names them (persistence/open-orders-snapshot.ts). */
  openOrders: { file: string; token: string } | null;
  /** DATA_DIR, where the open orders a graceful stop saved are kept as the checkpoint a start after a crash replays the journal onto (persistence/open-orders-snapshot.ts); null: none. */
  openOrdersDir: string | null;
}

/** Asked of a stopped persistence thread: the projector's open orders written to `file` for the next start. */
export interface PersistenceSave {
  type: 'save';
  file: string;
  token: string;
}

export type PersistenceSaved = { type: 'saved'; count: number; bytes: number } | { type: 'save-failed'; message: string };
