import assert from 'node:assert/strict';
import { test } from 'node:test';
import { EVENT_TRADE, SIDE_SELL, STATE_PARTIALLY_FILLED } from '../../core/codes.ts';
import { readEvent, readHeader, RESULT_HEADER, RESULT_KIND_BYTE, RESULT_RECORD_BYTES, RESULT_UUID_A_WORD, RESULT_UUID_B_WORD, writeEvent, writeHeader, writeUuid } from '../../core/result-slot.ts';
import { uuidWords } from '../../core/uuid.ts';

const views = () => {
  const buffer = new ArrayBuffer(RESULT_RECORD_BYTES * 3);
  return { words: new Int32Array(buffer), floats: new Float64Array(buffer), bytes: new Uint8Array(buffer) };
};

test('every header field survives write and read', () => {
  const v = views();
  writeHeader(v, RESULT_RECORD_BYTES, 0x7ffffffe, 901, 0x555344, -1, 1_763_000_000_123_456, 2 ** 52, 123_456_789);
  assert.equal(v.bytes[RESULT_RECORD_BYTES + RESULT_KIND_BYTE], RESULT_HEADER);
  assert.deepEqual(readHeader(v, RESULT_RECORD_BYTES), {
    token: 0x7ffffffe,
    eventCount: 901,
    currency: 0x555344,
    queryState: -1,
    timestampUs: 1_763_000_000_123_456,
    engineOrderId: 2 ** 52,
    batch: 123_456_789,
  });
});

test('every event field survives write and read, both order ids included', () => {
  const v = views();
  const buy = '0123abcd-4567-89ab-cdef-0123456789ab';
  const sell = 'ffffffff-0000-4fff-8000-000000000001';
  const at = RESULT_RECORD_BYTES * 2;
  writeEvent(v, at, EVENT_TRADE, STATE_PARTIALLY_FILLED, SIDE_SELL, SIDE_SELL, 303, 2 ** 53 - 1, 1_000_000_000, 9_000_000_000_000_000);
  writeUuid(v, at, RESULT_UUID_A_WORD, uuidWords(buy), 0);
  writeUuid(v, at, RESULT_UUID_B_WORD, uuidWords(sell), 0);
  assert.deepEqual(readEvent(v, at), {
    kind: EVENT_TRADE,
    state: STATE_PARTIALLY_FILLED,
    aggressor: SIDE_SELL,
    side: SIDE_SELL,
    code: 303,
    orderA: buy,
    orderB: sell,
    sequence: 2 ** 53 - 1,
    quantity: 1_000_000_000,
    price: 9_000_000_000_000_000,
  });
  assert.equal(readHeader(v, 0).token, 0, 'neighbouring records are untouched');
});
