// The settlement pool: a piscina pool of SETTLEMENT_THREADS threads running
// persistence/settlement-worker.ts, owned by the read thread (started with it, destroyed
// at its stop). Settlement reads and operator requests go there instead of running on the
// read thread; at most SETTLEMENT_QUEUE of them wait for a thread, past that they are
// refused 503 OVERLOADED, so a flood of them holds bounded memory.

import { fileURLToPath } from 'node:url';
import { Piscina } from 'piscina';
import { refused, type AnsweredBytes, type PlaneAnswer, type Refused, type SettlementAdmin, type SettlementRead } from '../core/storage-protocol.ts';
import type { SettlementProbe, SettlementTask } from './settlement-worker.ts';

export interface SettlementPoolOptions {
  databaseUrl: string;
  /** The module piscina's threads load (runtime/worker-bootstrap.mjs, a file URL), which imports `entryUrl` and hands on its default export. */
  bootstrap: string;
  /** The worker entry: persistence/settlement-worker.ts, or its build. */
  entryUrl: string;
  threads: number;
  maxQueue: number;
}

/** piscina's refusal of a task past maxQueue (its Errors.TaskQueueAtLimit). */
const QUEUE_FULL = 'Task queue is at limit';

export class SettlementPool {
  private readonly pool: Piscina<SettlementTask, PlaneAnswer | AnsweredBytes | SettlementProbe>;
  private readonly databaseUrl: string;

  constructor(options: SettlementPoolOptions) {
    this.databaseUrl = options.databaseUrl;
    this.pool = new Piscina({
      filename: fileURLToPath(options.bootstrap), // a path: piscina makes a URL of it
      workerData: { entryUrl: options.entryUrl, threadName: 'settlement' },
      minThreads: options.threads,
      maxThreads: options.threads,
      maxQueue: options.maxQueue,
      // Kept for the venue's life: its threads hold the read cache (an idle thread ending would drop it).
      idleTimeout: 2 ** 31 - 1,
      // The threads wait for tasks on their event loops, not in Atomics.wait: their idle pg connections keep being served.
      atomics: 'disabled',
    });
    this.pool.on('error', () => undefined); // a thread that died is replaced; its task was rejected and answered
  }

  /** The view's JSON as UTF-8 bytes (moved here from the pool's thread; the caller moves them on to the gateway). */
  read(read: SettlementRead, competitionProfile: string): Promise<AnsweredBytes | Refused> {
    return this.run({ type: 'read', databaseUrl: this.databaseUrl, read, competitionProfile }) as Promise<AnsweredBytes | Refused>;
  }

  admin(admin: SettlementAdmin): Promise<PlaneAnswer> {
    return this.run({ type: 'admin', databaseUrl: this.databaseUrl, admin }) as Promise<PlaneAnswer>;
  }

  /** The thread a task runs on, and the runs its read cache keeps (tests). */
  probe(): Promise<SettlementProbe> {
    return this.pool.run({ type: 'probe', databaseUrl: this.databaseUrl }) as Promise<SettlementProbe>;
  }

  /** Tasks the threads finished (tests, and the proof that the work ran there). */
  get completed(): number {
    return this.pool.completed;
  }

  get threads(): number {
    return this.pool.threads.length;
  }

  /** Ends the threads; a task still running is rejected (its transaction, if any, rolls back with its connection). */
  destroy(): Promise<void> {
    return this.pool.destroy();
  }

  private async run(task: SettlementTask): Promise<PlaneAnswer | AnsweredBytes> {
    try {
      return (await this.pool.run(task)) as PlaneAnswer | AnsweredBytes;
    } catch (error) {
      if ((error as Error).message === QUEUE_FULL) return refused('OVERLOADED', 'too many settlement requests are waiting (SETTLEMENT_QUEUE); retry shortly');
      throw error;
    }
  }
}
