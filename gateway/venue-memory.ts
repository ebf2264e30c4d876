// Every piece of shared memory the venue's threads use, created once by the main
// thread and handed to each worker. Rings run gateway -> shard (commands) and
// shard -> gateway (results), one per pair; the tables and command stores are shared
// by all gateway threads.

import { COMMAND_SLOT_BYTES } from '../core/command-slot.ts';
import { Doorbell } from '../core/doorbell.ts';
import { INTAKE_RECORD_BYTES } from '../core/intake-record.ts';
import { PersistenceControl } from '../core/persistence-control.ts';
import { RESULT_RECORD_BYTES } from '../core/result-slot.ts';
import { createRingBuffer } from '../core/ring.ts';
import { SHARD_CONTROL_BYTES } from '../core/shard-runner.ts';
import { createKeyFilter, KeyFilter } from '../core/key-filter.ts';
import { createSharedKeyTable, SharedKeyTable, type SharedKeyTableShape } from '../core/shared-key-table.ts';
import { uuidWords } from '../core/uuid.ts';
import { commandStoreBytes } from './command-store.ts';
import type { VenueConfig } from './config.ts';
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

/** Words of the venue control block. */
export const VENUE_READY_WORD = 0;
export const VENUE_DRAINING_WORD = 1;
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
  /** Keys the idempotency and commandId tables forgot, or that storage held at start (core/key-filter.ts). */
  forgotten: Record<'idempotency' | 'commandIds', SharedArrayBuffer>;
  /** [gateway] */
  commandStores: SharedArrayBuffer[];
  venueControl: SharedArrayBuffer;
  /** [gateway]: what each gateway took, for the command log. */
  intakeRings: SharedArrayBuffer[];
  /** [shard]: each shard's commands and outcomes, for the journal. */
  journalRings: SharedArrayBuffer[];
  persistenceDoorbell: SharedArrayBuffer;
  persistenceControl: SharedArrayBuffer;
}

/** A table value meaning "the record is in storage, not in a gateway's memory" (after a restart). */
export const STORAGE_REF = 0x7f000000;

export function createVenueMemory(config: VenueConfig): VenueMemory {
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
    forgotten: { idempotency: createKeyFilter(config.keyFilterBits), commandIds: createKeyFilter(config.keyFilterBits) },
    commandStores: range(gateways).map(
      () => new SharedArrayBuffer(commandStoreBytes(config.commandStoreRecords, config.commandStoreArenaBytes)),
    ),
    venueControl: new SharedArrayBuffer(VENUE_CONTROL_BYTES),
    intakeRings: range(gateways).map(() => createRingBuffer(INTAKE_RECORD_BYTES, config.intakeRingSlots)),
    journalRings: range(shards).map(() => createRingBuffer(RESULT_RECORD_BYTES, config.journalRingSlots)),
    persistenceDoorbell: Doorbell.create(),
    persistenceControl: PersistenceControl.create(),
  };
}

export function attachTable(memory: VenueMemory, name: TableName): SharedKeyTable {
  const forgotten = name === 'idempotency' || name === 'commandIds' ? attachForgotten(memory, name) : null;
  return new SharedKeyTable(memory.tables[name], { bucketCount: memory.tableBuckets, extraWords: TABLE_EXTRA_WORDS[name] }, forgotten);
}

/** The filter of keys a table forgot (or storage held at start): a miss not in it is a new key. */
export function attachForgotten(memory: VenueMemory, name: 'idempotency' | 'commandIds'): KeyFilter {
  return new KeyFilter(memory.forgotten[name]);
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
 * After a restart: the shared tables learn what storage holds (most recent first, up
 * to a quarter of their room, where they keep everything they are given). Values
 * point to storage: replays and status lookups go to the read thread.
 */
export function rememberStored(
  memory: VenueMemory,
  commands: readonly { commandId: string; scopeDigest: Uint8Array; payloadHash: Uint8Array }[],
  orders: readonly { orderId: string; shard: number; instrumentId: string; participantId: string; accountId: string; clientOrderId: string | null; numbers: [number, number] }[],
): void {
  const idempotency = attachTable(memory, 'idempotency');
  const commandIds = attachTable(memory, 'commandIds');
  const orderDirectory = attachTable(memory, 'orderDirectory');
  const clientOrders = attachTable(memory, 'clientOrders');
  // Oldest first, so the most recent are the last to be evicted should a bucket overflow.
  for (let k = commands.length - 1; k >= 0; k--) {
    const command = commands[k]!;
    idempotency.put(wordsOf(command.scopeDigest), 0, STORAGE_REF, wordsOf(command.payloadHash));
    commandIds.put(uuidWords(command.commandId), 0, STORAGE_REF);
  }
  for (let k = orders.length - 1; k >= 0; k--) {
    const order = orders[k]!;
    const orderId = uuidWords(order.orderId);
    orderDirectory.put(orderId, 0, order.shard);
    if (order.clientOrderId === null) continue;
    const extra = new Int32Array(TABLE_EXTRA_WORDS.clientOrders);
    extra.set(orderId, 0);
    extra.set(uuidWords(order.instrumentId), 4);
    extra.set(uuidWords(order.accountId), 8);
    extra[12] = order.numbers[0];
    extra[13] = order.numbers[1];
    clientOrders.put(wordsOf(clientOrderDigest(order.participantId, order.clientOrderId)), 0, STORAGE_REF, extra);
  }
}

/** How many entries a table keeps without evicting (a quarter of its room). */
export function tableKeeps(memory: VenueMemory): number {
  return memory.tableBuckets * 2;
}
