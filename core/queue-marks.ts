// High-water marks of the queues that are not rings (a gateway's commands in flight and
// its requests waiting for the read and persistence threads, tier 2's sealed groups, the
// bytes of commits held while a rebuild runs),
// and the venue's open connections, in one shared block so that any gateway can report
// every thread's queues. Each slot has one writer, its queue's owner, which stores the
// depth when it changes; readers take a snapshot. Rings keep their own mark in their header (core/ring.ts).
//
//   slot k: int32 2k = depth now, int32 2k+1 = the deepest it has been

export class QueueMarks {
  private readonly words: Int32Array;
  private readonly highs: number[];

  constructor(buffer: SharedArrayBuffer) {
    this.words = new Int32Array(buffer);
    this.highs = Array.from({ length: this.words.length >> 1 }, (_, slot) => Atomics.load(this.words, 2 * slot + 1));
  }

  static create(slots: number): SharedArrayBuffer {
    return new SharedArrayBuffer(Math.max(1, slots) * 8);
  }

  /** The owner of `slot` records its depth now (a plain store: called per command on the order path). */
  note(slot: number, depth: number): void {
    this.words[2 * slot] = depth;
    if (depth > this.highs[slot]!) {
      this.highs[slot] = depth;
      Atomics.store(this.words, 2 * slot + 1, depth);
    }
  }

  now(slot: number): number {
    return Atomics.load(this.words, 2 * slot);
  }

  highWater(slot: number): number {
    return Atomics.load(this.words, 2 * slot + 1);
  }
}

/** Which slot holds which queue, for a venue of `gateways` gateway threads. */
export const QUEUE_SLOTS = {
  sealedGroups: 0,
  /** Bytes of durable commits whose ingest a running rebuild holds (the persistence thread). */
  heldBytes: 1,
  gatewayInFlight: (gateway: number) => 2 + 4 * gateway,
  gatewayReads: (gateway: number) => 3 + 4 * gateway,
  gatewayOperator: (gateway: number) => 4 + 4 * gateway,
  gatewayOwnReads: (gateway: number) => 5 + 4 * gateway,
  /** Open connections, as the main thread's connection guard counts them (gateway/connection-guard.ts). */
  connections: (gateways: number) => 2 + 4 * gateways,
  count: (gateways: number) => 3 + 4 * gateways,
} as const;
