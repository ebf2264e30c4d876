// Answers a retried order command with its original's answer: from the command record
// while a gateway holds it (waiting, bounded, for that answer), else from the command log.

import type { StoredCommand } from '../core/storage-protocol.ts';
import { fail, send, storageFailed, storageSilent, type Reply } from './answers.ts';
import type { CommandStore } from './command-store.ts';
import type { VenueConfig } from '../core/config.ts';
import { OUTCOME_REPLAYED } from '../core/venue-metrics.ts';
import { snapshotOf, type ReadClient } from './flow-records.ts';

/** The 503 of a replay whose original has no answer yet (in flight, or past the wait for it). */
const NOT_ANSWERED_YET = 'the original command is not answered yet; retry with the same Idempotency-Key';

/** A replay that found the original command still in flight. */
interface Waiter {
  reply: Reply;
  ref: number;
  commandId: Int32Array;
  deadlineMs: number;
}

/** The original's answer again, counted as a replay by the metrics. */
function replay(reply: Reply, status: number, body: string | Uint8Array): void {
  reply.outcome = OUTCOME_REPLAYED;
  send(reply, status, body);
}

export class Replays {
  private readonly stores: CommandStore[];
  private readonly reads: ReadClient;
  private readonly config: VenueConfig;
  private readonly waiters: Waiter[] = [];

  constructor(stores: CommandStore[], reads: ReadClient, config: VenueConfig) {
    this.stores = stores;
    this.reads = reads;
    this.config = config;
  }

  /** Replays waiting for their original's answer. */
  get waiting(): number {
    return this.waiters.length;
  }

  replayOrWait(reply: Reply, ref: number, commandId: Int32Array, scope: Uint8Array, payload: Uint8Array): void {
    const snapshot = snapshotOf(this.stores, ref, commandId);
    if (snapshot === null) {
      // The record left this thread's memory (or the original was never taken): ask storage.
      this.replayFromStorage(reply, scope, payload);
      return;
    }
    if (snapshot.response !== null) {
      replay(reply, snapshot.responseStatus, snapshot.response);
      return;
    }
    // Bounded like the original's own answer: a retry is never held longer than DURABLE_WAIT_MS either.
    this.waiters.push({ reply, ref, commandId, deadlineMs: Date.now() + this.config.durableWaitMs });
  }

  /** A replay answered from the command log (after a restart, or beyond the memory window). */
  replayFromStorage(reply: Reply, scope: Uint8Array, payload: Uint8Array): void {
    this.reads.request({ type: 'replay', scopeDigest: Buffer.from(scope.subarray(0, 16)).toString('hex') /* the command log keeps 16 bytes */ }).then(
      (answer) => {
        if (!answer.ok) return storageFailed(reply, answer);
        const stored = answer.command;
        if (stored === null) return fail(reply, 'UNAVAILABLE', 'the original command was not taken; retry with the same Idempotency-Key');
        this.answerStoredReplay(reply, stored, payload);
      },
      (error: unknown) => storageSilent(reply, error),
    );
  }

  answerStoredReplay(reply: Reply, stored: StoredCommand, payload: Uint8Array): void {
    if (stored.payloadHash !== Buffer.from(payload).toString('hex')) {
      return fail(reply, 'IDEMPOTENCY_CONFLICT');
    }
    if (stored.responseStatus === 0 || stored.responseBody === null) {
      return fail(reply, 'UNAVAILABLE', NOT_ANSWERED_YET);
    }
    replay(reply, stored.responseStatus, stored.responseBody);
  }

  /** Answers replays whose original has been answered meanwhile; gives up after a bound. */
  checkWaiters(): void {
    const now = Date.now();
    for (let k = this.waiters.length - 1; k >= 0; k--) {
      const waiter = this.waiters[k]!;
      const snapshot = snapshotOf(this.stores, waiter.ref, waiter.commandId);
      if (snapshot !== null && snapshot.response === null && now < waiter.deadlineMs && !waiter.reply.aborted) continue;
      this.waiters.splice(k, 1);
      if (snapshot === null || snapshot.response === null) {
        fail(waiter.reply, 'UNAVAILABLE', NOT_ANSWERED_YET);
      } else {
        replay(waiter.reply, snapshot.responseStatus, snapshot.response);
      }
    }
  }
}
