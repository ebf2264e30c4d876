// End to end over real HTTP: a venue with 2 gateway threads and 2 shards.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { shardOf } from '../../core/shard-map.ts';
import { uuidWords } from '../../core/uuid.ts';
import { assertShape } from '../support/response-schemas.ts';
import { cancelBody, cancelByClientOrderBody, modifyBody, submitBody, TOKENS, TRADER_A, TRADER_B, VenueProcess } from '../support/venue-process.ts';

let venue: VenueProcess;
/** A fresh instrument on the wanted shard (every test trades on its own books). */
function instrumentOn(shard: number): string {
  for (;;) {
    const id = crypto.randomUUID();
    if (shardOf(uuidWords(id), 0, 2) === shard) return id;
  }
}

before(async () => {
  venue = await VenueProcess.start();
});
after(async () => {
  assert.equal(await venue.stop(), 0, 'SIGTERM ends the venue with exit code 0');
});

test('a resting submit answers 200 with the envelope of the specification', async () => {
  const instrumentId = instrumentOn(0);
  const body = submitBody({ instrumentId, side: 'SELL', price: '101.25', quantity: '7' });
  const answer = await venue.order('/api/v1/orders/submit', body);
  assert.equal(answer.status, 200);
  assert.equal(answer.headers.get('content-type'), 'application/json');
  assertShape('ResultEnvelope', answer.json);
  assert.equal(answer.json.outcome.accepted.orderId, body.orderId);
  assert.match(answer.json.outcome.accepted.engineOrderId, /^0-\d+$/);
  assert.deepEqual([answer.json.executions, answer.json.trades], [[], []]);
});

test('orders on instruments of both shards match within their own books', async () => {
  for (const shard of [0, 1]) {
    const instrumentId = instrumentOn(shard);
    const sell = submitBody({ instrumentId, side: 'SELL', price: '99.5', quantity: '4' });
    await venue.order('/api/v1/orders/submit', sell);
    const buy = submitBody({ instrumentId, side: 'BUY', price: '100', quantity: '6' });
    const answer = await venue.order('/api/v1/orders/submit', buy);
    assert.equal(answer.status, 200);
    assertShape('ResultEnvelope', answer.json);
    const { executions, trades } = answer.json;
    assert.equal(trades.length, 1);
    const [trade] = trades;
    assert.deepEqual(
      [trade.buyOrderId, trade.sellOrderId, trade.instrumentId, trade.quantity, trade.price],
      [buy.orderId, sell.orderId, instrumentId, { units: '4' }, { nanos: '99500000000', currency: 'USD' }],
    );
    assert.deepEqual(
      executions.map((e: { orderId: string }) => e.orderId),
      [buy.orderId, sell.orderId],
    );
    assert.equal(trade.executionId, executions[0].executionId, "the trade names the incoming order's execution");
    assert.ok(trade.eventId.startsWith(`e000000${shard}`), `event ids carry the shard: ${trade.eventId}`);
    for (const record of [answer.json.outcome.accepted, ...executions, ...trades]) {
      assert.ok(record.eventId && record.occurredAt, 'every record has eventId and occurredAt');
    }
  }
});

test('cancel and modify work with the full order context', async () => {
  const instrumentId = instrumentOn(1);
  const order = submitBody({ instrumentId, side: 'BUY', price: '50', quantity: '10' });
  await venue.order('/api/v1/orders/submit', order);
  const modified = await venue.order('/api/v1/orders/modify', modifyBody({ orderId: order.orderId as string, instrumentId, price: '50', quantity: '6' }));
  assert.equal(modified.status, 200);
  assert.equal(modified.json.outcome.accepted.orderId, order.orderId);
  const cancelled = await venue.order('/api/v1/orders/cancel', cancelBody({ orderId: order.orderId as string, instrumentId }));
  assert.equal(cancelled.status, 200);
  assertShape('ResultEnvelope', cancelled.json);
  assert.ok(cancelled.json.outcome.accepted);
  const again = await venue.order('/api/v1/orders/cancel', cancelBody({ orderId: order.orderId as string, instrumentId }));
  assert.equal(again.json.outcome.rejected.code, 'ORDER_NOT_OPEN');
});

test('every differing context field is ORDER_CONTEXT_MISMATCH, even an instrument on the other shard', async () => {
  const instrumentId = instrumentOn(0);
  const order = submitBody({ instrumentId, side: 'SELL', price: '70', quantity: '3' });
  await venue.order('/api/v1/orders/submit', order);
  const orderId = order.orderId as string;
  const variants = [{ runId: 'run-other' }, { venueSessionId: 'session-0' }, { instrumentId: instrumentOn(1) }, { instrumentId: instrumentOn(0) }, { accountId: TRADER_A.otherAccountId }];
  for (const change of variants) {
    const answer = await venue.order('/api/v1/orders/cancel', cancelBody({ orderId, instrumentId, ...change }));
    assert.equal(answer.status, 200);
    assertShape('ResultEnvelope', answer.json);
    assert.equal(answer.json.outcome.rejected?.code, 'ORDER_CONTEXT_MISMATCH', JSON.stringify(change));
    assert.equal(answer.json.outcome.rejected.orderId, orderId);
  }
  // The order is unchanged: it still trades in full.
  const buy = await venue.order('/api/v1/orders/submit', submitBody({ instrumentId, side: 'BUY', price: '70', quantity: '3' }));
  assert.deepEqual(
    buy.json.trades.map((t: { quantity: { units: string } }) => t.quantity.units),
    ['3'],
  );
});

test("another participant's order cannot be touched even with its full context", async () => {
  const instrumentId = instrumentOn(1);
  const order = submitBody({ instrumentId, side: 'BUY', price: '10', quantity: '1' });
  await venue.order('/api/v1/orders/submit', order);
  const answer = await venue.order('/api/v1/orders/cancel', cancelBody({ orderId: order.orderId as string, instrumentId, participantId: TRADER_B.participantId, accountId: TRADER_B.accountId }), {
    token: TOKENS.traderB,
  });
  assert.equal(answer.json.outcome.rejected.code, 'ORDER_CONTEXT_MISMATCH');
});

test('unknown orders and reused orderIds are business rejections', async () => {
  const instrumentId = instrumentOn(0);
  const unknown = await venue.order('/api/v1/orders/cancel', cancelBody({ orderId: crypto.randomUUID(), instrumentId }));
  assert.equal(unknown.json.outcome.rejected.code, 'ORDER_NOT_FOUND');
  const order = submitBody({ instrumentId, side: 'BUY', price: '10', quantity: '1' });
  await venue.order('/api/v1/orders/submit', order);
  const elsewhere = await venue.order('/api/v1/orders/submit', submitBody({ orderId: order.orderId as string, instrumentId: instrumentOn(1) }));
  assert.equal(elsewhere.json.outcome.rejected.code, 'DUPLICATE_ORDER_ID', 'an orderId used on another shard is still a duplicate');
  const currency = await venue.order('/api/v1/orders/submit', submitBody({ instrumentId, currency: 'EUR' }));
  assert.equal(currency.json.outcome.rejected.code, 'CURRENCY_MISMATCH');
});

test('clientOrderId: unique among open orders, reusable once closed, and cancel-by-client-order resolves it', async () => {
  const instrumentId = instrumentOn(1);
  const clientOrderId = `coid-${crypto.randomUUID()}`;
  const first = submitBody({ instrumentId, side: 'BUY', price: '20', quantity: '2', clientOrderId });
  assert.ok((await venue.order('/api/v1/orders/submit', first)).json.outcome.accepted);
  const duplicate = await venue.order('/api/v1/orders/submit', submitBody({ instrumentId, side: 'BUY', price: '21', quantity: '2', clientOrderId }));
  assert.equal(duplicate.json.outcome.rejected.code, 'DUPLICATE_CLIENT_ORDER_ID');
  const cancelled = await venue.order('/api/v1/orders/cancel-by-client-order', cancelByClientOrderBody(clientOrderId));
  assert.equal(cancelled.status, 200);
  assertShape('ResultEnvelope', cancelled.json);
  assert.equal(cancelled.json.outcome.accepted.orderId, first.orderId);
  const reuse = submitBody({ instrumentId, side: 'BUY', price: '22', quantity: '2', clientOrderId });
  assert.ok((await venue.order('/api/v1/orders/submit', reuse)).json.outcome.accepted, 'reusable once the first order is closed');
  const second = await venue.order('/api/v1/orders/cancel-by-client-order', cancelByClientOrderBody(clientOrderId));
  assert.equal(second.json.outcome.accepted.orderId, reuse.orderId, 'the resolver follows the newest order');
  const missing = await venue.order('/api/v1/orders/cancel-by-client-order', cancelByClientOrderBody(`none-${crypto.randomUUID()}`));
  assertShape('ResultEnvelope', missing.json);
  assert.deepEqual([missing.json.outcome.rejected.code, missing.json.outcome.rejected.orderId], ['ORDER_NOT_FOUND', null]);
});

test('a clientOrderId of another participant is theirs: the same string is free for us', async () => {
  const instrumentId = instrumentOn(0);
  const clientOrderId = `shared-${crypto.randomUUID()}`;
  const b = submitBody({ instrumentId, side: 'SELL', price: '90', participantId: TRADER_B.participantId, accountId: TRADER_B.accountId, clientOrderId });
  assert.ok((await venue.order('/api/v1/orders/submit', b, { token: TOKENS.traderB })).json.outcome.accepted);
  assert.ok((await venue.order('/api/v1/orders/submit', submitBody({ instrumentId, side: 'SELL', price: '91', clientOrderId }))).json.outcome.accepted);
  const forbidden = await venue.order('/api/v1/orders/cancel-by-client-order', cancelByClientOrderBody(clientOrderId, TRADER_B.participantId));
  assert.equal(forbidden.status, 403, "trader A may not resolve trader B's participant");
});

test('the venue session read gives the pair orders are stamped with', async () => {
  const answer = await venue.get('/api/v1/venue/session', TOKENS.viewer);
  assert.equal(answer.status, 200);
  assertShape('VenueSession', answer.json);
  assert.deepEqual([answer.json.runId, answer.json.venueSessionId], ['run-local', 'session-1']);
});

test('health and readiness answer without credentials', async () => {
  assert.deepEqual((await venue.get('/healthz')).json, { status: 'ok' });
  assert.deepEqual((await venue.get('/readyz')).json, { status: 'ready' });
});
