// Fixed-point conversion between decimal strings and integer nanos / units.
//
// Prices travel as integer nanos (1e-9 of the currency unit), quantities as
// integer units. Both are held in JS numbers used strictly as integers: every
// value is range-checked below 2^53 here at the boundary, and the engine only
// adds, subtracts and compares them, so every result is exact. Products
// (notional = price x quantity) can exceed 2^53 and use BigInt (see notionalNanos).
//
// Parsing walks the characters and accumulates digits as integers; no string is
// ever handed to parseFloat/Number, so no value passes through a binary fraction.

export const NANOS_PER_UNIT = 1_000_000_000;
export const PRICE_DECIMALS_MAX = 9;
/** Largest accepted limit price: 9,000,000.000000000 (9e15 nanos < 2^53). */
export const PRICE_NANOS_MAX = 9_000_000 * NANOS_PER_UNIT;
/** Largest accepted order quantity in units. With at most 2^21 orders per shard,
 *  a price level's total stays below 2^53. */
export const QUANTITY_UNITS_MAX = 1_000_000_000;
/** Longest decimal string looked at; anything longer is rejected unread. */
export const DECIMAL_CHARS_MAX = 32;

/** Parse failures are returned as negative numbers (no allocation on the hot path). */
export const ParseError = {
  EMPTY: -1,
  SYNTAX: -2,
  TOO_MANY_DECIMALS: -3,
  NOT_POSITIVE: -4,
  OUT_OF_RANGE: -5,
  NOT_INTEGER: -6,
} as const;

const PARSE_ERROR_REASONS: Record<number, string> = {
  [-1]: 'must not be empty',
  [-2]: 'must be a plain decimal number such as "101.25" (digits, at most one dot, no sign or exponent)',
  [-3]: 'must have at most 9 decimal places',
  [-4]: 'must be greater than zero',
  [-5]: 'is outside the accepted range',
  [-6]: 'must be a positive integer such as "100"',
};

export function parseErrorReason(code: number): string {
  return PARSE_ERROR_REASONS[code] ?? 'is invalid';
}

const DIGIT_0 = 48;
const DIGIT_9 = 57;
const DOT = 46;
const FRACTION_SCALE = [1e9, 1e8, 1e7, 1e6, 1e5, 1e4, 1e3, 1e2, 1e1, 1];

/**
 * "101.25" -> 101250000000. Returns a ParseError code (< 0) when the string is
 * not a positive decimal with at most 9 decimals within (0, PRICE_NANOS_MAX].
 */
export function parsePriceNanos(text: string): number {
  const length = text.length;
  if (length === 0) return ParseError.EMPTY;
  if (length > DECIMAL_CHARS_MAX) return ParseError.OUT_OF_RANGE;
  let whole = 0;
  let index = 0;
  for (; index < length; index++) {
    const c = text.charCodeAt(index);
    if (c === DOT) break;
    if (c < DIGIT_0 || c > DIGIT_9) return ParseError.SYNTAX;
    whole = whole * 10 + (c - DIGIT_0);
    // Stop before the integer part can leave the exact range.
    if (whole > PRICE_NANOS_MAX / NANOS_PER_UNIT) return ParseError.OUT_OF_RANGE;
  }
  if (index === 0) return ParseError.SYNTAX; // ".5"
  let fraction = 0;
  let decimals = 0;
  if (index < length) {
    index++; // the dot
    if (index === length) return ParseError.SYNTAX; // "5."
    for (; index < length; index++) {
      const c = text.charCodeAt(index);
      if (c < DIGIT_0 || c > DIGIT_9) return ParseError.SYNTAX;
      decimals++;
      if (decimals > PRICE_DECIMALS_MAX) return ParseError.TOO_MANY_DECIMALS;
      fraction = fraction * 10 + (c - DIGIT_0);
    }
  }
  const nanos = whole * NANOS_PER_UNIT + fraction * FRACTION_SCALE[decimals]!;
  if (nanos === 0) return ParseError.NOT_POSITIVE;
  if (nanos > PRICE_NANOS_MAX) return ParseError.OUT_OF_RANGE;
  return nanos;
}

/** "100" -> 100. Returns a ParseError code (< 0) unless a positive integer <= QUANTITY_UNITS_MAX. */
export function parseQuantityUnits(text: string): number {
  const length = text.length;
  if (length === 0) return ParseError.EMPTY;
  if (length > DECIMAL_CHARS_MAX) return ParseError.OUT_OF_RANGE;
  let units = 0;
  for (let index = 0; index < length; index++) {
    const c = text.charCodeAt(index);
    if (c < DIGIT_0 || c > DIGIT_9) {
      return c === DOT ? ParseError.NOT_INTEGER : ParseError.SYNTAX;
    }
    units = units * 10 + (c - DIGIT_0);
    if (units > QUANTITY_UNITS_MAX) return ParseError.OUT_OF_RANGE;
  }
  if (units === 0) return ParseError.NOT_POSITIVE;
  return units;
}

/** True for an integer number of nanos the venue accepts as a price. */
export function isValidPriceNanos(nanos: number): boolean {
  return nanos > 0 && nanos <= PRICE_NANOS_MAX && Number.isInteger(nanos);
}

/** True for an integer number of units the venue accepts as a quantity. */
export function isValidQuantityUnits(units: number): boolean {
  return units > 0 && units <= QUANTITY_UNITS_MAX && Number.isInteger(units);
}

/** 101250000000 -> "101.25": the canonical decimal (no trailing zeros, no trailing dot). */
export function formatNanos(nanos: number): string {
  if (!Number.isSafeInteger(nanos) || nanos < 0) throw new RangeError(`not a nanos value: ${nanos}`);
  // % is exact on integers; a plain division could round 8999999.999999999 up.
  let fraction = nanos % NANOS_PER_UNIT;
  const whole = (nanos - fraction) / NANOS_PER_UNIT;
  if (fraction === 0) return String(whole);
  let decimals = 9;
  while (fraction % 10 === 0) {
    fraction /= 10;
    decimals--;
  }
  return `${whole}.${String(fraction).padStart(decimals, '0')}`;
}

/** Exact notional in nanos: price (nanos per unit) x quantity (units), as BigInt. */
export function notionalNanos(priceNanos: number, quantityUnits: number): bigint {
  return BigInt(priceNanos) * BigInt(quantityUnits);
}
