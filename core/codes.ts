// Numeric codes shared by every thread. Cross-thread slots carry these numbers,
// never strings; only the gateway turns them into names and HTTP answers.

// Each code is a plain exported constant (hot code imports these: an imported const
// folds to an immediate, an object property is a load), and the objects below group
// the same constants for code that wants names.
export const SIDE_BUY = 0;
export const SIDE_SELL = 1;
export const ORDER_TYPE_LIMIT = 0;
export const ORDER_TYPE_LIMIT_HIDDEN = 1;
export const TIME_IN_FORCE_DAY = 0;
export const TIME_IN_FORCE_IOC = 1;
export const OPCODE_SUBMIT = 1;
export const OPCODE_CANCEL = 2;
export const OPCODE_MODIFY = 3;
/** A rejection decided before the engine (the code travels in the argument word), sequenced by the engine like any outcome. */
export const OPCODE_REJECT = 4;
/** Non-mutating: the shard thread answers an order's state without the engine sequencing anything. */
export const OPCODE_QUERY = 5;
/**
 * Mutating: the session roll (POST /admin/v1/venue/sessions) sends it to every shard
 * to expire the open DAY orders of the sessions that ended. The session word carries
 * the new session floor, the argument word the first order slot to scan; one command
 * scans at most EXPIRY_SCAN_SLOTS slots (core/expire-orders.ts, expire()), and its
 * leading event's code says how many slots are left (core/session-expiry.ts).
 */
export const OPCODE_EXPIRE = 6;
/** Order slots one EXPIRE command scans at most: bounds its events to EXPIRY_SCAN_SLOTS + 1. */
export const EXPIRY_SCAN_SLOTS = 4096;
export const STATE_FREE = 0;
export const STATE_OPEN = 1;
export const STATE_PARTIALLY_FILLED = 2;
export const STATE_FILLED = 3;
export const STATE_CANCELLED = 4;
export const STATE_EXPIRED = 5;
export const EVENT_ACCEPTED = 1;
export const EVENT_REJECTED = 2;
export const EVENT_EXECUTION = 3;
export const EVENT_TRADE = 4;
/** An order of an ended session taken off the book by an EXPIRE command (state EXPIRED). */
export const EVENT_EXPIRED = 5;

export const Side = { BUY: SIDE_BUY, SELL: SIDE_SELL } as const;
export type Side = (typeof Side)[keyof typeof Side];
export const SIDE_NAMES = ['BUY', 'SELL'] as const;

export const OrderType = { LIMIT: ORDER_TYPE_LIMIT, LIMIT_HIDDEN: ORDER_TYPE_LIMIT_HIDDEN } as const;
export type OrderType = (typeof OrderType)[keyof typeof OrderType];
export const ORDER_TYPE_NAMES = ['LIMIT', 'LIMIT_HIDDEN'] as const;

export const TimeInForce = { DAY: TIME_IN_FORCE_DAY, IOC: TIME_IN_FORCE_IOC } as const;
export type TimeInForce = (typeof TimeInForce)[keyof typeof TimeInForce];
export const TIME_IN_FORCE_NAMES = ['DAY', 'IOC'] as const;

/** Command opcodes (exchange-core style: small numbers; every one of these mutates state). */
export const Opcode = {
  SUBMIT: OPCODE_SUBMIT,
  CANCEL: OPCODE_CANCEL,
  MODIFY: OPCODE_MODIFY,
  REJECT: OPCODE_REJECT,
  QUERY: OPCODE_QUERY,
  /** Mutating: sent per shard by the session roll; scans a range of order slots and expires the DAY orders of ended sessions. */
  EXPIRE: OPCODE_EXPIRE,
} as const;
export type Opcode = (typeof Opcode)[keyof typeof Opcode];

/** Order states. 0 marks a free pool slot. FILLED, CANCELLED and EXPIRED are terminal. */
export const OrderState = {
  FREE: STATE_FREE,
  OPEN: STATE_OPEN,
  PARTIALLY_FILLED: STATE_PARTIALLY_FILLED,
  FILLED: STATE_FILLED,
  CANCELLED: STATE_CANCELLED,
  EXPIRED: STATE_EXPIRED,
} as const;
export type OrderState = (typeof OrderState)[keyof typeof OrderState];
export const ORDER_STATE_NAMES = ['FREE', 'OPEN', 'PARTIALLY_FILLED', 'FILLED', 'CANCELLED', 'EXPIRED'] as const;

/** Event kinds written by the matching engine. */
export const EventKind = {
  ACCEPTED: EVENT_ACCEPTED,
  REJECTED: EVENT_REJECTED,
  EXECUTION: EVENT_EXECUTION,
  TRADE: EVENT_TRADE,
  EXPIRED: EVENT_EXPIRED,
} as const;
export type EventKind = (typeof EventKind)[keyof typeof EventKind];

/**
 * Business reject codes, grouped by subsystem (exchange-core style):
 * 1xx order lookup and context, 2xx order content, 3xx capacity; and 4xx, the commands
 * a shard could not carry out at all (command status FAILED, lastError set).
 * Business rejections and failures are return values (events), never exceptions.
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
  SESSION_ENDED: 401,
  INTERNAL_CHECK_FAILED: 402,
  SHARD_HALTED: 403,
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
  401: { name: 'SESSION_ENDED', reason: 'the venue session the order was stamped with ended before the order was sequenced; nothing of it was carried out' },
  402: { name: 'INTERNAL_CHECK_FAILED', reason: 'an internal check of the shard failed while carrying out the command; nothing of it was carried out, and the shard halted' },
  403: { name: 'SHARD_HALTED', reason: 'the shard halted after an internal check failed; the command was not carried out' },
};

/** A failure (status FAILED), not a business rejection: the command could not be carried out. */
export function isFailureCode(code: number): boolean {
  return code >= 400 && code < 500;
}

export function isRejectCode(code: number): boolean {
  return REJECT_CATALOG[code] !== undefined;
}

/** The numeric code of a reject name, or throws (tests and tools). */
export function rejectCodeOf(name: string): number {
  const entry = Object.entries(REJECT_CATALOG).find(([, value]) => value.name === name);
  if (entry === undefined) throw new Error(`unknown reject name ${name}`);
  return Number(entry[0]);
}

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
