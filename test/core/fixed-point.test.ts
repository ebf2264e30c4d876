import assert from 'node:assert/strict';
import { test } from 'node:test';
import { formatNanos, notionalNanos, ParseError, parseErrorReason, parsePriceNanos, parseQuantityUnits, PRICE_NANOS_MAX, QUANTITY_UNITS_MAX } from '../../core/fixed-point.ts';
import { SeededRandom } from '../../bench/lib/seeded-random.ts';

test('"101.25" parses to 101250000000 nanos and renders back as "101.25"', () => {
  assert.equal(parsePriceNanos('101.25'), 101_250_000_000);
  assert.equal(formatNanos(101_250_000_000), '101.25');
});

test('prices parse exactly at every decimal position', () => {
  assert.equal(parsePriceNanos('0.000000001'), 1);
  assert.equal(parsePriceNanos('1'), 1_000_000_000);
  assert.equal(parsePriceNanos('1.5'), 1_500_000_000);
  assert.equal(parsePriceNanos('0.1'), 100_000_000);
  assert.equal(parsePriceNanos('123.456789012'), 123_456_789_012);
  assert.equal(parsePriceNanos('00042.10'), 42_100_000_000);
  assert.equal(parsePriceNanos('9000000'), PRICE_NANOS_MAX);
  assert.equal(parsePriceNanos('8999999.999999999'), PRICE_NANOS_MAX - 1);
});

test('a price with more than 9 decimals is rejected with its reason', () => {
  assert.equal(parsePriceNanos('1.0000000001'), ParseError.TOO_MANY_DECIMALS);
  assert.match(parseErrorReason(ParseError.TOO_MANY_DECIMALS), /at most 9 decimal places/);
});

test('zero and negative prices are rejected', () => {
  assert.equal(parsePriceNanos('0'), ParseError.NOT_POSITIVE);
  assert.equal(parsePriceNanos('0.000000000'), ParseError.NOT_POSITIVE);
  assert.equal(parsePriceNanos('-1'), ParseError.SYNTAX);
  assert.match(parseErrorReason(ParseError.NOT_POSITIVE), /greater than zero/);
});

test('prices above the documented range are rejected', () => {
  assert.equal(parsePriceNanos('9000000.000000001'), ParseError.OUT_OF_RANGE);
  assert.equal(parsePriceNanos('9000001'), ParseError.OUT_OF_RANGE);
  assert.equal(parsePriceNanos('99999999999999999999'), ParseError.OUT_OF_RANGE);
  assert.equal(parsePriceNanos('1'.repeat(40)), ParseError.OUT_OF_RANGE);
});

test('malformed decimal strings are rejected as syntax errors', () => {
  for (const text of ['1e5', '1E5', ' 1', '1 ', '+1', '.5', '5.', '1.2.3', '1,5', '0x10', 'NaN', 'Infinity', '١٢']) {
    assert.equal(parsePriceNanos(text), ParseError.SYNTAX, text);
  }
  assert.equal(parsePriceNanos(''), ParseError.EMPTY);
});

test('quantities must be positive integers within range', () => {
  assert.equal(parseQuantityUnits('100'), 100);
  assert.equal(parseQuantityUnits('1'), 1);
  assert.equal(parseQuantityUnits(String(QUANTITY_UNITS_MAX)), QUANTITY_UNITS_MAX);
  assert.equal(parseQuantityUnits(String(QUANTITY_UNITS_MAX + 1)), ParseError.OUT_OF_RANGE);
  assert.equal(parseQuantityUnits('0'), ParseError.NOT_POSITIVE);
  assert.equal(parseQuantityUnits('1.5'), ParseError.NOT_INTEGER);
  assert.equal(parseQuantityUnits('1.0'), ParseError.NOT_INTEGER);
  assert.equal(parseQuantityUnits('-3'), ParseError.SYNTAX);
  assert.equal(parseQuantityUnits('1e3'), ParseError.SYNTAX);
  assert.equal(parseQuantityUnits(''), ParseError.EMPTY);
  assert.match(parseErrorReason(ParseError.NOT_INTEGER), /positive integer/);
});

test('rendering gives the canonical decimal: no trailing zeros, no trailing dot', () => {
  assert.equal(formatNanos(1), '0.000000001');
  assert.equal(formatNanos(10), '0.00000001');
  assert.equal(formatNanos(1_000_000_000), '1');
  assert.equal(formatNanos(1_500_000_000), '1.5');
  assert.equal(formatNanos(PRICE_NANOS_MAX), '9000000');
  assert.equal(formatNanos(PRICE_NANOS_MAX - 1), '8999999.999999999');
  assert.throws(() => formatNanos(0.5), RangeError);
  assert.throws(() => formatNanos(-1), RangeError);
});

test('parse and render round-trip for random values, checked against BigInt arithmetic', () => {
  const random = new SeededRandom(7);
  for (let i = 0; i < 20_000; i++) {
    // Build the value from two integers with BigInt: independent of the code under test.
    const whole = BigInt(random.below(9_000_000));
    const fraction = BigInt(random.below(1_000_000_000));
    const expected = whole * 1_000_000_000n + fraction;
    if (expected === 0n) continue;
    const text = `${whole}.${fraction.toString().padStart(9, '0')}`;
    const nanos = parsePriceNanos(text);
    assert.equal(BigInt(nanos), expected, text);
    const canonical = formatNanos(nanos);
    assert.equal(parsePriceNanos(canonical), nanos, canonical);
    assert.ok(!canonical.endsWith('0') || !canonical.includes('.'), canonical);
  }
});

test('notional is exact beyond 2^53', () => {
  assert.equal(notionalNanos(PRICE_NANOS_MAX, QUANTITY_UNITS_MAX), 9_000_000_000_000_000_000_000_000n);
  assert.equal(notionalNanos(101_250_000_000, 3), 303_750_000_000n);
});
