// The settlement reads, as pure functions of a replayed state: facts, obligations,
// ledger (balances and per-settlement proof totals), exceptions, the replay proof
// with its checksum, and the participant score (with the leaderboard built on it).
// Amounts are strings of integers (nanos for cash, units for securities).
//
// `visible` (a set of participantIds, or null for everything) narrows the rows to a
// trader's own participants.

import { occurredAtOf } from '../outcome-format.ts';
import { ROOT_FACT_TYPES, trailChecksum } from './facts.ts';
import { proofTotals, type Obligation, type SettlementException, type SettlementState } from './state.ts';

type Visible = ReadonlySet<string> | null;

const involves = (visible: Visible, o: Obligation) => visible === null || visible.has(o.buyer.participantId) || visible.has(o.seller.participantId);
const ordered = (state: SettlementState) => [...state.obligations.values()].sort((a, b) => a.createdSequence - b.createdSequence);

export function factsView(state: SettlementState, visible: Visible) {
  const mentions = (payload: Record<string, unknown>) => {
    if (visible === null) return true;
    const obligation = state.obligations.get(String(payload.obligationId ?? ''));
    if (obligation !== undefined) return involves(visible, obligation);
    return ['participantId', 'buyerParticipantId', 'sellerParticipantId'].some((key) => visible.has(String(payload[key] ?? '')));
  };
  return {
    scenarioRunId: state.scenarioRunId,
    facts: state.facts
      .filter((fact) => mentions(fact.payload))
      .map((fact) => ({ factId: fact.factId, factType: fact.factType, sequence: fact.sequence, occurredAt: occurredAtOf(fact.occurredAtUs), causationId: fact.causationId, payload: fact.payload })),
  };
}

export function obligationsView(state: SettlementState, visible: Visible) {
  return {
    scenarioRunId: state.scenarioRunId,
    obligations: ordered(state)
      .filter((o) => involves(visible, o))
      .map((o) => ({
        obligationId: o.obligationId,
        tradeId: o.tradeId,
        buyerParticipantId: o.buyer.participantId,
        sellerParticipantId: o.seller.participantId,
        instrumentId: o.instrumentId,
        quantityUnits: String(o.quantityUnits),
        priceNanos: String(o.priceNanos),
        cashAmountNanos: String(o.cashAmountNanos),
        currency: o.currency,
        state: o.state,
      })),
  };
}

interface Balance {
  participantId: string;
  accountId: string;
  assetType: string;
  asset: string;
  debits: bigint;
  credits: bigint;
}

/** Net ledger balances per participant, account and asset, replayed from the entries. */
export function balances(state: SettlementState, visible: Visible): Balance[] {
  const map = new Map<string, Balance>();
  for (const entry of state.ledger) {
    if (visible !== null && !visible.has(entry.participantId)) continue;
    const key = `${entry.participantId}|${entry.accountId}|${entry.assetType}|${entry.asset}`;
    const balance = map.get(key) ?? { participantId: entry.participantId, accountId: entry.accountId, assetType: entry.assetType, asset: entry.asset, debits: 0n, credits: 0n };
    if (entry.direction === 'DEBIT') balance.debits += entry.amount;
    else balance.credits += entry.amount;
    map.set(key, balance);
  }
  return [...map.values()].sort((a, b) => (a.participantId + a.accountId + a.assetType + a.asset < b.participantId + b.accountId + b.assetType + b.asset ? -1 : 1));
}

const renderBalance = (b: Balance) => ({
  participantId: b.participantId,
  accountId: b.accountId,
  assetType: b.assetType,
  asset: b.asset,
  debits: String(b.debits),
  credits: String(b.credits),
  net: String(b.credits - b.debits),
});

function proofRow(state: SettlementState, o: Obligation) {
  const totals = proofTotals(state, o.obligationId);
  // Rule 2, to the letter: balanced, both leg outcomes succeeded, SettlementSettled present. A forced
  // settlement lacks the legs, so its row is not valid and says FORCED.
  const valid = o.settled && totals.balanced && o.cashLeg === true && o.securityLeg === true;
  return {
    obligationId: o.obligationId,
    tradeId: o.tradeId,
    cashDebits: String(totals.cashDebits),
    cashCredits: String(totals.cashCredits),
    securityDebits: String(totals.securityDebits),
    securityCredits: String(totals.securityCredits),
    balanced: totals.balanced,
    cashLegSucceeded: o.cashLeg === true,
    securityLegSucceeded: o.securityLeg === true,
    settled: o.settled,
    finality: o.finality,
    valid,
  };
}

export function ledgerView(state: SettlementState, visible: Visible) {
  return {
    scenarioRunId: state.scenarioRunId,
    entries: state.ledger
      .filter((entry) => visible === null || visible.has(entry.participantId))
      .map((entry) => ({
        ledgerEntryId: entry.ledgerEntryId,
        obligationId: entry.obligationId,
        participantId: entry.participantId,
        accountId: entry.accountId,
        assetType: entry.assetType,
        asset: entry.asset,
        direction: entry.direction,
        amount: String(entry.amount),
        ...(entry.reversesEntryId === null ? {} : { reversesEntryId: entry.reversesEntryId }),
      })),
    balances: balances(state, visible).map(renderBalance),
    proofTotals: ordered(state)
      .filter((o) => involves(visible, o) && state.ledger.some((entry) => entry.obligationId === o.obligationId))
      .map((o) => proofRow(state, o)),
  };
}

const EXCEPTION_RULES: Record<SettlementException['exceptionType'], { severity: string; ownerRole: string; requiredAction: string; repairAction: string | null }> = {
  CLEARING_REJECTED: {
    severity: 'HIGH',
    ownerRole: 'operator',
    requiredAction: 'investigate the clearing rejection; settle by force-settle once resolved with the counterparties',
    repairAction: 'POST /admin/v1/settlement/force-settle',
  },
  CASH_LEG_BREAK: { severity: 'MEDIUM', ownerRole: 'operator', requiredAction: "fund the buyer's cash account, then retry", repairAction: 'POST /admin/v1/settlement/repairs/cash' },
  SECURITY_LEG_BREAK: { severity: 'MEDIUM', ownerRole: 'operator', requiredAction: "deliver the seller's securities, then retry", repairAction: 'POST /admin/v1/settlement/repairs/security' },
};

export function exceptionsView(state: SettlementState, visible: Visible) {
  const rows = [...state.exceptions.values()].filter((e) => involves(visible, state.obligations.get(e.obligationId)!));
  return {
    scenarioRunId: state.scenarioRunId,
    counts: { open: rows.filter((e) => e.status === 'OPEN').length, resolved: rows.filter((e) => e.status === 'RESOLVED').length },
    exceptions: rows.map((e) => {
      const rule = EXCEPTION_RULES[e.exceptionType];
      return {
        exceptionId: e.exceptionId,
        obligationId: e.obligationId,
        exceptionType: e.exceptionType,
        severity: rule.severity,
        ownerRole: rule.ownerRole,
        requiredAction: rule.requiredAction,
        ...(rule.repairAction === null ? {} : { repairAction: rule.repairAction }),
        status: e.status,
      };
    }),
  };
}

/** Facts whose causation is missing or does not point back into the trail. */
export function causationGaps(state: SettlementState) {
  const gaps: { factId: string; factType: string; sequence: number; problem: string }[] = [];
  const seen = new Map<string, number>();
  for (const fact of state.facts) {
    if (fact.causationId === null) {
      if (fact.origin === 'service' && !ROOT_FACT_TYPES.has(fact.factType)) gaps.push({ factId: fact.factId, factType: fact.factType, sequence: fact.sequence, problem: 'no causationId' });
    } else if (!seen.has(fact.causationId)) {
      gaps.push({ factId: fact.factId, factType: fact.factType, sequence: fact.sequence, problem: `causationId ${fact.causationId} is not an earlier fact of this run` });
    }
    seen.set(fact.factId, fact.sequence);
  }
  for (const anomaly of state.anomalies) {
    const fact = state.factsById.get(anomaly.factId)!;
    gaps.push({ factId: fact.factId, factType: fact.factType, sequence: fact.sequence, problem: anomaly.problem });
  }
  return gaps.sort((a, b) => a.sequence - b.sequence);
}

export function proofView(state: SettlementState, visible: Visible) {
  const obligations = ordered(state).filter((o) => involves(visible, o));
  const rows = ordered(state).map((o) => proofRow(state, o));
  const gaps = causationGaps(state);
  // CLEAN: no causation gap, and every settled row valid under rule 2 (an unsettled one claims nothing).
  const clean = gaps.length === 0 && rows.every((row) => !row.settled || row.valid);
  const ids = new Set(obligations.map((o) => o.obligationId));
  return {
    scenarioRunId: state.scenarioRunId,
    status: clean ? 'CLEAN' : 'GAPPED',
    tradeIds: obligations.map((o) => o.tradeId),
    obligationIds: obligations.map((o) => o.obligationId),
    attemptIds: obligations.flatMap((o) => o.attemptIds),
    ledgerEntryIds: state.ledger.filter((e) => ids.has(e.obligationId) && (visible === null || visible.has(e.participantId))).map((e) => e.ledgerEntryId),
    finalBalances: balances(state, visible).map(renderBalance),
    settlementProofRows: rows.filter((row) => ids.has(row.obligationId)),
    profileEvidence: obligations.map((o) => ({ obligationId: o.obligationId, profile: o.profile, source: o.profileSource, finality: o.finality })),
    factCounts: Object.fromEntries([...state.factCounts.entries()].sort(([a], [b]) => (a < b ? -1 : 1))),
    causationGaps: visible === null ? gaps : gaps.length,
    checksum: trailChecksum(state.facts),
  };
}

// ---- score ----

/** Haircut on pending value by how far the obligation is from settling (basis points). */
export const HAIRCUT_BPS: Record<string, number> = {
  CREATED: 200,
  ALLOCATED: 200,
  CONFIRMED: 200,
  AFFIRMED: 200,
  CLEARING_SUBMITTED: 200,
  CLEARED: 100,
  NOVATED: 100,
  INSTRUCTED: 100,
  ATTEMPTING: 100,
  REPAIR_POSTED: 1000,
  BROKEN: 5000,
  CLEARING_REJECTED: 10000,
};
/** CSDR-style daily penalty rates on the failing value (basis points per day). */
export const PENALTY_BPS_PER_DAY = { CASH_LEG_BREAK: 1, SECURITY_LEG_BREAK: 2, CLEARING_REJECTED: 5 } as const;
export const AGED_FAIL_AFTER_SECONDS_DEFAULT = 3600;

const ceilDiv = (a: bigint, b: bigint) => (a + b - 1n) / b;

export function scoreView(state: SettlementState, visible: Visible, asOfUs: number, agedFailAfterSeconds: number) {
  interface Score {
    participantId: string;
    pending: bigint;
    haircutPending: bigint;
    blocked: bigint;
    fails: number;
    aged: number;
    repairPending: number;
    penalty: bigint;
  }
  const scores = new Map<string, Score>();
  const of = (participantId: string) => {
    let score = scores.get(participantId);
    if (score === undefined) {
      score = { participantId, pending: 0n, haircutPending: 0n, blocked: 0n, fails: 0, aged: 0, repairPending: 0, penalty: 0n };
      scores.set(participantId, score);
    }
    return score;
  };
  for (const o of state.obligations.values()) {
    const parties = [o.buyer.participantId, o.seller.participantId];
    for (const participantId of parties) of(participantId);
    if (o.settled || o.state === 'RESOLVED') continue;
    const bps = BigInt(HAIRCUT_BPS[o.state] ?? 0);
    for (const participantId of new Set(parties)) {
      const score = of(participantId);
      score.pending += o.cashAmountNanos;
      score.haircutPending += (o.cashAmountNanos * (10_000n - bps)) / 10_000n;
    }
  }
  for (const e of state.exceptions.values()) {
    const o = state.obligations.get(e.obligationId)!;
    const failing = e.party === 'BUYER' ? [o.buyer.participantId] : e.party === 'SELLER' ? [o.seller.participantId] : [...new Set([o.buyer.participantId, o.seller.participantId])];
    const endUs = e.resolvedAtUs ?? asOfUs;
    const failingSeconds = Math.max(0, (endUs - e.openedAtUs) / 1e6);
    const days = BigInt(Math.max(1, Math.ceil(failingSeconds / 86_400)));
    const dailyPenalty = ceilDiv(o.cashAmountNanos * BigInt(PENALTY_BPS_PER_DAY[e.exceptionType]), 10_000n * 1_000_000_000n); // whole currency units, at least 1
    for (const participantId of failing) {
      const score = of(participantId);
      score.fails++;
      score.penalty += days * (dailyPenalty === 0n ? 1n : dailyPenalty);
      if (e.status === 'OPEN') {
        score.repairPending++;
        score.blocked += o.cashAmountNanos;
        if (failingSeconds > agedFailAfterSeconds) score.aged++;
      }
    }
  }
  const settled = new Map<string, { assetType: string; asset: string; amount: bigint }[]>();
  for (const b of balances(state, null)) {
    const list = settled.get(b.participantId) ?? [];
    const same = list.find((x) => x.assetType === b.assetType && x.asset === b.asset);
    if (same) same.amount += b.credits - b.debits;
    else list.push({ assetType: b.assetType, asset: b.asset, amount: b.credits - b.debits });
    settled.set(b.participantId, list);
  }
  const participants = [...scores.values()]
    .filter((s) => visible === null || visible.has(s.participantId))
    .sort((a, b) => (a.participantId < b.participantId ? -1 : 1))
    .map((s) => ({
      participantId: s.participantId,
      settledBalances: (settled.get(s.participantId) ?? []).map((x) => ({ assetType: x.assetType, asset: x.asset, amount: String(x.amount) })),
      pendingValueNanos: String(s.pending),
      haircutAdjustedPendingValueNanos: String(s.haircutPending),
      blockedUnsettledValueNanos: String(s.blocked),
      failCount: s.fails,
      agedFailCount: s.aged,
      repairPendingCount: s.repairPending,
      penaltyPoints: Number(s.penalty),
    }));
  return { scenarioRunId: state.scenarioRunId, asOf: occurredAtOf(asOfUs), agedFailAfterSeconds, participants };
}

/** The competition leaderboard: fewest penalty points, then fewest fails, then least blocked value. */
export function leaderboardView(state: SettlementState, competitionProfile: string, asOfUs: number, agedFailAfterSeconds: number) {
  const score = scoreView(state, null, asOfUs, agedFailAfterSeconds);
  const ranked = [...score.participants].sort(
    (a, b) =>
      a.penaltyPoints - b.penaltyPoints ||
      a.failCount - b.failCount ||
      (BigInt(a.blockedUnsettledValueNanos) < BigInt(b.blockedUnsettledValueNanos) ? -1 : BigInt(a.blockedUnsettledValueNanos) > BigInt(b.blockedUnsettledValueNanos) ? 1 : 0) ||
      (a.participantId < b.participantId ? -1 : 1),
  );
  return {
    scenarioRunId: state.scenarioRunId,
    competitionProfile,
    asOf: score.asOf,
    rows: ranked.map((p, index) => ({
      rank: index + 1,
      participantId: p.participantId,
      penaltyPoints: p.penaltyPoints,
      failCount: p.failCount,
      agedFailCount: p.agedFailCount,
      blockedUnsettledValueNanos: p.blockedUnsettledValueNanos,
    })),
  };
}
