// Holds answers until what they promise is durable (API contract, processing modes):
// an intake record of this gateway committed (captured-ack, accepted-async) and, for
// answers that report an outcome (sync-result, stream-ack), the outcome's sequence
// committed on its shard's journal. The persistence worker rings the gateway after
// every commit; check() then releases what became durable. A wait has a bound: past
// it the answer becomes a 503 and the client retries with the same key.

import { PersistenceControl } from '../core/persistence-control.ts';

interface Wait {
  intake: number;
  shard: number;
  sequence: number;
  deadlineMs: number;
  done: (durable: boolean) => void;
}

export class DurabilityGate {
  private waits: Wait[] = [];

  constructor(
    private readonly control: PersistenceControl,
    private readonly gatewayId: number,
    private readonly waitMs: number,
  ) {}

  get size(): number {
    return this.waits.length;
  }

  /** done(true) once durable, done(false) at the deadline. shard < 0: the intake alone. */
  wait(intake: number, shard: number, sequence: number, done: (durable: boolean) => void): void {
    if (this.durable(intake, shard, sequence)) {
      done(true);
      return;
    }
    this.waits.push({ intake, shard, sequence, deadlineMs: Date.now() + this.waitMs, done });
  }

  /** Releases every wait that is durable or past its deadline. */
  check(): void {
    if (this.waits.length === 0) return;
    const now = Date.now();
    const still: Wait[] = [];
    for (const wait of this.waits) {
      if (this.durable(wait.intake, wait.shard, wait.sequence)) wait.done(true);
      else if (now >= wait.deadlineMs) wait.done(false);
      else still.push(wait);
    }
    this.waits = still;
  }

  private durable(intake: number, shard: number, sequence: number): boolean {
    if (this.control.intakeCommitted(this.gatewayId) < intake) return false;
    return shard < 0 || this.control.journalCommitted(shard) >= sequence;
  }
}
