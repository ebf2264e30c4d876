// What GET /admin/v1/persistence/status shows of the venue's bounded queues and key
// filters: every queue's capacity, depth now and high-water mark; each filter's load.

import { COMMAND_SLOT_BYTES } from '../core/command-slot.ts';
import { INTAKE_RECORD_BYTES } from '../core/intake-record.ts';
import { QUEUE_SLOTS, type QueueMarks } from '../core/queue-marks.ts';
import { RESULT_RECORD_BYTES } from '../core/result-slot.ts';
import { ringMarks } from '../core/ring.ts';
import { SEALED_GROUPS_MAX } from '../core/storage-protocol.ts';
import type { VenueConfig } from '../core/config.ts';
import { namedKeyFilters, VENUE_CONNECTION_LIMIT_WORD, type VenueMemory } from './venue-memory.ts';

/** One bounded queue in the status route. */
export interface QueueReport {
  name: string;
  capacity: number;
  now: number;
  highWater: number;
}

/** Operator requests (status, rebuilds) a gateway lets wait for the persistence thread at once. */
export const OPERATOR_WAITING_MAX = 64;

/** A queue's row with the short name the metrics label it by (`command-ring-g0-s1`). */
export interface QueueRow extends QueueReport {
  key: string;
}

/**
 * Every bounded queue of the venue with its capacity, depth now and high-water mark:
 * the rings from their headers, the others from the shared marks (each written by the
 * queue's owner thread). Shown by GET /admin/v1/persistence/status and GET /metrics.
 */
export function queueRows(memory: VenueMemory, config: VenueConfig, marks: QueueMarks): QueueRow[] {
  const rows: QueueRow[] = [];
  const ring = (key: string, name: string, buffer: SharedArrayBuffer, slotBytes: number) => rows.push({ key, name, ...ringMarks(buffer, slotBytes) });
  const slot = (key: string, name: string, index: number, capacity: number) => rows.push({ key, name, capacity, now: marks.now(index), highWater: marks.highWater(index) });
  for (let g = 0; g < memory.gatewayCount; g++) {
    for (let s = 0; s < memory.shardCount; s++) ring(`command-ring-g${g}-s${s}`, `command ring gateway ${g} → shard ${s}`, memory.commandRings[g]![s]!, COMMAND_SLOT_BYTES);
  }
  for (let s = 0; s < memory.shardCount; s++) {
    for (let g = 0; g < memory.gatewayCount; g++) ring(`result-ring-s${s}-g${g}`, `result ring shard ${s} → gateway ${g}`, memory.resultRings[s]![g]!, RESULT_RECORD_BYTES);
  }
  for (let g = 0; g < memory.gatewayCount; g++) ring(`intake-ring-g${g}`, `intake ring gateway ${g} → persistence`, memory.intakeRings[g]!, INTAKE_RECORD_BYTES);
  for (let s = 0; s < memory.shardCount; s++) ring(`journal-ring-s${s}`, `journal ring shard ${s} → persistence`, memory.journalRings[s]!, RESULT_RECORD_BYTES);
  for (let g = 0; g < memory.gatewayCount; g++) {
    slot(`in-flight-g${g}`, `commands in flight, gateway ${g}`, QUEUE_SLOTS.gatewayInFlight(g), config.maxInFlight);
    slot(`read-waits-g${g}`, `requests waiting for the read thread, gateway ${g}`, QUEUE_SLOTS.gatewayReads(g), config.maxWaitingReads);
    slot(`operator-waits-g${g}`, `operator requests waiting for the persistence thread, gateway ${g}`, QUEUE_SLOTS.gatewayOperator(g), OPERATOR_WAITING_MAX);
    slot(`own-read-waits-g${g}`, `own-order reads waiting for the persistence thread, gateway ${g}`, QUEUE_SLOTS.gatewayOwnReads(g), config.maxWaitingReads);
  }
  slot('sealed-groups', 'tier 2 groups sealed and not yet flushed', QUEUE_SLOTS.sealedGroups, SEALED_GROUPS_MAX);
  slot('held-bytes', 'bytes of commits whose ingest a running rebuild holds', QUEUE_SLOTS.heldBytes, config.rebuildHeldBytesMax);
  slot(
    'connections',
    "open connections (the venue's files beyond those open before it listened; at the capacity new connections are refused)",
    QUEUE_SLOTS.connections(memory.gatewayCount),
    Atomics.load(new Int32Array(memory.venueControl), VENUE_CONNECTION_LIMIT_WORD),
  );
  return rows;
}

/** The queues as GET /admin/v1/persistence/status shows them. */
export function queueReport(memory: VenueMemory, config: VenueConfig, marks: QueueMarks): QueueReport[] {
  return queueRows(memory, config, marks).map(({ name, capacity, now, highWater }) => ({ name, capacity, now, highWater }));
}

/** The key filters' size, rating and load (core/key-filter.ts). Shown by GET /admin/v1/persistence/status. */
export function keyFilterReport(memory: VenueMemory): { name: string; bits: number; ratedKeys: number; keys: number }[] {
  return Object.entries(namedKeyFilters(memory)).map(([name, filter]) => ({ name, bits: filter.bits, ratedKeys: filter.ratedKeys, keys: filter.added }));
}
