// Settlement facts: the append-only trail every settlement view is computed from, and
// the pure helpers around it (deterministic ids, canonical serialization, checksum).
// No I/O: the store (persistence/) assigns sequences and keeps the facts.

import { createHash } from 'node:crypto';

export const PROFILE_INSTANT = 'instant-post-trade-v1';
export const PROFILE_OPS = 'ops-realistic-v1';
export const PROFILES = [PROFILE_INSTANT, PROFILE_OPS] as const;
export type Profile = (typeof PROFILES)[number];

/** The fact types the service writes and understands (operators may post any `Settlement*` type; unknown ones are kept and counted). */
export const FACT = {
  OBLIGATION_CREATED: 'SettlementObligationCreated',
  ALLOCATION_PROPOSED: 'SettlementAllocationProposed',
  CONFIRMATION_GENERATED: 'SettlementConfirmationGenerated',
  AFFIRMATION_ACCEPTED: 'SettlementAffirmationAccepted',
  CLEARING_SUBMITTED: 'SettlementClearingSubmitted',
  CLEARING_ACCEPTED: 'SettlementClearingAccepted',
  CLEARING_REJECTED: 'SettlementClearingRejected',
  NOVATION_RECORDED: 'SettlementNovationRecorded',
  INSTRUCTION_CREATED: 'SettlementInstructionCreated',
  ATTEMPT_STARTED: 'SettlementAttemptStarted',
  CASH_LEG_SUCCEEDED: 'SettlementCashLegSucceeded',
  CASH_LEG_FAILED: 'SettlementCashLegFailed',
  SECURITY_LEG_SUCCEEDED: 'SettlementSecurityLegSucceeded',
  SECURITY_LEG_FAILED: 'SettlementSecurityLegFailed',
  LEDGER_ENTRY_POSTED: 'SettlementLedgerEntryPosted',
  SETTLED: 'SettlementSettled',
  BREAK_OPENED: 'SettlementBreakOpened',
  REPAIR_POSTED: 'SettlementRepairPosted',
  RESOLVED: 'SettlementResolved',
  /** Operator-posted: a resource position used by instant-mode leg checks. */
  RESOURCE_POSITION_SEEDED: 'SettlementResourcePositionSeeded',
  /** Operator-posted: makes a step of a trade's chain fail (payload { tradeId, step: "CLEARING" }). */
  FAILURE_INJECTED: 'SettlementFailureInjected',
} as const;

/** Facts of the service that start a chain: they need no causationId (nor do operator-posted ones). */
export const ROOT_FACT_TYPES: ReadonlySet<string> = new Set([FACT.OBLIGATION_CREATED]);

export interface FactInput {
  factId: string;
  factType: string;
  /** Microseconds since the epoch (the precision facts are compared at). */
  occurredAtUs: number;
  causationId: string | null;
  payload: Record<string, unknown>;
}

export interface Fact extends FactInput {
  scenarioRunId: string;
  /** Written by the service's workflows, or posted by an operator (facts route). */
  origin: 'service' | 'operator';
  /** Gap-free per scenario run, from 1. */
  sequence: number;
}

const NAMESPACE = Buffer.from('6f1b7a4e2c3d4f5a8b9c0d1e2f3a4b5c', 'hex'); // this venue's settlement namespace

/** A name-based UUID (RFC 9562 version 5, SHA-1) for `parts` joined by NUL: the same inputs give the same id. */
export function deterministicId(...parts: string[]): string {
  const hash = createHash('sha1').update(NAMESPACE).update(parts.join('\u0000')).digest();
  hash[6] = (hash[6]! & 0x0f) | 0x50;
  hash[8] = (hash[8]! & 0x3f) | 0x80;
  const hex = hash.subarray(0, 16).toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

/** JSON with object keys sorted at every level: one text per value. */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value);
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  const keys = Object.keys(value)
    .filter((key) => (value as Record<string, unknown>)[key] !== undefined)
    .sort();
  return `{${keys.map((key) => `${JSON.stringify(key)}:${canonicalJson((value as Record<string, unknown>)[key])}`).join(',')}}`;
}

/** What makes two facts with one id the same fact (the id aside). */
export function factContent(fact: FactInput): string {
  return canonicalJson({ factType: fact.factType, occurredAtUs: fact.occurredAtUs, causationId: fact.causationId, payload: fact.payload });
}

/** SHA-256 hex over the canonical serialization of a trail in sequence order. */
export function trailChecksum(facts: readonly Fact[]): string {
  const hash = createHash('sha256');
  for (const fact of facts) {
    hash.update(canonicalJson([fact.sequence, fact.factId, fact.factType, String(fact.occurredAtUs), fact.causationId, fact.origin, fact.payload]));
    hash.update('\n');
  }
  return hash.digest('hex');
}
