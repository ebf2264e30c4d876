// The events one command produced, as a struct of typed arrays. The engine
// clears it at the start of every command; its contents (and the order slots they
// name) are valid until the next command. It grows by doubling when a command
// sweeps many resting orders, up to 3 events per resting order + 1, which is the
// most a single command can produce.
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

import { EventKind } from './codes.ts';

const INITIAL_CAPACITY = 1024;

export class EventBuffer {
  count = 0;
  kind: Uint8Array;
  state: Uint8Array;
  aggressor: Uint8Array;
  sequence: Float64Array;
  order: Int32Array;
  counterparty: Int32Array;
  code: Int32Array;
  quantity: Float64Array;
  price: Float64Array;
  leaves: Float64Array;
  filled: Float64Array;
  private readonly capacityMax: number;

  constructor(capacityMax: number) {
    this.capacityMax = capacityMax;
    const capacity = Math.min(INITIAL_CAPACITY, capacityMax);
    this.kind = new Uint8Array(capacity);
    this.state = new Uint8Array(capacity);
    this.aggressor = new Uint8Array(capacity);
    this.sequence = new Float64Array(capacity);
    this.order = new Int32Array(capacity);
    this.counterparty = new Int32Array(capacity);
    this.code = new Int32Array(capacity);
    this.quantity = new Float64Array(capacity);
    this.price = new Float64Array(capacity);
    this.leaves = new Float64Array(capacity);
    this.filled = new Float64Array(capacity);
  }

  get capacity(): number {
    return this.kind.length;
  }

  /** Makes room for `more` events beyond the current count. */
  reserve(more: number): void {
    const needed = this.count + more;
    if (needed <= this.kind.length) return;
    if (needed > this.capacityMax) throw new Error(`event buffer bound ${this.capacityMax} exceeded`);
    let capacity = this.kind.length * 2;
    while (capacity < needed) capacity *= 2;
    capacity = Math.min(capacity, this.capacityMax);
    this.kind = grow(this.kind, new Uint8Array(capacity));
    this.state = grow(this.state, new Uint8Array(capacity));
    this.aggressor = grow(this.aggressor, new Uint8Array(capacity));
    this.sequence = grow(this.sequence, new Float64Array(capacity));
    this.order = grow(this.order, new Int32Array(capacity));
    this.counterparty = grow(this.counterparty, new Int32Array(capacity));
    this.code = grow(this.code, new Int32Array(capacity));
    this.quantity = grow(this.quantity, new Float64Array(capacity));
    this.price = grow(this.price, new Float64Array(capacity));
    this.leaves = grow(this.leaves, new Float64Array(capacity));
    this.filled = grow(this.filled, new Float64Array(capacity));
  }

  /** Number of events of one kind in the buffer (tests and tools). */
  countOf(kind: EventKind): number {
    let n = 0;
    for (let i = 0; i < this.count; i++) if (this.kind[i] === kind) n++;
    return n;
  }
}

function grow<T extends Uint8Array | Int32Array | Float64Array>(from: T, to: T): T {
  to.set(from as never);
  return to;
}
