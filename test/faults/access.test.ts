// The access matrix (issue 8): every route the venue's own OpenAPI document lists, times
// every caller (no Authorization header, an unknown token, another scheme, other
// malformed credentials, trader, viewer, operator), answers exactly 401, 403 or its
// normal answer, with the contract's error body; a route without a row fails the test.
// Each request is well formed (real instrument with a stored snapshot, real commandId,
// real scenario run, real obligations with open breaks) so the status reflects
// authorization only, and every allowed call runs after the denials of the same request,
// so its normal answer also proves the denials changed nothing. Nothing under /internal
// answers but the snapshot loop's status (the specification names it), whatever the
// method, caller or spelling of the path (and a HEAD answer carries no body, which
// would desynchronize a kept-alive connection: it did, before). With traders A and B trading with each other
// (and each with itself): own orders, fills, history, command status, idempotency
// scopes and every settlement read show a trader only its own participants' rows, and
// the tape and the other market data never carry an order, participant or account id.

import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import http from 'node:http';
import net from 'node:net';
import { after, before, test } from 'node:test';
import { assertShape } from '../support/response-schemas.ts';
import { cancelBody, cancelByClientOrderBody, modifyBody, submitBody, TOKENS, TRADER_A, TRADER_B, VenueProcess } from '../support/venue-process.ts';

const RUN = 'access-run';
const SESSION = 'access-session';
const SIDE_RUN = 'access-side-run';
const A1 = { participantId: TRADER_A.participantId, accountId: TRADER_A.accountId };
const A2 = { participantId: TRADER_A.participantId, accountId: TRADER_A.otherAccountId };
const B = { participantId: TRADER_B.participantId, accountId: TRADER_B.accountId };
type Party = typeof A1;

const X = crypto.randomUUID(); // A and B cross both ways; the resting book the market-data rows read
const Y = crypto.randomUUID(); // B trades with itself: a security-leg break (B holds 1 of the 2 it sells)
const Z = crypto.randomUUID(); // A trades with itself (A2 buys from A1): a cash-leg break (A2 holds 1 nano)
const W = crypto.randomUUID(); // A buys from B; its clearing is rejected (materialized by the matrix, settled by force)

// ---- callers ----

const ROLES = ['none', 'wrongToken', 'otherScheme', 'trader', 'viewer', 'operator'] as const;
type Role = (typeof ROLES)[number];
type Principal = 'trader' | 'viewer' | 'operator';
const UNAUTHENTICATED: readonly Role[] = ['none', 'wrongToken', 'otherScheme'];

const AUTHORIZATION: Record<Role, string | undefined> = {
  none: undefined,
  wrongToken: 'Bearer dev-token-nobody',
  otherScheme: `Basic ${Buffer.from(`trader-a:${TOKENS.traderA}`).toString('base64')}`,
  trader: `Bearer ${TOKENS.traderA}`,
  viewer: `Bearer ${TOKENS.viewer}`,
  operator: `Bearer ${TOKENS.operator}`,
};
/** More ways to present (a variant of) the most powerful credential: every one is 401 on every route that needs a token. */
const MALFORMED: Record<string, string> = {
  'the stored SHA-256 of the operator token as the token': `Bearer ${createHash('sha256').update(TOKENS.operator).digest('hex')}`,
  'the operator token without a scheme': TOKENS.operator,
  'the operator token under the Token scheme': `Token ${TOKENS.operator}`,
  'the operator token with a suffix': `Bearer ${TOKENS.operator}x`,
  'the operator token in upper case': `Bearer ${TOKENS.operator.toUpperCase()}`,
  'Bearer and nothing': 'Bearer ',
  'Bearer glued to the operator token': `Bearer${TOKENS.operator}`,
};

// ---- HTTP: node:http with the path sent exactly as written (no URL normalization) ----

interface Answer {
  status: number;
  headers: http.IncomingHttpHeaders;
  text: string;
  json: any;
}

let venue: VenueProcess;
const agent = new http.Agent({ keepAlive: true, maxSockets: 8 });

function send(method: string, path: string, options: { authorization?: string; body?: string; headers?: Record<string, string> } = {}): Promise<Answer> {
  const url = new URL(venue.baseUrl);
  const headers: Record<string, string> = { ...(options.headers ?? {}) };
  if (options.authorization !== undefined) headers.authorization = options.authorization;
  if (options.body !== undefined) {
    headers['content-type'] ??= 'application/json';
    headers['content-length'] = String(Buffer.byteLength(options.body));
  }
  return new Promise((resolve, reject) => {
    const request = http.request(
      // Kept-alive connections: an answer with bytes it should not have (a body on HEAD) breaks the next answer on it.
      { host: url.hostname, port: url.port, method, path, headers, agent },
      (response) => {
        let text = '';
        response.setEncoding('utf8');
        response.on('data', (chunk: string) => (text += chunk));
        response.on('end', () => {
          let json: unknown;
          try {
            json = JSON.parse(text);
          } catch {
            json = undefined;
          }
          resolve({ status: response.statusCode ?? 0, headers: response.headers, text, json });
        });
      },
    );
    request.setTimeout(10_000, () => request.destroy(new Error(`${method} ${path}: no answer within 10 s`)));
    request.on('error', reject);
    request.end(options.body);
  });
}

const as = (role: Role | Principal) => AUTHORIZATION[role];
const get = (path: string, token: string) => send('GET', path, { authorization: `Bearer ${token}` });
const admin = (route: string, body: unknown) => send('POST', `/admin/v1/settlement/${route}`, { authorization: as('operator'), body: JSON.stringify(body) });

function assertError(answer: Answer, status: number, code: string, what: string): void {
  assert.equal(answer.status, status, `${what}: ${answer.status} ${answer.text}`);
  assert.match(String(answer.headers['content-type']), /^application\/json/, what);
  assertShape('Error', answer.json);
  assert.equal(answer.json.code, code, what);
  assert.ok(answer.json.error.length > 0, what);
}

// ---- what the setup made ----

interface Order {
  owner: 'A' | 'B';
  orderId: string;
  commandId: string;
  clientId: string;
  key: string;
  body: Record<string, unknown>;
}
const orders: Order[] = [];
const executions = new Map<string, string>(); // executionId -> orderId, from every answer
const trades: Record<string, string> = {}; // name -> tradeId
const seedFacts: Record<'A' | 'B', string> = { A: '', B: '' };
const targets = { cancel: '', modify: '', clientOrder: '' };
const ordersOf = (owner: 'A' | 'B') => orders.filter((o) => o.owner === owner);

async function submit(owner: 'A' | 'B', options: Parameters<typeof submitBody>[0]): Promise<{ order: Order; answer: Answer }> {
  const body = submitBody(options);
  const order: Order = { owner, orderId: body.orderId as string, commandId: body.commandId as string, clientId: `access-${owner}`, key: crypto.randomUUID(), body };
  const answer = await send('POST', '/api/v1/orders/submit', {
    authorization: `Bearer ${owner === 'A' ? TOKENS.traderA : TOKENS.traderB}`,
    headers: { 'x-client-id': order.clientId, 'idempotency-key': order.key, 'x-processing-mode': 'sync-result' },
    body: JSON.stringify(body),
  });
  assert.equal(answer.status, 200, answer.text);
  assert.equal(answer.json.outcome.accepted?.orderId, order.orderId, answer.text);
  orders.push(order);
  for (const execution of answer.json.executions) executions.set(execution.executionId, execution.orderId);
  return { order, answer };
}

/** The seller rests, the buyer crosses: one trade. */
async function trade(name: string, spec: { instrumentId: string; seller: Party; buyer: Party; quantity: string; price: string }): Promise<void> {
  const owner = (party: Party) => (party.participantId === B.participantId ? 'B' : 'A');
  const sell = await submit(owner(spec.seller), { instrumentId: spec.instrumentId, side: 'SELL', quantity: spec.quantity, price: spec.price, ...spec.seller });
  assert.deepEqual(sell.answer.json.trades, []);
  const buy = await submit(owner(spec.buyer), { instrumentId: spec.instrumentId, side: 'BUY', quantity: spec.quantity, price: spec.price, ...spec.buyer });
  assert.equal(buy.answer.json.trades.length, 1, buy.answer.text);
  trades[name] = buy.answer.json.trades[0].tradeId;
}

const seed = (party: Party, assetType: 'CASH' | 'SECURITY', asset: string, amount: string) => ({
  factId: crypto.randomUUID(),
  factType: 'SettlementResourcePositionSeeded',
  occurredAt: new Date().toISOString(),
  payload: { ...party, assetType, asset, amount },
});

async function operatorView(view: string, run = RUN): Promise<any> {
  const answer = await get(`/api/v1/settlement/${view}/${run}`, TOKENS.operator);
  assert.equal(answer.status, 200, answer.text);
  return answer.json;
}
async function obligationOf(tradeName: string): Promise<any> {
  const found = (await operatorView('obligations')).obligations.find((o: any) => o.tradeId === trades[tradeName]);
  assert.ok(found, `an obligation for ${tradeName}`);
  return found;
}

before(async () => {
  venue = await VenueProcess.start({ VENUE_RUN_ID: RUN, VENUE_SESSION_ID: SESSION, COMPETITION_PROFILE: 'access-cup' });
  // The instant profile for the run; A2 holds 1 nano of cash, B holds 1 unit of Y.
  assert.equal((await admin('profiles', { scope: 'scenarioRun', scopeId: RUN, profile: 'instant-post-trade-v1' })).status, 200);
  const seeds = { A: seed(A2, 'CASH', 'USD', '1'), B: seed(B, 'SECURITY', Y, '1') };
  assert.equal((await admin('facts', { scenarioRunId: RUN, facts: [seeds.A, seeds.B] })).status, 200);
  seedFacts.A = seeds.A.factId;
  seedFacts.B = seeds.B.factId;

  await trade('AbuysFromB', { instrumentId: X, seller: B, buyer: A1, quantity: '5', price: '10' });
  await trade('BbuysFromA', { instrumentId: X, seller: A1, buyer: B, quantity: '3', price: '11' });
  await trade('Ainternal', { instrumentId: Z, seller: A1, buyer: A2, quantity: '1', price: '1' });
  await trade('Binternal', { instrumentId: Y, seller: B, buyer: B, quantity: '2', price: '7' });
  // The resting book of X, and the targets of the matrix's cancel, modify and cancel-by-client-order.
  await submit('A', { instrumentId: X, side: 'BUY', price: '9', quantity: '2' });
  await submit('B', { instrumentId: X, side: 'SELL', price: '12', quantity: '4', ...B });
  targets.cancel = (await submit('A', { instrumentId: X, side: 'BUY', price: '1', quantity: '1' })).order.orderId;
  targets.modify = (await submit('A', { instrumentId: X, side: 'BUY', price: '1', quantity: '1' })).order.orderId;
  targets.clientOrder = (await submit('A', { instrumentId: X, side: 'BUY', price: '1', quantity: '1', clientOrderId: 'access-client-order' })).order.orderId;

  const materialized = await admin('obligations/materialize', { scenarioRunId: RUN });
  assert.deepEqual([materialized.status, materialized.json.obligations], [200, 4], materialized.text);
  assert.deepEqual(
    [(await obligationOf('AbuysFromB')).state, (await obligationOf('BbuysFromA')).state, (await obligationOf('Ainternal')).state, (await obligationOf('Binternal')).state],
    ['SETTLED', 'SETTLED', 'BROKEN', 'BROKEN'],
  );
  // A trade whose clearing will be rejected; the matrix's materialize row materializes it.
  await trade('clearingRejected', { instrumentId: W, seller: B, buyer: A1, quantity: '2', price: '50' });
  const injection = { factId: crypto.randomUUID(), factType: 'SettlementFailureInjected', occurredAt: new Date().toISOString(), payload: { tradeId: trades.clearingRejected, step: 'CLEARING' } };
  assert.equal((await admin('facts', { scenarioRunId: RUN, facts: [injection] })).status, 200);
  // A stored snapshot for X, so its read answers 200.
  const refreshed = await send('POST', `/api/v1/market-data/snapshots?instrumentId=${X}`, { authorization: as('viewer') });
  assert.equal(refreshed.status, 200, refreshed.text);
});

after(async () => {
  console.log(`access matrix: ${figures.routes} routes x ${ROLES.length} callers = ${figures.cells} cells; ${figures.denials} denials; ${figures.internalProbes} /internal probes`);
  agent.destroy();
  assert.equal(await venue.stop(), 0);
});

// ---- the matrix ----

interface Call {
  method: string;
  path: string;
  body?: string;
  headers?: Record<string, string>;
}

interface Row {
  /** `METHOD /template` exactly as the OpenAPI document spells it. */
  route: string;
  /** Who gets the normal answer; 'anyone' = no credentials needed at all. */
  allowed: readonly Principal[] | 'anyone';
  /** One request, the same for every caller. */
  call: () => Promise<Call> | Call;
  /** Checks of an allowed answer beyond its status and published schema. */
  check?: (answer: Answer) => Promise<void> | void;
  /** Runs after the denials and before the allowed calls: proves the denials left nothing. */
  afterDenials?: () => Promise<void>;
  /** The normal answer when it is not 200 (the stream's plain GET, without the upgrade, is a 400). */
  normal?: number;
}

const ANY: readonly Principal[] = ['trader', 'viewer', 'operator'];
const TRADER: readonly Principal[] = ['trader'];
const OPERATOR: readonly Principal[] = ['operator'];
const TRADER_OR_OPERATOR: readonly Principal[] = ['trader', 'operator'];

function orderCall(path: string, body: Record<string, unknown>): Call {
  return {
    method: 'POST',
    path,
    body: JSON.stringify(body),
    headers: { 'x-client-id': 'access-matrix', 'idempotency-key': `matrix-${body.commandId as string}`, 'x-processing-mode': 'sync-result' },
  };
}

/** A refused order command left no command status (the allowed call after it shows it left no order either). */
function noTrace(body: Record<string, unknown>): () => Promise<void> {
  return async () => {
    assertError(await get(`/api/v1/commands/${body.commandId as string}`, TOKENS.operator), 404, 'NOT_FOUND', 'a refused command has no status');
  };
}

function buildRows(openApi: any): Row[] {
  const target = { runId: RUN, venueSessionId: SESSION, instrumentId: X };
  const submitted = submitBody({ instrumentId: X, side: 'BUY', price: '2', quantity: '1' });
  const cancel = cancelBody({ ...target, orderId: targets.cancel });
  const modify = modifyBody({ ...target, orderId: targets.modify, price: '3', quantity: '2' });
  const byClientOrder = cancelByClientOrderBody('access-client-order');
  const ownCommand = ordersOf('A')[0]!.commandId;
  const note = { factId: crypto.randomUUID(), factType: 'SettlementNoteRecorded', occurredAt: new Date().toISOString(), payload: { note: 'access matrix' } };
  const state = { factsBefore: 0 };
  const settlementRead = (view: string, query = ''): Row => ({
    route: `GET /api/v1/settlement/${view}/{scenarioRunId}`,
    allowed: view === 'leaderboard' ? ANY : TRADER_OR_OPERATOR,
    call: () => ({ method: 'GET', path: `/api/v1/settlement/${view}/${RUN}${query}` }),
    check: (answer) => assert.equal(answer.json.scenarioRunId, RUN),
  });
  const accepted = (orderId: string) => (answer: Answer) => assert.equal(answer.json.outcome.accepted?.orderId, orderId, `the denials did not act first: ${answer.text}`);

  return [
    {
      route: 'POST /api/v1/orders/submit',
      allowed: TRADER,
      call: () => orderCall('/api/v1/orders/submit', submitted),
      afterDenials: noTrace(submitted),
      check: (answer) => {
        accepted(submitted.orderId as string)(answer);
        orders.push({ owner: 'A', orderId: submitted.orderId as string, commandId: submitted.commandId as string, clientId: 'access-matrix', key: '', body: submitted });
      },
    },
    { route: 'POST /api/v1/orders/cancel', allowed: TRADER, call: () => orderCall('/api/v1/orders/cancel', cancel), afterDenials: noTrace(cancel), check: accepted(targets.cancel) },
    { route: 'POST /api/v1/orders/modify', allowed: TRADER, call: () => orderCall('/api/v1/orders/modify', modify), afterDenials: noTrace(modify), check: accepted(targets.modify) },
    {
      route: 'POST /api/v1/orders/cancel-by-client-order',
      allowed: TRADER,
      call: () => orderCall('/api/v1/orders/cancel-by-client-order', byClientOrder),
      afterDenials: noTrace(byClientOrder),
      check: accepted(targets.clientOrder),
    },
    {
      route: 'GET /api/v1/commands/{commandId}',
      allowed: TRADER_OR_OPERATOR,
      call: () => ({ method: 'GET', path: `/api/v1/commands/${ownCommand}` }),
      check: (answer) => assert.deepEqual([answer.json.commandId, answer.json.status], [ownCommand, 'COMPLETED']),
    },
    {
      route: 'GET /api/v1/venue/session',
      allowed: ANY,
      call: () => ({ method: 'GET', path: '/api/v1/venue/session' }),
      check: (answer) => assert.deepEqual([answer.json.runId, answer.json.venueSessionId], [RUN, SESSION]),
    },
    {
      route: 'GET /api/v1/market-data/stream',
      allowed: ANY,
      normal: 400, // the upgrade itself: test/e2e/market-data-stream.test.ts
      call: () => ({ method: 'GET', path: '/api/v1/market-data/stream' }),
      check: (answer) => assert.equal(answer.json.code, 'VALIDATION_FAILED'),
    },
    { route: 'GET /api/v1/openapi.json', allowed: ANY, call: () => ({ method: 'GET', path: '/api/v1/openapi.json' }), check: (answer) => assert.deepEqual(answer.json, openApi) },
    {
      route: 'GET /api/v1/market-data/snapshots/{instrumentId}',
      allowed: ANY,
      call: () => ({ method: 'GET', path: `/api/v1/market-data/snapshots/${X}` }),
      check: (answer) => assert.deepEqual([answer.json.instrumentId, answer.json.bestAsk?.price.nanos], [X, '12000000000']),
    },
    {
      route: 'POST /api/v1/market-data/snapshots',
      allowed: ANY,
      call: () => ({ method: 'POST', path: `/api/v1/market-data/snapshots?instrumentId=${X}` }),
      check: (answer) => assert.equal(answer.json.instrumentsRefreshed, 1),
    },
    {
      route: 'GET /api/v1/market-data/depth/{instrumentId}',
      allowed: ANY,
      call: () => ({ method: 'GET', path: `/api/v1/market-data/depth/${X}` }),
      check: (answer) => assert.equal(answer.json.asks[0]?.price.nanos, '12000000000'),
    },
    {
      route: 'GET /api/v1/market-data/trades/{instrumentId}',
      allowed: ANY,
      call: () => ({ method: 'GET', path: `/api/v1/market-data/trades/${X}` }),
      check: (answer) => assert.deepEqual(answer.json.rows.map((r: any) => r.tradeId).sort(), [trades.AbuysFromB, trades.BbuysFromA].sort()),
    },
    {
      route: 'GET /api/v1/market-data/bars/{instrumentId}',
      allowed: ANY,
      call: () => ({ method: 'GET', path: `/api/v1/market-data/bars/${X}?interval=1h` }),
      check: (answer) =>
        assert.equal(
          answer.json.bars.reduce((n: number, bar: any) => n + bar.tradeCount, 0),
          2,
        ),
    },
    { route: 'GET /api/v1/orders/current', allowed: TRADER, call: () => ({ method: 'GET', path: '/api/v1/orders/current' }), check: (answer) => assert.ok(answer.json.rows.length > 0) },
    { route: 'GET /api/v1/orders/history', allowed: TRADER, call: () => ({ method: 'GET', path: '/api/v1/orders/history' }), check: (answer) => assert.ok(answer.json.rows.length > 0) },
    { route: 'GET /api/v1/orders/fills', allowed: TRADER, call: () => ({ method: 'GET', path: '/api/v1/orders/fills' }), check: (answer) => assert.ok(answer.json.rows.length > 0) },
    { route: 'GET /api/v1/data/availability', allowed: ANY, call: () => ({ method: 'GET', path: '/api/v1/data/availability' }), check: (answer) => assert.ok(answer.json.reads.length > 0) },
    {
      // The specification names this route (the snapshot loop's status); it is a market-data read.
      route: 'GET /internal/market-data/projector/status',
      allowed: ANY,
      call: () => ({ method: 'GET', path: '/internal/market-data/projector/status' }),
      check: (answer) => assert.equal(answer.json.enabled, false),
    },
    {
      route: 'POST /admin/v1/projections/order-lifecycle/rebuild',
      allowed: OPERATOR,
      call: () => ({ method: 'POST', path: '/admin/v1/projections/order-lifecycle/rebuild' }),
      check: (answer) => assert.ok(answer.json.rowsRebuilt >= orders.length, answer.text),
    },
    { route: 'GET /admin/v1/persistence/status', allowed: OPERATOR, call: () => ({ method: 'GET', path: '/admin/v1/persistence/status' }) },
    {
      route: 'GET /admin/v1/audit/commands/{commandId}',
      allowed: OPERATOR,
      call: () => ({ method: 'GET', path: `/admin/v1/audit/commands/${ownCommand}` }),
      check: (answer) => assert.deepEqual([answer.json.commandId, answer.json.body.commandId], [ownCommand, ownCommand]),
    },
    {
      // Naming the open session: the retry of the roll that opened it (changes nothing, so the matrix's other rows keep their session).
      route: 'POST /admin/v1/venue/sessions',
      allowed: OPERATOR,
      call: () => ({ method: 'POST', path: '/admin/v1/venue/sessions', body: JSON.stringify({ runId: RUN, venueSessionId: SESSION }) }),
      afterDenials: async () => assert.deepEqual([(await get('/api/v1/venue/session', TOKENS.viewer)).json.venueSessionId], [SESSION], 'no denied call rolled the session'),
      check: (answer) => assert.deepEqual([answer.json.runId, answer.json.venueSessionId, answer.json.previous, answer.json.expiredOrders], [RUN, SESSION, null, 0]),
    },
    {
      route: 'POST /admin/v1/settlement/facts',
      allowed: OPERATOR,
      call: () => ({ method: 'POST', path: '/admin/v1/settlement/facts', body: JSON.stringify({ scenarioRunId: SIDE_RUN, facts: [note] }) }),
      check: (answer) => assert.deepEqual(answer.json, { appended: 1, duplicates: 0 }, 'no denied call stored the fact first'),
    },
    {
      route: 'POST /admin/v1/settlement/obligations/materialize',
      allowed: OPERATOR,
      call: () => ({ method: 'POST', path: '/admin/v1/settlement/obligations/materialize', body: JSON.stringify({ scenarioRunId: RUN }) }),
      afterDenials: async () => {
        state.factsBefore = (await operatorView('facts')).facts.length;
      },
      check: async (answer) => {
        assert.equal(answer.json.obligations, 5, 'no denied call materialized the fifth trade first');
        assert.ok(answer.json.factsAppended > 0);
        assert.equal((await operatorView('facts')).facts.length, state.factsBefore + answer.json.factsAppended);
        assert.equal((await obligationOf('clearingRejected')).state, 'CLEARING_REJECTED');
      },
    },
    {
      route: 'POST /admin/v1/settlement/repairs/cash',
      allowed: OPERATOR,
      call: async () => ({
        method: 'POST',
        path: '/admin/v1/settlement/repairs/cash',
        body: JSON.stringify({ scenarioRunId: RUN, obligationId: (await obligationOf('Ainternal')).obligationId, amountNanos: '999999999', currency: 'USD' }),
      }),
      check: (answer) => assert.equal(answer.json.state, 'RESOLVED'),
    },
    {
      route: 'POST /admin/v1/settlement/repairs/security',
      allowed: OPERATOR,
      call: async () => ({
        method: 'POST',
        path: '/admin/v1/settlement/repairs/security',
        body: JSON.stringify({ scenarioRunId: RUN, obligationId: (await obligationOf('Binternal')).obligationId, quantityUnits: '1' }),
      }),
      check: (answer) => assert.equal(answer.json.state, 'RESOLVED'),
    },
    {
      route: 'POST /admin/v1/settlement/force-settle',
      allowed: OPERATOR,
      call: async () => ({
        method: 'POST',
        path: '/admin/v1/settlement/force-settle',
        body: JSON.stringify({ scenarioRunId: RUN, obligationId: (await obligationOf('clearingRejected')).obligationId, reason: 'access matrix' }),
      }),
      check: (answer) => assert.equal(answer.json.state, 'RESOLVED'),
    },
    {
      route: 'POST /admin/v1/settlement/reverse-ledger-entry',
      allowed: OPERATOR,
      call: async () => {
        const obligationId = (await obligationOf('AbuysFromB')).obligationId;
        const entry = (await operatorView('ledger')).entries.find((e: any) => e.obligationId === obligationId);
        return { method: 'POST', path: '/admin/v1/settlement/reverse-ledger-entry', body: JSON.stringify({ scenarioRunId: RUN, ledgerEntryId: entry.ledgerEntryId, reason: 'access matrix' }) };
      },
    },
    {
      route: 'POST /admin/v1/settlement/profiles',
      allowed: OPERATOR,
      call: () => ({ method: 'POST', path: '/admin/v1/settlement/profiles', body: JSON.stringify({ scope: 'scenarioRun', scopeId: SIDE_RUN, profile: 'ops-realistic-v1' }) }),
      check: (answer) => assert.deepEqual([answer.json.scope, answer.json.profile], ['scenarioRun', 'ops-realistic-v1']),
    },
    settlementRead('facts'),
    settlementRead('obligations'),
    settlementRead('ledger'),
    settlementRead('exceptions'),
    settlementRead('proof'),
    settlementRead('score'),
    settlementRead('leaderboard', `?asOf=${encodeURIComponent(new Date().toISOString())}`),
    { route: 'GET /healthz', allowed: 'anyone', call: () => ({ method: 'GET', path: '/healthz' }), check: (answer) => assert.deepEqual(answer.json, { status: 'ok' }) },
    { route: 'GET /readyz', allowed: 'anyone', call: () => ({ method: 'GET', path: '/readyz' }), check: (answer) => assert.deepEqual(answer.json, { status: 'ready' }) },
    {
      route: 'GET /metrics',
      allowed: ['viewer', 'operator'],
      call: () => ({ method: 'GET', path: '/metrics' }),
      check: (answer) => assert.match(answer.text, /^venue_commands_total\{route="submit",outcome="accepted"\} [1-9]\d*$/m),
    },
  ];
}

/** The expected status of a caller on a row: the normal answer (200, for a well-formed request), 401 or 403. */
function expected(row: Row, role: Role): number {
  if (row.allowed === 'anyone') return row.normal ?? 200;
  if ((UNAUTHENTICATED as readonly string[]).includes(role)) return 401;
  return row.allowed.includes(role as Principal) ? (row.normal ?? 200) : 403;
}

const figures = { routes: 0, cells: 0, denials: 0, internalProbes: 0 };

test('the matrix: every route of the served OpenAPI document, for every caller, answers exactly 401, 403 or its normal answer', async () => {
  const document = await send('GET', '/api/v1/openapi.json', { authorization: as('operator') });
  assert.equal(document.status, 200);
  const openApi = document.json;
  const served = Object.entries(openApi.paths as Record<string, Record<string, any>>).flatMap(([path, operations]) => Object.keys(operations).map((method) => `${method.toUpperCase()} ${path}`));
  const rows = buildRows(openApi);
  assert.deepEqual(rows.map((row) => row.route).sort(), [...served].sort(), 'one matrix row per route of the OpenAPI document, no more, no less');
  assert.equal(new Set(rows.map((row) => row.route)).size, rows.length);

  for (const row of rows) {
    const [method, template] = row.route.split(' ') as [string, string];
    const documented = openApi.paths[template][method.toLowerCase()];
    const call = await row.call();
    assert.equal(call.method, method, row.route);
    const request = (authorization: string | undefined) => send(call.method, call.path, { authorization, body: call.body, headers: call.headers });
    // Denials first, so that the allowed calls afterwards show they changed nothing.
    const order = [...ROLES].sort((a, b) => Number(expected(row, a) < 400) - Number(expected(row, b) < 400));
    for (const [what, authorization] of row.allowed === 'anyone' ? [] : Object.entries(MALFORMED)) {
      assertError(await request(authorization), 401, 'UNAUTHENTICATED', `${row.route} with ${what}`);
      figures.denials++;
    }
    let afterDenialsRan = false;
    for (const role of order) {
      const status = expected(row, role);
      if (status < 400 && !afterDenialsRan) {
        afterDenialsRan = true;
        await row.afterDenials?.();
      }
      const answer = await request(AUTHORIZATION[role]);
      const what = `${row.route} as ${role}`;
      assert.ok(documented.responses[String(status)], `${what}: the document lists ${status}`);
      figures.cells++;
      if (status === 401) assertError(answer, 401, 'UNAUTHENTICATED', what);
      else if (status === 403) assertError(answer, 403, 'FORBIDDEN', what);
      else {
        assert.equal(answer.status, status, `${what}: ${answer.text}`);
        const schema = documented.responses[String(status)].content?.['application/json']?.schema?.$ref?.split('/').pop();
        if (schema !== undefined) assertShape(schema as Parameters<typeof assertShape>[0], answer.json);
        await row.check?.(answer);
      }
      if (status >= 400) figures.denials++;
    }
  }
  figures.routes = rows.length;
});

test('nothing under /internal answers but GET of the snapshot loop status: 404 for every other path, every method, every caller, however the path is spelled', async () => {
  const served = Object.keys((await send('GET', '/api/v1/openapi.json', { authorization: as('viewer') })).json.paths as Record<string, unknown>);
  const concrete = (path: string) => path.replace('{instrumentId}', X).replace('{scenarioRunId}', RUN).replace('{commandId}', ordersOf('A')[0]!.commandId);
  const mirrors = served
    .filter((path) => !path.startsWith('/internal/'))
    .flatMap((path) => {
      const real = concrete(path);
      return real.startsWith('/admin/v1/') ? [`/internal${real}`, `/internal/admin/${real.slice('/admin/v1/'.length)}`] : [`/internal${real}`];
    });
  const paths = [
    '/internal',
    '/internal/',
    '/internal/admin',
    '/internal/admin/',
    '/internal/admin/venue/sessions',
    '/internal/admin/settlement/facts?scenarioRunId=x',
    '/internal/market-data',
    '/internal/market-data/projector',
    '/internal/market-data/projector/status/extra',
    '/internal/market-data/projector/rebuild',
    ...mirrors,
  ];
  // Spellings a normalizing proxy or router might map onto /internal or /admin: this listener never does.
  const spellings = [
    '/api/v1/../internal/admin/settlement/facts',
    '/api/v1/%2e%2e/internal/admin/settlement/facts',
    '/internal/./admin/settlement/facts',
    '//internal/admin/settlement/facts',
    '/%69nternal/admin/settlement/facts',
    '/INTERNAL/admin/settlement/facts',
    '/Internal/market-data/projector/status',
    '/internal%2Fadmin%2Fsettlement%2Ffacts',
    '/internal/admin/../../admin/v1/persistence/status',
    '/internal/market-data/projector/status/../../../../admin/v1/persistence/status',
  ];
  const methods = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS', 'HEAD'];
  const probes: Array<{ method: string; path: string; role: Role }> = [];
  for (const path of [...paths, ...spellings]) for (const method of methods) for (const role of ROLES) probes.push({ method, path, role });
  // The snapshot loop's own path answers no other method: 405, as every documented path.
  const projector = '/internal/market-data/projector/status';
  for (const method of methods.filter((m) => m !== 'GET')) for (const role of ROLES) probes.push({ method, path: projector, role });

  // A well-formed fact bundle, had any /internal/admin handler taken it.
  const probeFact = { factId: crypto.randomUUID(), factType: 'SettlementNoteRecorded', occurredAt: new Date().toISOString(), payload: { note: 'internal probe' } };
  const body = JSON.stringify({ scenarioRunId: SIDE_RUN, facts: [probeFact] });
  const sideFacts = (await operatorView('facts', SIDE_RUN)).facts;
  let next = 0;
  const worker = async () => {
    for (let k = next++; k < probes.length; k = next++) {
      const { method, path, role } = probes[k]!;
      const answer = await send(method, path, { authorization: AUTHORIZATION[role], body: method === 'GET' || method === 'HEAD' ? undefined : body });
      const what = `${method} ${path} as ${role}`;
      const [status, code] = path === projector ? [405, 'METHOD_NOT_ALLOWED'] : [404, 'NOT_FOUND'];
      if (method === 'HEAD') assert.equal(answer.status, status, what);
      else assertError(answer, status, code, what);
    }
  };
  await Promise.all(Array.from({ length: 8 }, worker));
  figures.internalProbes = probes.length;
  assert.deepEqual((await operatorView('facts', SIDE_RUN)).facts, sideFacts, 'no probe stored anything');
  // A HEAD answer is a status line and headers only: pipelined behind it, the next request gets its own answer.
  const pipelined = await new Promise<string>((resolve, reject) => {
    const socket = net.connect(Number(new URL(venue.baseUrl).port), '127.0.0.1', () =>
      socket.end(`HEAD /internal/admin/settlement/facts HTTP/1.1\r\nHost: venue\r\nAuthorization: ${AUTHORIZATION.operator}\r\n\r\nGET /healthz HTTP/1.1\r\nHost: venue\r\nConnection: close\r\n\r\n`),
    );
    let text = '';
    socket.setEncoding('latin1');
    socket.on('data', (chunk: string) => (text += chunk));
    socket.on('end', () => resolve(text));
    socket.on('error', reject);
    socket.setTimeout(5_000, () => socket.destroy(new Error(`no close within 5 s: ${JSON.stringify(text)}`)));
  });
  const [head, rest] = [pipelined.slice(0, pipelined.indexOf('\r\n\r\n') + 4), pipelined.slice(pipelined.indexOf('\r\n\r\n') + 4)];
  assert.match(head, /^HTTP\/1\.1 404 /, pipelined);
  assert.match(rest, /^HTTP\/1\.1 200 OK\r\n[\s\S]*\r\n\r\n\{"status":"ok"\}$/, `the answer after HEAD: ${JSON.stringify(pipelined)}`);
});

// ---- data isolation ----

const IDS = {
  A: () => [A1.participantId, A1.accountId, A2.accountId],
  B: () => [B.participantId, B.accountId],
};
const orderIdsOf = (owner: 'A' | 'B') => ordersOf(owner).map((o) => o.orderId);
const other = (owner: 'A' | 'B') => (owner === 'A' ? 'B' : 'A');
const tokenFor = (owner: 'A' | 'B') => (owner === 'A' ? TOKENS.traderA : TOKENS.traderB);

function assertAbsent(text: string, ids: string[], what: string): void {
  for (const id of ids) assert.ok(!text.toLowerCase().includes(id.toLowerCase()), `${what} shows ${id}`);
}

test("own orders, fills and history: each trader sees exactly its own orders and executions, nothing of the other's", async () => {
  for (const owner of ['A', 'B'] as const) {
    const token = tokenFor(owner);
    const mine = new Set(orderIdsOf(owner));
    const myParticipant = owner === 'A' ? A1.participantId : B.participantId;
    const myAccounts = owner === 'A' ? [A1.accountId, A2.accountId] : [B.accountId];
    const read = async (view: string) => {
      const answer = await get(`/api/v1/orders/${view}?limit=1000`, token);
      assert.equal(answer.status, 200, answer.text);
      return answer;
    };
    const [current, history, fills] = [await read('current'), await read('history'), await read('fills')];
    assert.deepEqual(new Set(history.json.rows.map((r: any) => r.orderId)), mine, `${owner}: history is exactly its orders`);
    for (const row of [...history.json.rows, ...current.json.rows]) {
      assert.equal(row.participantId, myParticipant);
      assert.ok(myAccounts.includes(row.accountId), row.accountId);
    }
    const open = history.json.rows.filter((r: any) => r.state === 'OPEN' || r.state === 'PARTIALLY_FILLED').map((r: any) => r.orderId);
    assert.deepEqual(current.json.rows.map((r: any) => r.orderId).sort(), open.sort(), `${owner}: current is its open orders`);
    const myExecutions = [...executions].filter(([, orderId]) => mine.has(orderId)).map(([executionId]) => executionId);
    assert.deepEqual(fills.json.rows.map((r: any) => r.executionId).sort(), myExecutions.sort(), `${owner}: fills are exactly its executions`);
    assert.ok(fills.json.rows.every((r: any) => mine.has(r.orderId)));
    const theirs = other(owner);
    for (const answer of [current, history, fills]) assertAbsent(answer.text, [...IDS[theirs](), ...orderIdsOf(theirs)], `${owner}'s own-order read`);
  }
});

test("command status: another trader's command is 404 (as if it did not exist); the operator sees any; a trader's own status names no other participant", async () => {
  const aCommand = ordersOf('A').find((o) => o.body.instrumentId === X)!;
  const bCommand = ordersOf('B').find((o) => o.body.instrumentId === X)!;
  for (const [command, owner] of [
    [aCommand, 'A'],
    [bCommand, 'B'],
  ] as const) {
    const path = `/api/v1/commands/${command.commandId}`;
    assertError(await get(path, tokenFor(other(owner))), 404, 'NOT_FOUND', `${other(owner)} reading ${owner}'s command`);
    const own = await get(path, tokenFor(owner));
    const operator = await get(path, TOKENS.operator);
    assert.equal(own.status, 200, own.text);
    assert.equal(operator.status, 200);
    assert.equal(operator.text, own.text, 'the same view for the owner and the operator');
    assertAbsent(own.text, IDS[other(owner)](), `${owner}'s command status`);
  }
  // Every command of each trader is hidden from the other.
  for (const owner of ['A', 'B'] as const) {
    for (const order of ordersOf(owner)) assert.equal((await get(`/api/v1/commands/${order.commandId}`, tokenFor(other(owner)))).status, 404, order.commandId);
  }
});

test("idempotency scopes are per principal: B reusing A's X-Client-Id and Idempotency-Key never gets A's answer", async () => {
  const a = ordersOf('A').find((o) => o.key !== '')!;
  const headers = { 'x-client-id': a.clientId, 'idempotency-key': a.key, 'x-processing-mode': 'sync-result' };
  // A's very body under B's token: refused for the participant, not replayed.
  assertError(await send('POST', '/api/v1/orders/submit', { authorization: `Bearer ${TOKENS.traderB}`, headers, body: JSON.stringify(a.body) }), 403, 'FORBIDDEN', "B replaying A's request");
  // B's own body under A's key: B's own new order.
  const body = submitBody({ instrumentId: X, side: 'BUY', price: '1', quantity: '1', ...B });
  const answer = await send('POST', '/api/v1/orders/submit', { authorization: `Bearer ${TOKENS.traderB}`, headers, body: JSON.stringify(body) });
  assert.equal(answer.status, 200, answer.text);
  assert.equal(answer.json.outcome.accepted?.orderId, body.orderId, 'a new order of B, not a replay of A');
  orders.push({ owner: 'B', orderId: body.orderId as string, commandId: body.commandId as string, clientId: a.clientId, key: a.key, body });
  assertAbsent(answer.text, [...IDS.A(), a.orderId], "B's answer");
});

test('the tape carries exactly { tradeId, price, quantity, currency, occurredAt, sequence } and, like every market-data read, no order, participant or account id', async () => {
  const everyId = [...IDS.A(), ...IDS.B(), ...orders.map((o) => o.orderId)];
  let rows = 0;
  for (const instrumentId of [X, Y, Z, W]) {
    const tape = await get(`/api/v1/market-data/trades/${instrumentId}?limit=500`, TOKENS.viewer);
    assert.equal(tape.status, 200, tape.text);
    assert.ok(tape.json.rows.length >= 1, instrumentId);
    for (const row of tape.json.rows) assert.deepEqual(Object.keys(row).sort(), ['currency', 'occurredAt', 'price', 'quantity', 'sequence', 'tradeId']);
    rows += tape.json.rows.length;
    for (const token of [TOKENS.viewer, TOKENS.traderA, TOKENS.traderB]) {
      for (const path of [`trades/${instrumentId}?limit=500`, `depth/${instrumentId}?levels=50`, `snapshots/${instrumentId}`, `bars/${instrumentId}?interval=1h`]) {
        const answer = await get(`/api/v1/market-data/${path}`, token);
        assert.ok(answer.status === 200 || (path.startsWith('snapshots') && answer.status === 404), `${path}: ${answer.text}`);
        assertAbsent(answer.text, everyId, `GET /api/v1/market-data/${path}`);
      }
    }
  }
  assert.equal(rows, Object.keys(trades).length, 'every trade is on the tape');
});

test("settlement reads: a trader sees only the obligations, facts, entries, exceptions and scores of its own participants; the other trader's internal trades and positions never", async () => {
  const all = Object.fromEntries(await Promise.all(['facts', 'obligations', 'ledger', 'exceptions', 'proof', 'score'].map(async (v) => [v, await operatorView(v)] as const)));
  assert.equal(all.obligations.obligations.length, 5);
  for (const owner of ['A', 'B'] as const) {
    const token = tokenFor(owner);
    const me = owner === 'A' ? A1.participantId : B.participantId;
    const theirs = other(owner);
    const theirInternal = theirs === 'A' ? 'Ainternal' : 'Binternal';
    const read = async (view: string) => {
      const answer = await get(`/api/v1/settlement/${view}/${RUN}`, token);
      assert.equal(answer.status, 200, answer.text);
      return answer;
    };
    const mineOnly = (o: any) => o.buyerParticipantId === me || o.sellerParticipantId === me;
    const visible = all.obligations.obligations.filter(mineOnly);
    const visibleIds = new Set(visible.map((o: any) => o.obligationId));
    assert.equal(visible.length, 4, `${owner} is a party to four of the five obligations`);

    const obligations = await read('obligations');
    assert.deepEqual(obligations.json.obligations, visible);
    const facts = await read('facts');
    const ownFact = (f: any) => (f.payload.obligationId !== undefined ? visibleIds.has(f.payload.obligationId) : f.payload.participantId === me);
    assert.deepEqual(facts.json.facts, all.facts.facts.filter(ownFact), `${owner}: the facts of its obligations and its own positions`);
    assert.ok(
      facts.json.facts.some((f: any) => f.factId === seedFacts[owner]),
      'its own position',
    );
    const ledger = await read('ledger');
    assert.deepEqual(
      ledger.json.entries,
      all.ledger.entries.filter((e: any) => e.participantId === me),
    );
    assert.ok(ledger.json.entries.length > 0 && ledger.json.balances.length > 0);
    assert.ok(ledger.json.balances.every((b: any) => b.participantId === me));
    assert.ok(ledger.json.proofTotals.every((p: any) => visibleIds.has(p.obligationId)));
    const exceptions = await read('exceptions');
    assert.deepEqual(
      exceptions.json.exceptions,
      all.exceptions.exceptions.filter((e: any) => visibleIds.has(e.obligationId)),
    );
    const proof = await read('proof');
    assert.deepEqual(
      proof.json.obligationIds,
      visible.map((o: any) => o.obligationId),
    );
    assert.deepEqual(
      proof.json.tradeIds,
      visible.map((o: any) => o.tradeId),
    );
    assert.deepEqual(
      proof.json.ledgerEntryIds,
      ledger.json.entries.map((e: any) => e.ledgerEntryId),
    );
    assert.ok(proof.json.finalBalances.every((b: any) => b.participantId === me));
    assert.ok(proof.json.settlementProofRows.every((r: any) => visibleIds.has(r.obligationId)));
    assert.equal(typeof proof.json.causationGaps, 'number', 'a count, not the trail');
    const score = await read('score');
    assert.deepEqual(
      score.json.participants.map((p: any) => p.participantId),
      [me],
    );

    // The other trader's own trade, its orders and its positions appear in no read of this trader.
    const internal = all.obligations.obligations.find((o: any) => o.tradeId === trades[theirInternal]);
    const internalOrders = orders.filter((o) => o.owner === theirs && o.body.instrumentId === (theirs === 'A' ? Z : Y)).map((o) => o.orderId);
    assert.equal(internalOrders.length, 2);
    const hidden = [trades[theirInternal]!, internal.obligationId, seedFacts[theirs], ...internalOrders];
    for (const answer of [obligations, facts, ledger, exceptions, proof, score]) assertAbsent(answer.text, hidden, `${owner}'s settlement read`);
    // Reads holding rows per participant name no other participant or account at all.
    for (const answer of [ledger, exceptions, proof, score]) assertAbsent(answer.text, IDS[theirs](), `${owner}'s settlement read`);
    // A's second account only ever traded with A: B never sees it.
    if (owner === 'B') for (const answer of [obligations, facts]) assertAbsent(answer.text, [A2.accountId], "B's settlement read");
  }
});
