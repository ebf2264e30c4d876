// The venue as the main thread holds it while it starts, runs and stops: its threads,
// memory and storage; the main thread's logger; the worker threads' entries.

import type { Worker } from 'node:worker_threads';
import pino from 'pino';
import { loggerOptions } from '../core/log-format.ts';
import type { VenueConfig } from '../core/config.ts';
import type { ForgettingTable, VenueMemory } from '../gateway/venue-memory.ts';
import type { EngineCheckpoints } from '../persistence/engine-checkpoints.ts';
import type { KeyFilterCheckpoints } from '../persistence/key-filter-snapshot.ts';
import type { Prefaulting } from './prefault.ts';

export const logger = pino(loggerOptions('main', process.env.LOG_LEVEL ?? 'info'));

/** The worker threads' entries, compiled to JavaScript at start (runtime/worker-build.ts). */
export const WORKER_ENTRIES = {
  gateway: new URL('../gateway/gateway-thread.ts', import.meta.url),
  shard: new URL('./shard-thread.ts', import.meta.url),
  persistence: new URL('../persistence/persistence-thread.ts', import.meta.url),
  read: new URL('../persistence/read-thread.ts', import.meta.url),
  /** The settlement pool's threads (piscina, started by the read thread). */
  settlement: new URL('../persistence/settlement-worker.ts', import.meta.url),
};

/** The built module a worker thread runs, by the name of its entry. */
export type ThreadEntry = (name: keyof typeof WORKER_ENTRIES) => URL;

export interface Venue {
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

/** Every thread the venue started so far. */
export function venueThreads(venue: Venue): Worker[] {
  return [...venue.gateways, ...venue.shards, venue.persistence, venue.read].filter((worker): worker is Worker => worker !== null);
}
