import assert from 'node:assert/strict';
import { test } from 'node:test';
import { occurredAtOf } from '../../core/outcome-format.ts';

/** The plain formula: Date's milliseconds, then the three microsecond digits. */
function expected(microseconds: number): string {
  const millis = Math.floor(microseconds / 1000);
  return `${new Date(millis).toISOString().slice(0, 23)}${String(microseconds - millis * 1000).padStart(3, '0')}Z`;
}

test('occurredAtOf writes RFC 3339 UTC with six fraction digits, within a second and across seconds', () => {
  assert.equal(occurredAtOf(1_795_316_400_000_000), '2026-11-22T03:00:00.000000Z');
  assert.equal(occurredAtOf(1_795_316_400_000_007), '2026-11-22T03:00:00.000007Z');
  assert.equal(occurredAtOf(1_795_316_400_999_999), '2026-11-22T03:00:00.999999Z');
  assert.equal(occurredAtOf(1_795_316_401_000_000), '2026-11-22T03:00:01.000000Z');
  assert.equal(occurredAtOf(0), '1970-01-01T00:00:00.000000Z');
  // Runs within one second (the remembered second reused), jumps back and forth, and random values.
  let x = 0x2545f491;
  const random = () => ((x = (Math.imul(x, 1103515245) + 12345) >>> 0) / 2 ** 32);
  let at = 1_795_316_400_000_000;
  for (let k = 0; k < 20_000; k++) {
    at = k % 500 === 0 ? Math.floor(random() * 4_102_444_800_000_000) : at + Math.floor(random() * 50_000) - (k % 7 === 0 ? 2_000_000 : 0);
    assert.equal(occurredAtOf(at), expected(at), `at ${at}`);
  }
});
