// Every piece of shared memory the venue's threads use, created once by the main
// thread and handed to each worker. Rings run gateway -> shard (commands) and
// shard -> gateway (results), one per pair; the tables and command stores are shared
// by all gateway threads.

import { COMMAND_SLOT_BYTES } from '../core/command-slot.ts';
import { Doorbell } from '../core/doorbell.ts';
import { INTAKE_RECORD_BYTES } from '../core/intake-record.ts';
import { BODY_SLOT_BYTES } from '../core/body-ring.ts';
import { PersistenceControl } from '../core/persistence-control.ts';
import { RESULT_RECORD_BYTES } from '../core/result-slot.ts';
import { QueueMarks, QUEUE_SLOTS } from '../core/queue-marks.ts';
import { createVenueMetrics } from '../core/venue-metrics.ts';
import { createRingBuffer } from '../core/ring.ts';
import { SHARD_CONTROL_BYTES } from '../core/shard-runner.ts';
import { createKeyFilter, KeyFilter } from '../core/key-filter.ts';
import { DepthView, SnapshotView } from '../core/market-view.ts';
import { TapeView } from '../core/tape-view.ts';
import { createStreamRing } from '../core/market-stream.ts';
import { createSharedKeyTable, SharedKeyTable, type SharedKeyTableShape } from '../core/shared-key-table.ts';
import { commandStoreBytes } from './command-store.ts';
import type { VenueConfig } from '../core/config.ts';
import { clientOrderDigest, wordsOf } from './keys.ts';

/** Extra words per entry of each shared table. */
export const TABLE_EXTRA_WORDS = {
  /** scope digest -> record ref; extra: the first 16 bytes of the payload hash. */
  idempotency: 4,
  /** commandId -> record ref. */
  commandIds: 0,
  /** orderId -> shard. */
  orderDirectory: 0,
  /** (participantId, clientOrderId) digest -> record ref; extra: orderId, instrumentId, accountId, runNo, sessionNo. */
  clientOrders: 14,
} as const;

export type TableName = keyof typeof TABLE_EXTRA_WORDS;
/** The tables whose forgotten keys are kept in a filter: a miss there may be in storage. */
export type ForgettingTable = 'idempotency' | 'commandIds' | 'orderDirectory' | 'clientOrders';
const FORGETTING: readonly TableName[] = ['idempotency', 'commandIds', 'orderDirectory', 'clientOrders'];

/** Words of the venue control block. */
export const VENUE_READY_WORD = 0;
export const VENUE_DRAINING_WORD = 1;
/** The connection limit the main thread's guard computed (gateway/connection-guard.ts), for the queue report. */
export const VENUE_CONNECTION_LIMIT_WORD = 2;
/** The embedded PostgreSQL's supervisor (persistence/postgres-supervisor.ts): its state, the try it is at, its bound, its restarts. */
export const VENUE_STORAGE_STATE_WORD = 3;
export const VENUE_STORAGE_ATTEMPT_WORD = 4;
export const VENUE_STORAGE_TRIES_WORD = 5;
export const VENUE_STORAGE_RESTARTS_WORD = 6;
/** 1 when the venue runs its own (embedded) PostgreSQL, 0 with DATABASE_URL. */
export const VENUE_STORAGE_EMBEDDED_WORD = 7;
/** VENUE_STORAGE_STATE_WORD's values: up (or an external server), being started again, given up on. */
export const STORAGE_UP = 0;
export const STORAGE_RESTARTING = 1;
export const STORAGE_FAILED = 2;
export const VENUE_CONTROL_BYTES = 64;

export interface VenueMemory {
  gatewayCount: number;
  shardCount: number;
  tableBuckets: number;
  storeRecords: number;
  /** [gateway][shard] */
  commandRings: SharedArrayBuffer[][];
  /** [shard][gateway] */
  resultRings: SharedArrayBuffer[][];
  shardDoorbells: SharedArrayBuffer[];
  gatewayDoorbells: SharedArrayBuffer[];
  shardControls: SharedArrayBuffer[];
  tables: Record<TableName, SharedArrayBuffer>;
  /** Keys the idempotency, commandId, order and clientOrderId tables forgot, or that storage held at start (core/key-filter.ts). */
  forgotten: Record<ForgettingTable, SharedArrayBuffer>;
  /** [gateway] */
  commandStores: SharedArrayBuffer[];
  venueControl: SharedArrayBuffer;
  /** [gateway]: what each gateway took, for the command log. */
  intakeRings: SharedArrayBuffer[];
  /** Per gateway: the JSON text of each command it takes, beside its intake records (core/body-ring.ts). */
  bodyRings: SharedArrayBuffer[];
  /** [shard]: each shard's commands and outcomes, for the journal. */
  journalRings: SharedArrayBuffer[];
  persistenceDoorbell: SharedArrayBuffer;
  persistenceControl: SharedArrayBuffer;
  /** The best levels of every instrument's books (persistence thread writes, gateways read: core/market-view.ts). */
  depthView: SharedArrayBuffer;
  /** The stored top-of-book snapshots (read thread writes, gateways read). */
  snapshotView: SharedArrayBuffer;
  /** The most recent trades of every instrument's tape (persistence thread writes after each projection commit, gateways read: core/tape-view.ts). */
  tapeView: SharedArrayBuffer;
  /** Depth and high-water mark of every queue that is not a ring (core/queue-marks.ts). */
  queueMarks: SharedArrayBuffer;
  /** Each gateway's and the persistence thread's counters for GET /metrics (core/venue-metrics.ts). */
  metrics: SharedArrayBuffer;
  /** The market-data stream's broadcast ring (persistence thread writes after each durable commit, every gateway reads: core/market-stream.ts). */
  marketStream: SharedArrayBuffer;
}

/** The market-data stream ring: at a few hundred bytes a record, tens of thousands of records a gateway may fall behind before it skips. */
export const MARKET_STREAM_RING_BYTES = 16 << 20;

/** A table value meaning "the record is in storage, not in a gateway's memory" (after a restart). */
export const STORAGE_REF = 0x7f000000;

/** `keyFilterBits`: each key filter's size, chosen at start for the keys storage holds (core/key-filter.ts, filterBitsFor). */
export function createVenueMemory(config: VenueConfig, keyFilterBits: number): VenueMemory {
  const gateways = config.gatewayThreads;
  const shards = config.matchingShards;
  const range = (n: number) => Array.from({ length: n }, (_, i) => i);
  const shape = (name: TableName): SharedKeyTableShape => ({ bucketCount: config.sharedTableBuckets, extraWords: TABLE_EXTRA_WORDS[name] });
  return {
    gatewayCount: gateways,
    shardCount: shards,
    tableBuckets: config.sharedTableBuckets,
    storeRecords: config.commandStoreRecords,
    commandRings: range(gateways).map(() => range(shards).map(() => createRingBuffer(COMMAND_SLOT_BYTES, config.commandRingSlots))),
    resultRings: range(shards).map(() => range(gateways).map(() => createRingBuffer(RESULT_RECORD_BYTES, config.resultRingSlots))),
    shardDoorbells: range(shards).map(() => Doorbell.create()),
    gatewayDoorbells: range(gateways).map(() => Doorbell.create()),
    shardControls: range(shards).map(() => new SharedArrayBuffer(SHARD_CONTROL_BYTES)),
    tables: {
      idempotency: createSharedKeyTable(shape('idempotency')),
      commandIds: createSharedKeyTable(shape('commandIds')),
      orderDirectory: createSharedKeyTable(shape('orderDirectory')),
      clientOrders: createSharedKeyTable(shape('clientOrders')),
    },
    forgotten: {
      idempotency: createKeyFilter(keyFilterBits),
      commandIds: createKeyFilter(keyFilterBits),
      orderDirectory: createKeyFilter(keyFilterBits),
      clientOrders: createKeyFilter(keyFilterBits),
    },
    commandStores: range(gateways).map(() => new SharedArrayBuffer(commandStoreBytes(config.commandStoreRecords, config.commandStoreArenaBytes))),
    venueControl: new SharedArrayBuffer(VENUE_CONTROL_BYTES),
    intakeRings: range(gateways).map(() => createRingBuffer(INTAKE_RECORD_BYTES, config.intakeRingSlots)),
    bodyRings: range(gateways).map(() => createRingBuffer(BODY_SLOT_BYTES, config.bodyRingSlots)),
    journalRings: range(shards).map(() => createRingBuffer(RESULT_RECORD_BYTES, config.journalRingSlots)),
    persistenceDoorbell: Doorbell.create(),
    persistenceControl: PersistenceControl.create(),
    depthView: DepthView.create(config.marketDataInstruments),
    snapshotView: SnapshotView.create(config.marketDataSnapshots),
    tapeView: TapeView.create(config.marketDataInstruments, config.marketDataTapeRows),
    queueMarks: QueueMarks.create(QUEUE_SLOTS.count(gateways)),
    metrics: createVenueMetrics(gateways),
    marketStream: createStreamRing(MARKET_STREAM_RING_BYTES),
  };
}

export function attachTable(memory: VenueMemory, name: TableName): SharedKeyTable {
  const forgotten = FORGETTING.includes(name) ? attachForgotten(memory, name as ForgettingTable) : null;
  return new SharedKeyTable(memory.tables[name], { bucketCount: memory.tableBuckets, extraWords: TABLE_EXTRA_WORDS[name] }, forgotten);
}

/** Buckets a table scan of rememberTableKeys runs between two pauses. */
const REMEMBER_BUCKETS_PER_PAUSE = 8192;

/**
 * Adds the keys the idempotency, commandId, order and clientOrderId tables hold to their
 * filters (before the filters are saved: at a graceful stop, and at each checkpoint of
 * them while the venue runs); returns how many were new to them. `since` holds each
 * table's stamp from the last call (SharedKeyTable.addKeysTo: only entries written since
 * are visited; absent, every entry) and is moved on to this call's. With `pause`, awaited
 * after every REMEMBER_BUCKETS_PER_PAUSE buckets, so that a thread with other work (the
 * main thread) is not held for the whole scan (about 0.5 s for 4 tables of a million
 * entries, all of them new to the filters).
 */
export async function rememberTableKeys(memory: VenueMemory, since: Partial<Record<ForgettingTable, number>> = {}, pause?: () => Promise<void>): Promise<number> {
  let added = 0;
  for (const name of FORGETTING as ForgettingTable[]) {
    const table = attachTable(memory, name);
    const filter = attachForgotten(memory, name);
    const next = table.stamp; // before the scan: what the next call may skip
    for (let from = 0; from < table.bucketCount; from += REMEMBER_BUCKETS_PER_PAUSE) {
      added += table.addKeysTo(filter, since[name] ?? null, from, Math.min(table.bucketCount, from + REMEMBER_BUCKETS_PER_PAUSE));
      if (pause !== undefined) await pause();
    }
    since[name] = next;
  }
  return added;
}

/** The filter of keys a table forgot (or storage held at start): a miss not in it is a new key. */
export function attachForgotten(memory: VenueMemory, name: ForgettingTable): KeyFilter {
  return new KeyFilter(memory.forgotten[name]);
}

/** The four key filters by the names the log and the persistence status give them. */
export function namedKeyFilters(memory: VenueMemory): { idempotency: KeyFilter; commandIds: KeyFilter; orderIds: KeyFilter; clientOrderIds: KeyFilter } {
  return {
    idempotency: attachForgotten(memory, 'idempotency'),
    commandIds: attachForgotten(memory, 'commandIds'),
    orderIds: attachForgotten(memory, 'orderDirectory'),
    clientOrderIds: attachForgotten(memory, 'clientOrders'),
  };
}

/** A record reference valid in every gateway thread: gateway in the top byte. */
export function recordRef(gateway: number, index: number): number {
  return (gateway << 24) | index;
}

export function refGateway(ref: number): number {
  return ref >>> 24;
}

export function refIndex(ref: number): number {
  return ref & 0xffffff;
}

/**
 * After a restart: the shared tables learn what storage holds (up to a quarter of
 * their room, where they keep everything they are given), fed oldest first so the most
 * recent are the last to be evicted should a bucket overflow. Values point to storage:
 * replays and status lookups go to the read thread.
 */
export class StoredMemory {
  private readonly idempotency: SharedKeyTable;
  private readonly commandIds: SharedKeyTable;
  private readonly orderDirectory: SharedKeyTable;
  private readonly clientOrders: SharedKeyTable;
  private readonly extra = new Int32Array(TABLE_EXTRA_WORDS.clientOrders);

  constructor(memory: VenueMemory) {
    this.idempotency = attachTable(memory, 'idempotency');
    this.commandIds = attachTable(memory, 'commandIds');
    this.orderDirectory = attachTable(memory, 'orderDirectory');
    this.clientOrders = attachTable(memory, 'clientOrders');
  }

  /** A stored command: its scope digest, the first 16 bytes of its payload hash and its commandId, as words. */
  command(scope: Int32Array, payloadHead: Int32Array, commandId: Int32Array): void {
    this.idempotency.put(scope, 0, STORAGE_REF, payloadHead);
    this.commandIds.put(commandId, 0, STORAGE_REF);
  }

  /** A stored order: ids = orderId, instrumentId, accountId (words); its clientOrderId claim if it has one. */
  order(ids: Int32Array, shard: number, participantId: string, clientOrderId: string | null, numbers: [number, number]): void {
    this.orderDirectory.put(ids, 0, shard);
    if (clientOrderId === null) return;
    this.extra.set(ids.subarray(0, 12), 0);
    this.extra[12] = numbers[0];
    this.extra[13] = numbers[1];
    this.clientOrders.put(wordsOf(clientOrderDigest(participantId, clientOrderId)), 0, STORAGE_REF, this.extra);
  }
}

/** How many entries a table keeps without evicting (a quarter of its room). */
export function tableKeeps(memory: VenueMemory): number {
  return memory.tableBuckets * 2;
}
