// A realistic order flow for the load generator: per lane, orders around a moving mid
// on the instruments it is given, for the traders it is given (the benches: both dev
// traders on 8 instruments, so there are counterparties):
//   60% resting limits 1..10 ticks on the passive side,
//   20% cancels of the lane's own resting orders,
//   15% crossing orders (IOC mostly, some DAY limits that rest their remainder),
//    5% modifies of the lane's own resting orders.
// The lane learns from sync-result answers which of its orders rest; under the
// pointer modes it assumes a passive order rests (a cancel of a filled one is then a
// business rejection, as it would be for a real client).

import { SeededRandom } from '../lib/seeded-random.ts';

/** A principal the flow acts as: its bearer token and the participant and account its orders carry. */
export interface Trader {
  token: string;
  participantId: string;
  accountId: string;
}

/** The benches' traders: the development principals (gateway/principals.dev.json). */
export const TRADERS: readonly Trader[] = [
  { token: 'dev-token-trader-a', participantId: 'a1000000-0000-4000-8000-000000000001', accountId: 'a2000000-0000-4000-8000-000000000001' },
  { token: 'dev-token-trader-b', participantId: 'b1000000-0000-4000-8000-000000000001', accountId: 'b2000000-0000-4000-8000-000000000001' },
];

/** The benches' instruments. */
export const INSTRUMENTS: readonly string[] = Array.from({ length: 8 }, (_, k) => `5e000000-0000-4000-8000-00000000000${k}`);
const TICK = 1; // in cents
const MAX_RESTING = 2_000; // per lane: bounded

export type FlowKind = 'rest' | 'cross' | 'cancel' | 'modify';

export interface FlowRequest {
  kind: FlowKind;
  path: string;
  token: string;
  body: string;
  commandId: string;
  orderId: string;
  /** For rest/cross: the order's quantity, to learn from the answer whether it rests. */
  quantity: number;
}

interface Resting {
  orderId: string;
  instrument: number;
  trader: number;
  side: 'BUY' | 'SELL';
  cents: number;
  quantity: number;
}

const price = (cents: number) => `${Math.floor(cents / 100)}.${String(cents % 100).padStart(2, '0')}`;

export class OrderFlow {
  private readonly random: SeededRandom;
  private readonly mids: number[];
  private readonly resting: Resting[] = [];
  private readonly pending = new Map<string, Resting>();

  /** Trace, causation and correlation ids are not keys: one set per lane keeps the generator's CPU for the venue. */
  private readonly trace = { traceId: crypto.randomUUID(), causationId: crypto.randomUUID(), correlationId: crypto.randomUUID() };
  private filled = 0;

  constructor(
    seed: number,
    private readonly session: { runId: string; venueSessionId: string },
    private readonly traders: readonly Trader[] = TRADERS,
    private readonly instruments: readonly string[] = INSTRUMENTS,
  ) {
    if (traders.length === 0 || instruments.length === 0) throw new RangeError(`a flow needs a trader and an instrument, got ${traders.length} and ${instruments.length}`);
    this.random = new SeededRandom(seed);
    this.mids = instruments.map(() => 10_000); // 100.00
  }

  /** A resting buy far below any trading (1.00 to 50.00), for filling a book before a restart. */
  fill(): FlowRequest {
    const commandId = crypto.randomUUID();
    const orderId = crypto.randomUUID();
    const t = this.traders[0]!;
    const cents = 100 + (this.filled++ % 4900);
    return {
      kind: 'rest',
      path: '/api/v1/orders/submit',
      token: t.token,
      commandId,
      orderId,
      quantity: 1,
      body: this.submitBody(commandId, orderId, this.instruments[this.filled % this.instruments.length]!, t, 'BUY', '1', price(cents), 'DAY'),
    };
  }

  /**
   * Bodies are written out field by field: with object spreads (`{ ...envelope, orderId }`)
   * JSON.stringify took 22 µs a body instead of 4 (V8 builds such objects slowly), a
   * quarter of the generator's CPU per request, taken from the venue on these 2 cores.
   */
  private submitBody(commandId: string, orderId: string, instrumentId: string, t: Trader, side: string, quantityUnits: string, limitPrice: string, timeInForce: string): string {
    const { traceId, causationId, correlationId } = this.trace;
    return JSON.stringify({
      commandId,
      traceId,
      causationId,
      correlationId,
      actorId: 'load-generator',
      occurredAt: new Date().toISOString(),
      orderId,
      instrumentId,
      participantId: t.participantId,
      accountId: t.accountId,
      side,
      orderType: 'LIMIT',
      quantityUnits,
      limitPrice,
      currency: 'USD',
      timeInForce,
    });
  }

  /** Cancel and modify bodies: the envelope, the target order's context, then `extra` (already JSON: `,"reason":"load"`). */
  private targetBody(order: Resting, commandId: string, extra: string): string {
    const { traceId, causationId, correlationId } = this.trace;
    const t = this.traders[order.trader]!;
    const context = JSON.stringify({
      commandId,
      traceId,
      causationId,
      correlationId,
      actorId: 'load-generator',
      occurredAt: new Date().toISOString(),
      orderId: order.orderId,
      runId: this.session.runId,
      venueSessionId: this.session.venueSessionId,
      instrumentId: this.instruments[order.instrument],
      participantId: t.participantId,
      accountId: t.accountId,
    });
    return `${context.slice(0, -1)}${extra}}`;
  }

  next(): FlowRequest {
    const r = this.random;
    const instrument = r.below(this.instruments.length);
    if (r.chance(0.01)) this.mids[instrument]! += r.chance(0.5) ? TICK : -TICK;
    const roll = r.below(100);
    if (roll >= 60 && roll < 80 && this.resting.length > 0) return this.cancel();
    if (roll >= 95 && this.resting.length > 0) return this.modify();
    const trader = r.below(this.traders.length);
    const side = r.chance(0.5) ? 'BUY' : 'SELL';
    const mid = this.mids[instrument]!;
    const crossing = roll >= 80 && roll < 95;
    const distance = crossing ? -r.between(1, 5) : r.between(1, 10);
    const cents = Math.max(1, side === 'BUY' ? mid - distance * TICK : mid + distance * TICK);
    const quantity = r.between(1, crossing ? 30 : 10);
    const ioc = crossing && r.chance(0.7);
    const orderId = crypto.randomUUID();
    const commandId = crypto.randomUUID();
    const t = this.traders[trader]!;
    if (!ioc) this.pending.set(orderId, { orderId, instrument, trader, side, cents, quantity });
    return {
      kind: crossing ? 'cross' : 'rest',
      path: '/api/v1/orders/submit',
      token: t.token,
      commandId,
      orderId,
      quantity,
      body: this.submitBody(commandId, orderId, this.instruments[instrument]!, t, side, String(quantity), price(cents), ioc ? 'IOC' : 'DAY'),
    };
  }

  /** What the answer said: the quantity of the order that traded on arrival (null: unknown, a pointer mode). */
  answered(request: FlowRequest, filledOnArrival: number | null): void {
    const order = this.pending.get(request.orderId);
    if (order === undefined) return;
    this.pending.delete(request.orderId);
    const left = order.quantity - (filledOnArrival ?? 0);
    if (left <= 0) return;
    order.quantity = left;
    this.resting.push(order);
    if (this.resting.length > MAX_RESTING) this.resting.shift();
  }

  /** The request failed (no answer, or not accepted): forget the order. */
  failed(request: FlowRequest): void {
    this.pending.delete(request.orderId);
  }

  private take(): Resting {
    const at = this.random.below(this.resting.length);
    const order = this.resting[at]!;
    this.resting[at] = this.resting[this.resting.length - 1]!;
    this.resting.pop();
    return order;
  }

  private cancel(): FlowRequest {
    const order = this.take();
    const commandId = crypto.randomUUID();
    return {
      kind: 'cancel',
      path: '/api/v1/orders/cancel',
      token: this.traders[order.trader]!.token,
      commandId,
      orderId: order.orderId,
      quantity: 0,
      body: this.targetBody(order, commandId, ',"reason":"load"'),
    };
  }

  private modify(): FlowRequest {
    const order = this.take();
    const commandId = crypto.randomUUID();
    const reduce = order.quantity > 1 && this.random.chance(0.5);
    const modified: Resting = {
      orderId: order.orderId,
      instrument: order.instrument,
      trader: order.trader,
      side: order.side,
      cents: order.cents,
      quantity: reduce ? order.quantity - 1 : order.quantity + 1,
    };
    // A modify keeps the order resting (at a new priority when it grows): the lane keeps it.
    this.resting.push(modified);
    return {
      kind: 'modify',
      path: '/api/v1/orders/modify',
      token: this.traders[order.trader]!.token,
      commandId,
      orderId: order.orderId,
      quantity: 0,
      body: this.targetBody(order, commandId, `,"limitPrice":"${price(order.cents)}","quantityUnits":"${modified.quantity}"`),
    };
  }
}
