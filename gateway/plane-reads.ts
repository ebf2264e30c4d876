// The read plane as a gateway serves it: depth, stored snapshots and the tape's recent
// trades from shared memory, own orders and fills from the persistence thread's model,
// the rest by the read thread from PostgreSQL.

import type { PersistenceControl } from '../core/persistence-control.ts';
import { DepthView, SnapshotView } from '../core/market-view.ts';
import { answered, type PlaneAnswer, type PlaneRead, type ReadPlaneAnswer } from '../core/storage-protocol.ts';
import { TapeView } from '../core/tape-view.ts';
import type { OwnReadClient, ReadClient } from './flow-records.ts';
import { depthAnswer, snapshotAnswer, tapeAnswer } from './market-reads.ts';
import { StorageFailed } from './storage-client.ts';
import type { VenueMemory } from './venue-memory.ts';

/** How long an operator's settlement request may take in the settlement pool (reads: 5 s). */
const SETTLEMENT_ADMIN_TIMEOUT_MS = 60_000;

export class PlaneReads {
  private readonly memory: VenueMemory;
  private readonly control: PersistenceControl;
  private readonly depthView: DepthView;
  private readonly tapeView: TapeView;
  private readonly snapshotView: SnapshotView;
  private readonly reads: ReadClient;
  private readonly ownReads: OwnReadClient;

  constructor(memory: VenueMemory, control: PersistenceControl, reads: ReadClient, ownReads: OwnReadClient) {
    this.memory = memory;
    this.control = control;
    this.depthView = new DepthView(memory.depthView);
    this.tapeView = new TapeView(memory.tapeView);
    this.snapshotView = new SnapshotView(memory.snapshotView);
    this.reads = reads;
    this.ownReads = ownReads;
  }

  /** A read-plane request: depth and stored snapshots from shared memory, the rest by the read thread from PostgreSQL. */
  async readPlane(read: PlaneRead): Promise<ReadPlaneAnswer> {
    if (read.kind === 'depth') return depthAnswer(this.depthView, this.control, this.memory.shardCount, read.instrumentId, read.levels);
    if (read.kind === 'snapshot') {
      const local = snapshotAnswer(this.snapshotView, read.instrumentId, read.projectionName);
      if (local !== null) return local;
    }
    if (read.kind === 'tape') {
      const local = await tapeAnswer(this.tapeView, this.control, this.memory.shardCount, read.instrumentId, read.limit, read.before);
      if (local !== null) return local;
    }
    if (read.kind === 'orders' || read.kind === 'fills') {
      const local = await this.ownRead(read);
      if (local !== null) return local;
    }
    // An operator's settlement request (materialize a run, a repair's retry) does work in proportion to the run: a longer bound.
    const answer = await this.reads.request({ type: 'plane', read }, read.kind === 'settlement-admin' ? SETTLEMENT_ADMIN_TIMEOUT_MS : undefined);
    if (!answer.ok) throw new StorageFailed(answer);
    if (answer.answer === undefined) throw new Error('the read thread gave no answer');
    return answer.answer;
  }

  /**
   * Own orders or fills from the persistence thread's model, with the clientOrderIds it
   * lacks looked up by orderId; null when the model cannot tell them exactly.
   */
  private async ownRead(read: Extract<PlaneRead, { kind: 'orders' | 'fills' }>): Promise<PlaneAnswer | null> {
    const answer = await this.ownReads.request({ read });
    if (!answer.ok) throw new StorageFailed(answer);
    if (answer.rows === null) return null;
    if (answer.lookups.length > 0) {
      const found = await this.reads.request({ type: 'client-order-ids', orderIds: answer.lookups });
      if (!found.ok) throw new StorageFailed(found);
      const ids = found.clientOrderIds ?? {};
      for (const row of answer.rows) {
        if (row.clientOrderId !== undefined) continue;
        const id = ids[row.orderId as string];
        if (id === undefined) return null; // storage lacks the row (quarantined): the read is storage's, as a fallback's is
        row.clientOrderId = id;
      }
    }
    return answered(JSON.stringify({ rows: answer.rows, limit: read.limit }));
  }
}
