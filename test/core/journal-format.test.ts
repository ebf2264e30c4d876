// Journal payloads read in place (core/journal-format.ts) and event ids as words
// (core/outcome-format.ts eventIdWords): what the projector writes to storage and the
// read thread renders from must be what the gateway answered.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { EVENT_ACCEPTED, EVENT_EXECUTION, EVENT_TRADE, Opcode, OrderType, Side, STATE_FILLED, STATE_PARTIALLY_FILLED, TimeInForce } from '../../core/codes.ts';
import { COMMAND_SLOT_BYTES, encodeCommand, packCurrency, slotViews } from '../../core/command-slot.ts';
import { commandBytesAt, findCommand, JournalScratch, journalView, renderJournalCommand } from '../../core/journal-format.ts';
import { eventIdOf, eventIdWords, renderEnvelope } from '../../core/outcome-format.ts';
import { readEvent, readHeader, RESULT_RECORD_BYTES, RESULT_UUID_A_WORD, RESULT_UUID_B_WORD, writeEvent, writeHeader, writeUuid } from '../../core/result-slot.ts';
import { formatUuid, uuidWords } from '../../core/uuid.ts';

test('event ids as words are the event ids as text', () => {
  const words = new Int32Array(4);
  for (const shard of [0, 1, 7, 63]) {
    for (const sequence of [1, 2, 4095, 4096, 2 ** 32 - 1, 2 ** 32, 2 ** 40 + 12345, 2 ** 52 + 3]) {
      eventIdWords(shard, sequence, words, 0);
      assert.equal(formatUuid(words, 0), eventIdOf(shard, sequence), `shard ${shard}, sequence ${sequence}`);
    }
  }
});

const INSTRUMENT = '5e000000-0000-4000-8000-000000000001';

/** A journal payload: a resting submit, then a crossing submit that fills it (execution, execution, trade). */
function payload(): { bytes: Uint8Array; ids: string[] } {
  const ids = Array.from({ length: 4 }, () => crypto.randomUUID());
  const [restId, restOrder, crossId, crossOrder] = ids as [string, string, string, string];
  const bytes = new Uint8Array(2 * COMMAND_SLOT_BYTES + 7 * RESULT_RECORD_BYTES); // two slots, two headers, five events
  const views = { bytes, words: new Int32Array(bytes.buffer), floats: new Float64Array(bytes.buffer) };
  const command = (at: number, commandId: string, orderId: string, side: number) =>
    encodeCommand(
      {
        opcode: Opcode.SUBMIT,
        side,
        orderType: OrderType.LIMIT,
        timeInForce: TimeInForce.DAY,
        runNo: 1,
        sessionNo: 1,
        commandId,
        orderId,
        instrumentId: INSTRUMENT,
        participantId: crypto.randomUUID(),
        accountId: crypto.randomUUID(),
        currency: 'USD',
        priceNanos: 5_000_000_000,
        quantityUnits: 10,
        timestampUs: 1_763_800_000_123_456,
      },
      slotViews(bytes.buffer as ArrayBuffer),
      at,
    );
  command(0, restId, restOrder, Side.SELL);
  writeHeader(views, COMMAND_SLOT_BYTES, 0, 1, packCurrency('USD'), -1, 1_763_800_000_123_456, 1, 1);
  writeEvent(views, COMMAND_SLOT_BYTES + 64, EVENT_ACCEPTED, 1, 0, Side.SELL, 0, 1, 0, 0);
  writeUuid(views, COMMAND_SLOT_BYTES + 64, RESULT_UUID_A_WORD, uuidWords(restOrder), 0);
  const second = COMMAND_SLOT_BYTES + 2 * RESULT_RECORD_BYTES;
  command(second, crossId, crossOrder, Side.BUY);
  const h = second + COMMAND_SLOT_BYTES;
  writeHeader(views, h, 0, 4, packCurrency('USD'), -1, 1_763_800_000_999_001, 2, 1);
  writeEvent(views, h + 64, EVENT_ACCEPTED, STATE_PARTIALLY_FILLED, 0, Side.BUY, 0, 2, 0, 0);
  writeUuid(views, h + 64, RESULT_UUID_A_WORD, uuidWords(crossOrder), 0);
  writeEvent(views, h + 128, EVENT_EXECUTION, STATE_PARTIALLY_FILLED, 0, Side.BUY, 0, 3, 4, 5_000_000_000);
  writeUuid(views, h + 128, RESULT_UUID_A_WORD, uuidWords(crossOrder), 0);
  writeUuid(views, h + 128, RESULT_UUID_B_WORD, uuidWords(restOrder), 0);
  writeEvent(views, h + 192, EVENT_EXECUTION, STATE_FILLED, 0, Side.SELL, 0, 4, 4, 5_000_000_000);
  writeUuid(views, h + 192, RESULT_UUID_A_WORD, uuidWords(restOrder), 0);
  writeUuid(views, h + 192, RESULT_UUID_B_WORD, uuidWords(crossOrder), 0);
  writeEvent(views, h + 256, EVENT_TRADE, 0, Side.BUY, 0, 0, 5, 4, 5_000_000_000);
  writeUuid(views, h + 256, RESULT_UUID_A_WORD, uuidWords(crossOrder), 0);
  writeUuid(views, h + 256, RESULT_UUID_B_WORD, uuidWords(restOrder), 0);
  return { bytes, ids };
}

test('commands are found by id, and each renders as the envelope of its own header and events', () => {
  const { bytes, ids } = payload();
  const view = journalView(bytes);
  const second = findCommand(view, uuidWords(ids[2]!));
  assert.equal(findCommand(view, uuidWords(ids[0]!)), 0);
  assert.equal(second, commandBytesAt(view, 0));
  assert.equal(findCommand(view, uuidWords(crypto.randomUUID())), -1);
  assert.equal(second + commandBytesAt(view, second), bytes.byteLength);

  const rendered = renderJournalCommand(view, second, 1);
  const headerAt = second + COMMAND_SLOT_BYTES;
  const events = [1, 2, 3, 4].map((k) => readEvent(view, headerAt + k * RESULT_RECORD_BYTES));
  assert.equal(rendered.json, renderEnvelope({ shard: 1, instrumentId: INSTRUMENT, currency: 'USD' }, readHeader(view, headerAt), events).json);
  const envelope = JSON.parse(rendered.json);
  assert.equal(envelope.outcome.accepted.orderId, ids[3]);
  assert.deepEqual(
    envelope.trades.map((t: any) => [t.tradeId, t.buyOrderId, t.sellOrderId, t.quantity.units, t.price]),
    [[eventIdOf(1, 5), ids[3], ids[1], '4', { nanos: '5000000000', currency: 'USD' }]],
  );
  assert.equal(envelope.outcome.accepted.occurredAt, '2025-11-22T08:26:40.999001Z');

  // One command cut out of its batch (what the command log's offset and length fetch) renders the same.
  const alone = journalView(bytes.subarray(second, second + commandBytesAt(view, second)));
  assert.equal(renderJournalCommand(alone, 0, 1).json, rendered.json);
});

test('a scratch gives the views journalView gives, in one buffer reused while big enough', () => {
  const { bytes, ids } = payload();
  const scratch = new JournalScratch();
  const whole = scratch.view(bytes);
  const copy = journalView(bytes);
  assert.deepEqual([...whole.bytes], [...copy.bytes]);
  assert.deepEqual([...whole.words], [...copy.words]);
  assert.deepEqual([...whole.floats], [...copy.floats]);
  assert.equal(findCommand(whole, uuidWords(ids[2]!)), findCommand(copy, uuidWords(ids[2]!)));
  // A shorter payload: the same buffer, views of its length only.
  const first = bytes.subarray(0, commandBytesAt(copy, 0));
  const shorter = scratch.view(first);
  assert.equal(shorter.bytes.buffer, whole.bytes.buffer, 'the buffer is reused');
  assert.equal(shorter.bytes.byteLength, first.byteLength);
  assert.equal(shorter.words.length, first.byteLength >> 2);
  assert.equal(shorter.floats.length, first.byteLength >> 3);
  assert.equal(renderJournalCommand(shorter, 0, 1).json, renderJournalCommand(copy, 0, 1).json);
  // A payload bigger than the buffer: a new one, then reused in turn.
  const big = new Uint8Array(whole.bytes.buffer.byteLength + 8).fill(7);
  const grown = scratch.view(big);
  assert.notEqual(grown.bytes.buffer, whole.bytes.buffer);
  assert.ok(grown.bytes.buffer.byteLength >= big.byteLength);
  assert.deepEqual([...grown.bytes], [...big]);
  assert.equal(scratch.view(bytes).bytes.buffer, grown.bytes.buffer);
});
