// The settlement workflows: what facts a materialization, a repair, a forced
// settlement or a reversal appends. Each fact is applied to the state as it is made
// (applyFact), so every decision sees exactly what a replay of the trail would see.
// Ids are name-based from (scenarioRunId, tradeId, step): re-running a scenario
// reproduces them. A request the state refuses is returned as a code and a message
// (core/error-codes.ts); only a broken invariant (a ledger proof that does not balance)
// throws. On a refusal the caller discards the state: it may be changed part of the way.

import { refusal, type Failure, type Outcome } from '../error-codes.ts';
import { deterministicId, FACT, PROFILE_INSTANT, type Fact } from './facts.ts';
import { applyFact, openExceptionsOf, positionKey, proofTotals, type Leg, type Obligation, type SettlementState } from './state.ts';

/** The facts an operation appends, or why it was refused. */
export type Decision = Outcome<Fact[]>;

/** A fact id taken already, met deep in a chain: written() returns it as the operation's refusal. */
class FactIdTaken {
  constructor(readonly error: Failure) {}
}

/** A persisted trade as settlement reads it (runtime.trades). */
export interface TradeForSettlement {
  tradeId: string;
  instrumentId: string;
  buyParticipantId: string;
  buyAccountId: string;
  sellParticipantId: string;
  sellAccountId: string;
  quantityUnits: string;
  priceNanos: string;
  currency: string;
  venueSessionId: string;
}

export interface ResolvedProfile {
  profile: string;
  /** Which rule chose it: scenarioRun, venueSession, request, platform or default. */
  source: string;
}

/** Appends facts to a state: sequence, id, cause and time, then applies each. */
class Writer {
  readonly facts: Fact[] = [];

  constructor(
    private readonly state: SettlementState,
    private readonly nowUs: number,
  ) {}

  emit(type: string, tradeId: string, step: string, causationId: string | null, payload: Record<string, unknown>): Fact {
    const fact: Fact = {
      scenarioRunId: this.state.scenarioRunId,
      origin: 'service',
      sequence: this.state.lastSequence + 1,
      factId: deterministicId(this.state.scenarioRunId, tradeId, step),
      factType: type,
      occurredAtUs: this.nowUs,
      causationId,
      payload,
    };
    if (this.state.factsById.has(fact.factId)) throw new FactIdTaken({ code: 'FACT_CONFLICT', message: `fact ${fact.factId} (${tradeId} ${step}) already exists` });
    applyFact(this.state, fact);
    this.facts.push(fact);
    return fact;
  }

  /** The next fact of an obligation's chain: caused by its last one. */
  chain(obligation: Obligation, type: string, step: string, payload: Record<string, unknown> = {}): Fact {
    return this.emit(type, obligation.tradeId, step, obligation.lastFactId, { obligationId: obligation.obligationId, tradeId: obligation.tradeId, ...payload });
  }
}

const id = (state: SettlementState, tradeId: string, name: string) => deterministicId(state.scenarioRunId, tradeId, name);

/** Runs `work` with a writer: the facts it appended, or the refusal of a fact id taken on the way. */
function written(state: SettlementState, nowUs: number, work: (writer: Writer) => void): Decision {
  const writer = new Writer(state, nowUs);
  try {
    work(writer);
  } catch (error) {
    if (error instanceof FactIdTaken) return { ok: false, error: error.error };
    throw error;
  }
  return { ok: true, value: writer.facts };
}

/**
 * One obligation per trade not yet materialized (gross per trade), in the order given.
 * Under instant-post-trade-v1 each obligation's chain runs to its end (settled, broken
 * or clearing-rejected) before the next trade's. Returns the facts appended, or the refusal
 * of a fact id it would write that the trail holds already.
 */
export function materialize(state: SettlementState, trades: readonly TradeForSettlement[], profileOf: (trade: TradeForSettlement) => ResolvedProfile, nowUs: number): Decision {
  return written(state, nowUs, (writer) => {
    for (const trade of trades) {
      if (state.obligationByTrade.has(trade.tradeId)) continue;
      const { profile, source } = profileOf(trade);
      const quantity = BigInt(trade.quantityUnits);
      const price = BigInt(trade.priceNanos);
      const obligationId = id(state, trade.tradeId, 'obligation');
      writer.emit(FACT.OBLIGATION_CREATED, trade.tradeId, 'obligation-created', null, {
        obligationId,
        tradeId: trade.tradeId,
        buyerParticipantId: trade.buyParticipantId,
        buyerAccountId: trade.buyAccountId,
        sellerParticipantId: trade.sellParticipantId,
        sellerAccountId: trade.sellAccountId,
        instrumentId: trade.instrumentId,
        quantityUnits: String(quantity),
        priceNanos: String(price),
        cashAmountNanos: String(price * quantity), // nanos per unit x units: exact
        currency: trade.currency,
        profile,
        profileSource: source,
      });
      if (profile === PROFILE_INSTANT) runChain(state, writer, state.obligations.get(obligationId)!);
    }
  });
}

function runChain(state: SettlementState, writer: Writer, obligation: Obligation): void {
  writer.chain(obligation, FACT.ALLOCATION_PROPOSED, 'allocation-proposed', { buyerAccountId: obligation.buyer.accountId, sellerAccountId: obligation.seller.accountId });
  writer.chain(obligation, FACT.CONFIRMATION_GENERATED, 'confirmation-generated');
  writer.chain(obligation, FACT.AFFIRMATION_ACCEPTED, 'affirmation-accepted');
  writer.chain(obligation, FACT.CLEARING_SUBMITTED, 'clearing-submitted');
  if (state.clearingFailures.has(obligation.tradeId)) {
    writer.chain(obligation, FACT.CLEARING_REJECTED, 'clearing-rejected', { exceptionId: id(state, obligation.tradeId, 'exception-clearing'), reason: 'clearing rejected (injected failure)' });
    return;
  }
  writer.chain(obligation, FACT.CLEARING_ACCEPTED, 'clearing-accepted');
  writer.chain(obligation, FACT.NOVATION_RECORDED, 'novation-recorded', { centralCounterparty: 'venue-ccp' });
  writer.chain(obligation, FACT.INSTRUCTION_CREATED, 'instruction-created', {
    instructionId: id(state, obligation.tradeId, 'instruction'),
    cashLeg: { from: obligation.buyer, to: obligation.seller, currency: obligation.currency, amountNanos: String(obligation.cashAmountNanos) },
    securityLeg: { from: obligation.seller, to: obligation.buyer, instrumentId: obligation.instrumentId, quantityUnits: String(obligation.quantityUnits) },
  });
  attempt(state, writer, obligation);
}

const buyerCash = (o: Obligation) => positionKey(o.buyer.participantId, o.buyer.accountId, 'CASH', o.currency);
const sellerSecurity = (o: Obligation) => positionKey(o.seller.participantId, o.seller.accountId, 'SECURITY', o.instrumentId);

/** What a constrained position lacks for an amount (0 when unconstrained or enough). */
function shortfall(state: SettlementState, key: string, needed: bigint): bigint {
  if (!state.constrained.has(key)) return 0n;
  const available = state.positions.get(key) ?? 0n;
  return available >= needed ? 0n : needed - available;
}

/** An attempt: both legs checked against the positions; ledger and finality on success, breaks on failure. */
function attempt(state: SettlementState, writer: Writer, obligation: Obligation): void {
  const n = obligation.attempts + 1;
  const attemptId = id(state, obligation.tradeId, `attempt-${n}`);
  writer.chain(obligation, FACT.ATTEMPT_STARTED, `attempt-${n}-started`, { attemptId, attemptNo: n });
  const cashShort = shortfall(state, buyerCash(obligation), obligation.cashAmountNanos);
  const securityShort = shortfall(state, sellerSecurity(obligation), obligation.quantityUnits);
  writer.chain(obligation, cashShort === 0n ? FACT.CASH_LEG_SUCCEEDED : FACT.CASH_LEG_FAILED, `attempt-${n}-cash-leg`, {
    attemptId,
    participantId: obligation.buyer.participantId,
    accountId: obligation.buyer.accountId,
    currency: obligation.currency,
    amountNanos: String(obligation.cashAmountNanos),
    ...(cashShort === 0n ? {} : { shortfallNanos: String(cashShort) }),
  });
  writer.chain(obligation, securityShort === 0n ? FACT.SECURITY_LEG_SUCCEEDED : FACT.SECURITY_LEG_FAILED, `attempt-${n}-security-leg`, {
    attemptId,
    participantId: obligation.seller.participantId,
    accountId: obligation.seller.accountId,
    instrumentId: obligation.instrumentId,
    quantityUnits: String(obligation.quantityUnits),
    ...(securityShort === 0n ? {} : { shortfallUnits: String(securityShort) }),
  });
  if (cashShort === 0n && securityShort === 0n) {
    settle(state, writer, obligation, `attempt-${n}`, { finality: 'LEDGER_PROOF', attemptId });
    return;
  }
  for (const [leg, short, unit] of [
    ['CASH_LEG', cashShort, 'shortfallNanos'],
    ['SECURITY_LEG', securityShort, 'shortfallUnits'],
  ] as const) {
    if (short === 0n || obligation.openBreaks.has(leg)) continue;
    const breaks = [...state.exceptions.values()].filter((e) => e.obligationId === obligation.obligationId).length + 1;
    writer.chain(obligation, FACT.BREAK_OPENED, `break-${leg}-${breaks}`, {
      breakType: leg,
      attemptId,
      exceptionId: id(state, obligation.tradeId, `exception-${leg}-${breaks}`),
      [unit]: String(short),
    });
  }
}

/** Four ledger entries, the proof check, then finality (and the resolution of what was open). */
function settle(state: SettlementState, writer: Writer, obligation: Obligation, stepPrefix: string, settled: Record<string, unknown>): void {
  const { buyer, seller, currency, instrumentId, cashAmountNanos, quantityUnits } = obligation;
  const entries = [
    ['buyer-cash-debit', buyer, 'CASH', currency, 'DEBIT', cashAmountNanos],
    ['seller-cash-credit', seller, 'CASH', currency, 'CREDIT', cashAmountNanos],
    ['seller-security-debit', seller, 'SECURITY', instrumentId, 'DEBIT', quantityUnits],
    ['buyer-security-credit', buyer, 'SECURITY', instrumentId, 'CREDIT', quantityUnits],
  ] as const;
  for (const [role, party, assetType, asset, direction, value] of entries) {
    writer.chain(obligation, FACT.LEDGER_ENTRY_POSTED, `${stepPrefix}-ledger-${role}`, {
      ledgerEntryId: id(state, obligation.tradeId, `${stepPrefix}-ledger-${role}`),
      participantId: party.participantId,
      accountId: party.accountId,
      assetType,
      asset,
      direction,
      amount: String(value),
    });
  }
  const totals = proofTotals(state, obligation.obligationId);
  if (!totals.balanced) throw new Error(`ledger proof of ${obligation.obligationId} does not balance: no finality`);
  writer.chain(obligation, FACT.SETTLED, `${stepPrefix}-settled`, {
    ...settled,
    proof: { cashDebits: String(totals.cashDebits), cashCredits: String(totals.cashCredits), securityDebits: String(totals.securityDebits), securityCredits: String(totals.securityCredits) },
  });
  const open = openExceptionsOf(state, obligation.obligationId);
  if (open.length > 0) writer.chain(obligation, FACT.RESOLVED, `resolved-${obligation.repairs}-${stepPrefix}`, { exceptionIds: open });
}

const noObligation = (state: SettlementState, obligationId: string) => refusal('NOT_FOUND', `obligation ${obligationId} is not in scenario run ${state.scenarioRunId}`);

/** Posts resources for a broken leg (SettlementRepairPosted), then the deterministic retry. */
function repair(state: SettlementState, obligation: Obligation, leg: Leg, post: (o: Obligation) => Record<string, unknown>, nowUs: number): Decision {
  const open = obligation.openBreaks.get(leg);
  if (open === undefined) {
    return refusal('FACT_CONFLICT', `obligation ${obligation.obligationId} has no open ${leg === 'CASH_LEG' ? 'cash-leg' : 'security-leg'} break (state ${obligation.state})`);
  }
  return written(state, nowUs, (writer) => {
    const n = obligation.repairs + 1;
    writer.emit(FACT.REPAIR_POSTED, obligation.tradeId, `repair-${n}`, open.factId, {
      obligationId: obligation.obligationId,
      tradeId: obligation.tradeId,
      repairType: leg === 'CASH_LEG' ? 'CASH' : 'SECURITY',
      exceptionId: open.exceptionId,
      ...post(obligation),
    });
    attempt(state, writer, obligation);
  });
}

export function repairCash(state: SettlementState, request: { obligationId: string; amountNanos: bigint; currency: string }, nowUs: number): Decision {
  const obligation = state.obligations.get(request.obligationId);
  if (obligation === undefined) return noObligation(state, request.obligationId);
  if (request.currency !== obligation.currency) return refusal('VALIDATION_FAILED', `the obligation settles in ${obligation.currency}, not ${request.currency}`);
  return repair(
    state,
    obligation,
    'CASH_LEG',
    (o) => ({ participantId: o.buyer.participantId, accountId: o.buyer.accountId, assetType: 'CASH', asset: o.currency, amount: String(request.amountNanos) }),
    nowUs,
  );
}

export function repairSecurity(state: SettlementState, request: { obligationId: string; quantityUnits: bigint }, nowUs: number): Decision {
  const obligation = state.obligations.get(request.obligationId);
  if (obligation === undefined) return noObligation(state, request.obligationId);
  return repair(
    state,
    obligation,
    'SECURITY_LEG',
    (o) => ({ participantId: o.seller.participantId, accountId: o.seller.accountId, assetType: 'SECURITY', asset: o.instrumentId, amount: String(request.quantityUnits) }),
    nowUs,
  );
}

/** Finality by operator decision: the ledger entries and a SettlementSettled marked FORCED (the proof says so). */
export function forceSettle(state: SettlementState, request: { obligationId: string; reason: string }, nowUs: number): Decision {
  const obligation = state.obligations.get(request.obligationId);
  if (obligation === undefined) return noObligation(state, request.obligationId);
  if (obligation.settled) return refusal('FACT_CONFLICT', `obligation ${request.obligationId} is already settled`);
  return written(state, nowUs, (writer) => settle(state, writer, obligation, 'forced', { finality: 'FORCED', reason: request.reason }));
}

/** A compensating entry: same party, asset and amount, the other direction. Nothing is deleted. */
export function reverseLedgerEntry(state: SettlementState, request: { ledgerEntryId: string; reason: string }, nowUs: number): Decision {
  const entry = state.ledgerById.get(request.ledgerEntryId);
  if (entry === undefined) return refusal('NOT_FOUND', `ledger entry ${request.ledgerEntryId} is not in scenario run ${state.scenarioRunId}`);
  if (entry.reversesEntryId !== null) return refusal('FACT_CONFLICT', `ledger entry ${request.ledgerEntryId} is itself a reversal`);
  if (state.reversed.has(entry.ledgerEntryId)) return refusal('FACT_CONFLICT', `ledger entry ${request.ledgerEntryId} is already reversed`);
  const obligation = state.obligations.get(entry.obligationId);
  if (obligation === undefined) return noObligation(state, entry.obligationId);
  return written(state, nowUs, (writer) => {
    writer.emit(FACT.LEDGER_ENTRY_POSTED, entry.tradeId, `reversal-of-${entry.ledgerEntryId}`, entry.factId, {
      obligationId: obligation.obligationId,
      tradeId: entry.tradeId,
      ledgerEntryId: id(state, entry.tradeId, `reversal-of-${entry.ledgerEntryId}`),
      reversesEntryId: entry.ledgerEntryId,
      participantId: entry.participantId,
      accountId: entry.accountId,
      assetType: entry.assetType,
      asset: entry.asset,
      direction: entry.direction === 'DEBIT' ? 'CREDIT' : 'DEBIT',
      amount: String(entry.amount),
      reason: request.reason,
    });
  });
}
