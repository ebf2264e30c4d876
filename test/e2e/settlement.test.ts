// The settlement plane over real HTTP against the real venue and its PostgreSQL, with
// trades made through the order routes (the venue's VENUE_RUN_ID is the scenario run):
// profile resolution in the specification's order, the whole instant chain with exact
// BigInt notionals and deterministic ids, idempotent re-materialization, a cash break
// and its repair, a security break and its repair, a clearing rejection settled by
// force, the conflicting bundle rolled back whole (and duplicates at microsecond
// precision), reversals, scoring with aged fails and penalties, trader scoping, the
// public leaderboard, every denial, and the whole trail unchanged after a restart.

import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { deterministicId } from '../../core/settlement/facts.ts';
import { assertShape } from '../support/response-schemas.ts';
import { submitBody, TOKENS, TRADER_A, TRADER_B, VenueProcess, type HttpAnswer } from '../support/venue-process.ts';

const RUN = 'settle-e2e-1';
const SIDE_RUN = 'settle-e2e-side'; // operator-posted facts only
const SESSION = 'session-1';
const ADMIN_MAX = 16 * 1024;
const A1 = { participantId: TRADER_A.participantId, accountId: TRADER_A.accountId };
const A2 = { participantId: TRADER_A.participantId, accountId: TRADER_A.otherAccountId };
const B = { participantId: TRADER_B.participantId, accountId: TRADER_B.accountId };
type Party = typeof A1;

const CHAIN = [
  'SettlementObligationCreated',
  'SettlementAllocationProposed',
  'SettlementConfirmationGenerated',
  'SettlementAffirmationAccepted',
  'SettlementClearingSubmitted',
  'SettlementClearingAccepted',
  'SettlementNovationRecorded',
  'SettlementInstructionCreated',
];
const LEGS_OK = ['SettlementAttemptStarted', 'SettlementCashLegSucceeded', 'SettlementSecurityLegSucceeded'];
const LEDGER_AND_SETTLED = [...Array(4).fill('SettlementLedgerEntryPosted'), 'SettlementSettled'];

let dataDir: string;
let venue: VenueProcess;
const ENV = { VENUE_RUN_ID: RUN, VENUE_SESSION_ID: SESSION, COMPETITION_PROFILE: 'e2e-cup', ADMIN_MAX_BODY_BYTES: String(ADMIN_MAX) };

before(async () => {
  dataDir = VenueProcess.makeDataDir();
  venue = await VenueProcess.start({ ...ENV, DATA_DIR: dataDir });
});
after(async () => {
  await venue.stop();
  VenueProcess.removeDataDir(dataDir);
});

const admin = (route: string, body: unknown, token: string = TOKENS.operator) =>
  venue.request('POST', `/admin/v1/settlement/${route}`, { token, headers: { 'content-type': 'application/json' }, body: typeof body === 'string' ? body : JSON.stringify(body) });

async function ok(route: string, body: unknown, schema: Parameters<typeof assertShape>[0]): Promise<any> {
  const answer = await admin(route, body);
  assert.equal(answer.status, 200, `${route}: ${answer.text}`);
  assertShape(schema, answer.json);
  return answer.json;
}

const read = (view: string, token: string = TOKENS.operator, query = '', run = RUN) => venue.get(`/api/v1/settlement/${view}/${run}${query}`, token);
const SCHEMA: Record<string, Parameters<typeof assertShape>[0]> = {
  facts: 'SettlementFacts',
  obligations: 'SettlementObligations',
  ledger: 'SettlementLedger',
  exceptions: 'SettlementExceptions',
  proof: 'SettlementProof',
  score: 'SettlementScore',
  leaderboard: 'SettlementLeaderboard',
};
async function view(name: string, token: string = TOKENS.operator, query = '', run = RUN): Promise<any> {
  const answer = await read(name, token, query, run);
  assert.equal(answer.status, 200, `${name}: ${answer.text}`);
  assertShape(SCHEMA[name]!, answer.json);
  return answer.json;
}

const tokenOf = (party: Party) => (party.participantId === B.participantId ? TOKENS.traderB : TOKENS.traderA);

/** A trade through the order routes: the seller rests, the buyer crosses. Returns the tradeId. */
async function trade(spec: { quantity: string; price: string; buyer?: Party; seller?: Party; instrumentId?: string }): Promise<{ tradeId: string; instrumentId: string }> {
  const instrumentId = spec.instrumentId ?? crypto.randomUUID();
  const seller = spec.seller ?? B;
  const buyer = spec.buyer ?? A1;
  const sell = await venue.order('/api/v1/orders/submit', submitBody({ instrumentId, side: 'SELL', price: spec.price, quantity: spec.quantity, ...seller }), {
    token: tokenOf(seller),
    mode: 'sync-result',
  });
  assert.equal(sell.status, 200, sell.text);
  assert.deepEqual(sell.json.trades, []);
  const buy = await venue.order('/api/v1/orders/submit', submitBody({ instrumentId, side: 'BUY', price: spec.price, quantity: spec.quantity, ...buyer }), {
    token: tokenOf(buyer),
    mode: 'sync-result',
  });
  assert.equal(buy.status, 200, buy.text);
  assert.equal(buy.json.trades.length, 1, buy.text);
  return { tradeId: buy.json.trades[0].tradeId, instrumentId };
}

const obligationIdOf = (tradeId: string) => deterministicId(RUN, tradeId, 'obligation');
async function obligation(tradeId: string): Promise<any> {
  const found = (await view('obligations')).obligations.find((o: any) => o.tradeId === tradeId);
  assert.ok(found, `an obligation for trade ${tradeId}`);
  return found;
}
async function factsOf(tradeId: string): Promise<any[]> {
  return (await view('facts')).facts.filter((f: any) => f.payload.tradeId === tradeId);
}
const typesOf = (facts: any[]) => facts.map((f) => f.factType);
async function proofRowOf(tradeId: string): Promise<any> {
  return (await view('proof')).settlementProofRows.find((row: any) => row.tradeId === tradeId);
}
/** The obligations of settled proof rows that rule 2 does not hold for. */
const invalidSettled = (proof: any): string[] => proof.settlementProofRows.filter((row: any) => row.settled && !row.valid).map((row: any) => row.obligationId);
async function exceptionOf(tradeId: string): Promise<any[]> {
  return (await view('exceptions')).exceptions.filter((e: any) => e.obligationId === obligationIdOf(tradeId));
}
const nowIso = () => new Date().toISOString();
const seed = (party: Party, assetType: 'CASH' | 'SECURITY', asset: string, amount: string) => ({
  factId: crypto.randomUUID(),
  factType: 'SettlementResourcePositionSeeded',
  occurredAt: nowIso(),
  payload: { ...party, assetType, asset, amount },
});

const ADMIN_ROUTES = ['facts', 'obligations/materialize', 'repairs/cash', 'repairs/security', 'force-settle', 'reverse-ledger-entry', 'profiles'];
const VIEWS = ['facts', 'obligations', 'ledger', 'exceptions', 'proof', 'score'];

test('operator routes: operators only (401 without or with a bad token, 403 for traders and viewers), POST only, bounded and validated bodies', async () => {
  for (const route of ADMIN_ROUTES) {
    const body = { scenarioRunId: RUN };
    const anonymous = await venue.request('POST', `/admin/v1/settlement/${route}`, { body: JSON.stringify(body) });
    assert.deepEqual([anonymous.status, anonymous.json.code], [401, 'UNAUTHENTICATED'], route);
    assert.equal((await admin(route, body, 'not-a-token')).status, 401, route);
    for (const token of [TOKENS.traderA, TOKENS.traderB, TOKENS.viewer]) {
      const denied = await admin(route, body, token);
      assert.deepEqual([denied.status, denied.json.code], [403, 'FORBIDDEN'], `${route} ${token}`);
    }
    const get = await venue.get(`/admin/v1/settlement/${route}`, TOKENS.operator);
    assert.deepEqual([get.status, get.json.code], [405, 'METHOD_NOT_ALLOWED'], route);
    const notJson = await admin(route, '{"scenarioRunId":');
    assert.deepEqual([notJson.status, notJson.json.code], [400, 'VALIDATION_FAILED'], route);
    const extra = await admin(route, { ...body, surprise: 1 });
    assert.equal(extra.status, 400, route);
    assertShape('Error', extra.json);
  }
  const huge = await admin('facts', { scenarioRunId: RUN, facts: [seed(A1, 'CASH', 'USD', '1'.repeat(ADMIN_MAX))] });
  assert.equal(huge.status, 413, 'a body beyond ADMIN_MAX_BODY_BYTES');
  const invalid = await admin('facts', {
    scenarioRunId: 'bad run id',
    facts: [{ factId: 'nope', factType: 'DropTable', occurredAt: 'yesterday', payload: [] }],
  });
  assert.equal(invalid.status, 400);
  const fields = invalid.json.details.map((d: any) => d.field).sort();
  assert.deepEqual(fields, ['facts.0.factId', 'facts.0.factType', 'facts.0.occurredAt', 'facts.0.payload', 'scenarioRunId']);
  for (const body of [
    { scope: 'platform', scopeId: 'x', profile: 'ops-realistic-v1' },
    { scope: 'venueSession', profile: 'ops-realistic-v1' },
    { scope: 'scenarioRun', scopeId: RUN, profile: 'instant-post-trade-v2' },
  ]) {
    assert.equal((await admin('profiles', body)).status, 400, JSON.stringify(body));
  }
  const badAmount = await admin('repairs/cash', { scenarioRunId: RUN, obligationId: crypto.randomUUID(), amountNanos: '1.5', currency: 'USD' });
  assert.deepEqual(
    badAmount.json.details.map((d: any) => d.field),
    ['amountNanos'],
    'money is integer nanos',
  );
  // Nothing of the refused requests left a trace.
  assert.deepEqual((await view('facts')).facts, []);
});

test('settlement reads: 401 without a token, 403 for viewers; strict run ids and query parameters', async () => {
  for (const name of VIEWS) {
    const anonymous = await venue.get(`/api/v1/settlement/${name}/${RUN}`);
    assert.deepEqual([anonymous.status, anonymous.json.code], [401, 'UNAUTHENTICATED'], name);
    const viewer = await read(name, TOKENS.viewer);
    assert.deepEqual([viewer.status, viewer.json.code], [403, 'FORBIDDEN'], name);
    assert.equal((await venue.get(`/api/v1/settlement/${name}/bad%20id`, TOKENS.operator)).status, 400, name);
    assert.equal((await read(name, TOKENS.operator, '?surprise=1')).status, 400, name);
  }
  for (const query of ['?asOf=tomorrow', '?agedFailAfterSeconds=-1', '?agedFailAfterSeconds=1.5', '?asOf=2026-01-01T00:00:00Z&asOf=2026-01-01T00:00:00Z', '?limit=3']) {
    assert.equal((await read('score', TOKENS.operator, query)).status, 400, query);
  }
  const empty = await view('proof');
  assert.deepEqual([empty.status, empty.tradeIds, empty.factCounts], ['CLEAN', [], {}]);
});

const trades: Record<string, { tradeId: string; instrumentId: string }> = {};
let injectionFact: Record<string, unknown> | null = null;

test('profile resolution: scenario override, then venue-session override, then the platform default or admin profile, then ops-realistic-v1', async () => {
  // (4) nothing set: ops-realistic-v1, obligations only.
  trades.p1 = await trade({ quantity: '3', price: '10' });
  const first = await ok('obligations/materialize', { scenarioRunId: RUN }, 'SettlementMaterialized');
  assert.deepEqual(first, { scenarioRunId: RUN, profile: 'ops-realistic-v1', obligations: 1, factsAppended: 1 });
  assert.equal((await obligation(trades.p1.tradeId)).state, 'CREATED');

  // (3) the platform default.
  assert.deepEqual(await ok('profiles', { scope: 'platform', profile: 'instant-post-trade-v1' }, 'SettlementProfileSet'), {
    scope: 'platform',
    scopeId: null,
    profile: 'instant-post-trade-v1',
    profiles: ['instant-post-trade-v1', 'ops-realistic-v1'],
  });
  trades.p2 = await trade({ quantity: '4', price: '10' });
  const second = await ok('obligations/materialize', { scenarioRunId: RUN }, 'SettlementMaterialized');
  assert.deepEqual(second, { scenarioRunId: RUN, profile: 'instant-post-trade-v1', obligations: 2, factsAppended: CHAIN.length + LEGS_OK.length + LEDGER_AND_SETTLED.length });
  assert.equal((await obligation(trades.p2.tradeId)).state, 'SETTLED');

  // (2) the venue session beats the platform default and the admin profile of the request.
  await ok('profiles', { scope: 'venueSession', scopeId: SESSION, profile: 'ops-realistic-v1' }, 'SettlementProfileSet');
  trades.p3 = await trade({ quantity: '5', price: '10' });
  await ok('obligations/materialize', { scenarioRunId: RUN, profile: 'instant-post-trade-v1' }, 'SettlementMaterialized');
  assert.equal((await obligation(trades.p3.tradeId)).state, 'CREATED');

  // (1) the scenario run beats everything.
  await ok('profiles', { scope: 'scenarioRun', scopeId: RUN, profile: 'instant-post-trade-v1' }, 'SettlementProfileSet');
  trades.p4 = await trade({ quantity: '6', price: '10' });
  const fourth = await ok('obligations/materialize', { scenarioRunId: RUN, profile: 'ops-realistic-v1' }, 'SettlementMaterialized');
  assert.equal(fourth.profile, 'instant-post-trade-v1');
  assert.equal((await obligation(trades.p4.tradeId)).state, 'SETTLED');

  const evidence = (await view('proof')).profileEvidence.map((e: any) => [e.obligationId, e.profile, e.source]);
  assert.deepEqual(evidence, [
    [obligationIdOf(trades.p1.tradeId), 'ops-realistic-v1', 'default'],
    [obligationIdOf(trades.p2.tradeId), 'instant-post-trade-v1', 'platform'],
    [obligationIdOf(trades.p3.tradeId), 'ops-realistic-v1', 'venueSession'],
    [obligationIdOf(trades.p4.tradeId), 'instant-post-trade-v1', 'scenarioRun'],
  ]);
});

test('instant-post-trade-v1: the whole chain in order, caused fact by fact, deterministic ids, four exact ledger entries, a CLEAN proof', async () => {
  // 12,345.678901234 x 250,000: the notional (3,086,419,725,308,500,000 nanos) is far beyond 2^53.
  trades.full = await trade({ quantity: '250000', price: '12345.678901234' });
  const { tradeId, instrumentId } = trades.full;
  const answer = await ok('obligations/materialize', { scenarioRunId: RUN }, 'SettlementMaterialized');
  assert.equal(answer.factsAppended, CHAIN.length + LEGS_OK.length + LEDGER_AND_SETTLED.length);
  const obligationId = obligationIdOf(tradeId);
  assert.deepEqual(await obligation(tradeId), {
    obligationId,
    tradeId,
    buyerParticipantId: A1.participantId,
    sellerParticipantId: B.participantId,
    instrumentId,
    quantityUnits: '250000',
    priceNanos: '12345678901234',
    cashAmountNanos: '3086419725308500000',
    currency: 'USD',
    state: 'SETTLED',
  });
  const facts = await factsOf(tradeId);
  assert.deepEqual(typesOf(facts), [...CHAIN, ...LEGS_OK, ...LEDGER_AND_SETTLED]);
  assert.equal(facts[0].causationId, null, 'the obligation starts the chain');
  for (let k = 1; k < facts.length; k++) {
    assert.equal(facts[k].causationId, facts[k - 1].factId, `${facts[k].factType} follows ${facts[k - 1].factType}`);
    assert.equal(facts[k].sequence, facts[k - 1].sequence + 1);
    assert.equal(facts[k].payload.obligationId, obligationId);
  }
  assert.equal(facts[0].factId, deterministicId(RUN, tradeId, 'obligation-created'), 'ids are name-based on (run, trade, step)');
  assert.equal(facts.at(-1).factId, deterministicId(RUN, tradeId, 'attempt-1-settled'));
  assert.match(facts[0].occurredAt, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/, 'microsecond timestamps');

  const ledger = await view('ledger');
  const entries = ledger.entries.filter((e: any) => e.obligationId === obligationId);
  assert.deepEqual(
    entries.map((e: any) => [e.participantId, e.accountId, e.assetType, e.asset, e.direction, e.amount]),
    [
      [A1.participantId, A1.accountId, 'CASH', 'USD', 'DEBIT', '3086419725308500000'],
      [B.participantId, B.accountId, 'CASH', 'USD', 'CREDIT', '3086419725308500000'],
      [B.participantId, B.accountId, 'SECURITY', instrumentId, 'DEBIT', '250000'],
      [A1.participantId, A1.accountId, 'SECURITY', instrumentId, 'CREDIT', '250000'],
    ],
  );
  assert.deepEqual(await proofRowOf(tradeId), {
    obligationId,
    tradeId,
    cashDebits: '3086419725308500000',
    cashCredits: '3086419725308500000',
    securityDebits: '250000',
    securityCredits: '250000',
    balanced: true,
    cashLegSucceeded: true,
    securityLegSucceeded: true,
    settled: true,
    finality: 'LEDGER_PROOF',
    valid: true,
  });
  const settled = facts.at(-1);
  assert.deepEqual(settled.payload.proof, { cashDebits: '3086419725308500000', cashCredits: '3086419725308500000', securityDebits: '250000', securityCredits: '250000' });
  const proof = await view('proof');
  assert.equal(proof.status, 'CLEAN');
  assert.deepEqual(proof.causationGaps, []);
  assert.ok(proof.attemptIds.includes(deterministicId(RUN, tradeId, 'attempt-1')));
  assert.equal(proof.factCounts.SettlementLedgerEntryPosted, 12, 'three instant trades so far, four entries each');
  const securityBalance = proof.finalBalances.find((b: any) => b.asset === instrumentId && b.participantId === A1.participantId);
  assert.deepEqual([securityBalance.debits, securityBalance.credits, securityBalance.net], ['0', '250000', '250000']);
});

test('materialization is idempotent: running it again appends nothing and the checksum stays', async () => {
  const before = await view('proof');
  const again = await ok('obligations/materialize', { scenarioRunId: RUN }, 'SettlementMaterialized');
  assert.deepEqual(again, { scenarioRunId: RUN, profile: 'instant-post-trade-v1', obligations: 5, factsAppended: 0 });
  const afterwards = await view('proof');
  assert.equal(afterwards.checksum, before.checksum);
  assert.deepEqual(afterwards.obligationIds, before.obligationIds);
  assert.equal(new Set(afterwards.obligationIds).size, 5, 'one obligation per trade');
});

test('a cash-leg break opens an exception; the cash repair posts resources and a deterministic retry settles and resolves it', async () => {
  // A's second account holds 1,000 USD; the trade needs 1,500.
  assert.deepEqual(await ok('facts', { scenarioRunId: RUN, facts: [seed(A2, 'CASH', 'USD', '1000000000000')] }, 'SettlementAppended'), { appended: 1, duplicates: 0 });
  trades.cash = await trade({ quantity: '5', price: '300', buyer: A2 });
  const { tradeId } = trades.cash;
  const obligationId = obligationIdOf(tradeId);
  await ok('obligations/materialize', { scenarioRunId: RUN }, 'SettlementMaterialized');
  assert.equal((await obligation(tradeId)).state, 'BROKEN');
  const facts = await factsOf(tradeId);
  assert.deepEqual(typesOf(facts), [...CHAIN, 'SettlementAttemptStarted', 'SettlementCashLegFailed', 'SettlementSecurityLegSucceeded', 'SettlementBreakOpened']);
  assert.equal(facts.at(-3).payload.shortfallNanos, '500000000000');
  assert.equal(facts.at(-1).payload.breakType, 'CASH_LEG');
  assert.equal((await view('ledger')).entries.filter((e: any) => e.obligationId === obligationId).length, 0, 'no ledger entry without both legs');
  const [exception] = await exceptionOf(tradeId);
  assert.deepEqual(exception, {
    exceptionId: deterministicId(RUN, tradeId, 'exception-CASH_LEG-1'),
    obligationId,
    exceptionType: 'CASH_LEG_BREAK',
    severity: 'MEDIUM',
    ownerRole: 'operator',
    requiredAction: "fund the buyer's cash account, then retry",
    repairAction: 'POST /admin/v1/settlement/repairs/cash',
    status: 'OPEN',
  });
  assert.deepEqual((await view('exceptions')).counts, { open: 1, resolved: 0 });

  const wrongCurrency = await admin('repairs/cash', { scenarioRunId: RUN, obligationId, amountNanos: '500000000000', currency: 'EUR' });
  assert.equal(wrongCurrency.status, 400, wrongCurrency.text);
  const wrongLeg = await admin('repairs/security', { scenarioRunId: RUN, obligationId, quantityUnits: '5' });
  assert.deepEqual([wrongLeg.status, wrongLeg.json.code], [409, 'FACT_CONFLICT']);
  const unknown = await admin('repairs/cash', { scenarioRunId: RUN, obligationId: crypto.randomUUID(), amountNanos: '1', currency: 'USD' });
  assert.deepEqual([unknown.status, unknown.json.code], [404, 'NOT_FOUND']);

  const repaired = await ok('repairs/cash', { scenarioRunId: RUN, obligationId, amountNanos: '500000000000', currency: 'USD' }, 'SettlementAction');
  assert.equal(repaired.state, 'RESOLVED');
  assert.deepEqual(
    repaired.facts.map((f: any) => f.factType),
    ['SettlementRepairPosted', ...LEGS_OK, ...LEDGER_AND_SETTLED, 'SettlementResolved'],
  );
  assert.equal(repaired.facts[1].factId, deterministicId(RUN, tradeId, 'attempt-2-started'), 'the retry is deterministic');
  const after = await factsOf(tradeId);
  const repair = after.at(-10);
  assert.deepEqual([repair.factType, repair.payload.amount, repair.payload.accountId], ['SettlementRepairPosted', '500000000000', A2.accountId]);
  assert.equal(repair.causationId, facts.at(-1).factId, 'the repair follows the break');
  assert.deepEqual(after.at(-1).payload.exceptionIds, [exception.exceptionId]);
  assert.equal((await exceptionOf(tradeId))[0].status, 'RESOLVED');
  assert.deepEqual((await view('exceptions')).counts, { open: 0, resolved: 1 });
  assert.equal((await proofRowOf(tradeId)).valid, true);
  const again = await admin('repairs/cash', { scenarioRunId: RUN, obligationId, amountNanos: '1', currency: 'USD' });
  assert.equal(again.status, 409, 'nothing left to repair');
  // 1,000 seeded + 500 repaired - 1,500 paid: the account is empty now.
  assert.equal((await view('ledger')).balances.find((b: any) => b.accountId === A2.accountId && b.asset === 'USD').net, '-1500000000000');
});

test('a security-leg break and its repair', async () => {
  const instrumentId = crypto.randomUUID();
  await ok('facts', { scenarioRunId: RUN, facts: [seed(B, 'SECURITY', instrumentId, '2')] }, 'SettlementAppended');
  trades.security = await trade({ quantity: '5', price: '7', instrumentId });
  const { tradeId } = trades.security;
  const obligationId = obligationIdOf(tradeId);
  await ok('obligations/materialize', { scenarioRunId: RUN }, 'SettlementMaterialized');
  const facts = await factsOf(tradeId);
  assert.deepEqual(typesOf(facts).slice(-3), ['SettlementCashLegSucceeded', 'SettlementSecurityLegFailed', 'SettlementBreakOpened']);
  assert.equal(facts.at(-2).payload.shortfallUnits, '3');
  const [exception] = await exceptionOf(tradeId);
  assert.deepEqual([exception.exceptionType, exception.status, exception.repairAction], ['SECURITY_LEG_BREAK', 'OPEN', 'POST /admin/v1/settlement/repairs/security']);
  // Too little: the retry fails again, the break stays open (no second exception).
  const partial = await ok('repairs/security', { scenarioRunId: RUN, obligationId, quantityUnits: '1' }, 'SettlementAction');
  assert.equal(partial.state, 'BROKEN');
  assert.deepEqual(
    partial.facts.map((f: any) => f.factType),
    ['SettlementRepairPosted', 'SettlementAttemptStarted', 'SettlementCashLegSucceeded', 'SettlementSecurityLegFailed'],
  );
  assert.equal((await exceptionOf(tradeId)).length, 1);
  const repaired = await ok('repairs/security', { scenarioRunId: RUN, obligationId, quantityUnits: '2' }, 'SettlementAction');
  assert.equal(repaired.state, 'RESOLVED');
  assert.equal((await obligation(tradeId)).state, 'RESOLVED');
  assert.equal((await exceptionOf(tradeId))[0].status, 'RESOLVED');
  const row = await proofRowOf(tradeId);
  assert.deepEqual([row.securityDebits, row.securityCredits, row.balanced, row.finality, row.valid], ['5', '5', true, 'LEDGER_PROOF', true]);
  assert.equal((await view('proof')).status, 'CLEAN');
});

test('a clearing rejection opens an exception; force-settle gives finality recorded as FORCED, a row not valid under rule 2 and a GAPPED proof', async () => {
  trades.clearing = await trade({ quantity: '2', price: '50' });
  const { tradeId } = trades.clearing;
  const obligationId = obligationIdOf(tradeId);
  const injection = { factId: crypto.randomUUID(), factType: 'SettlementFailureInjected', occurredAt: nowIso(), payload: { tradeId, step: 'CLEARING' } };
  assert.deepEqual(await ok('facts', { scenarioRunId: RUN, facts: [injection] }, 'SettlementAppended'), { appended: 1, duplicates: 0 });
  injectionFact = injection;
  await ok('obligations/materialize', { scenarioRunId: RUN }, 'SettlementMaterialized');
  const facts = (await factsOf(tradeId)).filter((f) => f.factType !== 'SettlementFailureInjected');
  assert.deepEqual(typesOf(facts), [...CHAIN.slice(0, 5), 'SettlementClearingRejected']);
  assert.equal((await obligation(tradeId)).state, 'CLEARING_REJECTED');
  const [exception] = await exceptionOf(tradeId);
  assert.deepEqual([exception.exceptionType, exception.severity, exception.status], ['CLEARING_REJECTED', 'HIGH', 'OPEN']);

  const forced = await ok('force-settle', { scenarioRunId: RUN, obligationId, reason: 'agreed bilaterally after the rejection' }, 'SettlementAction');
  assert.equal(forced.state, 'RESOLVED');
  assert.deepEqual(
    forced.facts.map((f: any) => f.factType),
    [...LEDGER_AND_SETTLED, 'SettlementResolved'],
  );
  const settled = (await factsOf(tradeId)).find((f) => f.factType === 'SettlementSettled');
  assert.deepEqual([settled.payload.finality, settled.payload.reason], ['FORCED', 'agreed bilaterally after the rejection']);
  const proof = await view('proof');
  assert.deepEqual(proof.causationGaps, [], 'the forced chain is caused fact by fact');
  assert.deepEqual(invalidSettled(proof), [obligationId], 'every other settled row is valid');
  assert.equal(proof.status, 'GAPPED', 'rule 2: a settlement without both leg outcomes is not a valid proof');
  assert.deepEqual(proof.profileEvidence.find((e: any) => e.obligationId === obligationId).finality, 'FORCED');
  const row = proof.settlementProofRows.find((r: any) => r.obligationId === obligationId);
  assert.deepEqual([row.cashLegSucceeded, row.securityLegSucceeded, row.balanced, row.settled, row.finality, row.valid], [false, false, true, true, 'FORCED', false]);
  const again = await read('proof');
  assert.deepEqual(again.json, proof, 'the same trail reads back as the same proof, checksum included');
  assert.equal((await exceptionOf(tradeId))[0].status, 'RESOLVED');
  const twice = await admin('force-settle', { scenarioRunId: RUN, obligationId, reason: 'again' });
  assert.deepEqual([twice.status, twice.json.code], [409, 'FACT_CONFLICT']);
  assert.equal((await admin('force-settle', { scenarioRunId: RUN, obligationId: crypto.randomUUID(), reason: 'x' })).status, 404);
});

test('a bundle reusing a fact id with other content is refused whole (409, nothing stored); identical facts are duplicates, compared at the microsecond', async () => {
  const at = '2026-11-22T08:00:00.123456Z';
  const kept = { factId: crypto.randomUUID(), factType: 'SettlementNoteRecorded', occurredAt: at, payload: { note: 'kept' } };
  assert.deepEqual(await ok('facts', { scenarioRunId: SIDE_RUN, facts: [kept] }, 'SettlementAppended'), { appended: 1, duplicates: 0 });
  const before = await view('facts', TOKENS.operator, '', SIDE_RUN);

  const fresh = { factId: crypto.randomUUID(), factType: 'SettlementNoteRecorded', occurredAt: at, payload: { note: 'fresh' } };
  for (const changed of [
    { ...kept, payload: { note: 'changed' } },
    { ...kept, occurredAt: '2026-11-22T08:00:00.123457Z' },
    { ...kept, factType: 'SettlementOtherNote' },
    { ...kept, causationId: crypto.randomUUID() },
  ]) {
    const refused = await admin('facts', { scenarioRunId: SIDE_RUN, facts: [fresh, changed] });
    assert.deepEqual([refused.status, refused.json.code], [409, 'FACT_CONFLICT'], JSON.stringify(changed));
    assert.match(refused.json.error, new RegExp(kept.factId));
  }
  const conflictInBundle = await admin('facts', { scenarioRunId: SIDE_RUN, facts: [fresh, { ...fresh, payload: { note: 'other' } }] });
  assert.equal(conflictInBundle.status, 409, 'a bundle that contradicts itself');
  const inAnotherRun = await admin('facts', { scenarioRunId: RUN, facts: [kept] });
  assert.equal(inAnotherRun.status, 409, 'a fact id belongs to one run');
  assert.deepEqual(await view('facts', TOKENS.operator, '', SIDE_RUN), before, 'nothing of the refused bundles was stored');

  // The same instant written another way (an offset, digits past the microsecond) is the same fact.
  const sameInstant = [{ ...kept, occurredAt: '2026-11-22T09:00:00.1234569+01:00' }, fresh, fresh];
  assert.deepEqual(await ok('facts', { scenarioRunId: SIDE_RUN, facts: sameInstant }, 'SettlementAppended'), { appended: 1, duplicates: 2 });
  assert.deepEqual(await ok('facts', { scenarioRunId: SIDE_RUN, facts: [fresh, kept] }, 'SettlementAppended'), { appended: 0, duplicates: 2 });
  const stored = (await view('facts', TOKENS.operator, '', SIDE_RUN)).facts;
  assert.deepEqual(
    stored.map((f: any) => [f.sequence, f.factId, f.occurredAt, f.payload.note]),
    [
      [1, kept.factId, at, 'kept'],
      [2, fresh.factId, at, 'fresh'],
    ],
  );
  // The injection posted earlier, posted again verbatim, is a duplicate in its run.
  assert.deepEqual(await ok('facts', { scenarioRunId: RUN, facts: [injectionFact] }, 'SettlementAppended'), { appended: 0, duplicates: 1 });
});

test('the proof: causation gaps make it GAPPED; the checksum is stable across reads and changes with any new fact', async () => {
  const clean = await view('proof', TOKENS.operator, '', SIDE_RUN);
  assert.equal(clean.status, 'CLEAN', 'operator facts need no cause');
  assert.equal((await view('proof', TOKENS.operator, '', SIDE_RUN)).checksum, clean.checksum);
  const orphan = { factId: crypto.randomUUID(), factType: 'SettlementNoteRecorded', occurredAt: nowIso(), causationId: crypto.randomUUID(), payload: {} };
  await ok('facts', { scenarioRunId: SIDE_RUN, facts: [orphan] }, 'SettlementAppended');
  const gapped = await view('proof', TOKENS.operator, '', SIDE_RUN);
  assert.equal(gapped.status, 'GAPPED');
  assert.deepEqual(gapped.causationGaps, [{ factId: orphan.factId, factType: 'SettlementNoteRecorded', sequence: 3, problem: `causationId ${orphan.causationId} is not an earlier fact of this run` }]);
  assert.notEqual(gapped.checksum, clean.checksum);
  assert.deepEqual((await view('proof')).causationGaps, [], 'runs are separate trails');
});

test('reversal: a compensating entry (nothing deleted); the proof flags the unbalanced settlement until the other side is reversed too', async () => {
  const obligationId = obligationIdOf(trades.p2!.tradeId);
  const before = await view('ledger');
  const entries = before.entries.filter((e: any) => e.obligationId === obligationId);
  const [buyerDebit, sellerCredit] = entries;
  const reversed = await ok('reverse-ledger-entry', { scenarioRunId: RUN, ledgerEntryId: buyerDebit.ledgerEntryId, reason: 'booked in error' }, 'SettlementAction');
  assert.deepEqual([reversed.obligationId, reversed.factsAppended, reversed.facts[0].factType], [obligationId, 1, 'SettlementLedgerEntryPosted']);
  const ledger = await view('ledger');
  assert.equal(ledger.entries.length, before.entries.length + 1, 'nothing deleted');
  const compensating = ledger.entries.at(-1);
  assert.deepEqual(
    [compensating.reversesEntryId, compensating.participantId, compensating.direction, compensating.amount, compensating.asset],
    [buyerDebit.ledgerEntryId, A1.participantId, 'CREDIT', buyerDebit.amount, 'USD'],
  );
  const proof = await view('proof');
  assert.equal(proof.status, 'GAPPED');
  assert.deepEqual(invalidSettled(proof).sort(), [obligationId, obligationIdOf(trades.clearing!.tradeId)].sort(), 'a settled obligation whose ledger no longer balances');
  assert.equal((await proofRowOf(trades.p2!.tradeId)).valid, false);
  for (const [id, status] of [
    [buyerDebit.ledgerEntryId, 409],
    [compensating.ledgerEntryId, 409],
    [crypto.randomUUID(), 404],
  ] as const) {
    assert.equal((await admin('reverse-ledger-entry', { scenarioRunId: RUN, ledgerEntryId: id, reason: 'x' })).status, status);
  }
  await ok('reverse-ledger-entry', { scenarioRunId: RUN, ledgerEntryId: sellerCredit.ledgerEntryId, reason: 'booked in error' }, 'SettlementAction');
  const row = await proofRowOf(trades.p2!.tradeId);
  assert.deepEqual([row.cashDebits, row.cashCredits, row.balanced, row.valid], ['80000000000', '80000000000', true, true]);
  assert.deepEqual(invalidSettled(await view('proof')), [obligationIdOf(trades.clearing!.tradeId)], 'balanced again: only the forced row stays invalid');
});

test('score: pending and haircut value, blocked value, fails, aged fails against asOf and agedFailAfterSeconds, repairs pending, penalty points', async () => {
  // A's second account is empty: this buy breaks and stays open.
  trades.open = await trade({ quantity: '2', price: '50', buyer: A2 });
  await ok('obligations/materialize', { scenarioRunId: RUN }, 'SettlementMaterialized');
  const openedAt = Date.parse((await factsOf(trades.open.tradeId)).at(-1).occurredAt);
  const at = (ms: number) => `?asOf=${encodeURIComponent(new Date(openedAt + ms).toISOString())}`;

  const now = await view('score', TOKENS.operator, at(60_000));
  const a = now.participants.find((p: any) => p.participantId === A1.participantId);
  const b = now.participants.find((p: any) => p.participantId === B.participantId);
  assert.deepEqual(
    now.participants.map((p: any) => p.participantId),
    [A1.participantId, B.participantId],
  );
  assert.equal(now.agedFailAfterSeconds, 3600);
  // Pending: p1 and p3 (ops profile, CREATED: 2% haircut) and the open break (BROKEN: 50% haircut).
  const p1 = 30_000_000_000n;
  const p3 = 50_000_000_000n;
  const open = 100_000_000_000n;
  const haircut = (value: bigint, bps: bigint) => (value * (10_000n - bps)) / 10_000n;
  assert.equal(a.pendingValueNanos, String(p1 + p3 + open));
  assert.equal(a.haircutAdjustedPendingValueNanos, String(haircut(p1, 200n) + haircut(p3, 200n) + haircut(open, 5000n)));
  assert.equal(b.pendingValueNanos, String(p1 + p3 + open), 'both parties carry a pending obligation');
  assert.equal(a.blockedUnsettledValueNanos, String(open), 'the buyer fails the open cash break');
  assert.equal(b.blockedUnsettledValueNanos, '0');
  // Fails: A failed the cash break (repaired), the clearing (both parties) and the open break; B the security break and the clearing.
  assert.deepEqual([a.failCount, a.repairPendingCount, a.agedFailCount], [3, 1, 0]);
  assert.deepEqual([b.failCount, b.repairPendingCount, b.agedFailCount], [2, 0, 0]);
  // Every fail costs at least one point per started day.
  assert.deepEqual([a.penaltyPoints, b.penaltyPoints], [3, 2]);

  const twoHours = await view('score', TOKENS.operator, at(2 * 3600_000));
  assert.equal(twoHours.participants[0].agedFailCount, 1, 'open longer than 3,600 s');
  const patient = await view('score', TOKENS.operator, `${at(2 * 3600_000)}&agedFailAfterSeconds=10800`);
  assert.deepEqual([patient.agedFailAfterSeconds, patient.participants[0].agedFailCount], [10800, 0]);
  const threeDays = await view('score', TOKENS.operator, at(3 * 86_400_000 + 3600_000));
  assert.equal(threeDays.participants[0].penaltyPoints, 3 - 1 + 4, 'the open fail now costs four days');
  assert.equal(threeDays.participants[1].penaltyPoints, 2, "B's fails are resolved: no more accrue");

  // Settled balances are the ledger's nets per asset.
  const ledger = await view('ledger');
  const usdNet = ledger.balances.filter((x: any) => x.participantId === A1.participantId && x.asset === 'USD').reduce((sum: bigint, x: any) => sum + BigInt(x.net), 0n);
  assert.equal(a.settledBalances.find((x: any) => x.asset === 'USD').amount, String(usdNet));
});

test('traders see the rows of their own participants only; viewers nothing', async () => {
  // A trade between trader A's own accounts: trader B must never see it.
  trades.internal = await trade({ quantity: '1', price: '20', buyer: A1, seller: A2 });
  await ok('obligations/materialize', { scenarioRunId: RUN }, 'SettlementMaterialized');
  const internalId = obligationIdOf(trades.internal.tradeId);
  const all = await view('obligations');
  assert.ok(all.obligations.some((o: any) => o.obligationId === internalId));

  const b = await view('obligations', TOKENS.traderB);
  assert.deepEqual(
    b.obligations.map((o: any) => o.obligationId),
    all.obligations.filter((o: any) => o.obligationId !== internalId).map((o: any) => o.obligationId),
  );
  const bFacts = await view('facts', TOKENS.traderB);
  assert.ok(bFacts.facts.length > 0 && bFacts.facts.every((f: any) => f.payload.tradeId !== trades.internal!.tradeId));
  assert.ok(!bFacts.facts.some((f: any) => f.factType === 'SettlementResourcePositionSeeded' && f.payload.participantId === A2.participantId), "A's positions are A's");
  const bLedger = await view('ledger', TOKENS.traderB);
  assert.ok(bLedger.entries.length > 0 && bLedger.entries.every((e: any) => e.participantId === B.participantId));
  assert.ok(bLedger.balances.every((x: any) => x.participantId === B.participantId));
  const bScore = await view('score', TOKENS.traderB);
  assert.deepEqual(
    bScore.participants.map((p: any) => p.participantId),
    [B.participantId],
  );
  const bProof = await view('proof', TOKENS.traderB);
  assert.ok(!bProof.tradeIds.includes(trades.internal.tradeId));
  assert.equal(typeof bProof.causationGaps, 'number', 'traders get the count, not the trail');
  // B is a party to every exception's obligation so far; A-only rows are what B must not see.
  assert.deepEqual((await view('exceptions', TOKENS.traderB)).exceptions, (await view('exceptions')).exceptions);

  const aObligations = await view('obligations', TOKENS.traderA);
  assert.equal(aObligations.obligations.length, all.obligations.length, 'A is a party to every trade');
  for (const name of VIEWS) assert.equal((await read(name, TOKENS.viewer)).status, 403);
});

test('the leaderboard (COMPETITION_PROFILE set): public, ranked from the score inputs, listed in the availability inventory', async () => {
  const asOf = `?asOf=${encodeURIComponent(new Date(Date.now() + 2 * 3600_000).toISOString())}`;
  const board = await view('leaderboard', TOKENS.viewer, asOf);
  const score = await view('score', TOKENS.operator, asOf);
  assert.equal(board.competitionProfile, 'e2e-cup');
  assert.deepEqual(
    board.rows.map((row: any) => row.participantId),
    [B.participantId, A1.participantId],
    'fewest penalty points first',
  );
  for (const row of board.rows) {
    const p = score.participants.find((x: any) => x.participantId === row.participantId);
    assert.deepEqual([row.penaltyPoints, row.failCount, row.agedFailCount, row.blockedUnsettledValueNanos], [p.penaltyPoints, p.failCount, p.agedFailCount, p.blockedUnsettledValueNanos]);
  }
  assert.deepEqual(
    board.rows.map((row: any) => row.rank),
    [1, 2],
  );
  assert.equal((await venue.get(`/api/v1/settlement/leaderboard/${RUN}`)).status, 401, 'public means any authenticated principal');
  const inventory = await venue.get('/api/v1/data/availability', TOKENS.viewer);
  const row = inventory.json.reads.find((r: any) => r.endpoint === 'GET /api/v1/settlement/leaderboard/{scenarioRunId}');
  assert.deepEqual([row?.sourceType, row?.requiredFilters], ['durable-facts', ['scenarioRunId']]);
});

test('after a restart every view replays to the same answer, and materialization still appends nothing', async () => {
  const names = [...VIEWS.filter((name) => name !== 'score'), 'leaderboard'];
  const asOf = `?asOf=${encodeURIComponent(new Date().toISOString())}`;
  const snapshot = async (): Promise<HttpAnswer[]> => Promise.all(names.map((name) => read(name, TOKENS.operator, name === 'leaderboard' ? asOf : '')));
  const before = await snapshot();
  const score = await read('score', TOKENS.operator, asOf);
  assert.equal(await venue.stop(), 0);
  venue = await VenueProcess.start({ ...ENV, DATA_DIR: dataDir });
  const after = await snapshot();
  for (let k = 0; k < names.length; k++) assert.equal(after[k]!.text, before[k]!.text, names[k]);
  assert.equal((await read('score', TOKENS.operator, asOf)).text, score.text);
  const again = await ok('obligations/materialize', { scenarioRunId: RUN }, 'SettlementMaterialized');
  assert.equal(again.factsAppended, 0);
});
