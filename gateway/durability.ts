// Holds answers until what they promise is durable (API contract, processing modes):
// an intake record of this gateway committed (captured-ack, accepted-async) and, for
// answers that report an outcome (sync-result, stream-ack), the outcome's sequence
// committed on its shard's journal. The persistence worker wakes the gateway after
// every commit; check() then releases what became durable. A wait has a bound: past
// it the client gets a 503 (and retries with the same key), while the wait goes on:
// once the command is durable its record gets the answer the retry will find.
//
// Waits queue per stream (intake-only, and one queue per shard) in the order they
// come, which is also the order they become durable (intake counts and each shard's
// sequences only grow) and the order of their deadlines: check() releases from the
// heads, and marks late from the first not yet late, each in O(what it releases).

import { PersistenceControl } from '../core/persistence-control.ts';

interface Wait {
  intake: number;
  sequence: number;
  deadlineMs: number;
  durable: () => void;
  late: () => void;
}

/** A queue of waits with a head index (no shifting) and a mark of how far they were told they are late. */
class WaitQueue {
  items: Wait[] = [];
  head = 0;
  lateUpTo = 0;

  get size(): number {
    return this.items.length - this.head;
  }

  push(wait: Wait): void {
    this.items.push(wait);
  }

  /** Drops released entries from the front once they are half the array. */
  compact(): void {
    if (this.head > 64 && this.head * 2 > this.items.length) {
      this.items = this.items.slice(this.head);
      this.lateUpTo = Math.max(0, this.lateUpTo - this.head);
      this.head = 0;
    }
  }
}

export class DurabilityGate {
  /** [0]: waits on the intake alone; [1 + shard]: waits on a shard's journal (and the intake). */
  private readonly queues: WaitQueue[];
  /** What check() last saw durable: this gateway's intake count, each shard's journal. */
  private seenIntake = 0;
  private readonly seenJournal: number[];
  private count = 0;

  constructor(
    private readonly control: PersistenceControl,
    private readonly gatewayId: number,
    shardCount: number,
  ) {
    this.queues = Array.from({ length: shardCount + 1 }, () => new WaitQueue());
    this.seenJournal = Array.from({ length: shardCount }, () => 0);
  }

  get size(): number {
    return this.count;
  }

  /**
   * durable() once durable; late() once, at the deadline, if it is not durable by then
   * (durable() still follows when it becomes so). shard < 0: the intake alone. The
   * deadline is the command's (its dispatch plus the bound): a shard that held the
   * command does not extend it. Per queue, deadlines come in order (dispatch order).
   */
  wait(intake: number, shard: number, sequence: number, deadlineMs: number, durable: () => void, late: () => void): void {
    if (this.durable(intake, shard, sequence)) {
      durable();
      return;
    }
    this.queues[shard + 1]!.push({ intake, sequence, deadlineMs, durable, late });
    this.count++;
  }

  /** Whether storage became durable further since the last check() (something may be released). */
  advanced(): boolean {
    if (this.count === 0) return false;
    if (this.control.intakeCommitted(this.gatewayId) !== this.seenIntake) return true;
    for (let shard = 0; shard < this.seenJournal.length; shard++) if (this.control.journalCommitted(shard) !== this.seenJournal[shard]) return true;
    return false;
  }

  /** Releases every wait that is durable; tells those past their deadline they are late. */
  check(): void {
    const intake = (this.seenIntake = this.control.intakeCommitted(this.gatewayId));
    for (let shard = 0; shard < this.seenJournal.length; shard++) this.seenJournal[shard] = this.control.journalCommitted(shard);
    if (this.count === 0) return;
    const now = Date.now();
    for (let q = 0; q < this.queues.length; q++) {
      const queue = this.queues[q]!;
      if (queue.size === 0) continue;
      const journal = q === 0 ? Infinity : this.seenJournal[q - 1]!;
      while (queue.head < queue.items.length) {
        const wait = queue.items[queue.head]!;
        if (wait.intake > intake || wait.sequence > journal) break;
        queue.head++;
        this.count--;
        wait.durable();
      }
      if (queue.lateUpTo < queue.head) queue.lateUpTo = queue.head;
      while (queue.lateUpTo < queue.items.length && queue.items[queue.lateUpTo]!.deadlineMs <= now) queue.items[queue.lateUpTo++]!.late();
      queue.compact();
    }
  }

  private durable(intake: number, shard: number, sequence: number): boolean {
    if (this.control.intakeCommitted(this.gatewayId) < intake) return false;
    return shard < 0 || this.control.journalCommitted(shard) >= sequence;
  }
}
