// Holds answers until what they promise is durable (API contract, processing modes):
// an intake record of this gateway committed (captured-ack, accepted-async) and, for
// answers that report an outcome (sync-result, stream-ack), the outcome's sequence
// committed on its shard's journal. The persistence worker rings the gateway after
// every commit; check() then releases what became durable. A wait has a bound: past
// it the client gets a 503 (and retries with the same key), while the wait goes on:
// once the command is durable its record gets the answer the retry will find.

import { PersistenceControl } from '../core/persistence-control.ts';

interface Wait {
  intake: number;
  shard: number;
  sequence: number;
  /** Infinity once late. */
  deadlineMs: number;
  durable: () => void;
  late: () => void;
}

export class DurabilityGate {
  private waits: Wait[] = [];
  /** What check() last saw durable: this gateway's intake count, each shard's journal. */
  private seenIntake = 0;
  private readonly seenJournal: number[];

  constructor(
    private readonly control: PersistenceControl,
    private readonly gatewayId: number,
    private readonly waitMs: number,
    shardCount: number,
  ) {
    this.seenJournal = Array.from({ length: shardCount }, () => 0);
  }

  get size(): number {
    return this.waits.length;
  }

  /**
   * durable() once durable; late() once, at the deadline, if it is not durable by then
   * (durable() still follows when it becomes so). shard < 0: the intake alone.
   */
  wait(intake: number, shard: number, sequence: number, durable: () => void, late: () => void): void {
    if (this.durable(intake, shard, sequence)) {
      durable();
      return;
    }
    this.waits.push({ intake, shard, sequence, deadlineMs: Date.now() + this.waitMs, durable, late });
  }

  /** Whether storage became durable further since the last check() (something may be released). */
  advanced(): boolean {
    if (this.waits.length === 0) return false;
    if (this.control.intakeCommitted(this.gatewayId) !== this.seenIntake) return true;
    for (let shard = 0; shard < this.seenJournal.length; shard++) if (this.control.journalCommitted(shard) !== this.seenJournal[shard]) return true;
    return false;
  }

  /** Releases every wait that is durable; tells those past their deadline they are late. */
  check(): void {
    this.seenIntake = this.control.intakeCommitted(this.gatewayId);
    for (let shard = 0; shard < this.seenJournal.length; shard++) this.seenJournal[shard] = this.control.journalCommitted(shard);
    if (this.waits.length === 0) return;
    const now = Date.now();
    const still: Wait[] = [];
    for (const wait of this.waits) {
      if (this.durable(wait.intake, wait.shard, wait.sequence)) {
        wait.durable();
        continue;
      }
      if (now >= wait.deadlineMs) {
        wait.deadlineMs = Infinity;
        wait.late();
      }
      still.push(wait);
    }
    this.waits = still;
  }

  private durable(intake: number, shard: number, sequence: number): boolean {
    if (this.control.intakeCommitted(this.gatewayId) < intake) return false;
    return shard < 0 || this.control.journalCommitted(shard) >= sequence;
  }
}
