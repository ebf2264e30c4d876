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
// thread answers it from PostgreSQL (docs/decisions/0038).

import { ORDER_STATE_NAMES, ORDER_TYPE_NAMES, SIDE_NAMES, STATE_OPEN, STATE_PARTIALLY_FILLED, TIME_IN_FORCE_NAMES } from '../core/codes.ts';
import { unpackCurrency } from '../core/command-slot.ts';
import { eventIdWords, occurredAtOf } from '../core/outcome-format.ts';
import type { OwnOrdersView } from '../core/storage-protocol.ts';
import { formatUuid, idKey as keyOf, parseUuidInto } from '../core/uuid.ts';
import { Fill, newerFill, OrderNode, ParticipantReads } from './own-reads-lists.ts';
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

/** Whether `instrument` (four words) is the instrument of ids[INSTRUMENT_ID..]. */
function sameInstrument(ids: Int32Array, instrument: Int32Array | null): boolean {
  return (
    instrument === null || (ids[INSTRUMENT_ID] === instrument[0] && ids[INSTRUMENT_ID + 1] === instrument[1] && ids[INSTRUMENT_ID + 2] === instrument[2] && ids[INSTRUMENT_ID + 3] === instrument[3])
  );
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

  /**
   * The model as columns (OwnReadsImage), for a graceful stop's file. Each open list is
   * cut to the `window` most recent, its floor raised to the first left out: restoring a
   * million open orders one by one cost a start 4 s, and a deeper read of them goes to
   * storage as it did before the stop.
   */
  image(): OwnReadsImage {
    let orders = 0;
    let fills = 0;
    let textBytes = 0;
    const openKept = (reads: ParticipantReads) => Math.min(reads.open.size, this.window);
    for (const reads of this.participants.values()) {
      orders += openKept(reads) + reads.closed.size;
      fills += reads.fills.length - reads.first;
      for (const [list, count] of [
        [reads.open, openKept(reads)],
        [reads.closed, reads.closed.size],
      ] as const) {
        let k = 0;
        for (let node = list.head; node !== null && k < count; node = node.next, k++) textBytes += node.clientOrderId?.byteLength ?? 0;
      }
    }
    const lengths = imageLengths(orders, fills);
    const image: OwnReadsImage = {
      window: this.window,
      floors: { orders: storedFloor(this.floors.orders), fills: storedFloor(this.floors.fills) },
      participants: [],
      orderIds: new Int32Array(lengths.orderIds),
      orderSmall: new Int32Array(lengths.orderSmall),
      orderNumbers: new Float64Array(lengths.orderNumbers),
      clientOrderIds: new Uint8Array(textBytes),
      fillIds: new Int32Array(lengths.fillIds),
      fillSmall: new Int32Array(lengths.fillSmall),
      fillNumbers: new Float64Array(lengths.fillNumbers),
    };
    let n = 0;
    let m = 0;
    let text = 0;
    for (const reads of this.participants.values()) {
      const held = reads.fills.length - reads.first;
      let openFloorUs = reads.openFloorUs;
      const openCount = openKept(reads);
      if (openCount < reads.open.size) {
        let cut = reads.open.head;
        for (let k = 0; k < openCount; k++) cut = cut!.next;
        openFloorUs = Math.max(openFloorUs, cut!.updatedAtUs);
      }
      image.participants.push({ open: storedFloor(openFloorUs), closed: storedFloor(reads.closedFloorUs), fills: storedFloor(reads.fillsFloorUs), counts: [openCount, reads.closed.size, held] });
      for (const [list, count] of [
        [reads.open, openCount],
        [reads.closed, reads.closed.size],
      ] as const) {
        let node = list.head;
        for (let k = 0; k < count; node = node!.next, k++, n++) {
          if (node === null) throw new Error('an own-reads list is shorter than its size');
          image.orderIds.set(node.ids.subarray(0, ID_WORDS), n * ID_WORDS);
          const clientOrderId = node.clientOrderId;
          image.orderSmall.set(
            [
              node.runNo,
              node.sessionNo,
              node.side,
              node.orderType,
              node.timeInForce,
              node.state,
              node.currency,
              node.list,
              node.clientOrderKnown ? 1 : 0,
              clientOrderId === null ? -1 : clientOrderId.byteLength,
            ],
            n * IMAGE_ORDER_SMALL,
          );
          image.orderNumbers.set([node.priceNanos, node.quantity, node.filled, node.updatedAtUs], n * IMAGE_ORDER_NUMBERS);
          if (clientOrderId !== null) {
            image.clientOrderIds.set(clientOrderId, text);
            text += clientOrderId.byteLength;
          }
        }
      }
      for (let at = reads.first; at < reads.fills.length; at++, m++) {
        const fill = reads.fills[at]!;
        image.fillIds.set(fill.ids.subarray(0, ID_WORDS), m * ID_WORDS);
        image.fillSmall.set([fill.shard, fill.side, fill.currency], m * IMAGE_FILL_SMALL);
        image.fillNumbers.set([fill.sequence, fill.tradeSequence, fill.quantity, fill.priceNanos, fill.occurredAtUs], m * IMAGE_FILL_NUMBERS);
      }
    }
    return image;
  }

  /**
   * The model becomes the image's (taken at a graceful stop, true at the storage position
   * the caller checked); throws, leaving the model as it was, if the image does not hold
   * together (counts past the window, an order twice, a list out of order, a row under
   * another participant).
   */
  restore(image: OwnReadsImage): void {
    const participants = new Map<string, ParticipantReads>();
    const nodes = new Map<string, OrderNode>();
    const lengths = imageLengths(
      image.participants.reduce((sum, p) => sum + p.counts[0] + p.counts[1], 0),
      image.participants.reduce((sum, p) => sum + p.counts[2], 0),
    );
    for (const name of Object.keys(lengths) as (keyof typeof lengths)[]) {
      if (image[name].length !== lengths[name]) throw new Error(`the image's ${name} holds ${image[name].length} values, its counts ${lengths[name]}`);
    }
    let n = 0;
    let m = 0;
    let text = 0;
    for (const held of image.participants) {
      const reads = new ParticipantReads({ orders: NOTHING_LACKING, fills: NOTHING_LACKING });
      reads.openFloorUs = floorOf(held.open);
      reads.closedFloorUs = floorOf(held.closed);
      reads.fillsFloorUs = floorOf(held.fills);
      for (const [list, count, expected] of [
        [reads.open, held.counts[0], 1],
        [reads.closed, held.counts[1], 2],
      ] as const) {
        for (let k = 0; k < count; k++, n++) {
          const ids = image.orderIds.slice(n * ID_WORDS, (n + 1) * ID_WORDS);
          const node = new OrderNode(keyOf(ids, 0), ids);
          const s = n * IMAGE_ORDER_SMALL;
          const small = image.orderSmall;
          node.runNo = small[s]!;
          node.sessionNo = small[s + 1]!;
          node.side = small[s + 2]!;
          node.orderType = small[s + 3]!;
          node.timeInForce = small[s + 4]!;
          node.state = small[s + 5]!;
          node.currency = small[s + 6]!;
          if (image.orderSmall[s + 7] !== expected) throw new Error(`order ${n} of the image is in list ${image.orderSmall[s + 7]}, its place says ${expected}`);
          if ((node.state === STATE_OPEN || node.state === STATE_PARTIALLY_FILLED) !== (expected === 1)) throw new Error(`order ${n} of the image is in the wrong list for its state ${node.state}`);
          node.clientOrderKnown = image.orderSmall[s + 8] === 1;
          const textLength = image.orderSmall[s + 9]!;
          if (textLength > 256 || text + Math.max(0, textLength) > image.clientOrderIds.byteLength) throw new Error(`order ${n} of the image has a clientOrderId past its bounds`);
          node.clientOrderId = textLength < 0 ? null : image.clientOrderIds.slice(text, text + textLength);
          text += Math.max(0, textLength);
          const f = n * IMAGE_ORDER_NUMBERS;
          const numbers = image.orderNumbers;
          node.priceNanos = numbers[f]!;
          node.quantity = numbers[f + 1]!;
          node.filled = numbers[f + 2]!;
          node.updatedAtUs = numbers[f + 3]!;
          if (list.tail !== null && list.tail.updatedAtUs < node.updatedAtUs) throw new Error(`order ${n} of the image is out of order in its list`);
          if (nodes.has(node.key)) throw new Error(`order ${n} of the image is there twice`);
          nodes.set(node.key, node);
          list.append(node, expected);
        }
      }
      for (let k = 0; k < held.counts[2]; k++, m++) {
        const f = m * IMAGE_FILL_NUMBERS;
        const s = m * IMAGE_FILL_SMALL;
        const n5 = image.fillNumbers;
        const fill = new Fill(
          image.fillSmall[s]!,
          n5[f]!,
          n5[f + 1]!,
          image.fillIds.slice(m * ID_WORDS, (m + 1) * ID_WORDS),
          image.fillSmall[s + 1]!,
          n5[f + 2]!,
          n5[f + 3]!,
          image.fillSmall[s + 2]!,
          n5[f + 4]!,
        );
        const last = reads.fills[reads.fills.length - 1];
        if (last !== undefined && newerFill(last, fill)) throw new Error(`fill ${m} of the image is out of order`);
        reads.fills.push(fill);
      }
      // What a participant holds is within the windows, and is all its own: a read never sees another's rows.
      if (held.counts[0] > this.window || held.counts[1] > this.window || held.counts[2] > this.window) throw new Error(`a participant of the image holds more than the window of ${this.window}`);
      const first = reads.open.head ?? reads.closed.head;
      const some = first?.ids ?? reads.fills[0]?.ids;
      if (some === undefined) continue; // a participant with nothing held is first seen again with the model's floors
      const key = keyOf(some, PARTICIPANT_ID);
      const foreign = (ids: Int32Array) => keyOf(ids, PARTICIPANT_ID) !== key;
      for (const list of [reads.open, reads.closed])
        for (let node = list.head; node !== null; node = node.next) if (foreign(node.ids)) throw new Error('an order of the image is under another participant');
      if (reads.fills.some((fill) => foreign(fill.ids))) throw new Error('a fill of the image is under another participant');
      if (participants.has(key)) throw new Error('a participant is twice in the image');
      participants.set(key, reads);
    }
    if (text !== image.clientOrderIds.byteLength) throw new Error(`the image's clientOrderIds hold ${image.clientOrderIds.byteLength} bytes, its orders ${text}`);
    this.participants.clear();
    this.nodes.clear();
    for (const [key, reads] of participants) this.participants.set(key, reads);
    for (const [key, node] of nodes) this.nodes.set(key, node);
    this.floors = { orders: floorOf(image.floors.orders), fills: floorOf(image.floors.fills) };
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

/** Per order of an image: runNo, sessionNo, side, orderType, timeInForce, state, currency, list, clientOrderKnown, clientOrderId bytes (-1: none). */
const IMAGE_ORDER_SMALL = 10;
/** Per order of an image: priceNanos, quantity, filled, updatedAtUs. */
const IMAGE_ORDER_NUMBERS = 4;
/** Per fill of an image: shard, side, currency. */
const IMAGE_FILL_SMALL = 3;
/** Per fill of an image: sequence, tradeSequence, quantity, priceNanos, occurredAtUs. */
const IMAGE_FILL_NUMBERS = 5;
const ID_WORDS = 16;

/** A floor as JSON can hold it: null for "nothing lacking". */
type StoredFloor = number | null;
const storedFloor = (floor: number): StoredFloor => (floor === NOTHING_LACKING ? null : floor);
const floorOf = (stored: StoredFloor): number => (stored === null ? NOTHING_LACKING : stored);

/**
 * The model as columns (persistence/own-reads-snapshot.ts writes them): per participant
 * its floors and how many open orders, closed orders and fills it holds, then every
 * participant's open list, closed list (most recent first) and fills (oldest first).
 */
export interface OwnReadsImage {
  window: number;
  floors: { orders: StoredFloor; fills: StoredFloor };
  participants: { open: StoredFloor; closed: StoredFloor; fills: StoredFloor; counts: [number, number, number] }[];
  orderIds: Int32Array;
  orderSmall: Int32Array;
  orderNumbers: Float64Array;
  clientOrderIds: Uint8Array;
  fillIds: Int32Array;
  fillSmall: Int32Array;
  fillNumbers: Float64Array;
}

/** The columns' lengths an image of these counts has (a reader checks a file against them). */
export function imageLengths(orders: number, fills: number): { orderIds: number; orderSmall: number; orderNumbers: number; fillIds: number; fillSmall: number; fillNumbers: number } {
  return {
    orderIds: orders * ID_WORDS,
    orderSmall: orders * IMAGE_ORDER_SMALL,
    orderNumbers: orders * IMAGE_ORDER_NUMBERS,
    fillIds: fills * ID_WORDS,
    fillSmall: fills * IMAGE_FILL_SMALL,
    fillNumbers: fills * IMAGE_FILL_NUMBERS,
  };
}

/** Most recently updated first, ties by orderId (the projector's keys compare as the ids' bytes do). */
function byRecency(a: OrderNode, b: OrderNode): number {
  if (a.updatedAtUs !== b.updatedAtUs) return b.updatedAtUs - a.updatedAtUs;
  return a.key < b.key ? -1 : a.key > b.key ? 1 : 0;
}
