// The projections' flusher: seals the open group by age (or when a read asks), and sends
// sealed groups to storage on a connection of its own, retrying and reconnecting on failure.

import type pg from 'pg';
import type { PersistenceControl } from '../core/persistence-control.ts';
import { serverRun, type StorageConnections } from './persistence-connections.ts';
import type { Projector } from './projector.ts';

/** What the flusher reads of the journal writer's side, and how it lets the writer go on. */
export interface WriterSide {
  /** The writer has stopped: no more commits will come. */
  readonly writerDone: boolean;
  /** Commits durable and not yet ingested. */
  readonly ingestQueued: number;
  /** Room was made (a group flushed): a writer waiting for it goes on. */
  resumeWriter(): void;
}

export class FlushLoop {
  private client: pg.Client | null = null;
  /** The flusher's connection was lost: it reconnects even with nothing to flush, to send again what a crash of the server took back. */
  private lost = false;
  private stopping = false;
  private wakeUp: (() => void) | null = null;
  /** Settles when the group being sent is in storage (at once when none is). */
  private idle: Promise<void> = Promise.resolve();

  constructor(
    private readonly projector: Projector,
    private readonly connections: StorageConnections,
    private readonly control: PersistenceControl,
    /** PROJECTION_GROUP_MS: the open group is sealed at this age. */
    private readonly projectionGroupMs: number,
    private readonly log: (level: 'warn' | 'error', message: string, fields: object) => void,
  ) {}

  /** Something to do may have come: a group to seal or send, or the stop. */
  wake(): void {
    this.wakeUp?.();
  }

  /** The venue stops: no more reconnecting with nothing to flush. */
  stop(): void {
    this.stopping = true;
    this.wakeUp?.();
  }

  /** Seals the open group once it is old enough (or at a stop) and sends sealed groups to storage, retrying on failure. */
  async run(writer: WriterSide): Promise<void> {
    const projector = this.projector;
    const control = this.control;
    for (;;) {
      const ageMs = projector.openSinceMs > 0 ? performance.now() - projector.openSinceMs : -1;
      const wanted = control.takeSealRequest(); // cleared even with no open group: the reader asks again while it waits
      if (ageMs >= this.projectionGroupMs || (writer.writerDone && ageMs >= 0) || (wanted && ageMs >= 0)) projector.seal();
      if (projector.sealedCount === 0) {
        if (writer.writerDone && writer.ingestQueued === 0 && projector.openSinceMs === 0) return;
        if (this.lost && !this.stopping) {
          await this.reconnect();
          continue;
        }
        await new Promise<void>((resolve) => {
          this.wakeUp = resolve;
          const timeoutMs = ageMs >= 0 ? Math.max(1, this.projectionGroupMs - ageMs) : 100;
          setTimeout(resolve, timeoutMs);
          void control.sealRequested(timeoutMs).then(resolve);
        });
        this.wakeUp = null;
        continue;
      }
      let done: () => void = () => undefined;
      this.idle = new Promise<void>((resolve) => (done = resolve));
      let delayMs = 50;
      for (;;) {
        try {
          if (this.client === null || this.lost) {
            await this.open();
            if (await projector.storedAlready(this.client!)) break; // a group whose acknowledgement was lost
          }
          await projector.flush(this.client!);
          break;
        } catch (error) {
          this.log('error', 'projection failed; retrying', { err: error });
          Atomics.add(control.ints, 2, 1);
          await this.client?.end().catch(() => undefined);
          this.client = null;
          await new Promise((resolve) => setTimeout(resolve, delayMs));
          delayMs = Math.min(delayMs * 2, 1000);
        }
      }
      done();
      writer.resumeWriter();
    }
  }

  /** Flushes everything ingested (ingestion held by the caller). */
  async flushAll(): Promise<void> {
    await this.idle;
    this.projector.seal();
    while (this.projector.sealedCount > 0) {
      this.wakeUp?.();
      await new Promise((resolve) => setTimeout(resolve, 2));
      await this.idle;
    }
  }

  /** Ends the flusher's connection (after run() returned). */
  async close(): Promise<void> {
    await this.client?.end().catch(() => undefined);
  }

  /** A new connection for the flusher; what a crash of the server took back goes again first. */
  private async open(): Promise<void> {
    await this.client?.end().catch(() => undefined);
    this.client = null;
    const client = await this.connections.connectProjector();
    const lost = () => {
      if (this.client !== client) return;
      this.lost = true;
      this.wakeUp?.();
    };
    client.on('error', lost);
    client.on('end', lost);
    this.client = client;
    this.lost = false;
    await this.projector.resendLost(client, await serverRun(client));
  }

  /** The flusher's connection was lost with nothing to flush: connect again (bounded back-off) until storage answers, or a group is sealed. */
  private async reconnect(): Promise<void> {
    let delayMs = 50;
    while (this.lost && !this.stopping && this.projector.sealedCount === 0) {
      try {
        await this.open();
        return;
      } catch (error) {
        this.lost = true;
        this.log('warn', "the projections' connection is lost; reconnecting", { err: error });
        await new Promise((resolve) => setTimeout(resolve, delayMs));
        delayMs = Math.min(delayMs * 2, 1000);
      }
    }
  }
}
