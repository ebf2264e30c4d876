// The gateways' own-order and fills reads, answered from the projector's in-memory model
// once it reaches the journal position durable when the read came (read your writes).

import type { MessagePort } from 'node:worker_threads';
import type { PersistenceControl } from '../core/persistence-control.ts';
import { failureOf, type OwnReadAnswer, type OwnReadRequest } from '../core/storage-protocol.ts';
import type { Projector } from './projector.ts';

/** How long a read waits for the model to reach the journal position durable at its arrival (read your writes). */
const OWN_READ_WAIT_MS = 2_000;

export class OwnReadAnswers {
  /** Set once the start's catch-up is ingested and the writer runs; until then the model is behind storage and the read thread answers. */
  ready = false;
  /** Reads waiting for the model to catch up, oldest first (each gateway's port bounds its own). */
  private readonly waiting: { targets: number[]; answer: () => void; timer: NodeJS.Timeout }[] = [];

  constructor(
    private readonly projector: Projector,
    private readonly control: PersistenceControl,
    private readonly shardCount: number,
  ) {}

  /** Answers the reads coming on one gateway's port. */
  listen(port: MessagePort): void {
    port.on('message', (request: OwnReadRequest) => {
      if (!this.ready) {
        port.postMessage({ id: request.id, ok: true, rows: null, lookups: [] } satisfies OwnReadAnswer);
        return;
      }
      const targets = Array.from({ length: this.shardCount }, (_, shard) => this.control.journalCommitted(shard));
      if (this.caughtUp(targets)) {
        port.postMessage(this.read(request));
        return;
      }
      const waiting = {
        targets,
        answer: () => port.postMessage(this.read(request)),
        timer: setTimeout(() => {
          const at = this.waiting.indexOf(waiting);
          if (at >= 0) this.waiting.splice(at, 1);
          port.postMessage({ id: request.id, ok: false, message: 'the read models are behind the journal; retry shortly' } satisfies OwnReadAnswer);
        }, OWN_READ_WAIT_MS),
      };
      this.waiting.push(waiting);
    });
  }

  /** After an ingest: answers the waiting reads the model has now caught up with. */
  answerCaughtUp(): void {
    const waitingReads = this.waiting;
    for (let k = 0; k < waitingReads.length;) {
      const waiting = waitingReads[k]!;
      if (!this.caughtUp(waiting.targets)) {
        k++;
        continue;
      }
      waitingReads.splice(k, 1);
      clearTimeout(waiting.timer);
      waiting.answer();
    }
  }

  private caughtUp(targets: readonly number[]): boolean {
    return targets.every((target, shard) => this.projector.ingestedWatermark(shard) >= target);
  }

  private read(request: OwnReadRequest): OwnReadAnswer {
    const { read } = request;
    const own = this.projector.own;
    try {
      const rows = read.kind === 'fills' ? own.fills(read.participants, read.instrumentId, read.limit) : own.orders(read.view, read.participants, read.instrumentId, read.limit);
      const lookups: string[] = [];
      if (rows !== null && read.kind === 'orders') for (const row of rows) if ((row as { clientOrderId?: unknown }).clientOrderId === undefined) lookups.push(row.orderId as string);
      return { id: request.id, ok: true, rows: rows as unknown as Record<string, unknown>[] | null, lookups };
    } catch (error) {
      return { id: request.id, ok: false, ...failureOf(error, 'the own-order read failed') };
    }
  }
}
