// Every refusal of the contract over real HTTP: 400, 401, 403, 404, 405, 413, with
// the contract's error body, and no trace left behind.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { assertShape } from '../support/response-schemas.ts';
import { cancelBody, modifyBody, submitBody, TOKENS, TRADER_A, TRADER_B, VenueProcess } from '../support/venue-process.ts';

let venue: VenueProcess;
const INSTRUMENT = '9b2f6c1e-0d4a-4f7e-9a51-3c8e2b7d6f10';

before(async () => {
  venue = await VenueProcess.start({ MAX_BODY_BYTES: '2048' });
});
after(async () => {
  assert.equal(await venue.stop(), 0);
});

async function expectError(answer: Promise<{ status: number; json: any }>, status: number, code: string): Promise<any> {
  const { status: actual, json } = await answer;
  assert.equal(actual, status, JSON.stringify(json));
  assertShape('Error', json);
  assert.equal(json.code, code);
  return json;
}

/** A refused command must leave nothing: no status record under its commandId. */
async function assertNoTrace(commandId: unknown): Promise<void> {
  const status = await venue.get(`/api/v1/commands/${commandId as string}`, TOKENS.operator);
  assert.equal(status.status, 404, `command ${commandId as string} left a record`);
}

const invalidBodies: Array<[string, (b: Record<string, unknown>) => unknown, string]> = [
  ['a missing field', ({ side: _side, ...rest }) => rest, 'side'],
  ['an unknown field', (b) => ({ ...b, leverage: 10 }), 'leverage'],
  ['a blank occurredAt', (b) => ({ ...b, occurredAt: '' }), 'occurredAt'],
  ['an occurredAt without a time zone', (b) => ({ ...b, occurredAt: '2026-11-22T03:00:00' }), 'occurredAt'],
  ['an occurredAt that is not a date', (b) => ({ ...b, occurredAt: 'yesterday' }), 'occurredAt'],
  ['a non-UUID orderId', (b) => ({ ...b, orderId: 'order-1' }), 'orderId'],
  ['a non-UUID instrumentId', (b) => ({ ...b, instrumentId: '12345' }), 'instrumentId'],
  ['a UUID with a urn prefix', (b) => ({ ...b, commandId: `urn:uuid:${crypto.randomUUID()}` }), 'commandId'],
  ['a non-integer quantity', (b) => ({ ...b, quantityUnits: '1.5' }), 'quantityUnits'],
  ['a zero quantity', (b) => ({ ...b, quantityUnits: '0' }), 'quantityUnits'],
  ['a negative quantity', (b) => ({ ...b, quantityUnits: '-5' }), 'quantityUnits'],
  ['a quantity as a JSON number', (b) => ({ ...b, quantityUnits: 5 }), 'quantityUnits'],
  ['a quantity out of range', (b) => ({ ...b, quantityUnits: '1000000001' }), 'quantityUnits'],
  ['a price with 10 decimals', (b) => ({ ...b, limitPrice: '1.0000000001' }), 'limitPrice'],
  ['a zero price', (b) => ({ ...b, limitPrice: '0' }), 'limitPrice'],
  ['a negative price', (b) => ({ ...b, limitPrice: '-1' }), 'limitPrice'],
  ['a price in exponent form', (b) => ({ ...b, limitPrice: '1e3' }), 'limitPrice'],
  ['a price out of range', (b) => ({ ...b, limitPrice: '9000000.000000001' }), 'limitPrice'],
  ['an unknown side', (b) => ({ ...b, side: 'SHORT' }), 'side'],
  ['a market order', (b) => ({ ...b, orderType: 'MARKET' }), 'orderType'],
  ['an unknown time in force', (b) => ({ ...b, timeInForce: 'GTC' }), 'timeInForce'],
  ['a lower-case currency', (b) => ({ ...b, currency: 'usd' }), 'currency'],
  ['a clientOrderId of 65 characters', (b) => ({ ...b, clientOrderId: 'x'.repeat(65) }), 'clientOrderId'],
];

for (const [what, change, field] of invalidBodies) {
  test(`a submit with ${what} is 400 naming ${field}, and leaves no trace`, async () => {
    const body = change(submitBody({ instrumentId: INSTRUMENT })) as Record<string, unknown>;
    const json = await expectError(venue.order('/api/v1/orders/submit', body), 400, 'VALIDATION_FAILED');
    assert.ok(
      json.details.some((d: { field: string }) => d.field === field),
      JSON.stringify(json.details),
    );
    if (typeof body.commandId === 'string' && body.commandId.length === 36) await assertNoTrace(body.commandId);
  });
}

test('cancel and modify bodies are validated too', async () => {
  const orderId = crypto.randomUUID();
  const cancel = cancelBody({ orderId, instrumentId: INSTRUMENT });
  await expectError(venue.order('/api/v1/orders/cancel', { ...cancel, reason: undefined }), 400, 'VALIDATION_FAILED');
  await expectError(venue.order('/api/v1/orders/cancel', { ...cancel, runId: '' }), 400, 'VALIDATION_FAILED');
  const modify = modifyBody({ orderId, instrumentId: INSTRUMENT, price: '10', quantity: '0' });
  const json = await expectError(venue.order('/api/v1/orders/modify', modify), 400, 'VALIDATION_FAILED');
  assert.equal(json.details[0].field, 'quantityUnits');
  await expectError(venue.order('/api/v1/orders/cancel-by-client-order', { participantId: TRADER_A.participantId }), 400, 'VALIDATION_FAILED');
});

test('a body that is not JSON is 400', async () => {
  await expectError(venue.order('/api/v1/orders/submit', '{"commandId": '), 400, 'VALIDATION_FAILED');
  await expectError(venue.order('/api/v1/orders/submit', '[1,2,3]'), 400, 'VALIDATION_FAILED');
});

test('missing X-Client-Id or Idempotency-Key, or an unknown X-Processing-Mode, is 400', async () => {
  const body = JSON.stringify(submitBody({ instrumentId: INSTRUMENT }));
  const post = (headers: Record<string, string>) => venue.request('POST', '/api/v1/orders/submit', { token: TOKENS.traderA, headers: { 'content-type': 'application/json', ...headers }, body });
  let json = await expectError(post({ 'idempotency-key': 'k' }), 400, 'VALIDATION_FAILED');
  assert.equal(json.details[0].field, 'X-Client-Id');
  json = await expectError(post({ 'x-client-id': 'c' }), 400, 'VALIDATION_FAILED');
  assert.equal(json.details[0].field, 'Idempotency-Key');
  json = await expectError(post({ 'x-client-id': 'c', 'idempotency-key': 'k', 'x-processing-mode': 'fire-and-forget' }), 400, 'VALIDATION_FAILED');
  assert.equal(json.details[0].field, 'X-Processing-Mode');
  await expectError(post({ 'x-client-id': 'c', 'idempotency-key': 'k'.repeat(129) }), 400, 'VALIDATION_FAILED');
});

test('a body larger than MAX_BODY_BYTES is 413', async () => {
  const body = submitBody({ instrumentId: INSTRUMENT, clientOrderId: 'x' });
  const padded = JSON.stringify({ ...body, actorId: 'a'.repeat(3000) });
  await expectError(venue.order('/api/v1/orders/submit', padded), 413, 'PAYLOAD_TOO_LARGE');
  await assertNoTrace(body.commandId);
});

test('no token, an unknown token or another scheme is 401, before anything else is checked', async () => {
  const body = '{not even json';
  for (const authorization of [undefined, 'Bearer nope', 'Basic ZGV2OnRva2Vu', 'Bearer', `bearer${TOKENS.traderA}`]) {
    const headers: Record<string, string> = { 'x-client-id': 'c', 'idempotency-key': 'k' };
    if (authorization !== undefined) headers.authorization = authorization;
    await expectError(venue.request('POST', '/api/v1/orders/submit', { headers, body }), 401, 'UNAUTHENTICATED');
  }
  for (const path of ['/api/v1/venue/session', '/api/v1/openapi.json', `/api/v1/commands/${crypto.randomUUID()}`]) {
    await expectError(venue.get(path), 401, 'UNAUTHENTICATED');
    await expectError(venue.get(path, 'wrong-token'), 401, 'UNAUTHENTICATED');
  }
});

test('roles that may not use a route are 403: viewers and operators send no orders, viewers read no command status', async () => {
  for (const token of [TOKENS.viewer, TOKENS.operator]) {
    await expectError(venue.order('/api/v1/orders/submit', submitBody({ instrumentId: INSTRUMENT }), { token }), 403, 'FORBIDDEN');
  }
  await expectError(venue.get(`/api/v1/commands/${crypto.randomUUID()}`, TOKENS.viewer), 403, 'FORBIDDEN');
});

test('a participant or account the principal may not act for is 403 and leaves no trace', async () => {
  const cases = [
    submitBody({ instrumentId: INSTRUMENT, participantId: TRADER_B.participantId, accountId: TRADER_B.accountId }),
    submitBody({ instrumentId: INSTRUMENT, accountId: TRADER_B.accountId }),
    submitBody({ instrumentId: INSTRUMENT, accountId: crypto.randomUUID() }),
  ];
  for (const body of cases) {
    await expectError(venue.order('/api/v1/orders/submit', body), 403, 'FORBIDDEN');
    await assertNoTrace(body.commandId);
  }
  const cancel = cancelBody({ orderId: crypto.randomUUID(), instrumentId: INSTRUMENT, accountId: TRADER_B.accountId });
  await expectError(venue.order('/api/v1/orders/cancel', cancel), 403, 'FORBIDDEN');
});

test('validation comes before authorization: an invalid body for a foreign participant is 400', async () => {
  const body = { ...submitBody({ instrumentId: INSTRUMENT, participantId: TRADER_B.participantId }), side: 'UP' };
  await expectError(venue.order('/api/v1/orders/submit', body), 400, 'VALIDATION_FAILED');
});

test('unknown routes and /internal routes other than the projector status are 404; a wrong method on a served path is 405', async () => {
  await expectError(venue.get('/api/v1/nothing-here', TOKENS.traderA), 404, 'NOT_FOUND');
  for (const path of ['/internal/admin/settlement/facts', '/internal/admin/anything', '/internal']) {
    await expectError(venue.get(path, TOKENS.operator), 404, 'NOT_FOUND');
    await expectError(venue.request('POST', path, { token: TOKENS.operator, body: '{}' }), 404, 'NOT_FOUND');
  }
  // The one /internal route the specification names (the snapshot loop's status) is a GET.
  assert.equal((await venue.get('/internal/market-data/projector/status', TOKENS.operator)).status, 200);
  await expectError(venue.request('POST', '/internal/market-data/projector/status', { token: TOKENS.operator, body: '{}' }), 405, 'METHOD_NOT_ALLOWED');
  await expectError(venue.get('/api/v1/orders/submit', TOKENS.traderA), 405, 'METHOD_NOT_ALLOWED');
});

test('a trader sees only its own command status; an operator sees any', async () => {
  const body = submitBody({ instrumentId: INSTRUMENT, side: 'BUY', price: '1' });
  assert.equal((await venue.order('/api/v1/orders/submit', body)).status, 200);
  const path = `/api/v1/commands/${body.commandId as string}`;
  assert.equal((await venue.get(path, TOKENS.traderA)).status, 200);
  await expectError(venue.get(path, TOKENS.traderB), 404, 'NOT_FOUND');
  assert.equal((await venue.get(path, TOKENS.operator)).status, 200);
  await expectError(venue.get('/api/v1/commands/not-a-uuid', TOKENS.operator), 404, 'NOT_FOUND');
});

test('GET /api/v1/openapi.json serves the document built from the validation schemas, to any role', async () => {
  const { buildOpenApi } = await import('../../gateway/openapi.ts');
  for (const token of [TOKENS.viewer, TOKENS.traderA, TOKENS.operator]) {
    const answer = await venue.get('/api/v1/openapi.json', token);
    assert.equal(answer.status, 200);
    assert.deepEqual(answer.json, buildOpenApi());
  }
});
