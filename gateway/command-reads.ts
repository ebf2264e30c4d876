// Reads of a command: its status view (GET /api/v1/commands/{commandId}) and its audit
// record, from a gateway's memory while it holds the record, else from storage.

import { rejectCodeOf } from '../core/codes.ts';
import type { PersistenceControl } from '../core/persistence-control.ts';
import { ringReadIndex } from '../core/ring.ts';
import { NOT_FOUND, type SharedKeyTable } from '../core/shared-key-table.ts';
import type { AuditRecord, StoredCommand } from '../core/storage-protocol.ts';
import { isUuid, parseUuidInto } from '../core/uuid.ts';
import { INTERNAL, RESULT, STATUS, type CommandSnapshot, type CommandStore } from './command-store.ts';
import type { VenueConfig } from '../core/config.ts';
import { snapshotOf, type AdminClient, type ReadClient } from './flow-records.ts';
import type { Principal } from './principals.ts';
import { renderStatusView, type Durable } from './status-view.ts';
import { StorageFailed } from './storage-client.ts';
import { refGateway, STORAGE_REF, type VenueMemory } from './venue-memory.ts';

export class CommandReads {
  private readonly config: VenueConfig;
  private readonly memory: VenueMemory;
  private readonly control: PersistenceControl;
  private readonly commandIds: SharedKeyTable;
  private readonly stores: CommandStore[];
  private readonly reads: ReadClient;
  private readonly admin: AdminClient;

  constructor(config: VenueConfig, memory: VenueMemory, control: PersistenceControl, commandIds: SharedKeyTable, stores: CommandStore[], reads: ReadClient, admin: AdminClient) {
    this.config = config;
    this.memory = memory;
    this.control = control;
    this.commandIds = commandIds;
    this.stores = stores;
    this.reads = reads;
    this.admin = admin;
  }

  /**
   * GET /api/v1/commands/{commandId}: the status view, or null if unknown (or not the
   * caller's). From this thread's shared memory when a gateway still holds the record,
   * else from storage (the read thread). It claims no more than is durable: a record whose
   * state is not yet in storage is waited for (bounded by DURABLE_WAIT_MS), and a command
   * not durably accepted by then is a 503.
   */
  async statusView(commandIdText: string, principal: Principal, any: boolean): Promise<string | null> {
    const commandId = new Int32Array(4);
    if (!parseUuidInto(commandIdText, commandId, 0)) return null;
    const ref = this.commandIds.get(commandId, 0);
    if (ref !== NOT_FOUND && ref !== STORAGE_REF) {
      const deadlineMs = Date.now() + this.config.durableWaitMs;
      for (let snapshot = snapshotOf(this.stores, ref, commandId); snapshot !== null; snapshot = snapshotOf(this.stores, ref, commandId)) {
        if (!any && snapshot.principal !== principal.index) return null;
        const durable = this.durableOf(ref, snapshot);
        if ((durable.captured && (snapshot.resultStatus === RESULT.NONE || durable.outcome)) || Date.now() >= deadlineMs) {
          if (!durable.captured) throw new StorageFailed({ message: 'the command is not durably accepted yet; retry shortly' });
          return renderStatusView(snapshot, durable);
        }
        await new Promise((resolve) => setTimeout(resolve, 2));
      }
    }
    const answer = await this.reads.request({ type: 'command', commandId: commandIdText.toLowerCase() });
    if (!answer.ok) throw new StorageFailed(answer);
    const stored = answer.command;
    if (stored === null || (!any && stored.principal !== principal.index)) return null;
    return renderStatusView(snapshotOfStored(stored), { captured: true, taken: true, outcome: stored.resultStatus !== 0 });
  }

  /** What storage holds of a command record now: its intake record, its outcome; and whether its shard took it. */
  private durableOf(ref: number, snapshot: CommandSnapshot): Durable {
    let taken = false;
    if (snapshot.shard >= 0) {
      const readIndex = ringReadIndex(this.memory.commandRings[refGateway(ref)]![snapshot.shard]!);
      taken = (readIndex - snapshot.ringIndex - 1) >>> 0 < 0x80000000;
    }
    return {
      captured: snapshot.intakeCount > 0 && this.control.intakeCommitted(refGateway(ref)) >= snapshot.intakeCount,
      taken,
      outcome: snapshot.resultStatus !== RESULT.NONE && this.control.journalCommitted(snapshot.shard) >= snapshot.streamSequence,
    };
  }

  /**
   * GET /admin/v1/audit/commands/{commandId}: the command as it arrived (API contract,
   * "Audit trail"), or null if storage holds no such command. From the command log's
   * intake position (after the read-your-writes wait), else from the persistence thread's
   * commands taken but not yet sequenced; asked once more in case it moved in between.
   */
  async audit(commandIdText: string): Promise<AuditRecord | null> {
    if (!isUuid(commandIdText)) return null;
    const commandId = commandIdText.toLowerCase();
    const stored = async () => {
      const answer = await this.reads.request({ type: 'audit', commandId });
      if (!answer.ok) throw new StorageFailed(answer);
      return answer.audit ?? null;
    };
    const first = await stored();
    if (first !== null) return first;
    const pending = await this.admin.request({ type: 'audit-pending', commandId });
    if (!pending.ok) throw new StorageFailed(pending);
    if (pending.type === 'audit-pending' && pending.payload !== null) return pending.payload;
    return stored();
  }
}

const encoder = new TextEncoder();

/** A command read back from storage, in the shape the status view renders. */
function snapshotOfStored(stored: StoredCommand): CommandSnapshot {
  const status = stored.resultStatus === 1 ? STATUS.COMPLETED : stored.resultStatus === 2 ? STATUS.REJECTED : STATUS.ACCEPTED;
  return {
    status,
    internalStatus: stored.resultStatus === 0 ? INTERNAL.RECEIVED : INTERNAL.COMPLETED,
    processingMode: stored.processingMode,
    route: stored.route,
    responseStatus: stored.responseStatus,
    shard: stored.shard,
    resultStatus: stored.resultStatus,
    rejectCode: stored.rejectCode === '' ? 0 : rejectCodeOf(stored.rejectCode),
    principal: stored.principal,
    ringIndex: 0,
    deliveredCount: stored.resultStatus === 0 ? 0 : 1,
    commandId: stored.commandId,
    orderId: stored.orderId,
    instrumentId: stored.instrumentId,
    payloadHash: stored.payloadHash,
    clientId: stored.clientId,
    idempotencyKey: stored.idempotencyKey,
    response: stored.responseBody === null ? null : encoder.encode(stored.responseBody),
    result: stored.resultPayloadJson === null ? null : encoder.encode(stored.resultPayloadJson),
    streamSequence: stored.streamSequence,
    batch: stored.shardBatch,
    receivedAtUs: 0,
    completedAtUs: 0,
    intakeCount: 1,
  };
}
