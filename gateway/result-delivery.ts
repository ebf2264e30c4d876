// Delivers the shards' results to their commands: renders the outcome envelope, records it,
// releases what a submit that did not enter the book claimed, and answers once durable.

import { unpackCurrency } from '../core/command-slot.ts';
import { renderEnvelope } from '../core/outcome-format.ts';
import { ResultReader } from '../core/result-reader.ts';
import type { ResultEvent, ResultHeader } from '../core/result-slot.ts';
import type { SharedKeyTable } from '../core/shared-key-table.ts';
import type { CommandStore } from './command-store.ts';
import { PROCESSING_MODES } from '../core/config.ts';
import { OUTCOME_REJECTED } from '../core/venue-metrics.ts';
import { answerWhenDurable, recordPointer } from './durable-answers.ts';
import type { DurabilityGate } from './durability.ts';
import type { ClaimTables, Pending } from './flow-records.ts';
import { recordRef, type VenueMemory } from './venue-memory.ts';

export class ResultDelivery {
  private readonly gatewayId: number;
  private readonly store: CommandStore;
  private readonly orderDirectory: SharedKeyTable;
  private readonly clientOrders: SharedKeyTable;
  private readonly readers: ResultReader[];
  /** The waits by token, filled by the dispatch. */
  private readonly pending: Map<number, Pending>;
  private readonly durability: DurabilityGate;

  constructor(gatewayId: number, memory: VenueMemory, store: CommandStore, tables: ClaimTables, pending: Map<number, Pending>, durability: DurabilityGate) {
    this.gatewayId = gatewayId;
    this.store = store;
    this.orderDirectory = tables.orderDirectory;
    this.clientOrders = tables.clientOrders;
    this.readers = memory.resultRings.map((perGateway) => new ResultReader(perGateway[gatewayId]!));
    this.pending = pending;
    this.durability = durability;
  }

  /** True when a result ring has something to read, or storage made answers durable since the last poll. */
  resultsWaiting(): boolean {
    return this.readers.some((reader) => reader.ring.available() > 0) || this.durability.advanced();
  }

  /** Reads every result ring once; returns the records read. */
  poll(): number {
    let read = 0;
    for (let shard = 0; shard < this.readers.length; shard++) {
      read += this.readers[shard]!.poll((header, events) => this.complete(shard, header, events));
    }
    return read;
  }

  private complete(shard: number, header: ResultHeader, events: ResultEvent[]): void {
    const pending = this.pending.get(header.token);
    if (pending === undefined) throw new Error(`result for unknown token ${header.token} from shard ${shard}`);
    this.pending.delete(header.token);
    if (pending.onQuery !== null) {
      pending.onQuery(header.queryState);
      return;
    }
    if (pending.onResult !== null) {
      pending.onResult(header, events);
      return;
    }
    // The same context the persistence worker derives from the journal: same bytes.
    const currency = header.currency !== 0 ? unpackCurrency(header.currency) : pending.currency;
    const outcome = renderEnvelope({ shard, instrumentId: pending.instrumentId, currency }, header, events);
    if (!outcome.accepted) {
      // A submit that did not enter the book leaves no claim on its orderId or clientOrderId,
      // except when it was rejected precisely because another order holds them.
      if (pending.orderDirectoryKey !== null && outcome.rejectCode !== 'DUPLICATE_ORDER_ID') {
        this.orderDirectory.remove(pending.orderDirectoryKey, 0, pending.shard);
      }
      if (pending.clientOrderKey !== null && outcome.rejectCode !== 'DUPLICATE_CLIENT_ORDER_ID') {
        this.clientOrders.remove(pending.clientOrderKey, 0, recordRef(this.gatewayId, pending.recordIndex));
      }
    }
    this.store.setResult(pending.recordIndex, {
      accepted: outcome.accepted,
      rejectCode: outcome.rejectCodeNumber,
      streamSequence: outcome.streamSequence,
      batch: header.batch,
      completedAtUs: header.timestampUs,
      envelope: outcome.json,
    });
    const reply = pending.reply;
    if (reply === null) return; // captured-ack and accepted-async answer on the intake commit
    if (!outcome.accepted) reply.outcome = OUTCOME_REJECTED;
    // sync-result and stream-ack answer once the outcome is on the durable journal.
    const mode = PROCESSING_MODES[pending.mode]!;
    answerWhenDurable(this.durability, reply, pending.intakeCount, shard, events[events.length - 1]!.sequence, pending.deadlineMs, pending.late, () => {
      if (mode !== 'sync-result') return recordPointer(this.store, pending, mode);
      this.store.setResponseToResult(pending.recordIndex, 200);
      return { status: 200, body: outcome.json };
    });
  }
}
