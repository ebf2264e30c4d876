// The events one command produced: fixed 64-byte records in one buffer (one cache
// line per event; two views instead of a typed array per field keeps the engine's
// writes to a few base pointers). The engine clears it at the start of every
// command; its contents, and the order slots they name, are valid until the next
// command. It grows by doubling when a command sweeps many resting orders, up to
// 3 events per resting order + 1, the most a single command can produce.
//
//    0 kind u8, state u8, aggressor u8   W 0      16 sequence f64   F 2
//    4 order slot i32                    W 1      24 quantity f64   F 3
//    8 counterparty slot i32             W 2      32 price f64      F 4
//   12 reject code i32                   W 3      40 leaves f64     F 5
//                                                 48 filled f64     F 6
//
// Field meaning by kind:
//   ACCEPTED   order = slot of the target order; state/leaves/filled/price/quantity
//              = the order after the command
//   REJECTED   order = slot of the target when known, else -1; code = reject code
//   EXECUTION  order = slot of the order filled, counterparty = the other order's
//              slot; quantity/price = the fill; leaves/filled/state = that order after it
//   TRADE      order = buy order slot, counterparty = sell order slot, quantity,
//              price; aggressor = side of the incoming order. The taker execution
//              is the event two sequences before the trade, the maker execution one before.
//   EXPIRED    (after an EXPIRE command's leading ACCEPTED, which names no order: order
//              -1, quantity = orders expired, code and leaves = order slots left to scan)
//              order = slot of the order expired; state EXPIRED, quantity/filled/price
//              as it had them, leaves = the open quantity it had

export const EVENT_RECORD_BYTES = 64;
export const EVENT_WORD_SHIFT = 4;
export const EVENT_FLOAT_SHIFT = 3;
export const EVENT_BYTE_SHIFT = 6;
export const EVENT_KIND_BYTE = 0;
export const EVENT_STATE_BYTE = 1;
export const EVENT_AGGRESSOR_BYTE = 2;
export const EVENT_ORDER_WORD = 1;
export const EVENT_COUNTERPARTY_WORD = 2;
export const EVENT_CODE_WORD = 3;
export const EVENT_SEQUENCE_FLOAT = 2;
export const EVENT_QUANTITY_FLOAT = 3;
export const EVENT_PRICE_FLOAT = 4;
export const EVENT_LEAVES_FLOAT = 5;
export const EVENT_FILLED_FLOAT = 6;

const INITIAL_CAPACITY = 1024;

export class EventBuffer {
  count = 0;
  /** Views over the records; replaced when the buffer grows. */
  words: Int32Array;
  floats: Float64Array;
  bytes: Uint8Array;
  private readonly capacityMax: number;

  constructor(capacityMax: number) {
    this.capacityMax = capacityMax;
    const buffer = new ArrayBuffer(Math.min(INITIAL_CAPACITY, capacityMax) * EVENT_RECORD_BYTES);
    this.words = new Int32Array(buffer);
    this.floats = new Float64Array(buffer);
    this.bytes = new Uint8Array(buffer);
  }

  get capacity(): number {
    return this.bytes.length >> EVENT_BYTE_SHIFT;
  }

  /** Makes room for `more` events beyond the current count. */
  reserve(more: number): void {
    const needed = this.count + more;
    if (needed <= this.bytes.length >> EVENT_BYTE_SHIFT) return;
    if (needed > this.capacityMax) throw new Error(`event buffer bound ${this.capacityMax} exceeded`);
    let capacity = (this.bytes.length >> EVENT_BYTE_SHIFT) * 2;
    while (capacity < needed) capacity *= 2;
    capacity = Math.min(capacity, this.capacityMax);
    const buffer = new ArrayBuffer(capacity * EVENT_RECORD_BYTES);
    const bytes = new Uint8Array(buffer);
    bytes.set(this.bytes);
    this.words = new Int32Array(buffer);
    this.floats = new Float64Array(buffer);
    this.bytes = bytes;
  }

  kind(i: number): number {
    return this.bytes[(i << EVENT_BYTE_SHIFT) + EVENT_KIND_BYTE]!;
  }
  state(i: number): number {
    return this.bytes[(i << EVENT_BYTE_SHIFT) + EVENT_STATE_BYTE]!;
  }
  aggressor(i: number): number {
    return this.bytes[(i << EVENT_BYTE_SHIFT) + EVENT_AGGRESSOR_BYTE]!;
  }
  order(i: number): number {
    return this.words[(i << EVENT_WORD_SHIFT) + EVENT_ORDER_WORD]!;
  }
  counterparty(i: number): number {
    return this.words[(i << EVENT_WORD_SHIFT) + EVENT_COUNTERPARTY_WORD]!;
  }
  code(i: number): number {
    return this.words[(i << EVENT_WORD_SHIFT) + EVENT_CODE_WORD]!;
  }
  sequence(i: number): number {
    return this.floats[(i << EVENT_FLOAT_SHIFT) + EVENT_SEQUENCE_FLOAT]!;
  }
  quantity(i: number): number {
    return this.floats[(i << EVENT_FLOAT_SHIFT) + EVENT_QUANTITY_FLOAT]!;
  }
  price(i: number): number {
    return this.floats[(i << EVENT_FLOAT_SHIFT) + EVENT_PRICE_FLOAT]!;
  }
  leaves(i: number): number {
    return this.floats[(i << EVENT_FLOAT_SHIFT) + EVENT_LEAVES_FLOAT]!;
  }
  filled(i: number): number {
    return this.floats[(i << EVENT_FLOAT_SHIFT) + EVENT_FILLED_FLOAT]!;
  }

  /** Number of events of one kind in the buffer (tools and tests). */
  countOf(kind: number): number {
    let n = 0;
    for (let i = 0; i < this.count; i++) if (this.kind(i) === kind) n++;
    return n;
  }
}
