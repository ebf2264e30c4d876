// The settlement state of one scenario run, computed by replaying its facts in
// sequence order. Every view (obligations, ledger, exceptions, proof, score) reads
// this state; the workflows append facts through the same applyFact, so what they
// decide and what a replay sees can never differ.

import { FACT, type Fact } from './facts.ts';

export type ObligationStateName =
  | 'CREATED'
  | 'ALLOCATED'
  | 'CONFIRMED'
  | 'AFFIRMED'
  | 'CLEARING_SUBMITTED'
  | 'CLEARED'
  | 'CLEARING_REJECTED'
  | 'NOVATED'
  | 'INSTRUCTED'
  | 'ATTEMPTING'
  | 'BROKEN'
  | 'REPAIR_POSTED'
  | 'SETTLED'
  | 'RESOLVED';

export type AssetType = 'CASH' | 'SECURITY';
export type Leg = 'CASH_LEG' | 'SECURITY_LEG';
export type Finality = 'LEDGER_PROOF' | 'FORCED';

export interface Party {
  participantId: string;
  accountId: string;
}

export interface Obligation {
  obligationId: string;
  tradeId: string;
  buyer: Party;
  seller: Party;
  instrumentId: string;
  quantityUnits: bigint;
  priceNanos: bigint;
  cashAmountNanos: bigint;
  currency: string;
  profile: string;
  profileSource: string;
  state: ObligationStateName;
  createdSequence: number;
  createdAtUs: number;
  /** The last fact of this obligation's chain: what the next one names as its cause. */
  lastFactId: string;
  attempts: number;
  attemptIds: string[];
  /** The leg outcomes of the latest attempt (null before one). */
  cashLeg: boolean | null;
  securityLeg: boolean | null;
  /** Open breaks: leg -> the BreakOpened fact and its exception. */
  openBreaks: Map<Leg, { factId: string; exceptionId: string }>;
  repairs: number;
  settled: boolean;
  finality: Finality | null;
  settledAtUs: number | null;
}

export interface LedgerEntry {
  ledgerEntryId: string;
  obligationId: string;
  tradeId: string;
  participantId: string;
  accountId: string;
  assetType: AssetType;
  asset: string;
  direction: 'DEBIT' | 'CREDIT';
  amount: bigint;
  reversesEntryId: string | null;
  factId: string;
  sequence: number;
}

export type ExceptionType = 'CLEARING_REJECTED' | 'CASH_LEG_BREAK' | 'SECURITY_LEG_BREAK';

export interface SettlementException {
  exceptionId: string;
  obligationId: string;
  tradeId: string;
  exceptionType: ExceptionType;
  /** Who failed: the buyer (cash), the seller (security), or both (clearing). */
  party: 'BUYER' | 'SELLER' | 'BOTH';
  status: 'OPEN' | 'RESOLVED';
  openedAtUs: number;
  resolvedAtUs: number | null;
}

export interface SettlementState {
  scenarioRunId: string;
  lastSequence: number;
  facts: Fact[];
  factsById: Map<string, Fact>;
  obligations: Map<string, Obligation>;
  obligationByTrade: Map<string, string>;
  /** participant|account|assetType|asset -> available amount (seeds, repairs, ledger movements). */
  positions: Map<string, bigint>;
  /** Keys with a seeded position: only those constrain a leg. */
  constrained: Set<string>;
  ledger: LedgerEntry[];
  ledgerById: Map<string, LedgerEntry>;
  reversed: Set<string>;
  exceptions: Map<string, SettlementException>;
  /** Trades whose clearing is made to fail. */
  clearingFailures: Set<string>;
  factCounts: Map<string, number>;
  /** Facts that named something the trail does not hold (they are kept, and the proof reports them). */
  anomalies: { factId: string; sequence: number; problem: string }[];
}

export function positionKey(participantId: string, accountId: string, assetType: AssetType, asset: string): string {
  return `${participantId}|${accountId}|${assetType}|${asset}`;
}

export function emptyState(scenarioRunId: string): SettlementState {
  return {
    scenarioRunId,
    lastSequence: 0,
    facts: [],
    factsById: new Map(),
    obligations: new Map(),
    obligationByTrade: new Map(),
    positions: new Map(),
    constrained: new Set(),
    ledger: [],
    ledgerById: new Map(),
    reversed: new Set(),
    exceptions: new Map(),
    clearingFailures: new Set(),
    factCounts: new Map(),
    anomalies: [],
  };
}

const STEP_STATES: Record<string, ObligationStateName> = {
  [FACT.ALLOCATION_PROPOSED]: 'ALLOCATED',
  [FACT.CONFIRMATION_GENERATED]: 'CONFIRMED',
  [FACT.AFFIRMATION_ACCEPTED]: 'AFFIRMED',
  [FACT.CLEARING_SUBMITTED]: 'CLEARING_SUBMITTED',
  [FACT.CLEARING_ACCEPTED]: 'CLEARED',
  [FACT.NOVATION_RECORDED]: 'NOVATED',
  [FACT.INSTRUCTION_CREATED]: 'INSTRUCTED',
};

const text = (value: unknown): string => (typeof value === 'string' ? value : '');
const amount = (value: unknown): bigint => (typeof value === 'string' && /^-?[0-9]+$/.test(value) ? BigInt(value) : 0n);

function addPosition(state: SettlementState, key: string, delta: bigint): void {
  state.positions.set(key, (state.positions.get(key) ?? 0n) + delta);
}

function openException(state: SettlementState, fact: Fact, obligation: Obligation, exceptionType: ExceptionType, party: SettlementException['party']): string {
  const exceptionId = text(fact.payload.exceptionId) || fact.factId;
  state.exceptions.set(exceptionId, {
    exceptionId,
    obligationId: obligation.obligationId,
    tradeId: obligation.tradeId,
    exceptionType,
    party,
    status: 'OPEN',
    openedAtUs: fact.occurredAtUs,
    resolvedAtUs: null,
  });
  return exceptionId;
}

const KNOWN_TYPES: ReadonlySet<string> = new Set(Object.values(FACT));

/** Applies one fact (the next in sequence) to the state. */
export function applyFact(state: SettlementState, fact: Fact): void {
  if (fact.sequence !== state.lastSequence + 1) throw new Error(`settlement trail out of order: ${fact.sequence} after ${state.lastSequence}`);
  state.lastSequence = fact.sequence;
  state.facts.push(fact);
  state.factsById.set(fact.factId, fact);
  state.factCounts.set(fact.factType, (state.factCounts.get(fact.factType) ?? 0) + 1);
  const p = fact.payload;
  const anomaly = (problem: string): void => {
    state.anomalies.push({ factId: fact.factId, sequence: fact.sequence, problem });
  };

  if (fact.factType === FACT.RESOURCE_POSITION_SEEDED) {
    const assetType = p.assetType === 'SECURITY' ? 'SECURITY' : 'CASH';
    const key = positionKey(text(p.participantId), text(p.accountId), assetType, text(p.asset));
    addPosition(state, key, amount(p.amount));
    state.constrained.add(key);
    return;
  }
  if (fact.factType === FACT.FAILURE_INJECTED) {
    if (p.step === 'CLEARING') state.clearingFailures.add(text(p.tradeId));
    else anomaly(`unknown failure step ${String(p.step)}`);
    return;
  }
  if (fact.factType === FACT.OBLIGATION_CREATED) {
    const obligationId = text(p.obligationId);
    if (state.obligations.has(obligationId)) return anomaly(`obligation ${obligationId} created twice`);
    state.obligations.set(obligationId, {
      obligationId,
      tradeId: text(p.tradeId),
      buyer: { participantId: text(p.buyerParticipantId), accountId: text(p.buyerAccountId) },
      seller: { participantId: text(p.sellerParticipantId), accountId: text(p.sellerAccountId) },
      instrumentId: text(p.instrumentId),
      quantityUnits: amount(p.quantityUnits),
      priceNanos: amount(p.priceNanos),
      cashAmountNanos: amount(p.cashAmountNanos),
      currency: text(p.currency),
      profile: text(p.profile),
      profileSource: text(p.profileSource),
      state: 'CREATED',
      createdSequence: fact.sequence,
      createdAtUs: fact.occurredAtUs,
      lastFactId: fact.factId,
      attempts: 0,
      attemptIds: [],
      cashLeg: null,
      securityLeg: null,
      openBreaks: new Map(),
      repairs: 0,
      settled: false,
      finality: null,
      settledAtUs: null,
    });
    state.obligationByTrade.set(text(p.tradeId), obligationId);
    return;
  }
  const obligation = state.obligations.get(text(p.obligationId));
  if (obligation === undefined) {
    // A fact naming an unknown obligation, or a chain fact naming none, is an anomaly; a fact of a type
    // this venue does not act on and naming no obligation (an operator's note) is just kept and counted.
    if (text(p.obligationId) !== '' || KNOWN_TYPES.has(fact.factType)) anomaly(`names obligation ${text(p.obligationId) || '(none)'} that the trail does not hold`);
    return;
  }
  obligation.lastFactId = fact.factId;
  const step = STEP_STATES[fact.factType];
  if (step !== undefined) {
    obligation.state = step;
    return;
  }
  switch (fact.factType) {
    case FACT.CLEARING_REJECTED:
      obligation.state = 'CLEARING_REJECTED';
      openException(state, fact, obligation, 'CLEARING_REJECTED', 'BOTH');
      return;
    case FACT.ATTEMPT_STARTED:
      obligation.state = 'ATTEMPTING';
      obligation.attempts++;
      obligation.attemptIds.push(text(p.attemptId));
      obligation.cashLeg = null;
      obligation.securityLeg = null;
      return;
    case FACT.CASH_LEG_SUCCEEDED:
    case FACT.CASH_LEG_FAILED:
      obligation.cashLeg = fact.factType === FACT.CASH_LEG_SUCCEEDED;
      if (!obligation.cashLeg && obligation.openBreaks.has('CASH_LEG')) obligation.state = 'BROKEN';
      return;
    case FACT.SECURITY_LEG_SUCCEEDED:
    case FACT.SECURITY_LEG_FAILED:
      obligation.securityLeg = fact.factType === FACT.SECURITY_LEG_SUCCEEDED;
      if (!obligation.securityLeg && obligation.openBreaks.has('SECURITY_LEG')) obligation.state = 'BROKEN';
      return;
    case FACT.LEDGER_ENTRY_POSTED: {
      const entry: LedgerEntry = {
        ledgerEntryId: text(p.ledgerEntryId),
        obligationId: obligation.obligationId,
        tradeId: obligation.tradeId,
        participantId: text(p.participantId),
        accountId: text(p.accountId),
        assetType: p.assetType === 'SECURITY' ? 'SECURITY' : 'CASH',
        asset: text(p.asset),
        direction: p.direction === 'CREDIT' ? 'CREDIT' : 'DEBIT',
        amount: amount(p.amount),
        reversesEntryId: text(p.reversesEntryId) || null,
        factId: fact.factId,
        sequence: fact.sequence,
      };
      if (entry.reversesEntryId !== null) {
        if (!state.ledgerById.has(entry.reversesEntryId)) anomaly(`reverses ledger entry ${entry.reversesEntryId} that the trail does not hold`);
        state.reversed.add(entry.reversesEntryId);
      }
      state.ledger.push(entry);
      state.ledgerById.set(entry.ledgerEntryId, entry);
      addPosition(state, positionKey(entry.participantId, entry.accountId, entry.assetType, entry.asset), entry.direction === 'CREDIT' ? entry.amount : -entry.amount);
      return;
    }
    case FACT.SETTLED:
      obligation.state = 'SETTLED';
      obligation.settled = true;
      obligation.finality = finalityOf(state, obligation, p.finality === 'FORCED');
      obligation.settledAtUs = fact.occurredAtUs;
      return;
    case FACT.BREAK_OPENED: {
      const leg: Leg = p.breakType === 'SECURITY_LEG' ? 'SECURITY_LEG' : 'CASH_LEG';
      const exceptionId = openException(state, fact, obligation, leg === 'CASH_LEG' ? 'CASH_LEG_BREAK' : 'SECURITY_LEG_BREAK', leg === 'CASH_LEG' ? 'BUYER' : 'SELLER');
      obligation.openBreaks.set(leg, { factId: fact.factId, exceptionId });
      obligation.state = 'BROKEN';
      return;
    }
    case FACT.REPAIR_POSTED: {
      const assetType = p.assetType === 'SECURITY' ? 'SECURITY' : 'CASH';
      addPosition(state, positionKey(text(p.participantId), text(p.accountId), assetType, text(p.asset)), amount(p.amount));
      obligation.repairs++;
      obligation.state = 'REPAIR_POSTED';
      return;
    }
    case FACT.RESOLVED: {
      const ids = Array.isArray(p.exceptionIds) ? p.exceptionIds.map(text) : [];
      for (const id of ids) {
        const exception = state.exceptions.get(id);
        if (exception === undefined) anomaly(`resolves exception ${id} that the trail does not hold`);
        else {
          exception.status = 'RESOLVED';
          exception.resolvedAtUs = fact.occurredAtUs;
        }
      }
      obligation.openBreaks.clear();
      obligation.state = 'RESOLVED';
      return;
    }
    default:
      return; // a fact type this venue does not act on: kept and counted
  }
}

/** Debits and credits per asset type of one obligation's ledger entries, reversals included. */
export function proofTotals(state: SettlementState, obligationId: string) {
  let cashDebits = 0n;
  let cashCredits = 0n;
  let securityDebits = 0n;
  let securityCredits = 0n;
  for (const entry of state.ledger) {
    if (entry.obligationId !== obligationId) continue;
    const debit = entry.direction === 'DEBIT';
    if (entry.assetType === 'CASH') {
      if (debit) cashDebits += entry.amount;
      else cashCredits += entry.amount;
    } else if (debit) securityDebits += entry.amount;
    else securityCredits += entry.amount;
  }
  const any = cashDebits + cashCredits + securityDebits + securityCredits > 0n;
  return { cashDebits, cashCredits, securityDebits, securityCredits, balanced: any && cashDebits === cashCredits && securityDebits === securityCredits };
}

/**
 * The finality a SettlementSettled claims: FORCED when an operator forced it, LEDGER_PROOF only
 * when both legs succeeded and the ledger balanced at that point, else none (rule 2: without a
 * balanced proof no finality is claimed).
 */
function finalityOf(state: SettlementState, obligation: Obligation, forced: boolean): Finality | null {
  if (forced) return 'FORCED';
  const legsSucceeded = obligation.cashLeg === true && obligation.securityLeg === true;
  return legsSucceeded && proofTotals(state, obligation.obligationId).balanced ? 'LEDGER_PROOF' : null;
}

export function replay(scenarioRunId: string, facts: readonly Fact[]): SettlementState {
  const state = emptyState(scenarioRunId);
  for (const fact of facts) applyFact(state, fact);
  return state;
}

/** The open exceptions of an obligation. */
export function openExceptionsOf(state: SettlementState, obligationId: string): string[] {
  return [...state.exceptions.values()].filter((e) => e.obligationId === obligationId && e.status === 'OPEN').map((e) => e.exceptionId);
}
