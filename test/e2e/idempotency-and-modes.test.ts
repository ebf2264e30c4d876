// Idempotency across gateway threads and the four processing modes, over real HTTP.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { assertShape } from '../support/response-schemas.ts';
import { submitBody, TOKENS, VenueProcess } from '../support/venue-process.ts';

let venue: VenueProcess;
const INSTRUMENT_A = '11111111-1111-4111-8111-111111111111';
const INSTRUMENT_B = '33333333-3333-4333-8333-333333333333';

before(async () => {
  venue = await VenueProcess.start();
});
after(async () => {
  assert.equal(await venue.stop(), 0);
});

test('a replay answers the original status and body byte for byte, and creates nothing', async () => {
  const body = submitBody({ instrumentId: INSTRUMENT_A, side: 'BUY', price: '5', quantity: '3' });
  const key = crypto.randomUUID();
  const first = await venue.order('/api/v1/orders/submit', body, { key });
  const second = await venue.order('/api/v1/orders/submit', body, { key });
  assert.equal(first.status, 200);
  assert.equal(second.status, first.status);
  assert.equal(second.text, first.text);
  // The same payload with its keys in another order is the same payload.
  const reordered = Object.fromEntries(Object.entries(body).reverse());
  assert.equal((await venue.order('/api/v1/orders/submit', reordered, { key })).text, first.text);
  // Had the replay created an order, selling 6 would fill 6 of two bids.
  const sell = await venue.order('/api/v1/orders/submit', submitBody({ instrumentId: INSTRUMENT_A, side: 'SELL', price: '5', quantity: '6', timeInForce: 'IOC' }));
  assert.deepEqual(
    sell.json.trades.map((t: { quantity: { units: string } }) => t.quantity.units),
    ['3'],
  );
});

test('the same key with another payload is 409; so is a commandId already used under another key', async () => {
  const body = submitBody({ instrumentId: INSTRUMENT_A });
  const key = crypto.randomUUID();
  await venue.order('/api/v1/orders/submit', body, { key });
  const conflict = await venue.order('/api/v1/orders/submit', { ...body, quantityUnits: '11' }, { key });
  assert.equal(conflict.status, 409);
  assert.equal(conflict.json.code, 'IDEMPOTENCY_CONFLICT');
  const reused = await venue.order('/api/v1/orders/submit', { ...submitBody({ instrumentId: INSTRUMENT_A }), commandId: body.commandId });
  assert.equal(reused.status, 409);
  assert.equal(reused.json.code, 'IDEMPOTENCY_CONFLICT');
});

test('the idempotency scope is (principal, X-Client-Id, Idempotency-Key)', async () => {
  const key = crypto.randomUUID();
  const first = await venue.order('/api/v1/orders/submit', submitBody({ instrumentId: INSTRUMENT_A }), { key, clientId: 'desk-1' });
  const otherClient = await venue.order('/api/v1/orders/submit', submitBody({ instrumentId: INSTRUMENT_A }), { key, clientId: 'desk-2' });
  assert.equal(first.status, 200);
  assert.equal(otherClient.status, 200);
  assert.notEqual(otherClient.text, first.text);
});

test('forty concurrent identical requests on separate connections (both gateway threads): one order, one answer', async () => {
  const body = submitBody({ instrumentId: INSTRUMENT_B, side: 'BUY', price: '7', quantity: '2' });
  const key = crypto.randomUUID();
  const answers = await Promise.all(Array.from({ length: 40 }, () => venue.postOnNewConnection(body, key, 'racer')));
  assert.deepEqual(new Set(answers.map((a) => a.status)), new Set([200]));
  assert.equal(new Set(answers.map((a) => a.text)).size, 1, 'every answer is the same bytes');
  const sell = await venue.order('/api/v1/orders/submit', submitBody({ instrumentId: INSTRUMENT_B, side: 'SELL', price: '7', quantity: '10', timeInForce: 'IOC' }));
  assert.deepEqual(
    sell.json.trades.map((t: { buyOrderId: string; quantity: { units: string } }) => [t.buyOrderId, t.quantity.units]),
    [[body.orderId, '2']],
  );
});

for (const mode of ['captured-ack', 'stream-ack', 'accepted-async'] as const) {
  test(`${mode}: 202 with the accepted pointer; the status view completes with the outcome`, async () => {
    const body = submitBody({ instrumentId: INSTRUMENT_A, side: 'SELL', price: '900', quantity: '1' });
    const key = crypto.randomUUID();
    const answer = await venue.order('/api/v1/orders/submit', body, { mode, key });
    assert.equal(answer.status, 202);
    assertShape('AcceptedPointer', answer.json);
    assert.deepEqual(answer.json, {
      commandId: body.commandId,
      status: 'ACCEPTED',
      processingMode: mode,
      statusUrl: `/api/v1/commands/${body.commandId as string}`,
    });
    let view: any;
    for (let attempt = 0; attempt < 100; attempt++) {
      view = (await venue.get(answer.json.statusUrl, TOKENS.traderA)).json;
      if (view.status === 'COMPLETED') break;
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    assertShape('CommandStatus', view);
    assert.equal(view.status, 'COMPLETED');
    assert.equal(view.processingMode, mode);
    assert.equal(view.responseStatus, 202);
    assert.equal(view.responsePayloadJson, answer.text);
    assert.equal(JSON.parse(view.resultPayloadJson).outcome.accepted.orderId, body.orderId);
    assert.equal((await venue.order('/api/v1/orders/submit', body, { mode, key })).text, answer.text, 'a replay repeats the 202');
  });
}

test('sync-result: the status view holds every field with the values of the answer', async () => {
  const body = submitBody({ instrumentId: INSTRUMENT_B, side: 'SELL', price: '3.5', quantity: '4' });
  const key = `status-${crypto.randomUUID()}`;
  const answer = await venue.order('/api/v1/orders/submit', body, { key, clientId: 'desk-9', mode: 'sync-result' });
  const view = (await venue.get(`/api/v1/commands/${body.commandId as string}`, TOKENS.traderA)).json;
  assertShape('CommandStatus', view);
  const accepted = answer.json.outcome.accepted;
  assert.deepEqual(
    {
      commandId: view.commandId,
      clientId: view.clientId,
      route: view.route,
      idempotencyKey: view.idempotencyKey,
      status: view.status,
      internalStatus: view.internalStatus,
      processingMode: view.processingMode,
      responseStatus: view.responseStatus,
      responsePayloadJson: view.responsePayloadJson,
      lastError: view.lastError,
      canonicalMaterialized: view.canonicalMaterialized,
      engineResultStatus: view.engineResultStatus,
      resultStatus: view.resultStatus,
      shardId: view.shardId,
      partition: view.partition,
      commandStream: view.commandStream,
      eventStream: view.eventStream,
      deliveredCount: view.deliveredCount,
      commandType: view.commandType,
      instrumentId: view.instrumentId,
      orderId: view.orderId,
      rejectCode: view.rejectCode,
      resultPayloadJson: view.resultPayloadJson,
    },
    {
      commandId: body.commandId,
      clientId: 'desk-9',
      route: '/api/v1/orders/submit',
      idempotencyKey: key,
      status: 'COMPLETED',
      internalStatus: 'COMPLETED',
      processingMode: 'sync-result',
      responseStatus: 200,
      responsePayloadJson: answer.text,
      lastError: '',
      // sync-result answers only once the outcome is on the durable journal.
      canonicalMaterialized: true,
      engineResultStatus: 'accepted',
      resultStatus: 'accepted',
      shardId: '0',
      partition: 0,
      commandStream: 'shard-0-commands',
      eventStream: 'shard-0-events',
      deliveredCount: 1,
      commandType: 'SubmitOrder',
      instrumentId: INSTRUMENT_B,
      orderId: body.orderId,
      rejectCode: '',
      resultPayloadJson: answer.text,
    },
  );
  assert.match(view.payloadHash, /^[0-9a-f]{64}$/);
  assert.match(view.batchId, /^0-\d+$/);
  // streamSequence is the outcome event's sequence, which its eventId encodes.
  assert.equal(parseInt(accepted.eventId.slice(-8), 16), view.streamSequence);
});

test('a business rejection is still 200 and shows as REJECTED with its code', async () => {
  const body = submitBody({ instrumentId: INSTRUMENT_A, currency: 'JPY' });
  const answer = await venue.order('/api/v1/orders/submit', body);
  assert.equal(answer.status, 200);
  assert.equal(answer.json.outcome.rejected.code, 'CURRENCY_MISMATCH');
  const view = (await venue.get(`/api/v1/commands/${body.commandId as string}`, TOKENS.traderA)).json;
  assert.deepEqual([view.status, view.resultStatus, view.rejectCode], ['REJECTED', 'rejected', 'CURRENCY_MISMATCH']);
});
