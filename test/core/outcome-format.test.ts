import assert from 'node:assert/strict';
import { test } from 'node:test';
import { EVENT_ACCEPTED, EVENT_EXECUTION, EVENT_REJECTED, EVENT_TRADE, REJECT_CODES, rejectName, rejectReason } from '../../core/codes.ts';
import { engineOrderIdOf, eventIdOf, NO_ORDER_ID, occurredAtOf, renderEnvelope, type RenderContext } from '../../core/outcome-format.ts';
import type { ResultEvent, ResultHeader } from '../../core/result-slot.ts';
import { formatUuid } from '../../core/uuid.ts';

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
  const random = () => (x = (Math.imul(x, 1103515245) + 12345) >>> 0) / 2 ** 32;
  let at = 1_795_316_400_000_000;
  for (let k = 0; k < 20_000; k++) {
    at = k % 500 === 0 ? Math.floor(random() * 4_102_444_800_000_000) : at + Math.floor(random() * 50_000) - (k % 7 === 0 ? 2_000_000 : 0);
    assert.equal(occurredAtOf(at), expected(at), `at ${at}`);
  }
});

/** The envelope as the objects the schema describes, rendered by JSON.stringify: what renderEnvelope's text must equal byte for byte. */
function envelopeByObjects(context: RenderContext, header: ResultHeader, events: ResultEvent[]): string {
  const { shard, instrumentId, currency } = context;
  const occurredAt = occurredAtOf(header.timestampUs);
  const first = events[0]!;
  const outcome =
    first.kind === EVENT_ACCEPTED
      ? { accepted: { eventId: eventIdOf(shard, first.sequence), orderId: first.orderA, engineOrderId: engineOrderIdOf(shard, header.engineOrderId), occurredAt } }
      : {
          rejected: {
            eventId: eventIdOf(shard, first.sequence),
            orderId: first.orderA === NO_ORDER_ID ? null : first.orderA,
            code: rejectName(first.code),
            reason: rejectReason(first.code),
            occurredAt,
          },
        };
  const executions: unknown[] = [];
  const trades: unknown[] = [];
  for (const event of events.slice(1)) {
    const eventId = eventIdOf(shard, event.sequence);
    if (event.kind === EVENT_EXECUTION) {
      executions.push({
        eventId,
        executionId: eventId,
        orderId: event.orderA,
        instrumentId,
        quantity: { units: String(event.quantity) },
        executionPrice: { nanos: String(event.price), currency },
        occurredAt,
      });
    } else if (event.kind === EVENT_TRADE) {
      trades.push({
        eventId,
        tradeId: eventId,
        executionId: eventIdOf(shard, event.sequence - 2),
        buyOrderId: event.orderA,
        sellOrderId: event.orderB,
        instrumentId,
        quantity: { units: String(event.quantity) },
        price: { nanos: String(event.price), currency },
        occurredAt,
      });
    }
  }
  return JSON.stringify({ outcome, executions, trades });
}

test('renderEnvelope writes the same bytes as JSON.stringify of the envelope objects, for every outcome shape', () => {
  let x = 0x1234567;
  const next = () => (x = (Math.imul(x, 1103515245) + 12345) >>> 0);
  const uuid = () => formatUuid(Int32Array.of(next(), next(), next(), next()), 0);
  const event = (kind: number, sequence: number, code = 0): ResultEvent => ({
    kind,
    state: 0,
    aggressor: 0,
    side: 0,
    code,
    orderA: uuid(),
    orderB: uuid(),
    sequence,
    quantity: 1 + (next() % 1_000_000_000),
    price: next() % 7 === 0 ? 9_000_000 * 1e9 : 1 + next() * 1000,
  });
  // Context strings are JSON-quoted (a quote or a backslash would be escaped); the engine's are ids and digits.
  const contexts: RenderContext[] = [
    { shard: 0, instrumentId: uuid(), currency: 'USD' },
    { shard: 3, instrumentId: uuid().toUpperCase(), currency: '' },
    { shard: 1, instrumentId: 'odd "id" \\ \u00e9', currency: 'E"R' },
  ];
  let cases = 0;
  for (const context of contexts) {
    for (let k = 0; k < 300; k++) {
      const sequence = k % 3 === 0 ? 2 ** 40 + next() : 1 + next();
      const header: ResultHeader = { token: 1, eventCount: 0, currency: 0, queryState: 0, timestampUs: 1_795_316_400_000_000 + next(), engineOrderId: next() % 5_000_000, batch: 1 };
      const rejected = k % 4 === 0;
      const first = rejected ? event(EVENT_REJECTED, sequence, REJECT_CODES[k % REJECT_CODES.length]!) : event(EVENT_ACCEPTED, sequence);
      if (rejected && k % 8 === 0) first.orderA = NO_ORDER_ID;
      const events = [first];
      const fills = rejected ? 0 : k % 5;
      for (let f = 0; f < fills; f++) events.push(event(EVENT_EXECUTION, sequence + 1 + 3 * f), event(EVENT_EXECUTION, sequence + 2 + 3 * f), event(EVENT_TRADE, sequence + 3 + 3 * f));
      header.eventCount = events.length - 1;
      const rendered = renderEnvelope(context, header, events);
      assert.equal(rendered.json, envelopeByObjects(context, header, events));
      assert.equal(rendered.accepted, !rejected);
      assert.equal(rendered.rejectCode, rejected ? rejectName(first.code) : '');
      assert.equal(rendered.streamSequence, sequence);
      JSON.parse(rendered.json); // and it is JSON
      cases++;
    }
  }
  assert.equal(cases, 900);
});

test('eventIdOf writes the version 8 UUID of shard and sequence, at the low and the high end of the sequence', () => {
  assert.equal(eventIdOf(0, 0), 'e0000000-0000-8000-8000-000000000000');
  assert.equal(eventIdOf(3, 5 * 2 ** 32 + 17), 'e0000003-0000-8005-8000-000000000011');
  assert.equal(eventIdOf(255, Number.MAX_SAFE_INTEGER), 'e00000ff-01ff-8fff-8000-0000ffffffff');
  // One id after another: nothing of the previous id is left in the next.
  assert.equal(eventIdOf(1, 1), 'e0000001-0000-8000-8000-000000000001');
});
