// The persistence worker's shared control block: how far each stream is durable, how
// far each projection has materialized the journal, and whether the database is up.
// Written by the persistence worker only, read by every thread. Sequences are
// BigInt64 words (Atomics works on them; a Float64 could tear).
//
//   int32  0: database state (0 starting, 1 up, 2 down)      1: commits
//   int32  2: projection failures                            3: journal rows pending projection
//   int32  4: a reader waits for the projections (seal the open group now; readers set it)
//   int64  8 + shard:  journal committed (last sequence of the gap-free durable prefix)
//   int64 72 + shard:  projection watermark (last sequence materialized)
//   int64 136 + gateway: intake committed (count of intake records durable)

export const MAX_STREAMS = 64;
export const DB_STARTING = 0;
export const DB_UP = 1;
export const DB_DOWN = 2;
const JOURNAL_BASE = 8;
const SEAL_WANTED = 4;
const PROJECTION_BASE = JOURNAL_BASE + MAX_STREAMS;
const INTAKE_BASE = PROJECTION_BASE + MAX_STREAMS;
export const PERSISTENCE_CONTROL_BYTES = (INTAKE_BASE + MAX_STREAMS) * 8;

export class PersistenceControl {
  readonly ints: Int32Array;
  private readonly longs: BigInt64Array;

  constructor(buffer: SharedArrayBuffer) {
    this.ints = new Int32Array(buffer, 0, 16);
    this.longs = new BigInt64Array(buffer);
  }

  static create(): SharedArrayBuffer {
    return new SharedArrayBuffer(PERSISTENCE_CONTROL_BYTES);
  }

  get databaseState(): number {
    return Atomics.load(this.ints, 0);
  }

  set databaseState(state: number) {
    Atomics.store(this.ints, 0, state);
  }

  countCommit(): void {
    Atomics.add(this.ints, 1, 1);
  }

  get commits(): number {
    return Atomics.load(this.ints, 1);
  }

  /**
   * A reader waits for the projection tables: tier 2 seals its open group at once instead
   * of at its age, so large groups cost reads no wait (one notify per waiting stretch).
   */
  requestSeal(): void {
    if (Atomics.compareExchange(this.ints, SEAL_WANTED, 0, 1) === 0) Atomics.notify(this.ints, SEAL_WANTED);
  }

  /** Persistence worker: whether a reader asked for a seal since the last call (and clears it). */
  takeSealRequest(): boolean {
    return Atomics.exchange(this.ints, SEAL_WANTED, 0) !== 0;
  }

  /** Persistence worker: resolves when a reader asks for a seal, or after timeoutMs. */
  async sealRequested(timeoutMs: number): Promise<void> {
    const wait = Atomics.waitAsync(this.ints, SEAL_WANTED, 0, timeoutMs);
    if (wait.async) await wait.value;
  }

  journalCommitted(shard: number): number {
    return Number(Atomics.load(this.longs, JOURNAL_BASE + shard));
  }

  setJournalCommitted(shard: number, sequence: number): void {
    Atomics.store(this.longs, JOURNAL_BASE + shard, BigInt(sequence));
  }

  projected(shard: number): number {
    return Number(Atomics.load(this.longs, PROJECTION_BASE + shard));
  }

  setProjected(shard: number, sequence: number): void {
    Atomics.store(this.longs, PROJECTION_BASE + shard, BigInt(sequence));
  }

  intakeCommitted(gateway: number): number {
    return Number(Atomics.load(this.longs, INTAKE_BASE + gateway));
  }

  setIntakeCommitted(gateway: number, count: number): void {
    Atomics.store(this.longs, INTAKE_BASE + gateway, BigInt(count));
  }
}
