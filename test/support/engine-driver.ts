// Drives a MatchingEngine with plain objects and decodes its events into plain
// objects with string ids: the shared vocabulary of the core tests.

import { EventKind, ORDER_STATE_NAMES, Opcode, OrderType, rejectName, Side, TimeInForce } from '../../core/codes.ts';
import { COMMAND_SLOT_BYTES, encodeCommand, slotViews, type CommandInput } from '../../core/command-slot.ts';
import { restingOrders } from '../../core/book-queries.ts';
import { MatchingEngine, type EngineOptions } from '../../core/matching-engine.ts';
import { formatUuid, uuidWords } from '../../core/uuid.ts';

export type DecodedEvent =
  | { kind: 'accepted'; sequence: number; orderId: string; engineOrderId: number; state: string; leaves: number; filled: number; priceNanos: number; quantityUnits: number }
  | { kind: 'rejected'; sequence: number; orderId: string; code: string }
  | { kind: 'execution'; sequence: number; orderId: string; counterpartyOrderId: string; quantityUnits: number; priceNanos: number; leaves: number; filled: number; state: string }
  | { kind: 'trade'; sequence: number; buyOrderId: string; sellOrderId: string; quantityUnits: number; priceNanos: number; aggressor: string }
  /** The leading event of an EXPIRE command (ACCEPTED, order -1): the orders it expired, the slots left to scan. */
  | { kind: 'expiry'; sequence: number; expired: number; slotsLeft: number }
  | { kind: 'expired'; sequence: number; orderId: string; state: string; quantityUnits: number; filled: number; leaves: number; priceNanos: number };

export interface RestingView {
  orderId: string;
  priceNanos: number;
  leaves: number;
  hidden: boolean;
}

export const RUN = 1;
export const SESSION = 1;
export const INSTRUMENT_A = '11111111-1111-4111-8111-111111111111';
export const INSTRUMENT_B = '22222222-2222-4222-8222-222222222222';
export const PARTICIPANT_1 = 'aaaaaaaa-0000-4000-8000-000000000001';
export const PARTICIPANT_2 = 'aaaaaaaa-0000-4000-8000-000000000002';
export const ACCOUNT_1 = 'bbbbbbbb-0000-4000-8000-000000000001';
export const ACCOUNT_2 = 'bbbbbbbb-0000-4000-8000-000000000002';
/** The ids an EXPIRE command carries: it names no order, instrument or owner. */
export const NIL_UUID = '00000000-0000-0000-0000-000000000000';

/** Deterministic UUID text from a number (tests need readable, unique ids). */
export function idOf(prefix: number, n: number): string {
  const hex = n.toString(16).padStart(12, '0');
  const head = prefix.toString(16).padStart(8, '0');
  return `${head}-0000-4000-8000-${hex}`;
}

export interface SubmitSpec {
  orderId: string;
  side: 'BUY' | 'SELL';
  price: number;
  quantity: number;
  hidden?: boolean;
  ioc?: boolean;
  instrumentId?: string;
  participantId?: string;
  accountId?: string;
  currency?: string;
  runNo?: number;
  sessionNo?: number;
}

export interface TargetSpec {
  orderId: string;
  instrumentId?: string;
  participantId?: string;
  accountId?: string;
  runNo?: number;
  sessionNo?: number;
}

let commandCounter = 0;

export class EngineDriver {
  readonly engine: MatchingEngine;
  private readonly views = slotViews(new ArrayBuffer(COMMAND_SLOT_BYTES));
  private time = 1_700_000_000_000_000;

  /** A new engine with these options, or an engine built elsewhere (e.g. restored from a snapshot). */
  constructor(options: EngineOptions | MatchingEngine = {}) {
    this.engine = options instanceof MatchingEngine ? options : new MatchingEngine(options);
  }

  run(command: Omit<CommandInput, 'commandId' | 'timestampUs'>): DecodedEvent[] {
    encodeCommand({ ...command, commandId: idOf(0xc0, ++commandCounter), timestampUs: this.time++ }, this.views, 0);
    this.engine.process(this.views.words, this.views.floats, 0);
    return this.decode(command.orderId);
  }

  /** Runs a command slot as a shard sequenced it (128 bytes, e.g. from the journal). */
  runSlot(slot: Uint8Array): void {
    new Uint8Array(this.views.words.buffer).set(slot);
    this.engine.process(this.views.words, this.views.floats, 0);
  }

  submit(spec: SubmitSpec): DecodedEvent[] {
    return this.run({
      opcode: Opcode.SUBMIT,
      side: spec.side === 'BUY' ? Side.BUY : Side.SELL,
      orderType: spec.hidden ? OrderType.LIMIT_HIDDEN : OrderType.LIMIT,
      timeInForce: spec.ioc ? TimeInForce.IOC : TimeInForce.DAY,
      runNo: spec.runNo ?? RUN,
      sessionNo: spec.sessionNo ?? SESSION,
      orderId: spec.orderId,
      instrumentId: spec.instrumentId ?? INSTRUMENT_A,
      participantId: spec.participantId ?? PARTICIPANT_1,
      accountId: spec.accountId ?? ACCOUNT_1,
      currency: spec.currency ?? 'USD',
      priceNanos: spec.price,
      quantityUnits: spec.quantity,
    });
  }

  cancel(target: TargetSpec): DecodedEvent[] {
    return this.run({ opcode: Opcode.CANCEL, ...this.context(target) });
  }

  modify(target: TargetSpec, price: number, quantity: number): DecodedEvent[] {
    return this.run({ opcode: Opcode.MODIFY, ...this.context(target), priceNanos: price, quantityUnits: quantity });
  }

  /** The session roll's command to this shard: session floor `floor`, scan from order slot `first`. */
  expire(floor: number, first: number): DecodedEvent[] {
    return this.run({
      opcode: Opcode.EXPIRE,
      runNo: RUN,
      sessionNo: floor,
      argument: first,
      orderId: NIL_UUID,
      instrumentId: NIL_UUID,
      participantId: NIL_UUID,
      accountId: NIL_UUID,
    });
  }

  /** Resting orders of one side of an instrument's book, in priority order. */
  book(side: 'BUY' | 'SELL', instrumentId = INSTRUMENT_A): RestingView[] {
    const book = this.engine.findBook(uuidWords(instrumentId), 0);
    if (book < 0) return [];
    const orders = this.engine.orders;
    return restingOrders(this.engine, book, side === 'BUY' ? 0 : 1).map((slot) => ({
      orderId: this.orderId(slot),
      priceNanos: orders.price(slot),
      leaves: orders.quantity(slot) - orders.filled(slot),
      hidden: orders.orderType(slot) === OrderType.LIMIT_HIDDEN,
    }));
  }

  bookIndex(instrumentId = INSTRUMENT_A): number {
    return this.engine.findBook(uuidWords(instrumentId), 0);
  }

  private context(target: TargetSpec) {
    return {
      orderId: target.orderId,
      instrumentId: target.instrumentId ?? INSTRUMENT_A,
      participantId: target.participantId ?? PARTICIPANT_1,
      accountId: target.accountId ?? ACCOUNT_1,
      runNo: target.runNo ?? RUN,
      sessionNo: target.sessionNo ?? SESSION,
    };
  }

  orderId(slot: number): string {
    const orders = this.engine.orders;
    return formatUuid(orders.words, orders.idAt(slot));
  }

  private decode(commandOrderId: string): DecodedEvent[] {
    const e = this.engine.events;
    const out: DecodedEvent[] = [];
    for (let i = 0; i < e.count; i++) {
      const sequence = e.sequence(i);
      const slot = e.order(i);
      switch (e.kind(i)) {
        case EventKind.ACCEPTED:
          if (slot < 0) {
            out.push({ kind: 'expiry', sequence, expired: e.quantity(i), slotsLeft: e.code(i) }); // what crosses threads (core/session-expiry.ts)
            break;
          }
          out.push({
            kind: 'accepted',
            sequence,
            orderId: this.orderId(slot),
            engineOrderId: this.engine.orders.engineNo[slot]!,
            state: ORDER_STATE_NAMES[e.state(i)]!,
            leaves: e.leaves(i),
            filled: e.filled(i),
            priceNanos: e.price(i),
            quantityUnits: e.quantity(i),
          });
          break;
        case EventKind.REJECTED:
          out.push({ kind: 'rejected', sequence, orderId: commandOrderId, code: rejectName(e.code(i)) });
          break;
        case EventKind.EXECUTION:
          out.push({
            kind: 'execution',
            sequence,
            orderId: this.orderId(slot),
            counterpartyOrderId: this.orderId(e.counterparty(i)),
            quantityUnits: e.quantity(i),
            priceNanos: e.price(i),
            leaves: e.leaves(i),
            filled: e.filled(i),
            state: ORDER_STATE_NAMES[e.state(i)]!,
          });
          break;
        case EventKind.TRADE:
          out.push({
            kind: 'trade',
            sequence,
            buyOrderId: this.orderId(slot),
            sellOrderId: this.orderId(e.counterparty(i)),
            quantityUnits: e.quantity(i),
            priceNanos: e.price(i),
            aggressor: e.aggressor(i) === Side.BUY ? 'BUY' : 'SELL',
          });
          break;
        case EventKind.EXPIRED:
          out.push({
            kind: 'expired',
            sequence,
            orderId: this.orderId(slot),
            state: ORDER_STATE_NAMES[e.state(i)]!,
            quantityUnits: e.quantity(i),
            filled: e.filled(i),
            leaves: e.leaves(i),
            priceNanos: e.price(i),
          });
          break;
        default:
          throw new Error(`unknown event kind ${e.kind(i)}`);
      }
    }
    return out;
  }
}
