// Numeric codes shared by every thread. Cross-thread slots carry these numbers,
// never strings; only the gateway turns them into names and HTTP answers.

export const Side = { BUY: 0, SELL: 1 } as const;
export type Side = (typeof Side)[keyof typeof Side];
export const SIDE_NAMES = ['BUY', 'SELL'] as const;

export const OrderType = { LIMIT: 0, LIMIT_HIDDEN: 1 } as const;
export type OrderType = (typeof OrderType)[keyof typeof OrderType];
export const ORDER_TYPE_NAMES = ['LIMIT', 'LIMIT_HIDDEN'] as const;

export const TimeInForce = { DAY: 0, IOC: 1 } as const;
export type TimeInForce = (typeof TimeInForce)[keyof typeof TimeInForce];
export const TIME_IN_FORCE_NAMES = ['DAY', 'IOC'] as const;

/** Command opcodes (exchange-core style: small numbers; every one of these mutates state). */
export const Opcode = { SUBMIT: 1, CANCEL: 2, MODIFY: 3 } as const;
export type Opcode = (typeof Opcode)[keyof typeof Opcode];
export const OPCODE_NAMES: Record<number, string> = { 1: 'SubmitOrder', 2: 'CancelOrder', 3: 'ModifyOrder' };

/** Order states. 0 marks a free pool slot. FILLED, CANCELLED and EXPIRED are terminal. */
export const OrderState = { FREE: 0, OPEN: 1, PARTIALLY_FILLED: 2, FILLED: 3, CANCELLED: 4, EXPIRED: 5 } as const;
export type OrderState = (typeof OrderState)[keyof typeof OrderState];
export const ORDER_STATE_NAMES = ['FREE', 'OPEN', 'PARTIALLY_FILLED', 'FILLED', 'CANCELLED', 'EXPIRED'] as const;

/** Event kinds written by the matching engine. */
export const EventKind = { ACCEPTED: 1, REJECTED: 2, EXECUTION: 3, TRADE: 4 } as const;
export type EventKind = (typeof EventKind)[keyof typeof EventKind];

/**
 * Business reject codes, grouped by subsystem (exchange-core style):
 * 1xx order lookup and context, 2xx order content, 3xx capacity.
 * Business rejections are return values (events), never exceptions.
 */
export const RejectCode = {
  ORDER_NOT_FOUND: 101,
  ORDER_CONTEXT_MISMATCH: 102,
  ORDER_NOT_OPEN: 103,
  DUPLICATE_ORDER_ID: 104,
  DUPLICATE_CLIENT_ORDER_ID: 105,
  CURRENCY_MISMATCH: 201,
  INVALID_MODIFY: 202,
  INVALID_COMMAND: 203,
  ORDER_CAPACITY_EXCEEDED: 301,
  INSTRUMENT_CAPACITY_EXCEEDED: 302,
  ACCOUNT_CAPACITY_EXCEEDED: 303,
} as const;
export type RejectCode = (typeof RejectCode)[keyof typeof RejectCode];

const REJECT_CATALOG: Record<number, { name: string; reason: string }> = {
  101: { name: 'ORDER_NOT_FOUND', reason: 'no order with this orderId is known to the venue' },
  102: {
    name: 'ORDER_CONTEXT_MISMATCH',
    reason: 'runId, venueSessionId, instrumentId, participantId or accountId differ from the canonical order',
  },
  103: { name: 'ORDER_NOT_OPEN', reason: 'the order is already filled, cancelled or expired' },
  104: { name: 'DUPLICATE_ORDER_ID', reason: 'an order with this orderId already exists' },
  105: { name: 'DUPLICATE_CLIENT_ORDER_ID', reason: 'the participant has an open order with this clientOrderId' },
  201: { name: 'CURRENCY_MISMATCH', reason: 'the currency differs from the currency of the instrument' },
  202: { name: 'INVALID_MODIFY', reason: 'the new quantity must be greater than the filled quantity' },
  203: { name: 'INVALID_COMMAND', reason: 'the command carries a value outside the documented range' },
  301: { name: 'ORDER_CAPACITY_EXCEEDED', reason: 'the shard holds its maximum number of resting orders' },
  302: { name: 'INSTRUMENT_CAPACITY_EXCEEDED', reason: 'the shard holds its maximum number of instruments' },
  303: {
    name: 'ACCOUNT_CAPACITY_EXCEEDED',
    reason: 'the shard holds its maximum number of participant and account pairs',
  },
};

export function rejectName(code: number): string {
  const entry = REJECT_CATALOG[code];
  if (entry === undefined) throw new Error(`unknown reject code ${code}`);
  return entry.name;
}

export function rejectReason(code: number): string {
  const entry = REJECT_CATALOG[code];
  if (entry === undefined) throw new Error(`unknown reject code ${code}`);
  return entry.reason;
}

export const REJECT_CODES: readonly number[] = Object.values(RejectCode);
