// The settlement domain, pure: the instant chain in the specification's order, breaks
// and repairs, clearing rejection, forced finality, reversals, every rule of the
// specification's "Rules" list, causation gaps, the checksum, the score, and a
// property test over random trades and positions.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { SeededRandom } from '../../bench/lib/seeded-random.ts';
import { deterministicId, FACT, PROFILE_INSTANT, PROFILE_OPS, trailChecksum, type Fact } from '../../core/settlement/facts.ts';
import { replay, type SettlementState } from '../../core/settlement/state.ts';
import { exceptionsView, factsView, ledgerView, obligationsView, proofView, scoreView } from '../../core/settlement/views.ts';
import { forceSettle, materialize, repairCash, repairSecurity, reverseLedgerEntry, type Decision, type TradeForSettlement } from '../../core/settlement/workflow.ts';

const RUN = 'run-test';
const BUYER = { participantId: 'b0000000-0000-4000-8000-000000000001', accountId: 'b0000000-0000-4000-8000-0000000000a1' };
const SELLER = { participantId: 'c0000000-0000-4000-8000-000000000001', accountId: 'c0000000-0000-4000-8000-0000000000a1' };
const INSTRUMENT = 'd0000000-0000-4000-8000-000000000001';
const NOW = 1_795_300_000_000_000; // µs

function trade(n: number, overrides: Partial<TradeForSettlement> = {}): TradeForSettlement {
  return {
    tradeId: `e0000000-0000-4000-8000-${String(n).padStart(12, '0')}`,
    instrumentId: INSTRUMENT,
    buyParticipantId: BUYER.participantId,
    buyAccountId: BUYER.accountId,
    sellParticipantId: SELLER.participantId,
    sellAccountId: SELLER.accountId,
    quantityUnits: '10',
    priceNanos: '101250000000', // 101.25
    currency: 'USD',
    venueSessionId: 'session-1',
    ...overrides,
  };
}

const instant = () => ({ profile: PROFILE_INSTANT, source: 'request' });

/** The facts of an operation the state accepts (a refusal fails the test, with its code and message). */
function appended(decision: Decision): Fact[] {
  assert.ok(decision.ok, decision.ok ? '' : `refused: ${decision.error.code} ${decision.error.message}`);
  return decision.value;
}

/** Operator-posted facts (seeds, injections) appended to a state. */
function post(state: SettlementState, facts: { factType: string; payload: Record<string, unknown> }[]): void {
  const all = [...state.facts];
  for (const f of facts) {
    all.push({ scenarioRunId: RUN, origin: 'operator', sequence: all.length + 1, factId: crypto.randomUUID(), factType: f.factType, occurredAtUs: NOW, causationId: null, payload: f.payload });
  }
  const fresh = replay(RUN, all);
  Object.assign(state, fresh);
}

const seed = (party: typeof BUYER, assetType: 'CASH' | 'SECURITY', asset: string, amount: string) => ({
  factType: FACT.RESOURCE_POSITION_SEEDED,
  payload: { ...party, assetType, asset, amount },
});

const typesOf = (facts: Fact[]) => facts.map((fact) => fact.factType);
const CHAIN_HEAD = [
  FACT.OBLIGATION_CREATED,
  FACT.ALLOCATION_PROPOSED,
  FACT.CONFIRMATION_GENERATED,
  FACT.AFFIRMATION_ACCEPTED,
  FACT.CLEARING_SUBMITTED,
  FACT.CLEARING_ACCEPTED,
  FACT.NOVATION_RECORDED,
  FACT.INSTRUCTION_CREATED,
  FACT.ATTEMPT_STARTED,
];

test('instant-post-trade-v1 runs the whole chain in the specification order, with four ledger entries and a CLEAN proof', () => {
  const state = replay(RUN, []);
  const facts = appended(materialize(state, [trade(1)], instant, NOW));
  assert.deepEqual(typesOf(facts), [
    ...CHAIN_HEAD,
    FACT.CASH_LEG_SUCCEEDED,
    FACT.SECURITY_LEG_SUCCEEDED,
    FACT.LEDGER_ENTRY_POSTED,
    FACT.LEDGER_ENTRY_POSTED,
    FACT.LEDGER_ENTRY_POSTED,
    FACT.LEDGER_ENTRY_POSTED,
    FACT.SETTLED,
  ]);
  for (let k = 1; k < facts.length; k++) assert.equal(facts[k]!.causationId, facts[k - 1]!.factId, 'each fact names the one it follows');
  assert.equal(facts[0]!.causationId, null);
  for (const fact of facts) assert.equal(fact.payload.tradeId, trade(1).tradeId, 'every fact carries its tradeId and obligationId');
  const ledger = ledgerView(state, null);
  const amount = String(101_250_000_000n * 10n);
  assert.deepEqual(
    ledger.entries.map((e) => [e.participantId, e.assetType, e.asset, e.direction, e.amount]),
    [
      [BUYER.participantId, 'CASH', 'USD', 'DEBIT', amount],
      [SELLER.participantId, 'CASH', 'USD', 'CREDIT', amount],
      [SELLER.participantId, 'SECURITY', INSTRUMENT, 'DEBIT', '10'],
      [BUYER.participantId, 'SECURITY', INSTRUMENT, 'CREDIT', '10'],
    ],
  );
  assert.deepEqual(obligationsView(state, null).obligations[0]!.cashAmountNanos, '1012500000000');
  assert.equal(obligationsView(state, null).obligations[0]!.state, 'SETTLED');
  const proof = proofView(state, null);
  assert.equal(proof.status, 'CLEAN');
  assert.deepEqual(proof.settlementProofRows[0]!.balanced, true);
  assert.equal(proof.attemptIds.length, 1);
});

test('ops-realistic-v1 materializes obligations only; a second materialization appends nothing', () => {
  const state = replay(RUN, []);
  const first = appended(materialize(state, [trade(1), trade(2)], () => ({ profile: PROFILE_OPS, source: 'default' }), NOW));
  assert.deepEqual(typesOf(first), [FACT.OBLIGATION_CREATED, FACT.OBLIGATION_CREATED]);
  assert.deepEqual(
    obligationsView(state, null).obligations.map((o) => o.state),
    ['CREATED', 'CREATED'],
  );
  assert.deepEqual(materialize(state, [trade(1), trade(2)], instant, NOW), { ok: true, value: [] }, 'idempotent: the trades already have obligations');
  assert.equal(proofView(state, null).status, 'CLEAN', 'no finality is claimed, nothing to prove');
});

test('a cash-leg break opens an exception; a repair posts resources, retries, settles and resolves', () => {
  const state = replay(RUN, []);
  post(state, [seed(BUYER, 'CASH', 'USD', '1000000000000')]); // 1,000 USD: 12.50 short
  const facts = appended(materialize(state, [trade(1)], instant, NOW));
  assert.deepEqual(typesOf(facts).slice(-3), [FACT.CASH_LEG_FAILED, FACT.SECURITY_LEG_SUCCEEDED, FACT.BREAK_OPENED]);
  assert.equal(facts.at(-1)!.payload.breakType, 'CASH_LEG');
  assert.equal(facts.at(-1)!.payload.shortfallNanos, '12500000000');
  assert.equal(state.ledger.length, 0, 'no ledger entry without both legs');
  const exceptions = exceptionsView(state, null);
  assert.deepEqual(exceptions.counts, { open: 1, resolved: 0 });
  assert.equal(exceptions.exceptions[0]!.exceptionType, 'CASH_LEG_BREAK');
  assert.equal(exceptions.exceptions[0]!.repairAction, 'POST /admin/v1/settlement/repairs/cash');
  const obligationId = obligationsView(state, null).obligations[0]!.obligationId;
  assert.deepEqual(
    repairSecurity(state, { obligationId, quantityUnits: 5n }, NOW),
    { ok: false, error: { code: 'FACT_CONFLICT', message: `obligation ${obligationId} has no open security-leg break (state BROKEN)` } },
    'no security break to repair',
  );
  assert.deepEqual(repairCash(state, { obligationId, amountNanos: 1n, currency: 'EUR' }, NOW), { ok: false, error: { code: 'VALIDATION_FAILED', message: 'the obligation settles in USD, not EUR' } });
  // Too small a repair: the retry fails again, the break stays open.
  const small = appended(repairCash(state, { obligationId, amountNanos: 2_500_000_000n, currency: 'USD' }, NOW));
  assert.deepEqual(typesOf(small), [FACT.REPAIR_POSTED, FACT.ATTEMPT_STARTED, FACT.CASH_LEG_FAILED, FACT.SECURITY_LEG_SUCCEEDED]);
  assert.equal(obligationsView(state, null).obligations[0]!.state, 'BROKEN');
  const enough = appended(repairCash(state, { obligationId, amountNanos: 10_000_000_000n, currency: 'USD' }, NOW));
  assert.deepEqual(typesOf(enough), [
    FACT.REPAIR_POSTED,
    FACT.ATTEMPT_STARTED,
    FACT.CASH_LEG_SUCCEEDED,
    FACT.SECURITY_LEG_SUCCEEDED,
    FACT.LEDGER_ENTRY_POSTED,
    FACT.LEDGER_ENTRY_POSTED,
    FACT.LEDGER_ENTRY_POSTED,
    FACT.LEDGER_ENTRY_POSTED,
    FACT.SETTLED,
    FACT.RESOLVED,
  ]);
  assert.equal(enough[0]!.causationId, facts.at(-1)!.factId, 'the repair names the break it repairs');
  assert.deepEqual(exceptionsView(state, null).counts, { open: 0, resolved: 1 });
  assert.equal(obligationsView(state, null).obligations[0]!.state, 'RESOLVED');
  assert.equal(proofView(state, null).status, 'CLEAN');
  assert.equal(proofView(state, null).attemptIds.length, 3);
  // The buyer's cash position went 1000 + 2.5 + 10 - 1012.5 = 0.
  assert.equal(state.positions.get(`${BUYER.participantId}|${BUYER.accountId}|CASH|USD`), 0n);
});

test('a security-leg break and its repair', () => {
  const state = replay(RUN, []);
  post(state, [seed(SELLER, 'SECURITY', INSTRUMENT, '4')]);
  const facts = appended(materialize(state, [trade(1)], instant, NOW));
  assert.deepEqual(typesOf(facts).slice(-3), [FACT.CASH_LEG_SUCCEEDED, FACT.SECURITY_LEG_FAILED, FACT.BREAK_OPENED]);
  assert.equal(facts.at(-1)!.payload.shortfallUnits, '6');
  const obligationId = obligationsView(state, null).obligations[0]!.obligationId;
  const repaired = appended(repairSecurity(state, { obligationId, quantityUnits: 6n }, NOW));
  assert.equal(typesOf(repaired).at(-2), FACT.SETTLED);
  assert.equal(typesOf(repaired).at(-1), FACT.RESOLVED);
  assert.equal(exceptionsView(state, null).exceptions[0]!.exceptionType, 'SECURITY_LEG_BREAK');
});

test('a clearing rejection stops the chain and opens an exception; force-settle gives finality recorded as FORCED, not valid under rule 2', () => {
  const state = replay(RUN, []);
  post(state, [{ factType: FACT.FAILURE_INJECTED, payload: { tradeId: trade(1).tradeId, step: 'CLEARING' } }]);
  const facts = appended(materialize(state, [trade(1)], instant, NOW));
  assert.deepEqual(typesOf(facts), [...CHAIN_HEAD.slice(0, 5), FACT.CLEARING_REJECTED]);
  assert.equal(obligationsView(state, null).obligations[0]!.state, 'CLEARING_REJECTED');
  assert.deepEqual(exceptionsView(state, null).counts, { open: 1, resolved: 0 });
  const obligationId = obligationsView(state, null).obligations[0]!.obligationId;
  const forced = appended(forceSettle(state, { obligationId, reason: 'agreed bilaterally' }, NOW));
  assert.deepEqual(typesOf(forced), [FACT.LEDGER_ENTRY_POSTED, FACT.LEDGER_ENTRY_POSTED, FACT.LEDGER_ENTRY_POSTED, FACT.LEDGER_ENTRY_POSTED, FACT.SETTLED, FACT.RESOLVED]);
  assert.equal(forced[4]!.payload.finality, 'FORCED');
  const proof = proofView(state, null);
  const row = proof.settlementProofRows[0]!;
  assert.deepEqual([row.settled, row.balanced, row.cashLegSucceeded, row.securityLegSucceeded, row.finality, row.valid], [true, true, false, false, 'FORCED', false]);
  assert.deepEqual(proof.causationGaps, []);
  assert.equal(proof.status, 'GAPPED', 'a settled row without both leg outcomes is not valid, so the proof is not CLEAN');
  assert.equal(proof.profileEvidence[0]!.finality, 'FORCED');
  assert.deepEqual(forceSettle(state, { obligationId, reason: 'again' }, NOW), { ok: false, error: { code: 'FACT_CONFLICT', message: `obligation ${obligationId} is already settled` } });
});

test('rule 1: SettlementSettled (by ledger proof) only ever follows two successful legs', () => {
  const state = replay(RUN, []);
  post(state, [seed(BUYER, 'CASH', 'USD', '1500000000000')]);
  appended(materialize(state, [trade(1), trade(2)], instant, NOW)); // the first settles, the second breaks (cash spent)
  for (const fact of state.facts.filter((f) => f.factType === FACT.SETTLED && f.payload.finality === 'LEDGER_PROOF')) {
    const before = state.facts.filter((f) => f.sequence < fact.sequence && f.payload.obligationId === fact.payload.obligationId);
    const lastCash = before.filter((f) => f.factType === FACT.CASH_LEG_SUCCEEDED || f.factType === FACT.CASH_LEG_FAILED).at(-1);
    const lastSecurity = before.filter((f) => f.factType === FACT.SECURITY_LEG_SUCCEEDED || f.factType === FACT.SECURITY_LEG_FAILED).at(-1);
    assert.equal(lastCash?.factType, FACT.CASH_LEG_SUCCEEDED);
    assert.equal(lastSecurity?.factType, FACT.SECURITY_LEG_SUCCEEDED);
  }
  assert.deepEqual(
    obligationsView(state, null).obligations.map((o) => o.state),
    ['SETTLED', 'BROKEN'],
  );
});

test('rule 2: a force-settled cash break has one succeeded leg and is still not valid', () => {
  const state = replay(RUN, []);
  post(state, [seed(BUYER, 'CASH', 'USD', '1')]);
  appended(materialize(state, [trade(1)], instant, NOW));
  const obligationId = obligationsView(state, null).obligations[0]!.obligationId;
  appended(forceSettle(state, { obligationId, reason: 'funds arrive outside the venue' }, NOW));
  const row = proofView(state, null).settlementProofRows[0]!;
  assert.deepEqual([row.balanced, row.cashLegSucceeded, row.securityLegSucceeded, row.finality, row.valid], [true, false, true, 'FORCED', false]);
  assert.equal(proofView(state, null).status, 'GAPPED');
});

test('a forced trail gives the same proof and checksum however it is reached: written, replayed, or written again', () => {
  const forcedRun = () => {
    const state = replay(RUN, []);
    appended(materialize(state, [trade(1)], () => ({ profile: PROFILE_OPS, source: 'default' }), NOW));
    appended(forceSettle(state, { obligationId: obligationsView(state, null).obligations[0]!.obligationId, reason: 'agreed' }, NOW));
    return state;
  };
  const written = forcedRun();
  const proof = proofView(written, null);
  assert.equal(proof.status, 'GAPPED');
  assert.equal(proof.checksum, trailChecksum(written.facts), 'the checksum covers the trail, not the verdict');
  assert.deepEqual(proofView(replay(RUN, written.facts), null), proof);
  assert.deepEqual(proofView(forcedRun(), null), proof);
});

test('rule 2: an unsettled row is not valid (no SettlementSettled) and leaves the status alone', () => {
  const state = replay(RUN, []);
  post(state, [seed(BUYER, 'CASH', 'USD', '1')]);
  appended(materialize(state, [trade(1)], () => ({ profile: PROFILE_OPS, source: 'default' }), NOW));
  appended(materialize(state, [trade(2)], instant, NOW)); // breaks: the cash is not there
  const proof = proofView(state, null);
  assert.deepEqual(
    proof.settlementProofRows.map((row) => [row.settled, row.finality, row.valid]),
    [
      [false, null, false],
      [false, null, false],
    ],
  );
  assert.equal(proof.status, 'CLEAN', 'only settled rows must be valid');
});

test('rule 2: a settlement claimed without a balanced ledger is GAPPED; reversals unbalance until both sides are reversed', () => {
  const state = replay(RUN, []);
  appended(materialize(state, [trade(1)], () => ({ profile: PROFILE_OPS, source: 'default' }), NOW));
  const obligationId = obligationsView(state, null).obligations[0]!.obligationId;
  // An operator posts a finality claim with no ledger behind it.
  const claimed = replay(RUN, [
    ...state.facts,
    {
      scenarioRunId: RUN,
      origin: 'operator',
      sequence: state.lastSequence + 1,
      factId: crypto.randomUUID(),
      factType: FACT.SETTLED,
      occurredAtUs: NOW,
      causationId: null,
      payload: { obligationId, tradeId: trade(1).tradeId },
    },
  ]);
  assert.equal(proofView(claimed, null).status, 'GAPPED');
  assert.equal(proofView(claimed, null).settlementProofRows[0]!.valid, false);
  assert.equal(proofView(claimed, null).settlementProofRows[0]!.finality, null, 'no legs and no ledger: no finality is claimed');

  const settled = replay(RUN, []);
  appended(materialize(settled, [trade(1)], instant, NOW));
  assert.equal(proofView(settled, null).status, 'CLEAN');
  const entries = ledgerView(settled, null).entries;
  appended(reverseLedgerEntry(settled, { ledgerEntryId: entries[0]!.ledgerEntryId, reason: 'booked twice' }, NOW));
  assert.equal(proofView(settled, null).status, 'GAPPED', 'one side reversed: cash debits and credits differ');
  assert.deepEqual(reverseLedgerEntry(settled, { ledgerEntryId: entries[0]!.ledgerEntryId, reason: 'again' }, NOW), {
    ok: false,
    error: { code: 'FACT_CONFLICT', message: `ledger entry ${entries[0]!.ledgerEntryId} is already reversed` },
  });
  const reversal = ledgerView(settled, null).entries.at(-1)!;
  assert.equal(reversal.reversesEntryId, entries[0]!.ledgerEntryId);
  assert.equal(reversal.direction, 'CREDIT');
  assert.deepEqual(reverseLedgerEntry(settled, { ledgerEntryId: reversal.ledgerEntryId, reason: 'x' }, NOW), {
    ok: false,
    error: { code: 'FACT_CONFLICT', message: `ledger entry ${reversal.ledgerEntryId} is itself a reversal` },
  });
  for (const entry of entries.slice(1)) reverseLedgerEntry(settled, { ledgerEntryId: entry.ledgerEntryId, reason: 'unwind' }, NOW);
  assert.equal(proofView(settled, null).status, 'CLEAN', 'every entry reversed: balanced again');
  assert.ok(
    ledgerView(settled, null).balances.every((b) => b.net === '0'),
    'nothing deleted, everything compensated',
  );
  assert.equal(settled.ledger.length, 8);
});

test('refusals are codes and messages: an unknown obligation or entry, and a fact id the trail holds already', () => {
  const state = replay(RUN, []);
  const unknown = 'a0000000-0000-4000-8000-00000000dead';
  const notFound = { ok: false, error: { code: 'NOT_FOUND', message: `obligation ${unknown} is not in scenario run ${RUN}` } };
  assert.deepEqual(repairCash(state, { obligationId: unknown, amountNanos: 1n, currency: 'USD' }, NOW), notFound);
  assert.deepEqual(repairSecurity(state, { obligationId: unknown, quantityUnits: 1n }, NOW), notFound);
  assert.deepEqual(forceSettle(state, { obligationId: unknown, reason: 'x' }, NOW), notFound);
  assert.deepEqual(reverseLedgerEntry(state, { ledgerEntryId: unknown, reason: 'x' }, NOW), {
    ok: false,
    error: { code: 'NOT_FOUND', message: `ledger entry ${unknown} is not in scenario run ${RUN}` },
  });
  // An operator fact that took the id of a fact the chain writes: the materialization is refused, not thrown.
  const taken = deterministicId(RUN, trade(1).tradeId, 'obligation-created');
  const held = replay(RUN, [{ scenarioRunId: RUN, origin: 'operator', sequence: 1, factId: taken, factType: 'SettlementNoteRecorded', occurredAtUs: NOW, causationId: null, payload: {} }]);
  assert.deepEqual(materialize(held, [trade(1)], instant, NOW), {
    ok: false,
    error: { code: 'FACT_CONFLICT', message: `fact ${taken} (${trade(1).tradeId} obligation-created) already exists` },
  });
});

test('causation gaps are found: a missing cause, a cause that is not earlier, a fact naming an unknown obligation', () => {
  const state = replay(RUN, []);
  appended(materialize(state, [trade(1)], instant, NOW));
  const facts = state.facts.map((fact) => ({ ...fact }));
  facts[3] = { ...facts[3]!, causationId: null };
  facts[5] = { ...facts[5]!, causationId: deterministicId('nowhere') };
  facts.push({
    scenarioRunId: RUN,
    origin: 'service',
    sequence: facts.length + 1,
    factId: crypto.randomUUID(),
    factType: FACT.ALLOCATION_PROPOSED,
    occurredAtUs: NOW,
    causationId: facts[0]!.factId,
    payload: { obligationId: 'unknown' },
  });
  const proof = proofView(replay(RUN, facts), null);
  assert.equal(proof.status, 'GAPPED');
  const gaps = proof.causationGaps as { sequence: number; problem: string }[];
  assert.deepEqual(
    gaps.map((g) => g.sequence),
    [4, 6, facts.length],
  );
  assert.match(gaps[0]!.problem, /no causationId/);
  assert.match(gaps[1]!.problem, /not an earlier fact/);
  assert.match(gaps[2]!.problem, /does not hold/);
  // Operator-posted facts need no cause.
  const seeded = replay(RUN, []);
  post(seeded, [seed(BUYER, 'CASH', 'USD', '1'), { factType: 'SettlementNoteRecorded', payload: { note: 'desk handover' } }]);
  const noted = proofView(seeded, null);
  assert.equal(noted.status, 'CLEAN', 'a fact of a type the venue does not act on, naming no obligation, is kept and counted');
  assert.equal(noted.factCounts.SettlementNoteRecorded, 1);
  // A chain fact naming no obligation at all is an anomaly.
  post(seeded, [{ factType: FACT.SETTLED, payload: { finality: 'FORCED' } }]);
  assert.deepEqual(
    (proofView(seeded, null).causationGaps as { problem: string }[]).map((g) => g.problem),
    ['names obligation (none) that the trail does not hold'],
  );
});

test('the checksum is the same for the same trail and changes with any change to a fact', () => {
  const a = replay(RUN, []);
  post(a, [seed(SELLER, 'SECURITY', INSTRUMENT, '15')]);
  appended(materialize(a, [trade(1), trade(2)], instant, NOW));
  const b = replay(RUN, []);
  post(b, []);
  const again = replay(RUN, a.facts);
  assert.equal(proofView(again, null).checksum, proofView(a, null).checksum);
  assert.equal(trailChecksum(a.facts), proofView(a, null).checksum);
  assert.match(proofView(a, null).checksum, /^[0-9a-f]{64}$/);
  const changes: ((facts: Fact[]) => void)[] = [
    (facts) => (facts[4] = { ...facts[4]!, occurredAtUs: facts[4]!.occurredAtUs + 1 }),
    (facts) => (facts[4] = { ...facts[4]!, payload: { ...facts[4]!.payload, extra: 1 } }),
    (facts) => (facts[2] = { ...facts[2]!, factType: 'SettlementSomethingElse' }),
    (facts) => (facts[6] = { ...facts[6]!, causationId: null }),
    (facts) => (facts[0] = { ...facts[0]!, origin: 'service' }),
  ];
  for (const change of changes) {
    const facts = a.facts.map((fact) => ({ ...fact }));
    change(facts);
    assert.notEqual(trailChecksum(facts), proofView(a, null).checksum);
  }
  // Deterministic ids: the same scenario over the same trades writes the same facts.
  const c = replay(RUN, []);
  appended(materialize(c, [trade(1), trade(2)], instant, NOW));
  const d = replay(RUN, []);
  appended(materialize(d, [trade(1), trade(2)], instant, NOW));
  assert.deepEqual(
    c.facts.map((f) => f.factId),
    d.facts.map((f) => f.factId),
  );
  assert.equal(trailChecksum(c.facts), trailChecksum(d.facts));
});

test('score: pending and haircut values, blocked value, fails, aged fails, repairs pending, daily penalties', () => {
  const state = replay(RUN, []);
  post(state, [seed(BUYER, 'CASH', 'USD', '0')]);
  appended(materialize(state, [trade(1)], instant, NOW));
  const amount = 1_012_500_000_000n;
  const early = scoreView(state, null, NOW + 10 * 1_000_000, 60);
  const buyer = early.participants.find((p) => p.participantId === BUYER.participantId)!;
  const seller = early.participants.find((p) => p.participantId === SELLER.participantId)!;
  assert.deepEqual(
    [buyer.pendingValueNanos, buyer.haircutAdjustedPendingValueNanos, buyer.blockedUnsettledValueNanos, buyer.failCount, buyer.agedFailCount, buyer.repairPendingCount],
    [String(amount), String((amount * 5_000n) / 10_000n), String(amount), 1, 0, 1],
  );
  // 1 bp of 1012.50 USD a day is 0.10 USD: at least one point per failing day.
  assert.equal(buyer.penaltyPoints, 1);
  assert.deepEqual([seller.failCount, seller.blockedUnsettledValueNanos, seller.pendingValueNanos], [0, '0', String(amount)]);
  const late = scoreView(state, null, NOW + 3 * 86_400 * 1_000_000 + 1, 60);
  const lateBuyer = late.participants.find((p) => p.participantId === BUYER.participantId)!;
  assert.deepEqual([lateBuyer.agedFailCount, lateBuyer.penaltyPoints], [1, 4], 'a fail into its fourth day is aged and has accrued four daily penalties');
  const obligationId = obligationsView(state, null).obligations[0]!.obligationId;
  appended(repairCash(state, { obligationId, amountNanos: amount, currency: 'USD' }, NOW + 86_400 * 1_000_000));
  const after = scoreView(state, null, NOW + 10 * 86_400 * 1_000_000, 60).participants.find((p) => p.participantId === BUYER.participantId)!;
  assert.deepEqual(
    [after.pendingValueNanos, after.blockedUnsettledValueNanos, after.repairPendingCount, after.agedFailCount, after.failCount, after.penaltyPoints],
    ['0', '0', 0, 0, 1, 1],
    'resolved after one day: one day of penalty stays',
  );
  assert.deepEqual(after.settledBalances, [
    { assetType: 'CASH', asset: 'USD', amount: String(-amount) },
    { assetType: 'SECURITY', asset: INSTRUMENT, amount: '10' },
  ]);
});

test("views narrow to a trader's participants", () => {
  const other = { participantId: 'f0000000-0000-4000-8000-000000000001', accountId: 'f0000000-0000-4000-8000-0000000000a1' };
  const state = replay(RUN, []);
  appended(
    materialize(
      state,
      [trade(1), trade(2, { buyParticipantId: other.participantId, buyAccountId: other.accountId, sellParticipantId: other.participantId, sellAccountId: other.accountId })],
      instant,
      NOW,
    ),
  );
  const mine = new Set([BUYER.participantId]);
  assert.equal(obligationsView(state, mine).obligations.length, 1);
  assert.ok(ledgerView(state, mine).entries.every((e) => e.participantId === BUYER.participantId));
  assert.ok(factsView(state, mine).facts.every((f) => f.payload.tradeId === trade(1).tradeId));
  assert.ok(scoreView(state, mine, NOW, 60).participants.every((p) => p.participantId === BUYER.participantId));
  assert.equal(proofView(state, mine).tradeIds.length, 1);
});

test('property: random trades and positions: the ledger balances per asset, nothing settles without both legs, replay reproduces every view', () => {
  const parties = Array.from({ length: 4 }, (_, k) => ({ participantId: `a${k}000000-0000-4000-8000-000000000001`, accountId: `a${k}000000-0000-4000-8000-0000000000a1` }));
  const instruments = [INSTRUMENT, 'd0000000-0000-4000-8000-000000000002'];
  for (let run = 0; run < 40; run++) {
    const random = new SeededRandom(20261122 + run);
    const state = replay(RUN, []);
    const seeds = [];
    for (const party of parties) {
      if (random.below(2) === 0) seeds.push(seed(party, 'CASH', 'USD', String(BigInt(random.below(50)) * 1_000_000_000_000n)));
      for (const instrument of instruments) if (random.below(2) === 0) seeds.push(seed(party, 'SECURITY', instrument, String(random.below(40))));
    }
    post(state, seeds);
    const trades = Array.from({ length: 30 }, (_, k) => {
      const buyer = parties[random.below(4)]!;
      let seller = parties[random.below(4)]!;
      if (seller === buyer) seller = parties[(parties.indexOf(buyer) + 1) % 4]!;
      return trade(run * 100 + k, {
        buyParticipantId: buyer.participantId,
        buyAccountId: buyer.accountId,
        sellParticipantId: seller.participantId,
        sellAccountId: seller.accountId,
        instrumentId: instruments[random.below(2)]!,
        quantityUnits: String(1 + random.below(9)),
        priceNanos: String((90 + random.below(20)) * 1_000_000_000 + random.below(1_000_000_000)),
      });
    });
    appended(materialize(state, trades, instant, NOW));
    // Repair a few breaks, force one, reverse one entry pair.
    for (const o of [...state.obligations.values()].filter((x) => x.state === 'BROKEN').slice(0, 3)) {
      if (o.openBreaks.has('CASH_LEG')) appended(repairCash(state, { obligationId: o.obligationId, amountNanos: o.cashAmountNanos, currency: 'USD' }, NOW));
      if (state.obligations.get(o.obligationId)!.openBreaks.has('SECURITY_LEG')) appended(repairSecurity(state, { obligationId: o.obligationId, quantityUnits: o.quantityUnits }, NOW));
    }
    const stillBroken = [...state.obligations.values()].find((x) => x.state === 'BROKEN');
    if (stillBroken) appended(forceSettle(state, { obligationId: stillBroken.obligationId, reason: 'property' }, NOW));

    const sums = new Map<string, bigint>();
    for (const entry of state.ledger) sums.set(entry.asset, (sums.get(entry.asset) ?? 0n) + (entry.direction === 'DEBIT' ? entry.amount : -entry.amount));
    for (const [asset, sum] of sums) assert.equal(sum, 0n, `run ${run}: debits equal credits for ${asset}`);
    for (const o of state.obligations.values()) {
      if (o.finality === 'LEDGER_PROOF') assert.ok(o.cashLeg && o.securityLeg, `run ${run}: ${o.tradeId} settled with both legs`);
      if (o.settled) assert.ok(state.ledger.some((e) => e.obligationId === o.obligationId));
    }
    for (const key of state.constrained) {
      const held = state.positions.get(key)!;
      const forcedTouch = [...state.obligations.values()].some((o) => o.finality === 'FORCED');
      if (!forcedTouch) assert.ok(held >= 0n, `run ${run}: a constrained position never goes below zero without a forced settlement`);
    }
    const forced = [...state.obligations.values()].some((o) => o.finality === 'FORCED');
    assert.equal(proofView(state, null).status, forced ? 'GAPPED' : 'CLEAN', `run ${run}: only a forced settlement is not valid`);
    const invalid = proofView(state, null).settlementProofRows.filter((row) => row.settled && !row.valid);
    assert.ok(
      invalid.every((row) => row.finality === 'FORCED'),
      `run ${run}: every settled row but a forced one is valid`,
    );
    const again = replay(RUN, state.facts);
    for (const view of [obligationsView, ledgerView, exceptionsView, proofView, factsView] as const) {
      assert.deepEqual(view(again, null), view(state, null), `run ${run}: replay reproduces ${view.name}`);
    }
    assert.deepEqual(scoreView(again, null, NOW + 7_200_000_000, 600), scoreView(state, null, NOW + 7_200_000_000, 600));
  }
});
