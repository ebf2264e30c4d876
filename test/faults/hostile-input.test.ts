// Hostile input that a schema alone lets through (API contract, "Text that storage must
// hold"): text PostgreSQL cannot hold, text longer in bytes than in code points, JSON
// nested past any recursion, 5xx answers that would leak a driver's message, and
// bounded things one principal could fill for the others. Over real HTTP against a real
// venue and its embedded PostgreSQL.

import assert from 'node:assert/strict';
import http from 'node:http';
import { after, before, test } from 'node:test';
import { isUuid } from '../../core/uuid.ts';
import { withClient } from '../support/database.ts';
import { cancelByClientOrderBody, dataDirs, storageUrl, submitBody, TOKENS, VenueProcess, type HttpAnswer } from '../support/venue-process.ts';

const INSTRUMENT = 'c7000000-0000-4000-8000-000000000001';
const dataDir = dataDirs();
const dir = dataDir();
let venue: VenueProcess;

async function ready(): Promise<void> {
  for (let k = 0; (await venue.get('/readyz')).status !== 200; k++) {
    assert.ok(k < 600, 'the venue never became ready');
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

before(async () => {
  venue = await VenueProcess.start({ DATA_DIR: dir });
  await ready();
});

after(async () => {
  assert.equal(await venue.stop(), 0, 'the venue stops cleanly');
});

const submit = (clientOrderId: string, extra: Record<string, unknown> = {}) =>
  venue.order('/api/v1/orders/submit', { ...submitBody({ instrumentId: INSTRUMENT, price: '1', clientOrderId }), ...extra });

/** The field a 400 names. */
const fields = (answer: HttpAnswer) => ((answer.json?.details ?? []) as { field: string }[]).map((detail) => detail.field);

async function ownOrder(orderId: string): Promise<Record<string, any> | undefined> {
  const current = await venue.get(`/api/v1/orders/history?instrumentId=${INSTRUMENT}&limit=1000`, TOKENS.traderA);
  assert.equal(current.status, 200, current.text);
  return (current.json.rows as Record<string, any>[]).find((row) => row.orderId === orderId);
}

test('a clientOrderId with NUL, another C0 or C1 control or a lone surrogate is 400 naming clientOrderId; nothing is recorded', async () => {
  const before = (await venue.get('/admin/v1/persistence/status', TOKENS.operator)).json.journal.intakeRows;
  for (const value of ['a\u0000b', 'tab\there', 'esc\u001b', 'del\u007f', 'c1\u0085', 'c1\u009f', 'lone\ud800', '\udc00lone', 'swapped\ude00\ud83d']) {
    const answer = await submit(value);
    assert.equal(answer.status, 400, `${JSON.stringify(value)}: ${answer.text}`);
    assert.equal(answer.json.code, 'VALIDATION_FAILED');
    assert.deepEqual(fields(answer), ['clientOrderId'], answer.text);
    assert.match(answer.json.details[0].message, /control character|lone surrogate/);
    const byClient = await venue.order('/api/v1/orders/cancel-by-client-order', cancelByClientOrderBody(value));
    assert.equal(byClient.status, 400, byClient.text);
    assert.deepEqual(fields(byClient), ['clientOrderId']);
  }
  // actorId is identifier-like too; a reason is free text: its controls are kept, only NUL and lone surrogates are refused.
  const actor = await submit('fine', { actorId: 'bot\u0000' });
  assert.equal(actor.status, 400);
  assert.deepEqual(fields(actor), ['actorId']);
  const reasons = await Promise.all(['why\u0000', 'why\ud83d'].map((reason) => venue.order('/api/v1/orders/cancel-by-client-order', { ...cancelByClientOrderBody('x'), reason })));
  for (const answer of reasons) {
    assert.equal(answer.status, 400, answer.text);
    assert.deepEqual(fields(answer), ['reason']);
  }
  const kept = await venue.order('/api/v1/orders/cancel-by-client-order', { ...cancelByClientOrderBody('unknown-one'), reason: 'tab\tnewline\nbell\u0007 c1\u0085' });
  assert.equal(kept.status, 200, kept.text);
  assert.equal(kept.json.outcome.rejected.code, 'ORDER_NOT_FOUND');
  const after = (await venue.get('/admin/v1/persistence/status', TOKENS.operator)).json.journal.intakeRows;
  assert.equal(after - before, 1, 'only the valid cancel-by-client-order was captured');
});

test('a body that is not UTF-8 is 400, never decoded with U+FFFD in place of its bytes', async () => {
  const text = JSON.stringify(submitBody({ instrumentId: INSTRUMENT, clientOrderId: 'BYTES' }));
  const at = text.indexOf('BYTES');
  const body = Buffer.concat([Buffer.from(text.slice(0, at)), Buffer.from([0x61, 0xff, 0x62]), Buffer.from(text.slice(at + 5))]);
  const answer = await new Promise<{ status: number; text: string }>((resolve, reject) => {
    const request = http.request(
      `${venue.baseUrl}/api/v1/orders/submit`,
      {
        method: 'POST',
        headers: { authorization: `Bearer ${TOKENS.traderA}`, 'x-client-id': 'c', 'idempotency-key': crypto.randomUUID(), 'content-length': body.byteLength },
      },
      (response) => {
        let received = '';
        response.on('data', (chunk: Buffer) => (received += chunk.toString()));
        response.on('end', () => resolve({ status: response.statusCode ?? 0, text: received }));
      },
    );
    request.on('error', reject);
    request.end(body);
  });
  assert.equal(answer.status, 400, answer.text);
  assert.match(answer.text, /not valid UTF-8/);
});

test('a clientOrderId of 64 astral code points is kept whole: it reads back, collides and cancels as sent, before and after a restart and a kill -9', async () => {
  const clefs = '𝄞'.repeat(64); // 64 code points, 128 UTF-16 units, 256 bytes of UTF-8
  const mixed = `${'☃'.repeat(62)}😀x`; // three- and four-byte characters
  const sameStart = `${'𝄞'.repeat(16)}${'😀'.repeat(48)}`; // shares its first 64 bytes with clefs
  const placed: Record<string, string> = {};
  for (const clientOrderId of [clefs, mixed, sameStart]) {
    const answer = await submit(clientOrderId);
    assert.equal(answer.status, 200, answer.text);
    assert.ok(answer.json.outcome.accepted, answer.text);
    placed[clientOrderId] = answer.json.outcome.accepted.orderId;
  }
  assert.equal((await submit('𝄞'.repeat(65))).status, 400, '65 code points is over the bound');

  const check = async (when: string) => {
    for (const clientOrderId of [clefs, mixed, sameStart]) {
      const row = await ownOrder(placed[clientOrderId]!);
      assert.equal(row?.clientOrderId, clientOrderId, `${when}: the order reads back with its whole clientOrderId`);
      assert.equal(row?.state, 'OPEN', when);
      const duplicate = await submit(clientOrderId);
      assert.equal(duplicate.json.outcome.rejected?.code, 'DUPLICATE_CLIENT_ORDER_ID', `${when}: ${duplicate.text}`);
    }
  };
  await check('as placed');
  await venue.untilProjected();
  assert.equal(await venue.stop(), 0);
  venue = await VenueProcess.start({ DATA_DIR: dir });
  await ready();
  await check('after a restart');
  await venue.kill();
  venue = await VenueProcess.start({ DATA_DIR: dir });
  await ready();
  await check('after a kill -9');

  for (const clientOrderId of [clefs, mixed, sameStart]) {
    const cancel = await venue.order('/api/v1/orders/cancel-by-client-order', cancelByClientOrderBody(clientOrderId));
    assert.equal(cancel.status, 200, cancel.text);
    assert.equal(cancel.json.outcome.accepted?.orderId, placed[clientOrderId], `the cancel resolves its own order: ${cancel.text}`);
    assert.equal((await ownOrder(placed[clientOrderId]!))?.state, 'CANCELLED');
  }
  // Free again: the same clientOrderId places a new order.
  assert.ok((await submit(clefs)).json.outcome.accepted);
});

test('JSON nested deeper than 32 levels is 400 on every body route, the settlement bundle of 100,000 arrays included, and holds no read slot', async () => {
  const nested = (depth: number) => `${'['.repeat(depth)}${']'.repeat(depth)}`;
  const facts = (payload: string) =>
    `{"scenarioRunId":"run-local","facts":[{"factId":"${crypto.randomUUID()}","factType":"SettlementOperatorNote","occurredAt":"2026-01-02T03:04:05Z","payload":{"deep":${payload}}}]}`;
  const deep = await venue.request('POST', '/admin/v1/settlement/facts', { token: TOKENS.operator, body: facts(nested(100_000)) });
  assert.equal(deep.status, 400, deep.text);
  assert.match(deep.json.error, /deeper than 32 levels/);
  // 32 levels in all (the body, facts, the fact and its payload: 4, then 28 arrays) is the bound itself.
  const atBound = await venue.request('POST', '/admin/v1/settlement/facts', { token: TOKENS.operator, body: facts(nested(28)) });
  assert.equal(atBound.status, 200, atBound.text);
  const overBound = await venue.request('POST', '/admin/v1/settlement/facts', { token: TOKENS.operator, body: facts(nested(29)) });
  assert.equal(overBound.status, 400, overBound.text);
  const order = await venue.request('POST', '/api/v1/orders/submit', {
    token: TOKENS.traderA,
    headers: { 'x-client-id': 'c', 'idempotency-key': crypto.randomUUID() },
    body: `{"commandId":${nested(5000)}}`,
  });
  assert.equal(order.status, 400, order.text);
  assert.match(order.json.error, /deeper than 32 levels/);
  const roll = await venue.request('POST', '/admin/v1/venue/sessions', { token: TOKENS.operator, body: `{"runId":${nested(40)}}` });
  assert.equal(roll.status, 400, roll.text);
  // Nothing waits in the read thread: reads answer at once.
  const reads = await Promise.all(Array.from({ length: 20 }, () => venue.get('/api/v1/settlement/facts/run-local', TOKENS.operator)));
  for (const read of reads) assert.equal(read.status, 200, read.text);
});

test('settlement payload text is kept exactly, except NUL and lone surrogates (400 naming the field)', async () => {
  const kept = { controls: '\u0001\u001f\u007f\u0085\u009f', bidi: '\u202eevil\u202c', astral: '😀𝄞', zeroWidth: '\u200b\ufeff', noncharacter: '\uffff', nested: [{ 'key\u0007': 'v' }] };
  const factId = crypto.randomUUID();
  const body = { scenarioRunId: 'text-run', facts: [{ factId, factType: 'SettlementOperatorNote', occurredAt: '2026-01-02T03:04:05Z', payload: kept }] };
  const appended = await venue.request('POST', '/admin/v1/settlement/facts', { token: TOKENS.operator, body: JSON.stringify(body) });
  assert.equal(appended.status, 200, appended.text);
  const read = await venue.get('/api/v1/settlement/facts/text-run', TOKENS.operator);
  assert.deepEqual(read.json.facts.find((fact: { factId: string }) => fact.factId === factId).payload, kept);
  for (const [payload, field] of [
    [{ note: 'a\u0000b' }, 'facts.0.payload.note'],
    [{ list: ['ok', 'x\udfff'] }, 'facts.0.payload.list.1'],
    [{ 'k\u0000': 1 }, 'facts.0.payload (a key)'],
  ] as const) {
    const refused = await venue.request('POST', '/admin/v1/settlement/facts', {
      token: TOKENS.operator,
      body: JSON.stringify({ ...body, facts: [{ ...body.facts[0], factId: crypto.randomUUID(), payload }] }),
    });
    assert.equal(refused.status, 400, refused.text);
    assert.deepEqual(fields(refused), [field]);
  }
  const force = await venue.request('POST', '/admin/v1/settlement/force-settle', {
    token: TOKENS.operator,
    body: JSON.stringify({ scenarioRunId: 'text-run', obligationId: crypto.randomUUID(), reason: 'x\u0000' }),
  });
  assert.equal(force.status, 400);
  assert.deepEqual(fields(force), ['reason']);
});

test("a 5xx body gives a stable message and a request id; the driver's message goes to the log under that id", async () => {
  const url = await storageUrl(dir);
  // Storage answers the bars read with an error of its own: the table is renamed under the running venue.
  await withClient(url, (client) => client.query('ALTER TABLE runtime.trades RENAME TO trades_away'));
  let answer: HttpAnswer;
  try {
    answer = await venue.get(`/api/v1/market-data/bars/${INSTRUMENT}`, TOKENS.viewer);
  } finally {
    await withClient(url, (client) => client.query('ALTER TABLE runtime.trades_away RENAME TO trades'));
  }
  assert.equal(answer.status, 503, answer.text);
  assert.equal(answer.json.code, 'UNAVAILABLE');
  assert.deepEqual(Object.keys(answer.json).sort(), ['code', 'error', 'requestId']);
  assert.ok(isUuid(answer.json.requestId), answer.text);
  assert.doesNotMatch(answer.text, /relation|runtime\.trades|does not exist/, 'no driver message in the body');
  await venue.untilLogged(new RegExp(`"requestId":"${answer.json.requestId}"[^\\n]*does not exist`));
  assert.equal((await venue.get(`/api/v1/market-data/bars/${INSTRUMENT}`, TOKENS.viewer)).status, 200, 'storage answers again');
});

test('snapshot projection names are bounded per principal: the fifth new name is 409, others and the default are unaffected, across a restart', async () => {
  const refresh = (name: string, token: string) => venue.request('POST', `/api/v1/market-data/snapshots?projectionName=${name}`, { token });
  for (let k = 0; k < 4; k++) assert.equal((await refresh(`viewer-${k}`, TOKENS.viewer)).status, 200);
  const fifth = await refresh('viewer-4', TOKENS.viewer);
  assert.equal(fifth.status, 409, fifth.text);
  assert.equal(fifth.json.code, 'LIMIT_EXCEEDED');
  assert.equal((await refresh('viewer-0', TOKENS.viewer)).status, 200, 'a name it created refreshes');
  assert.equal((await refresh('market-data-top-of-book', TOKENS.viewer)).status, 200, "the default is the venue's");
  assert.equal((await refresh('trader-0', TOKENS.traderA)).status, 200, 'another principal still creates names');
  assert.equal((await refresh('viewer-3', TOKENS.traderA)).status, 200, 'a name another created refreshes');
  // Eight refreshes of new names at once: the bound holds under concurrency.
  const burst = await Promise.all(Array.from({ length: 8 }, (_, k) => refresh(`burst-${k}`, TOKENS.traderB)));
  assert.equal(burst.filter((answer) => answer.status === 200).length, 4);
  assert.equal(burst.filter((answer) => answer.status === 409).length, 4);
  await venue.untilProjected();
  assert.equal(await venue.stop(), 0);
  venue = await VenueProcess.start({ DATA_DIR: dir });
  await ready();
  assert.equal((await refresh('viewer-5', TOKENS.viewer)).status, 409, 'the names are counted from storage after a restart');
  assert.equal((await refresh('viewer-1', TOKENS.viewer)).status, 200);
});
