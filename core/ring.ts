// Single-producer single-consumer ring of fixed-size slots on a SharedArrayBuffer.
// One thread writes slots and publishes them; one other thread reads and releases
// them. "Full" is an answer (freeSlots() === 0), never a wait inside the ring.
//
// Layout (byte offsets; every counter on its own cache line, no false sharing):
//
//     0 ┌ write index (u32, wrapping), stored by the producer only ┐
//     4 │ high-water mark (most slots ever filled), producer only  │
//    64 ├ read index (u32, wrapping), stored by the consumer only  ┤
//   128 ├ slot 0 | slot 1 | … | slot capacity-1                    ┘
//
// Indices count slots forever and wrap at 2^32; capacity is a power of two, so
// `index & (capacity - 1)` is the position and `write - read` (as u32) the fill.
// Publishing is an Atomics.store after plain writes of the slot bytes; the consumer's
// Atomics.load of the write index makes those bytes visible to it (the JS memory
// model orders plain accesses around sequentially consistent atomics).

export const RING_HEADER_BYTES = 128;
const WRITE_WORD = 0;
const HIGH_WORD = 1;
const READ_WORD = 16;

export function ringBytes(slotBytes: number, capacity: number): number {
  return RING_HEADER_BYTES + slotBytes * capacity;
}

export function createRingBuffer(slotBytes: number, capacity: number): SharedArrayBuffer {
  if (!Number.isInteger(capacity) || capacity < 1 || (capacity & (capacity - 1)) !== 0 || capacity > 1 << 24) {
    throw new RangeError(`ring capacity must be a power of two in [1, 2^24], got ${capacity}`);
  }
  if (slotBytes % 8 !== 0 || slotBytes <= 0) throw new RangeError(`slot size must be a positive multiple of 8, got ${slotBytes}`);
  return new SharedArrayBuffer(ringBytes(slotBytes, capacity));
}

/** Views and geometry shared by both ends. */
class RingBase {
  readonly buffer: SharedArrayBuffer;
  readonly slotBytes: number;
  readonly capacity: number;
  readonly mask: number;
  /** Whole-buffer views: slot data is read and written through these at slotOffset(). */
  readonly words: Int32Array;
  readonly floats: Float64Array;
  readonly bytes: Uint8Array;
  protected readonly control: Int32Array;

  constructor(buffer: SharedArrayBuffer, slotBytes: number) {
    this.buffer = buffer;
    this.slotBytes = slotBytes;
    this.capacity = (buffer.byteLength - RING_HEADER_BYTES) / slotBytes;
    if (!Number.isInteger(this.capacity) || (this.capacity & (this.capacity - 1)) !== 0) {
      throw new RangeError('buffer does not hold a ring of this slot size');
    }
    this.mask = this.capacity - 1;
    this.words = new Int32Array(buffer);
    this.floats = new Float64Array(buffer);
    this.bytes = new Uint8Array(buffer);
    this.control = this.words;
  }

  /** Byte offset of the slot holding logical index `index`. */
  slotOffset(index: number): number {
    return RING_HEADER_BYTES + (index & this.mask) * this.slotBytes;
  }

  /** Slots written and not yet released (either side may ask; a snapshot). */
  fill(): number {
    return (Atomics.load(this.control, WRITE_WORD) - Atomics.load(this.control, READ_WORD)) >>> 0;
  }

  /** Total slots ever released by the consumer (wrapping u32): a progress mark. */
  readIndex(): number {
    return Atomics.load(this.control, READ_WORD) >>> 0;
  }

  /** The most slots ever filled at once (the producer notes it when it publishes). */
  highWater(): number {
    return Atomics.load(this.control, HIGH_WORD);
  }
}

// The ends read each other's index at every call instead of caching it. An Atomics.load
// needs no fence on x86, but Node 20's V8 runs it as a builtin call, not inlined: about
// 5-8 ns more than a plain load (docs/decisions/0027-thread-wake-ups.md), a few per batch,
// which no profile of the venue has found worth a cache.

export class RingProducer extends RingBase {
  private write: number;
  private high: number;

  constructor(buffer: SharedArrayBuffer, slotBytes: number) {
    super(buffer, slotBytes);
    this.write = Atomics.load(this.control, WRITE_WORD) >>> 0;
    this.high = Atomics.load(this.control, HIGH_WORD);
  }

  /** Logical index of the next slot to write (valid while freeSlots() > 0). */
  get nextIndex(): number {
    return this.write;
  }

  /** Slots that can be written now; 0 means full. */
  freeSlots(): number {
    return this.capacity - ((this.write - Atomics.load(this.control, READ_WORD)) >>> 0);
  }

  /** Makes the next `count` written slots visible to the consumer (count <= freeSlots()). */
  publish(count: number): void {
    const free = this.freeSlots();
    if (count > free) throw new Error('ring: publish beyond the free slots');
    this.write = (this.write + count) >>> 0;
    Atomics.store(this.control, WRITE_WORD, this.write | 0);
    const filled = this.capacity - free + count;
    if (filled > this.high) {
      this.high = filled;
      Atomics.store(this.control, HIGH_WORD, filled);
    }
  }
}

export class RingConsumer extends RingBase {
  private read: number;

  constructor(buffer: SharedArrayBuffer, slotBytes: number) {
    super(buffer, slotBytes);
    this.read = Atomics.load(this.control, READ_WORD) >>> 0;
  }

  /** Logical index of the next slot to read. */
  get nextIndex(): number {
    return this.read;
  }

  /** Slots published and not yet released; 0 means empty. */
  available(): number {
    return (Atomics.load(this.control, WRITE_WORD) - this.read) >>> 0;
  }

  /**
   * Copies the next `count` slots (count <= available()), in order, to target[at..]:
   * at most two block copies (the ring may wrap). Does not release them.
   */
  copyOut(count: number, target: Uint8Array, at: number): void {
    const first = this.read & this.mask;
    const head = Math.min(count, this.capacity - first);
    const from = RING_HEADER_BYTES + first * this.slotBytes;
    target.set(this.bytes.subarray(from, from + head * this.slotBytes), at);
    if (head < count) target.set(this.bytes.subarray(RING_HEADER_BYTES, RING_HEADER_BYTES + (count - head) * this.slotBytes), at + head * this.slotBytes);
  }

  /** Hands the next `count` read slots back to the producer (count <= available()). */
  release(count: number): void {
    if (count > this.available()) throw new Error('ring: release beyond the available slots');
    this.read = (this.read + count) >>> 0;
    Atomics.store(this.control, READ_WORD, this.read | 0);
  }
}

/** A ring's capacity, fill and high-water mark, from any thread (for the status route). */
export function ringMarks(buffer: SharedArrayBuffer, slotBytes: number): { capacity: number; now: number; highWater: number } {
  const control = new Int32Array(buffer, 0, 32);
  return {
    capacity: (buffer.byteLength - RING_HEADER_BYTES) / slotBytes,
    now: (Atomics.load(control, WRITE_WORD) - Atomics.load(control, READ_WORD)) >>> 0,
    highWater: Atomics.load(control, HIGH_WORD),
  };
}

/** The consumer's read index of a ring, from any thread (a progress mark). */
export function ringReadIndex(buffer: SharedArrayBuffer): number {
  return Atomics.load(new Int32Array(buffer, 0, 32), READ_WORD) >>> 0;
}
