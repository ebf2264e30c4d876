// Answers bounded by durability: an answer is sent once what it promises is durable; past
// its deadline the client gets a 503 and the answer is still recorded for the retry.

import { renderPointer } from '../core/outcome-format.ts';
import { fail, send, STORAGE_LATE, type Reply } from './answers.ts';
import type { CommandStore } from './command-store.ts';
import type { ProcessingMode } from '../core/config.ts';
import type { DurabilityGate } from './durability.ts';
import type { Pending } from './flow-records.ts';

/**
 * Sends the answer `record` gives once what it promises is durable. Past the bound
 * the client gets a 503 instead, and the answer is still recorded when durability
 * comes, for the retry with the same key.
 */
export function answerWhenDurable(
  durability: DurabilityGate,
  reply: Reply,
  intake: number,
  shard: number,
  sequence: number,
  deadlineMs: number,
  alreadyLate: boolean,
  record: () => { status: number; body: string | Uint8Array },
): void {
  let late = alreadyLate;
  durability.wait(
    intake,
    shard,
    sequence,
    deadlineMs,
    () => {
      const { status, body } = record();
      if (!late) send(reply, status, body);
    },
    () => {
      if (late) return;
      late = true;
      fail(reply, 'UNAVAILABLE', STORAGE_LATE);
    },
  );
}

/** The 202 pointer of the async modes, recorded as the command's answer. */
export function recordPointer(store: CommandStore, pending: Pending, mode: ProcessingMode): { status: number; body: string } {
  const body = renderPointer(pending.commandId, mode);
  store.setResponse(pending.recordIndex, 202, body);
  return { status: 202, body };
}

/**
 * sync-result and stream-ack commands in dispatch order (so in deadline order): their
 * answer is bounded while their shard still holds them too (a shard waits when its
 * journal ring is full, e.g. behind a stuck commit). Entries leave from the head.
 */
export class ResultDeadlines {
  private queue: Pending[] = [];
  private head = 0;

  /** `pending`: the waits by token, shared with the dispatch that fills it and the delivery that empties it. */
  constructor(private readonly pending: Map<number, Pending>) {}

  push(pending: Pending): void {
    this.queue.push(pending);
  }

  /** True while some command waits for its result with a deadline. */
  get waiting(): boolean {
    return this.head < this.queue.length;
  }

  /**
   * sync-result and stream-ack commands whose result has not come back by their
   * deadline: the client gets the 503 now; the result, when it comes, is still
   * recorded (once durable) for the retry with the same key.
   */
  expire(): void {
    const queue = this.queue;
    const now = Date.now();
    while (this.head < queue.length) {
      const pending = queue[this.head]!;
      const waiting = this.pending.get(pending.token) === pending;
      if (waiting && pending.deadlineMs > now) break;
      this.head++;
      if (waiting && !pending.late && pending.reply !== null) {
        pending.late = true;
        fail(pending.reply, 'UNAVAILABLE', STORAGE_LATE);
      }
    }
    if (this.head === queue.length) {
      queue.length = 0;
      this.head = 0;
    } else if (this.head > 1024 && this.head * 2 > queue.length) {
      this.queue = queue.slice(this.head);
      this.head = 0;
    }
  }
}
