import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Opcode, OrderType, Side, TimeInForce } from '../../core/codes.ts';
import { COMMAND_SLOT_BYTES, decodeCommand, encodeCommand, packCurrency, slotViews, unpackCurrency, type CommandInput } from '../../core/command-slot.ts';

const command: Required<CommandInput> = {
  opcode: Opcode.MODIFY,
  side: Side.SELL,
  orderType: OrderType.LIMIT_HIDDEN,
  timeInForce: TimeInForce.IOC,
  token: 123_456,
  runNo: 7,
  sessionNo: 9,
  commandId: '0f0e0d0c-0b0a-4908-8706-050403020100',
  orderId: 'ffffffff-ffff-4fff-bfff-ffffffffffff',
  instrumentId: '00000000-0000-4000-8000-000000000000',
  participantId: '12345678-9abc-4def-8123-456789abcdef',
  accountId: '87654321-cba9-4fed-8321-fedcba987654',
  currency: 'EUR',
  priceNanos: 8_999_999_999_999_999,
  quantityUnits: 1_000_000_000,
  timestampUs: 1_763_000_000_123_456,
  argument: 202,
};

test('every field of a command survives encode and decode', () => {
  const views = slotViews(new ArrayBuffer(COMMAND_SLOT_BYTES));
  encodeCommand(command, views, 0);
  assert.deepEqual(decodeCommand(views, 0), command);
});

test('slots at different offsets of one buffer do not overlap', () => {
  const views = slotViews(new ArrayBuffer(COMMAND_SLOT_BYTES * 3));
  const second = { ...command, orderId: '11111111-2222-4333-8444-555555555555', priceNanos: 1, side: Side.BUY };
  encodeCommand(command, views, 0);
  encodeCommand(second, views, COMMAND_SLOT_BYTES);
  encodeCommand(command, views, COMMAND_SLOT_BYTES * 2);
  assert.deepEqual(decodeCommand(views, 0), command);
  assert.deepEqual(decodeCommand(views, COMMAND_SLOT_BYTES), second);
  assert.deepEqual(decodeCommand(views, COMMAND_SLOT_BYTES * 2), command);
});

test('currency codes pack to three ASCII letters and back; anything else is -1', () => {
  assert.equal(packCurrency('USD'), 0x555344);
  assert.equal(unpackCurrency(packCurrency('JPY')), 'JPY');
  for (const bad of ['usd', 'US', 'USDT', 'U$D', '']) assert.equal(packCurrency(bad), -1, bad);
});

test('a non-UUID id is refused by the encoder', () => {
  const views = slotViews(new ArrayBuffer(COMMAND_SLOT_BYTES));
  assert.throws(() => encodeCommand({ ...command, orderId: 'not-a-uuid' }, views, 0), /orderId is not a UUID/);
});
