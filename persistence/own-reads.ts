// Own orders and fills in memory (ARCHITECTURE.md, "read models in memory"): the
// projector tells this model every order a commit changed and every fill, right behind
// the durable commit, and the own-order reads are answered from it without PostgreSQL.
//
// Per participant it keeps: every open order changed since the start (the projector
// holds every open order anyway), the `window` most recently closed orders and the
// `window` most recent fills. Each list has a floor: what it lacks (orders not changed
// since the start, closed orders and fills trimmed off, history from before the start)
// was last updated at or before it. A read is answered here when `limit` rows above the
// floors match it (or nothing is lacking); otherwise it is not (null), and the read
// thread answers it from PostgreSQL, exactly as before (docs/decisions/0038).

import { ORDER_STATE_NAMES, ORDER_TYPE_NAMES, SIDE_NAMES, STATE_OPEN, STATE_PARTIALLY_FILLED, TIME_IN_FORCE_NAMES } from '../core/codes.ts';
import { unpackCurrency } from '../core/command-slot.ts';
import { eventIdWords, occurredAtOf } from '../core/outcome-format.ts';
import type { OwnOrdersView } from '../core/storage-protocol.ts';
import { formatUuid, idKey as keyOf, parseUuidInto } from '../core/uuid.ts';
import type { RestingOrder } from './resting-orders.ts';

const ORDER_ID = 0;
const INSTRUMENT_ID = 4;
const PARTICIPANT_ID = 8;
const ACCOUNT_ID = 12;

/** What the model reads of an order when it changed (the projector's OrderState): a resting order's fields, when and its clientOrderId. */
export interface OwnOrderChange extends Omit<RestingOrder, 'shard'> {
  updatedAtUs: number;
  /** UTF-8 bytes; null when the order has none, or when it is not known here (`clientOrderKnown`). */
  clientOrderId: Uint8Array | null;
}

/** An own-order row as the API renders it; `clientOrderId` undefined: not known here (the caller looks it up by orderId). */
export interface OwnOrderRow {
  orderId: string;
  clientOrderId: string | null | undefined;
  runId: string;
  venueSessionId: string;
  instrumentId: string;
  participantId: string;
  accountId: string;
  side: string;
  orderType: string;
  timeInForce: string;
  state: string;
  limitPrice: { nanos: string; currency: string };
  originalQuantity: { units: string };
  remainingQuantity: { units: string };
  filledQuantity: { units: string };
  updatedAt: string;
}

export interface FillRow {
  executionId: string;
  tradeId: string;
  orderId: string;
  instrumentId: string;
  side: string;
  quantity: { units: string };
  executionPrice: { nanos: string; currency: string };
  occurredAt: string;
}

class OrderNode {
  prev: OrderNode | null = null;
  next: OrderNode | null = null;
  /** 0: in no list, 1: the open list, 2: the closed list. */
  list = 0;
  ids: Int32Array;
  runNo = 0;
  sessionNo = 0;
  side = 0;
  orderType = 0;
  timeInForce = 0;
  state = 0;
  priceNanos = 0;
  quantity = 0;
  filled = 0;
  currency = 0;
  updatedAtUs = 0;
  clientOrderId: Uint8Array | null = null;
  clientOrderKnown = true;

  constructor(
    readonly key: string,
    ids: Int32Array,
  ) {
    this.ids = ids;
  }
}

/** Most recently updated first (ties: any order; a read sorts them by orderId). */
class OrderList {
  head: OrderNode | null = null;
  tail: OrderNode | null = null;
  size = 0;

  /** Inserted before the first node updated no later: at the head, unless the shards' clocks crossed. */
  insert(node: OrderNode, list: number): void {
    let after: OrderNode | null = null;
    let at = this.head;
    while (at !== null && at.updatedAtUs > node.updatedAtUs) {
      after = at;
      at = at.next;
    }
    node.prev = after;
    node.next = at;
    if (after === null) this.head = node;
    else after.next = node;
    if (at === null) this.tail = node;
    else at.prev = node;
    node.list = list;
    this.size++;
  }

  remove(node: OrderNode): void {
    if (node.prev === null) this.head = node.next;
    else node.prev.next = node.next;
    if (node.next === null) this.tail = node.prev;
    else node.next.prev = node.prev;
    node.prev = null;
    node.next = null;
    node.list = 0;
    this.size--;
  }
}

class Fill {
  constructor(
    readonly shard: number,
    readonly sequence: number,
    readonly tradeSequence: number,
    readonly ids: Int32Array,
    readonly side: number,
    readonly quantity: number,
    readonly priceNanos: number,
    readonly currency: number,
    readonly occurredAtUs: number,
  ) {}
}

/** The fills API order: most recent first, then shard ascending, then sequence descending. */
function newerFill(a: Fill, b: Fill): boolean {
  if (a.occurredAtUs !== b.occurredAtUs) return a.occurredAtUs > b.occurredAtUs;
  if (a.shard !== b.shard) return a.shard < b.shard;
  return a.sequence > b.sequence;
}

class ParticipantReads {
  readonly open = new OrderList();
  readonly closed = new OrderList();
  /** Oldest first; `first` is where the kept ones start (the array is compacted now and then). */
  fills: Fill[] = [];
  first = 0;
  openFloorUs: number;
  closedFloorUs: number;
  fillsFloorUs: number;

  constructor(floors: { orders: number; fills: number }) {
    this.openFloorUs = floors.orders;
    this.closedFloorUs = floors.orders;
    this.fillsFloorUs = floors.fills;
  }
}

/** Whether `instrument` (four words) is the instrument of ids[INSTRUMENT_ID..]. */
function sameInstrument(ids: Int32Array, instrument: Int32Array | null): boolean {
  return instrument === null || (ids[INSTRUMENT_ID] === instrument[0] && ids[INSTRUMENT_ID + 1] === instrument[1] && ids[INSTRUMENT_ID + 2] === instrument[2] && ids[INSTRUMENT_ID + 3] === instrument[3]);
}

const NOTHING_LACKING = Number.NEGATIVE_INFINITY;

export class OwnReads {
  private readonly participants = new Map<string, ParticipantReads>();
  private readonly nodes = new Map<string, OrderNode>();
  /** What a participant first seen has lacking: nothing (a new database), or everything up to the start. */
  private floors = { orders: NOTHING_LACKING, fills: NOTHING_LACKING };
  private readonly decoder = new TextDecoder('utf-8', { fatal: false, ignoreBOM: true });
  private readonly scratch = new Int32Array(4);

  constructor(
    /** Closed orders and fills kept per participant (OWN_READS_WINDOW). */
    readonly window: number,
    private readonly sessionNames: (runNo: number, sessionNo: number) => [string, string],
  ) {}

  /**
   * At start, before the first change: storage held orders (or executions) updated up to
   * `throughUs`, which this model does not hold: reads that reach that far go to storage.
   */
  lacksHistoryThrough(orders: boolean, fills: boolean, throughUs: number): void {
    this.participants.clear();
    this.nodes.clear();
    this.floors = { orders: orders ? throughUs : NOTHING_LACKING, fills: fills ? throughUs : NOTHING_LACKING };
  }

  /** Everything is forgotten and lacking up to `throughUs` (the rebuild route replaced the projector's orders). */
  forget(throughUs: number): void {
    this.lacksHistoryThrough(true, true, throughUs);
  }

  get ordersHeld(): number {
    return this.nodes.size;
  }

  private participant(ids: Int32Array): ParticipantReads {
    const key = keyOf(ids, PARTICIPANT_ID);
    let reads = this.participants.get(key);
    if (reads === undefined) {
      reads = new ParticipantReads(this.floors);
      this.participants.set(key, reads);
    }
    return reads;
  }

  /**
   * An order a commit changed, as it is after the commit. `key`: the projector's key of
   * its id; `clientOrderKnown` false: it has a clientOrderId this model was not told
   * (an order loaded at start), which a read looks up in storage.
   */
  changed(key: string, order: OwnOrderChange, clientOrderKnown: boolean): void {
    let node = this.nodes.get(key);
    const reads = this.participant(order.ids);
    if (node === undefined) {
      node = new OrderNode(key, order.ids);
      node.clientOrderKnown = clientOrderKnown;
      node.clientOrderId = order.clientOrderId;
      this.nodes.set(key, node);
    } else if (node.list === 1) reads.open.remove(node);
    else if (node.list === 2) {
      reads.closed.remove(node); // a closed order is not changed again; kept correct if it were
    }
    if (order.clientOrderId !== null) {
      node.clientOrderId = order.clientOrderId;
      node.clientOrderKnown = true;
    }
    node.runNo = order.runNo;
    node.sessionNo = order.sessionNo;
    node.side = order.side;
    node.orderType = order.orderType;
    node.timeInForce = order.timeInForce;
    node.state = order.state;
    node.priceNanos = order.priceNanos;
    node.quantity = order.quantity;
    node.filled = order.filled;
    node.currency = order.currency;
    node.updatedAtUs = order.updatedAtUs;
    if (order.state === STATE_OPEN || order.state === STATE_PARTIALLY_FILLED) {
      reads.open.insert(node, 1);
      return;
    }
    reads.closed.insert(node, 2);
    while (reads.closed.size > this.window) {
      const oldest = reads.closed.tail!;
      reads.closed.remove(oldest);
      this.nodes.delete(oldest.key);
      if (oldest.updatedAtUs > reads.closedFloorUs) reads.closedFloorUs = oldest.updatedAtUs;
    }
  }

  /** One execution of an order (`ids`: the order's), its sequence and its trade's on `shard`. */
  filled(ids: Int32Array, side: number, shard: number, sequence: number, tradeSequence: number, quantity: number, priceNanos: number, currency: number, occurredAtUs: number): void {
    const reads = this.participant(ids);
    const fill = new Fill(shard, sequence, tradeSequence, ids, side, quantity, priceNanos, currency, occurredAtUs);
    const fills = reads.fills;
    fills.push(fill);
    for (let at = fills.length - 1; at > reads.first && newerFill(fills[at - 1]!, fill); at--) {
      fills[at] = fills[at - 1]!;
      fills[at - 1] = fill;
    }
    while (fills.length - reads.first > this.window) {
      const oldest = fills[reads.first]!;
      fills[reads.first++] = undefined as unknown as Fill;
      if (oldest.occurredAtUs > reads.fillsFloorUs) reads.fillsFloorUs = oldest.occurredAtUs;
    }
    if (reads.first >= this.window) {
      reads.fills = fills.slice(reads.first);
      reads.first = 0;
    }
  }

  /**
   * The own orders of `participants` (ids as text) for a read, most recently updated
   * first (ties by orderId), or null when this model cannot tell them exactly (the read
   * goes to storage). An unknown participant has nothing here and lacks what it lacks.
   */
  orders(view: OwnOrdersView, participants: readonly string[], instrumentId: string | null, limit: number): OwnOrderRow[] | null {
    const instrument = this.instrumentWords(instrumentId);
    const found: OrderNode[] = [];
    for (const participant of new Set(participants)) {
      const reads = this.participantOf(participant);
      const floor = reads === undefined ? this.floors.orders : view === 'current' ? reads.openFloorUs : Math.max(reads.openFloorUs, reads.closedFloorUs);
      const taken = reads === undefined ? [] : this.recentOrders(reads, view, instrument, limit, floor);
      if (taken.length < limit && floor !== NOTHING_LACKING) return null; // fewer above the floor than asked: the rest may be below it
      for (const node of taken) found.push(node);
    }
    found.sort(byRecency);
    return found.slice(0, limit).map((node) => this.orderRow(node));
  }

  /**
   * Up to `limit` orders of one participant above `floor` (and those updated at the same
   * time as the last), most recent first.
   */
  private recentOrders(reads: ParticipantReads, view: OwnOrdersView, instrument: Int32Array | null, limit: number, floor: number): OrderNode[] {
    const taken: OrderNode[] = [];
    let open = reads.open.head;
    let closed = view === 'history' ? reads.closed.head : null;
    let lastUs = Number.POSITIVE_INFINITY;
    for (;;) {
      let node: OrderNode;
      if (open !== null && (closed === null || open.updatedAtUs >= closed.updatedAtUs)) {
        node = open;
        open = open.next;
      } else if (closed !== null) {
        node = closed;
        closed = closed.next;
      } else break;
      if (node.updatedAtUs <= floor) break;
      if (taken.length >= limit && node.updatedAtUs < lastUs) break;
      if (!sameInstrument(node.ids, instrument)) continue;
      taken.push(node);
      lastUs = node.updatedAtUs;
    }
    return taken;
  }

  /** The fills of `participants`, most recent first, or null when this model cannot tell them exactly. */
  fills(participants: readonly string[], instrumentId: string | null, limit: number): FillRow[] | null {
    const instrument = this.instrumentWords(instrumentId);
    const found: Fill[] = [];
    for (const participant of new Set(participants)) {
      const reads = this.participantOf(participant);
      const floor = reads === undefined ? this.floors.fills : reads.fillsFloorUs;
      let taken = 0;
      if (reads !== undefined) {
        for (let at = reads.fills.length - 1; at >= reads.first && taken < limit; at--) {
          const fill = reads.fills[at]!;
          if (fill.occurredAtUs <= floor) break;
          if (!sameInstrument(fill.ids, instrument)) continue;
          found.push(fill);
          taken++;
        }
      }
      if (taken < limit && floor !== NOTHING_LACKING) return null;
    }
    found.sort((a, b) => (newerFill(a, b) ? -1 : newerFill(b, a) ? 1 : 0));
    return found.slice(0, limit).map((fill) => this.fillRow(fill));
  }

  private participantOf(participant: string): ParticipantReads | undefined {
    if (!parseUuidInto(participant, this.scratch, 0)) return undefined;
    return this.participants.get(keyOf(this.scratch, 0));
  }

  private instrumentWords(instrumentId: string | null): Int32Array | null {
    if (instrumentId === null) return null;
    const words = new Int32Array(4);
    if (!parseUuidInto(instrumentId, words, 0)) words.fill(0);
    return words;
  }

  private orderRow(node: OrderNode): OwnOrderRow {
    const [runId, venueSessionId] = this.sessionNames(node.runNo, node.sessionNo);
    const currency = unpackCurrency(node.currency);
    const open = node.state === STATE_OPEN || node.state === STATE_PARTIALLY_FILLED;
    return {
      orderId: formatUuid(node.ids, ORDER_ID),
      clientOrderId: node.clientOrderKnown ? (node.clientOrderId === null ? null : this.decoder.decode(node.clientOrderId)) : undefined,
      runId,
      venueSessionId,
      instrumentId: formatUuid(node.ids, INSTRUMENT_ID),
      participantId: formatUuid(node.ids, PARTICIPANT_ID),
      accountId: formatUuid(node.ids, ACCOUNT_ID),
      side: SIDE_NAMES[node.side]!,
      orderType: ORDER_TYPE_NAMES[node.orderType]!,
      timeInForce: TIME_IN_FORCE_NAMES[node.timeInForce]!,
      state: ORDER_STATE_NAMES[node.state]!,
      limitPrice: { nanos: String(node.priceNanos), currency },
      originalQuantity: { units: String(node.quantity) },
      remainingQuantity: { units: String(open ? node.quantity - node.filled : 0) },
      filledQuantity: { units: String(node.filled) },
      updatedAt: occurredAtOf(node.updatedAtUs),
    };
  }

  private fillRow(fill: Fill): FillRow {
    const id = new Int32Array(4);
    eventIdWords(fill.shard, fill.sequence, id, 0);
    const executionId = formatUuid(id, 0);
    eventIdWords(fill.shard, fill.tradeSequence, id, 0);
    return {
      executionId,
      tradeId: formatUuid(id, 0),
      orderId: formatUuid(fill.ids, ORDER_ID),
      instrumentId: formatUuid(fill.ids, INSTRUMENT_ID),
      side: SIDE_NAMES[fill.side]!,
      quantity: { units: String(fill.quantity) },
      executionPrice: { nanos: String(fill.priceNanos), currency: unpackCurrency(fill.currency) },
      occurredAt: occurredAtOf(fill.occurredAtUs),
    };
  }
}

/** Most recently updated first, ties by orderId (the projector's keys compare as the ids' bytes do). */
function byRecency(a: OrderNode, b: OrderNode): number {
  if (a.updatedAtUs !== b.updatedAtUs) return b.updatedAtUs - a.updatedAtUs;
  return a.key < b.key ? -1 : a.key > b.key ? 1 : 0;
}
