// Property test: a long random command stream through the engine and through a
// small, obviously correct reference venue written here (arrays, linear scans,
// no shared code with the engine) must give identical events and identical books.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { depth } from '../../core/book-queries.ts';
import { SeededRandom } from '../../bench/lib/seeded-random.ts';
import {
  ACCOUNT_1,
  ACCOUNT_2,
  EngineDriver,
  idOf,
  INSTRUMENT_A,
  INSTRUMENT_B,
  PARTICIPANT_1,
  PARTICIPANT_2,
  type DecodedEvent,
  type RestingView,
  type SubmitSpec,
  type TargetSpec,
} from '../support/engine-driver.ts';

interface RefOrder {
  orderId: string;
  instrumentId: string;
  participantId: string;
  accountId: string;
  runNo: number;
  sessionNo: number;
  side: 'BUY' | 'SELL';
  hidden: boolean;
  ioc: boolean;
  price: number;
  quantity: number;
  filled: number;
  state: 'OPEN' | 'PARTIALLY_FILLED' | 'FILLED' | 'CANCELLED';
  engineOrderId: number;
  /** Arrival time at its price: lower is earlier. Reset when priority is lost. */
  priority: number;
}

/** Negative when a ranks before b on the same side. */
function ranks(a: RefOrder, b: RefOrder): number {
  if (a.price !== b.price) return a.side === 'BUY' ? b.price - a.price : a.price - b.price;
  if (a.hidden !== b.hidden) return a.hidden ? 1 : -1;
  return a.priority - b.priority;
}

class ReferenceVenue {
  readonly orders = new Map<string, RefOrder>();
  /** The orders resting right now (a subset of `orders`, kept to avoid scanning history). */
  private readonly resting = new Set<RefOrder>();
  private readonly currencies = new Map<string, string>();
  private sequence = 0;
  private clock = 0;

  submit(spec: SubmitSpec): DecodedEvent[] {
    if (this.orders.has(spec.orderId)) return [this.rejected(spec.orderId, 'DUPLICATE_ORDER_ID')];
    const instrumentId = spec.instrumentId ?? INSTRUMENT_A;
    const currency = spec.currency ?? 'USD';
    const known = this.currencies.get(instrumentId);
    if (known !== undefined && known !== currency) return [this.rejected(spec.orderId, 'CURRENCY_MISMATCH')];
    this.currencies.set(instrumentId, currency);
    const order: RefOrder = {
      orderId: spec.orderId,
      instrumentId,
      participantId: spec.participantId ?? PARTICIPANT_1,
      accountId: spec.accountId ?? ACCOUNT_1,
      runNo: spec.runNo ?? 1,
      sessionNo: spec.sessionNo ?? 1,
      side: spec.side,
      hidden: spec.hidden ?? false,
      ioc: spec.ioc ?? false,
      price: spec.price,
      quantity: spec.quantity,
      filled: 0,
      state: 'OPEN',
      engineOrderId: 0,
      priority: 0,
    };
    this.orders.set(order.orderId, order);
    const accepted = this.acceptedPlaceholder(order);
    order.engineOrderId = accepted.sequence;
    const fills = this.execute(order);
    return [this.finish(accepted, order), ...fills];
  }

  cancel(target: TargetSpec): DecodedEvent[] {
    const order = this.target(target);
    if (typeof order === 'string') return [this.rejected(target.orderId, order)];
    order.state = 'CANCELLED';
    this.resting.delete(order);
    return [this.finish(this.acceptedPlaceholder(order), order)];
  }

  modify(target: TargetSpec, price: number, quantity: number): DecodedEvent[] {
    const order = this.target(target);
    if (typeof order === 'string') return [this.rejected(target.orderId, order)];
    if (quantity <= order.filled) return [this.rejected(target.orderId, 'INVALID_MODIFY')];
    const accepted = this.acceptedPlaceholder(order);
    const keepsPriority = price === order.price && quantity <= order.quantity;
    order.price = price;
    order.quantity = quantity;
    const fills = keepsPriority ? [] : this.execute(order);
    return [this.finish(accepted, order), ...fills];
  }

  /** Resting orders of one side in priority order: price, then displayed before hidden, then time. */
  book(instrumentId: string, side: 'BUY' | 'SELL'): RefOrder[] {
    return [...this.resting].filter((o) => o.instrumentId === instrumentId && o.side === side).sort(ranks);
  }

  /** Any resting order, or undefined. */
  pickResting(random: SeededRandom): RefOrder | undefined {
    return this.resting.size === 0 ? undefined : random.pick([...this.resting]);
  }

  /** The first order of book(instrumentId, side), by a linear scan. */
  private best(instrumentId: string, side: 'BUY' | 'SELL'): RefOrder | undefined {
    let best: RefOrder | undefined;
    for (const o of this.resting) {
      if (o.instrumentId === instrumentId && o.side === side && (best === undefined || ranks(o, best) < 0)) best = o;
    }
    return best;
  }

  private rests(o: RefOrder): boolean {
    return !o.ioc && (o.state === 'OPEN' || o.state === 'PARTIALLY_FILLED') && o.priority > 0;
  }

  private target(t: TargetSpec): RefOrder | string {
    const order = this.orders.get(t.orderId);
    if (order === undefined) return 'ORDER_NOT_FOUND';
    const same =
      order.instrumentId === (t.instrumentId ?? INSTRUMENT_A) &&
      order.participantId === (t.participantId ?? PARTICIPANT_1) &&
      order.accountId === (t.accountId ?? ACCOUNT_1) &&
      order.runNo === (t.runNo ?? 1) &&
      order.sessionNo === (t.sessionNo ?? 1);
    if (!same) return 'ORDER_CONTEXT_MISMATCH';
    if (!this.rests(order)) return 'ORDER_NOT_OPEN';
    return order;
  }

  /** Matches an incoming (or re-entering) order, then rests it or cancels the IOC remainder. */
  private execute(taker: RefOrder): DecodedEvent[] {
    taker.priority = 0; // not resting while it matches
    this.resting.delete(taker);
    const events: DecodedEvent[] = [];
    const opposite = taker.side === 'BUY' ? 'SELL' : 'BUY';
    while (taker.filled < taker.quantity) {
      const maker = this.best(taker.instrumentId, opposite);
      if (maker === undefined) break;
      if (taker.side === 'BUY' ? maker.price > taker.price : maker.price < taker.price) break;
      const fill = Math.min(taker.quantity - taker.filled, maker.quantity - maker.filled);
      taker.filled += fill;
      maker.filled += fill;
      maker.state = maker.filled === maker.quantity ? 'FILLED' : 'PARTIALLY_FILLED';
      if (maker.state === 'FILLED') this.resting.delete(maker);
      const takerLeaves = taker.quantity - taker.filled;
      events.push(
        {
          kind: 'execution',
          sequence: ++this.sequence,
          orderId: taker.orderId,
          counterpartyOrderId: maker.orderId,
          quantityUnits: fill,
          priceNanos: maker.price,
          leaves: takerLeaves,
          filled: taker.filled,
          state: takerLeaves === 0 ? 'FILLED' : 'PARTIALLY_FILLED',
        },
        {
          kind: 'execution',
          sequence: ++this.sequence,
          orderId: maker.orderId,
          counterpartyOrderId: taker.orderId,
          quantityUnits: fill,
          priceNanos: maker.price,
          leaves: maker.quantity - maker.filled,
          filled: maker.filled,
          state: maker.state,
        },
        {
          kind: 'trade',
          sequence: ++this.sequence,
          buyOrderId: taker.side === 'BUY' ? taker.orderId : maker.orderId,
          sellOrderId: taker.side === 'BUY' ? maker.orderId : taker.orderId,
          quantityUnits: fill,
          priceNanos: maker.price,
          aggressor: taker.side,
        },
      );
    }
    if (taker.filled === taker.quantity) taker.state = 'FILLED';
    else if (taker.ioc) taker.state = 'CANCELLED';
    else {
      taker.state = taker.filled > 0 ? 'PARTIALLY_FILLED' : 'OPEN';
      taker.priority = ++this.clock;
      this.resting.add(taker);
    }
    return events;
  }

  private acceptedPlaceholder(order: RefOrder): DecodedEvent & { kind: 'accepted' } {
    return {
      kind: 'accepted',
      sequence: ++this.sequence,
      orderId: order.orderId,
      engineOrderId: order.engineOrderId,
      state: '',
      leaves: 0,
      filled: 0,
      priceNanos: 0,
      quantityUnits: 0,
    };
  }

  private finish(event: DecodedEvent & { kind: 'accepted' }, order: RefOrder): DecodedEvent {
    const open = order.state === 'OPEN' || order.state === 'PARTIALLY_FILLED';
    return {
      ...event,
      engineOrderId: order.engineOrderId,
      state: order.state,
      leaves: open ? order.quantity - order.filled : 0,
      filled: order.filled,
      priceNanos: order.price,
      quantityUnits: order.quantity,
    };
  }

  private rejected(orderId: string, code: string): DecodedEvent {
    return { kind: 'rejected', sequence: ++this.sequence, orderId, code };
  }
}

const INSTRUMENTS = [INSTRUMENT_A, INSTRUMENT_B];
const OWNERS = [
  { participantId: PARTICIPANT_1, accountId: ACCOUNT_1 },
  { participantId: PARTICIPANT_1, accountId: ACCOUNT_2 },
  { participantId: PARTICIPANT_2, accountId: ACCOUNT_2 },
];

function view(orders: RefOrder[]): RestingView[] {
  return orders.map((o) => ({ orderId: o.orderId, priceNanos: o.price, leaves: o.quantity - o.filled, hidden: o.hidden }));
}

function compareBooks(engine: EngineDriver, reference: ReferenceVenue, at: number): void {
  for (const instrumentId of INSTRUMENTS) {
    for (const side of ['BUY', 'SELL'] as const) {
      const expected = reference.book(instrumentId, side);
      assert.deepEqual(engine.book(side, instrumentId), view(expected), `book ${instrumentId} ${side} after command ${at}`);
      const book = engine.bookIndex(instrumentId);
      if (book < 0) continue;
      const visible = new Map<number, { quantityUnits: number; orderCount: number }>();
      for (const o of expected) {
        if (o.hidden) continue;
        const level = visible.get(o.price) ?? { quantityUnits: 0, orderCount: 0 };
        level.quantityUnits += o.quantity - o.filled;
        level.orderCount++;
        visible.set(o.price, level);
      }
      const expectedDepth = [...visible].slice(0, 10).map(([priceNanos, l]) => ({ priceNanos, ...l }));
      assert.deepEqual(depth(engine.engine, book, side === 'BUY' ? 0 : 1, 10), expectedDepth, `depth after command ${at}`);
    }
  }
}

test('100,000 random commands give identical events and books in the engine and the reference venue', () => {
  const random = new SeededRandom(20261122);
  const engine = new EngineDriver({ orderCapacity: 1 << 18 });
  const reference = new ReferenceVenue();
  const ids: string[] = [];
  const counts = new Map<string, number>();
  const commands = 100_000;
  for (let n = 1; n <= commands; n++) {
    const roll = random.below(100);
    let expected: DecodedEvent[];
    let actual: DecodedEvent[];
    if (roll < 55 || ids.length === 0) {
      const owner = random.pick(OWNERS);
      const reuse = random.chance(0.01) && ids.length > 0;
      const spec: SubmitSpec = {
        orderId: reuse ? random.pick(ids) : idOf(0x5eed, n),
        side: random.chance(0.5) ? 'BUY' : 'SELL',
        price: 90 + random.below(21),
        quantity: 1 + random.below(20),
        hidden: random.chance(0.15),
        ioc: random.chance(0.2),
        instrumentId: random.pick(INSTRUMENTS),
        currency: random.chance(0.01) ? 'EUR' : 'USD',
        runNo: 1,
        sessionNo: 1,
        ...owner,
      };
      if (!reuse) ids.push(spec.orderId);
      expected = reference.submit(spec);
      actual = engine.submit(spec);
    } else {
      // Mostly resting targets (the live path), some done or unknown ones (the reject paths).
      const known = random.chance(0.7) ? reference.pickResting(random) : reference.orders.get(random.pick(ids));
      const target: TargetSpec =
        random.chance(0.05) || known === undefined
          ? { orderId: idOf(0xdead, n) }
          : {
              orderId: known.orderId,
              instrumentId: random.chance(0.03) ? random.pick(INSTRUMENTS) : known.instrumentId,
              participantId: random.chance(0.03) ? random.pick(OWNERS).participantId : known.participantId,
              accountId: random.chance(0.03) ? random.pick(OWNERS).accountId : known.accountId,
              runNo: random.chance(0.02) ? 2 : known.runNo,
              sessionNo: random.chance(0.02) ? 2 : known.sessionNo,
            };
      if (roll < 80) {
        expected = reference.cancel(target);
        actual = engine.cancel(target);
      } else {
        const base = known?.price ?? 100;
        const price = random.chance(0.4) ? base : Math.max(1, base + random.between(-4, 4));
        // Half the modifies of a partly filled order ask for exactly the filled quantity.
        const quantity = known !== undefined && known.filled > 0 && random.chance(0.5) ? known.filled : 1 + random.below(25);
        expected = reference.modify(target, price, quantity);
        actual = engine.modify(target, price, quantity);
      }
    }
    for (const e of expected) counts.set(e.kind === 'rejected' ? e.code : e.kind, (counts.get(e.kind === 'rejected' ? e.code : e.kind) ?? 0) + 1);
    assert.deepEqual(actual, expected, `command ${n}`);
    if (n % 10_000 === 0) compareBooks(engine, reference, n);
  }
  compareBooks(engine, reference, commands);
  // The stream exercised every rule, not just the easy path.
  for (const kind of ['accepted', 'execution', 'trade', 'ORDER_NOT_FOUND', 'ORDER_NOT_OPEN', 'ORDER_CONTEXT_MISMATCH', 'DUPLICATE_ORDER_ID', 'CURRENCY_MISMATCH', 'INVALID_MODIFY']) {
    assert.ok((counts.get(kind) ?? 0) > 20, `${kind} occurred ${counts.get(kind) ?? 0} times`);
  }
});
