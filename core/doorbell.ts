// Wakes a sleeping consumer once per batch, not per message (ringbuf.js style).
// One doorbell per consumer thread, shared by all the rings it reads.
//
//   word 0: ring counter (incremented on every ring; Atomics.wait/notify on it)
//   word 1: sleeping flag (set by the consumer just before it waits)
//
// The consumer sets `sleeping`, checks its rings once more, and only then waits;
// a producer publishes, then rings only if `sleeping` is set. Both use
// sequentially consistent atomics, so one of them always sees the other: no lost
// wake-up, and no notify at all while the consumer is busy.

export const DOORBELL_BYTES = 64;
const COUNTER = 0;
const SLEEPING = 1;

export class Doorbell {
  readonly words: Int32Array;

  constructor(buffer: SharedArrayBuffer) {
    this.words = new Int32Array(buffer, 0, 2);
  }

  static create(): SharedArrayBuffer {
    return new SharedArrayBuffer(DOORBELL_BYTES);
  }

  /** Producer side, after publishing: wakes the consumer if it sleeps. */
  ring(): void {
    if (Atomics.load(this.words, SLEEPING) !== 0) {
      Atomics.add(this.words, COUNTER, 1);
      Atomics.notify(this.words, COUNTER);
    }
  }

  /** Rings whether or not the consumer says it sleeps (shutdown, control messages). */
  ringAlways(): void {
    Atomics.add(this.words, COUNTER, 1);
    Atomics.notify(this.words, COUNTER);
  }

  /**
   * Consumer side: announces sleep and returns the counter to wait on. The caller
   * must check its rings again after this and before waiting.
   */
  prepareSleep(): number {
    Atomics.store(this.words, SLEEPING, 1);
    return Atomics.load(this.words, COUNTER);
  }

  /** Blocks (worker threads only) until rung or timeoutMs passes. */
  sleep(seen: number, timeoutMs: number): void {
    Atomics.wait(this.words, COUNTER, seen, timeoutMs);
    Atomics.store(this.words, SLEEPING, 0);
  }

  /** Event-loop variant: resolves when rung or after timeoutMs. */
  async sleepAsync(seen: number, timeoutMs: number): Promise<void> {
    const result = Atomics.waitAsync(this.words, COUNTER, seen, timeoutMs);
    if (result.async) await result.value;
    Atomics.store(this.words, SLEEPING, 0);
  }

  /** Cancels a prepared sleep (work turned up on the re-check). */
  wake(): void {
    Atomics.store(this.words, SLEEPING, 0);
  }
}
