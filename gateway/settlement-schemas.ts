// The settlement schemas: the operator's request bodies (facts, materialize, repairs,
// force-settle, reversals, profiles) and the evidence reads' answers.

import { closed, count, freeText, timestamp, uuid } from './schema-shared.ts';

// ---- settlement (operator bodies and read queries) ----

const scenarioRunId = { type: 'string', pattern: '^[A-Za-z0-9._:-]{1,64}$', description: 'a venue runId' } as const;
const reason = freeText(500);
const profileName = { type: 'string', enum: ['instant-post-trade-v1', 'ops-realistic-v1'] } as const;

export const SETTLEMENT_BODY_SCHEMAS = {
  facts: {
    $id: 'SettlementFactsBundle',
    type: 'object',
    additionalProperties: false,
    properties: {
      scenarioRunId,
      facts: {
        type: 'array',
        minItems: 1,
        maxItems: 1000,
        items: {
          type: 'object',
          additionalProperties: false,
          properties: {
            factId: uuid,
            factType: { type: 'string', pattern: '^Settlement[A-Za-z]{1,64}$' },
            occurredAt: { type: 'string', format: 'date-time', description: 'RFC 3339; compared at microsecond precision' },
            causationId: uuid,
            payload: { type: 'object' },
          },
          required: ['factId', 'factType', 'occurredAt', 'payload'],
        },
      },
    },
    required: ['scenarioRunId', 'facts'],
  },
  materialize: {
    $id: 'SettlementMaterialize',
    type: 'object',
    additionalProperties: false,
    properties: { scenarioRunId, profile: profileName },
    required: ['scenarioRunId'],
  },
  'repair-cash': {
    $id: 'SettlementCashRepair',
    type: 'object',
    additionalProperties: false,
    properties: { scenarioRunId, obligationId: uuid, amountNanos: { type: 'string', pattern: '^[1-9][0-9]{0,29}$' }, currency: { type: 'string', pattern: '^[A-Z]{3}$' } },
    required: ['scenarioRunId', 'obligationId', 'amountNanos', 'currency'],
  },
  'repair-security': {
    $id: 'SettlementSecurityRepair',
    type: 'object',
    additionalProperties: false,
    properties: { scenarioRunId, obligationId: uuid, quantityUnits: { type: 'string', pattern: '^[1-9][0-9]{0,18}$' } },
    required: ['scenarioRunId', 'obligationId', 'quantityUnits'],
  },
  'force-settle': {
    $id: 'SettlementForceSettle',
    type: 'object',
    additionalProperties: false,
    properties: { scenarioRunId, obligationId: uuid, reason },
    required: ['scenarioRunId', 'obligationId', 'reason'],
  },
  'reverse-ledger-entry': {
    $id: 'SettlementReverseLedgerEntry',
    type: 'object',
    additionalProperties: false,
    properties: { scenarioRunId, ledgerEntryId: uuid, reason },
    required: ['scenarioRunId', 'ledgerEntryId', 'reason'],
  },
  profiles: {
    $id: 'SettlementProfileOverride',
    type: 'object',
    additionalProperties: false,
    properties: { scope: { type: 'string', enum: ['platform', 'venueSession', 'scenarioRun'] }, scopeId: { type: 'string', pattern: '^[A-Za-z0-9._:-]{1,64}$' }, profile: profileName },
    required: ['scope', 'profile'],
  },
} as const;
export type SettlementBodyName = keyof typeof SETTLEMENT_BODY_SCHEMAS;

// ---- settlement responses ----

const runId = { type: 'string', pattern: '^[A-Za-z0-9._:-]{1,64}$' } as const;
const natural = { type: 'string', pattern: '^[0-9]+$', description: 'an integer as a string (nanos for cash, units for securities)' } as const;
const signed = { type: 'string', pattern: '^-?[0-9]+$', description: 'a signed integer as a string' } as const;
const nullable = (schema: object) => ({ anyOf: [{ type: 'null' }, schema] }) as const;
const list = (items: object) => ({ type: 'array', items }) as const;
/** An object schema with required and optional properties, nothing else. */
function withOptional(required: Record<string, unknown>, optional: Record<string, unknown>) {
  return { type: 'object', additionalProperties: false, properties: { ...required, ...optional }, required: Object.keys(required) } as const;
}
const obligationState = {
  enum: [
    'CREATED',
    'ALLOCATED',
    'CONFIRMED',
    'AFFIRMED',
    'CLEARING_SUBMITTED',
    'CLEARED',
    'CLEARING_REJECTED',
    'NOVATED',
    'INSTRUCTED',
    'ATTEMPTING',
    'BROKEN',
    'REPAIR_POSTED',
    'SETTLED',
    'RESOLVED',
  ],
} as const;
const assetType = { enum: ['CASH', 'SECURITY'] } as const;
const finality = nullable({
  enum: ['LEDGER_PROOF', 'FORCED'],
  description: "LEDGER_PROOF: both leg outcomes succeeded and the ledger proof passed; FORCED: an operator's force-settle; null: unsettled, or settled without a balanced proof",
});
const balanceRow = closed({ participantId: uuid, accountId: uuid, assetType, asset: { type: 'string' }, debits: natural, credits: natural, net: signed });
const proofRow = closed({
  obligationId: uuid,
  tradeId: uuid,
  cashDebits: natural,
  cashCredits: natural,
  securityDebits: natural,
  securityCredits: natural,
  balanced: { type: 'boolean' },
  cashLegSucceeded: { type: 'boolean' },
  securityLegSucceeded: { type: 'boolean' },
  settled: { type: 'boolean' },
  finality,
  valid: { type: 'boolean', description: 'rule 2: the ledger balances, both leg outcomes succeeded and SettlementSettled is present; false for a forced or an unsettled obligation' },
});

export const settlementFactsSchema = {
  $id: 'SettlementFacts',
  ...closed({
    scenarioRunId: runId,
    facts: list(closed({ factId: uuid, factType: { type: 'string' }, sequence: { type: 'integer', minimum: 1 }, occurredAt: timestamp, causationId: nullable(uuid), payload: { type: 'object' } })),
  }),
} as const;

export const settlementObligationsSchema = {
  $id: 'SettlementObligations',
  ...closed({
    scenarioRunId: runId,
    obligations: list(
      closed({
        obligationId: uuid,
        tradeId: uuid,
        buyerParticipantId: uuid,
        sellerParticipantId: uuid,
        instrumentId: uuid,
        quantityUnits: natural,
        priceNanos: natural,
        cashAmountNanos: natural,
        currency: { type: 'string' },
        state: obligationState,
      }),
    ),
  }),
} as const;

export const settlementLedgerSchema = {
  $id: 'SettlementLedger',
  ...closed({
    scenarioRunId: runId,
    entries: list(
      withOptional(
        { ledgerEntryId: uuid, obligationId: uuid, participantId: uuid, accountId: uuid, assetType, asset: { type: 'string' }, direction: { enum: ['DEBIT', 'CREDIT'] }, amount: natural },
        { reversesEntryId: uuid },
      ),
    ),
    balances: list(balanceRow),
    proofTotals: list(proofRow),
  }),
} as const;

export const settlementExceptionsSchema = {
  $id: 'SettlementExceptions',
  ...closed({
    scenarioRunId: runId,
    counts: closed({ open: count, resolved: count }),
    exceptions: list(
      withOptional(
        {
          exceptionId: uuid,
          obligationId: uuid,
          exceptionType: { enum: ['CLEARING_REJECTED', 'CASH_LEG_BREAK', 'SECURITY_LEG_BREAK'] },
          severity: { enum: ['MEDIUM', 'HIGH'] },
          ownerRole: { type: 'string' },
          requiredAction: { type: 'string' },
          status: { enum: ['OPEN', 'RESOLVED'] },
        },
        { repairAction: { type: 'string' } },
      ),
    ),
  }),
} as const;

export const settlementProofSchema = {
  $id: 'SettlementProof',
  ...closed({
    scenarioRunId: runId,
    status: { enum: ['CLEAN', 'GAPPED'], description: 'CLEAN only when every settled row is valid and causationGaps is empty' },
    tradeIds: list(uuid),
    obligationIds: list(uuid),
    attemptIds: list(uuid),
    ledgerEntryIds: list(uuid),
    finalBalances: list(balanceRow),
    settlementProofRows: list(proofRow),
    profileEvidence: list(closed({ obligationId: uuid, profile: { type: 'string' }, source: { enum: ['scenarioRun', 'venueSession', 'request', 'platform', 'default'] }, finality })),
    factCounts: { type: 'object', additionalProperties: count },
    causationGaps: {
      anyOf: [list(closed({ factId: uuid, factType: { type: 'string' }, sequence: { type: 'integer' }, problem: { type: 'string' } })), count],
      description: 'the gaps (operators), or only how many there are (traders)',
    },
    checksum: { type: 'string', pattern: '^[0-9a-f]{64}$', description: 'SHA-256 over the canonical serialization of the whole trail' },
  }),
} as const;

export const settlementScoreSchema = {
  $id: 'SettlementScore',
  ...closed({
    scenarioRunId: runId,
    asOf: timestamp,
    agedFailAfterSeconds: count,
    participants: list(
      closed({
        participantId: uuid,
        settledBalances: list(closed({ assetType, asset: { type: 'string' }, amount: signed })),
        pendingValueNanos: natural,
        haircutAdjustedPendingValueNanos: natural,
        blockedUnsettledValueNanos: natural,
        failCount: count,
        agedFailCount: count,
        repairPendingCount: count,
        penaltyPoints: count,
      }),
    ),
  }),
} as const;

export const settlementLeaderboardSchema = {
  $id: 'SettlementLeaderboard',
  ...closed({
    scenarioRunId: runId,
    competitionProfile: { type: 'string' },
    asOf: timestamp,
    rows: list(closed({ rank: { type: 'integer', minimum: 1 }, participantId: uuid, penaltyPoints: count, failCount: count, agedFailCount: count, blockedUnsettledValueNanos: natural })),
  }),
} as const;

export const settlementAppendedSchema = { $id: 'SettlementAppended', ...closed({ appended: count, duplicates: count }) } as const;
export const settlementMaterializedSchema = {
  $id: 'SettlementMaterialized',
  ...closed({ scenarioRunId: runId, profile: profileName, obligations: count, factsAppended: count }),
} as const;
export const settlementActionSchema = {
  $id: 'SettlementAction',
  ...closed({
    scenarioRunId: runId,
    obligationId: uuid,
    state: obligationState,
    factsAppended: { type: 'integer', minimum: 1 },
    facts: list(closed({ factId: uuid, factType: { type: 'string' }, sequence: { type: 'integer', minimum: 1 } })),
  }),
} as const;
export const settlementProfileSetSchema = {
  $id: 'SettlementProfileSet',
  ...closed({ scope: { enum: ['platform', 'venueSession', 'scenarioRun'] }, scopeId: nullable({ type: 'string' }), profile: profileName, profiles: list(profileName) }),
} as const;

export const SETTLEMENT_RESPONSE_SCHEMAS = [
  settlementFactsSchema,
  settlementObligationsSchema,
  settlementLedgerSchema,
  settlementExceptionsSchema,
  settlementProofSchema,
  settlementScoreSchema,
  settlementLeaderboardSchema,
  settlementAppendedSchema,
  settlementMaterializedSchema,
  settlementActionSchema,
  settlementProfileSetSchema,
] as const;
