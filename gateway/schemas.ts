// JSON schemas of every order command body, and of every answer, in one place.
// ajv compiles the request schemas ahead of time (validators-build.ts writes
// validators.generated.ts, which a test keeps equal to what these objects compile to) and
// the gateway validates with that code; the OpenAPI document (openapi.ts) is built from
// these same objects, so the published contract and the enforced one cannot drift apart.

const uuid = { type: 'string', format: 'uuid', description: 'canonical 8-4-4-4-12 hex UUID' } as const;
const decimalString = (description: string) => ({ type: 'string', minLength: 1, maxLength: 32, description }) as const;
const sessionString = {
  type: 'string',
  pattern: '^[A-Za-z0-9._:-]{1,64}$',
  description: 'as answered by GET /api/v1/venue/session',
} as const;
/** Identifier-like text: printable characters only (no C0/C1 control, no lone surrogate); lengths in code points. */
const identifier = (maxLength: number) =>
  ({ type: 'string', format: 'identifier', minLength: 1, maxLength, description: `1 to ${maxLength} code points; no control characters or lone surrogates` }) as const;
/** Free text: kept exactly; no U+0000 and no lone surrogate; lengths in code points. */
const freeText = (maxLength: number) =>
  ({ type: 'string', format: 'free-text', minLength: 1, maxLength, description: `1 to ${maxLength} code points; no U+0000 or lone surrogates` }) as const;

const commonProperties = {
  commandId: uuid,
  traceId: uuid,
  causationId: uuid,
  correlationId: uuid,
  actorId: identifier(128),
  occurredAt: { type: 'string', format: 'date-time', description: 'RFC 3339 timestamp with a time zone' },
} as const;
const commonRequired = ['commandId', 'traceId', 'causationId', 'correlationId', 'actorId', 'occurredAt'] as const;

const quantityUnits = decimalString('positive integer number of units, 1 to 1000000000, e.g. "100"');
const limitPrice = decimalString('positive decimal with at most 9 decimals, at most 9000000, e.g. "101.25"');

export const submitOrderSchema = {
  $id: 'SubmitOrder',
  type: 'object',
  additionalProperties: false,
  properties: {
    ...commonProperties,
    orderId: uuid,
    instrumentId: uuid,
    participantId: uuid,
    accountId: uuid,
    side: { enum: ['BUY', 'SELL'] },
    orderType: { enum: ['LIMIT', 'LIMIT_HIDDEN'] },
    quantityUnits,
    limitPrice,
    currency: { type: 'string', pattern: '^[A-Z]{3}$', description: 'ISO 4217 style three-letter code' },
    timeInForce: { enum: ['DAY', 'IOC'] },
    clientOrderId: { ...identifier(64), description: 'optional; unique per participant among its open orders; 1 to 64 code points, no control characters or lone surrogates' },
  },
  required: [
    ...commonRequired,
    'orderId',
    'instrumentId',
    'participantId',
    'accountId',
    'side',
    'orderType',
    'quantityUnits',
    'limitPrice',
    'currency',
    'timeInForce',
  ],
} as const;

const targetProperties = {
  ...commonProperties,
  orderId: uuid,
  runId: sessionString,
  venueSessionId: sessionString,
  instrumentId: uuid,
  participantId: uuid,
  accountId: uuid,
} as const;
const targetRequired = [...commonRequired, 'orderId', 'runId', 'venueSessionId', 'instrumentId', 'participantId', 'accountId'] as const;

export const modifyOrderSchema = {
  $id: 'ModifyOrder',
  type: 'object',
  additionalProperties: false,
  properties: { ...targetProperties, quantityUnits: { ...quantityUnits, description: 'the new total quantity' }, limitPrice },
  required: [...targetRequired, 'quantityUnits', 'limitPrice'],
} as const;

export const cancelOrderSchema = {
  $id: 'CancelOrder',
  type: 'object',
  additionalProperties: false,
  properties: { ...targetProperties, reason: freeText(256) },
  required: [...targetRequired, 'reason'],
} as const;

export const cancelByClientOrderSchema = {
  $id: 'CancelByClientOrder',
  type: 'object',
  additionalProperties: false,
  properties: { ...commonProperties, participantId: uuid, clientOrderId: identifier(64), reason: freeText(256) },
  required: [...commonRequired, 'participantId', 'clientOrderId', 'reason'],
} as const;

// ---- answers (documentation and response tests) ----

const units = { type: 'object', additionalProperties: false, properties: { units: { type: 'string' } }, required: ['units'] } as const;
const money = {
  type: 'object',
  additionalProperties: false,
  properties: { nanos: { type: 'string' }, currency: { type: 'string' } },
  required: ['nanos', 'currency'],
} as const;
const timestamp = { type: 'string', format: 'date-time' } as const;

export const resultEnvelopeSchema = {
  $id: 'ResultEnvelope',
  type: 'object',
  additionalProperties: false,
  properties: {
    outcome: {
      type: 'object',
      oneOf: [
        {
          additionalProperties: false,
          properties: {
            accepted: {
              type: 'object',
              additionalProperties: false,
              properties: { eventId: uuid, orderId: uuid, engineOrderId: { type: 'string' }, occurredAt: timestamp },
              required: ['eventId', 'orderId', 'engineOrderId', 'occurredAt'],
            },
          },
          required: ['accepted'],
        },
        {
          additionalProperties: false,
          properties: {
            rejected: {
              type: 'object',
              additionalProperties: false,
              properties: {
                eventId: uuid,
                orderId: { oneOf: [uuid, { type: 'null' }], description: 'null only when a clientOrderId resolves to no order' },
                code: { type: 'string' },
                reason: { type: 'string' },
                occurredAt: timestamp,
              },
              required: ['eventId', 'orderId', 'code', 'reason', 'occurredAt'],
            },
          },
          required: ['rejected'],
        },
      ],
    },
    executions: {
      type: 'array',
      items: {
        type: 'object',
        additionalProperties: false,
        properties: {
          eventId: uuid,
          executionId: uuid,
          orderId: uuid,
          instrumentId: uuid,
          quantity: units,
          executionPrice: money,
          occurredAt: timestamp,
        },
        required: ['eventId', 'executionId', 'orderId', 'instrumentId', 'quantity', 'executionPrice', 'occurredAt'],
      },
    },
    trades: {
      type: 'array',
      items: {
        type: 'object',
        additionalProperties: false,
        properties: {
          eventId: uuid,
          tradeId: uuid,
          executionId: uuid,
          buyOrderId: uuid,
          sellOrderId: uuid,
          instrumentId: uuid,
          quantity: units,
          price: money,
          occurredAt: timestamp,
        },
        required: ['eventId', 'tradeId', 'executionId', 'buyOrderId', 'sellOrderId', 'instrumentId', 'quantity', 'price', 'occurredAt'],
      },
    },
  },
  required: ['outcome', 'executions', 'trades'],
} as const;

export const acceptedPointerSchema = {
  $id: 'AcceptedPointer',
  type: 'object',
  additionalProperties: false,
  properties: {
    commandId: uuid,
    status: { const: 'ACCEPTED' },
    processingMode: { enum: ['captured-ack', 'stream-ack', 'accepted-async'] },
    statusUrl: { type: 'string', pattern: '^/api/v1/commands/[0-9a-f-]{36}$' },
  },
  required: ['commandId', 'status', 'processingMode', 'statusUrl'],
} as const;

export const commandStatusSchema = {
  $id: 'CommandStatus',
  type: 'object',
  additionalProperties: false,
  properties: {
    commandId: uuid,
    clientId: { type: 'string' },
    route: { type: 'string' },
    idempotencyKey: { type: 'string' },
    status: { enum: ['ACCEPTED', 'IN_FLIGHT', 'COMPLETED', 'REJECTED', 'FAILED'] },
    internalStatus: { enum: ['RECEIVED', 'PROCESSING', 'COMPLETED', 'FAILED'] },
    processingMode: { enum: ['sync-result', 'captured-ack', 'stream-ack', 'accepted-async'] },
    responseStatus: { type: 'integer' },
    responsePayloadJson: { type: 'string' },
    lastError: { type: 'string' },
    canonicalMaterialized: { type: 'boolean' },
    engineResultStatus: { enum: ['accepted', 'rejected', ''] },
    resultStatus: { enum: ['accepted', 'rejected', ''] },
    batchId: { type: 'string' },
    shardId: { type: 'string' },
    partition: { type: 'integer' },
    commandStream: { type: 'string' },
    eventStream: { type: 'string' },
    streamSequence: { type: 'integer' },
    deliveredCount: { type: 'integer' },
    commandType: { type: 'string' },
    payloadHash: { type: 'string' },
    instrumentId: { type: 'string' },
    orderId: { type: 'string' },
    rejectCode: { type: 'string' },
    resultPayloadJson: { type: 'string' },
  },
  required: [
    'commandId', 'clientId', 'route', 'idempotencyKey', 'status', 'internalStatus', 'processingMode', 'responseStatus',
    'responsePayloadJson', 'lastError', 'canonicalMaterialized', 'engineResultStatus', 'resultStatus', 'batchId', 'shardId',
    'partition', 'commandStream', 'eventStream', 'streamSequence', 'deliveredCount', 'commandType', 'payloadHash',
    'instrumentId', 'orderId', 'rejectCode', 'resultPayloadJson',
  ],
} as const;

/** GET /admin/v1/audit/commands/{commandId}: the command as received (API contract, "Audit trail"). */
export const commandAuditSchema = {
  $id: 'CommandAudit',
  type: 'object',
  additionalProperties: false,
  properties: {
    commandId: uuid,
    route: { type: 'string' },
    receivedAt: timestamp,
    principalId: { type: 'string' },
    clientId: { type: 'string' },
    idempotencyKey: { type: 'string' },
    processingMode: { enum: ['sync-result', 'captured-ack', 'stream-ack', 'accepted-async'] },
    body: {
      anyOf: [{ type: 'object' }, { type: 'null' }],
      description: 'the JSON body exactly as validated, every field (traceId, causationId, correlationId, actorId, occurredAt, reason included); null for a command captured before bodies were kept',
    },
  },
  required: ['commandId', 'route', 'receivedAt', 'principalId', 'clientId', 'idempotencyKey', 'processingMode', 'body'],
} as const;

export const venueSessionSchema = {
  $id: 'VenueSession',
  type: 'object',
  additionalProperties: false,
  properties: { runId: sessionString, venueSessionId: sessionString, startedAt: timestamp },
  required: ['runId', 'venueSessionId', 'startedAt'],
} as const;

/** POST /admin/v1/venue/sessions: the session to open (both optional: the open session's runId, `session-<n>`). */
export const sessionRollSchema = {
  $id: 'VenueSessionRoll',
  type: 'object',
  additionalProperties: false,
  properties: { runId: sessionString, venueSessionId: sessionString },
} as const;

const endedSession = {
  type: 'object',
  additionalProperties: false,
  properties: { runId: sessionString, venueSessionId: sessionString, startedAt: timestamp, endedAt: timestamp },
  required: ['runId', 'venueSessionId', 'startedAt', 'endedAt'],
} as const;

/** The roll's answer: the session now open, the one that ended (null if none did), the DAY orders this call expired. */
export const sessionRollAnswerSchema = {
  $id: 'VenueSessionRolled',
  type: 'object',
  additionalProperties: false,
  properties: {
    runId: sessionString,
    venueSessionId: sessionString,
    startedAt: timestamp,
    previous: { anyOf: [{ type: 'null' }, endedSession] },
    expiredOrders: { type: 'integer', minimum: 0 },
  },
  required: ['runId', 'venueSessionId', 'startedAt', 'previous', 'expiredOrders'],
} as const;

export const errorSchema = {
  $id: 'Error',
  type: 'object',
  additionalProperties: false,
  properties: {
    error: { type: 'string' },
    code: { type: 'string' },
    requestId: { type: 'string', description: '5xx only: the id the cause of the failure is logged under' },
    details: {
      type: 'array',
      items: {
        type: 'object',
        additionalProperties: false,
        properties: { field: { type: 'string' }, message: { type: 'string' } },
        required: ['field', 'message'],
      },
    },
  },
  required: ['error', 'code'],
} as const;

export const rebuildStatusSchema = {
  $id: 'RebuildStatus',
  type: 'object',
  additionalProperties: false,
  properties: {
    projection: { type: 'string', const: 'runtime.order_lifecycle_state' },
    status: { type: 'string', enum: ['COMPLETED'] },
    rowsRebuilt: { type: 'integer', minimum: 0 },
    startedAt: timestamp,
    finishedAt: timestamp,
  },
  required: ['projection', 'status', 'rowsRebuilt', 'startedAt', 'finishedAt'],
} as const;

const count = { type: 'integer', minimum: 0 } as const;
const latency = {
  type: 'object',
  additionalProperties: false,
  description: 'microseconds; percentiles are the upper bound of a 6.25%-wide bucket',
  properties: { count, p50: count, p90: count, p99: count, max: count },
  required: ['count', 'p50', 'p90', 'p99', 'max'],
} as const;

export const persistenceStatusSchema = {
  $id: 'PersistenceStatus',
  type: 'object',
  additionalProperties: false,
  properties: {
    database: { type: 'string', enum: ['starting', 'up', 'down'] },
    embeddedPostgres: {
      description: 'the embedded PostgreSQL\'s supervisor; null with DATABASE_URL. restarting: it exited on its own and is being started again (try attempt of maxTries); failed: it gave up, orders are 503 until the venue is restarted',
      anyOf: [
        { type: 'null' },
        {
          type: 'object',
          additionalProperties: false,
          properties: { state: { enum: ['up', 'restarting', 'failed'] }, attempt: count, maxTries: count, restarts: count },
          required: ['state', 'attempt', 'maxTries', 'restarts'],
        },
      ],
    },
    shards: {
      type: 'array',
      items: {
        type: 'object',
        additionalProperties: false,
        properties: { shardId: count, journalCommitted: count, projected: count, projectionLag: { type: 'integer', description: 'journal sequences not yet materialized' } },
        required: ['shardId', 'journalCommitted', 'projected', 'projectionLag'],
      },
    },
    journal: {
      type: 'object',
      additionalProperties: false,
      properties: {
        commits: count, intakeRows: count, journalRows: count, commands: count, events: count, bytes: count, busyMs: count,
        rowsPerBusySecond: count, captureLatencyUs: latency, journalLatencyUs: latency,
      },
      required: ['commits', 'intakeRows', 'journalRows', 'commands', 'events', 'bytes', 'busyMs', 'rowsPerBusySecond', 'captureLatencyUs', 'journalLatencyUs'],
    },
    projections: {
      type: 'object',
      additionalProperties: false,
      properties: {
        groups: count, rows: count, busyMs: count, rowsPerBusySecond: count, errors: count,
        quarantinedRows: { ...count, description: 'projection rows storage refused, kept in runtime.quarantined_rows with their journal position (a group quarantined whole counts each of its COPYs)' },
        quarantinedGroups: { ...count, description: 'projection groups whose data storage refused in a way no single row explains, quarantined whole' },
        lagUs: { ...latency, description: 'projection lag per journal batch: its journal commit to its projection commit (microseconds)' },
        lagBuckets: {
          type: 'array',
          maxItems: 576,
          description: 'the histogram behind lagUs since the start: its non-empty buckets, smallest first, as [upper bound in microseconds, count]; two readings subtracted give the percentiles of the time in between',
          items: { type: 'array', minItems: 2, maxItems: 2, items: count },
        },
      },
      required: ['groups', 'rows', 'busyMs', 'rowsPerBusySecond', 'errors', 'quarantinedRows', 'quarantinedGroups', 'lagUs', 'lagBuckets'],
    },
    queues: {
      type: 'array',
      description: 'every bounded queue of the venue (rings between threads, commands in flight, requests waiting for the storage threads, tier 2 groups): its capacity, its depth now and the deepest it has been since the start',
      items: {
        type: 'object',
        additionalProperties: false,
        properties: { name: { type: 'string' }, capacity: count, now: count, highWater: count },
        required: ['name', 'capacity', 'now', 'highWater'],
      },
    },
    keyFilters: {
      type: 'array',
      description:
        "the filters of keys the shared tables forgot (idempotency scopes, commandIds, orderIds, clientOrderIds per participant): their size (sized at start for the stored keys), the keys they are rated for at about 1% false positives and the keys they hold; past the rating more new commands are checked in storage",
      items: {
        type: 'object',
        additionalProperties: false,
        properties: { name: { type: 'string', enum: ['idempotency', 'commandIds', 'orderIds', 'clientOrderIds'] }, bits: count, ratedKeys: count, keys: count },
        required: ['name', 'bits', 'ratedKeys', 'keys'],
      },
    },
  },
  required: ['database', 'embeddedPostgres', 'shards', 'journal', 'projections', 'queues', 'keyFilters'],
} as const;

// ---- read-plane query parameters (all strings; ranges are checked after the schema) ----

const projectionNameParam = { type: 'string', pattern: '^[a-z0-9][a-z0-9._-]{0,63}$', description: 'a projection name: lower-case letters, digits, . _ -' } as const;
const sourceProjectionParam = { type: 'string', enum: ['runtime-normalized-venue-outcomes'], description: 'the only source: the order lifecycle projection' } as const;
const countParam = (description: string) => ({ type: 'string', pattern: '^[0-9]{1,9}$', description }) as const;

export const QUERY_SCHEMAS = {
  snapshot: { $id: 'SnapshotQuery', type: 'object', additionalProperties: false, properties: { projectionName: projectionNameParam } },
  refresh: {
    $id: 'SnapshotRefreshQuery',
    type: 'object',
    additionalProperties: false,
    properties: { projectionName: projectionNameParam, sourceProjectionName: sourceProjectionParam, instrumentId: uuid },
  },
  depth: {
    $id: 'DepthQuery',
    type: 'object',
    additionalProperties: false,
    properties: {
      levels: countParam('price levels per side, 1 to 50 (default 5)'),
      projectionName: { type: 'string', enum: ['market-data-depth'], description: 'depth is computed at the read from its source' },
      sourceProjectionName: sourceProjectionParam,
    },
  },
  tape: {
    $id: 'TapeQuery',
    type: 'object',
    additionalProperties: false,
    properties: { limit: countParam('rows, 1 to 500 (default 100)'), before: countParam('only trades with a smaller sequence (the previous page\'s nextBefore)') },
  },
  bars: {
    $id: 'BarsQuery',
    type: 'object',
    additionalProperties: false,
    properties: {
      interval: { type: 'string', enum: ['1m', '5m', '15m', '1h'], description: 'default 1m' },
      start: { type: 'string', format: 'date-time', description: 'RFC 3339, inclusive, rounded down to the interval (default: end minus 60 intervals)' },
      end: { type: 'string', format: 'date-time', description: 'RFC 3339, exclusive (default: now, rounded up to the interval)' },
    },
  },
  score: {
    $id: 'SettlementScoreQuery',
    type: 'object',
    additionalProperties: false,
    properties: {
      asOf: { type: 'string', format: 'date-time', description: 'RFC 3339 (default: now)' },
      agedFailAfterSeconds: countParam('a fail open longer than this is aged (default 3600)'),
    },
  },
  own: {
    $id: 'OwnOrdersQuery',
    type: 'object',
    additionalProperties: false,
    properties: { instrumentId: uuid, limit: countParam('rows, 1 to 1000 (default 100)') },
  },
} as const;
export type QueryName = keyof typeof QUERY_SCHEMAS;

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

// ---- read-plane responses ----

const priceObject = { type: 'object', additionalProperties: false, properties: { nanos: { type: 'string', pattern: '^[0-9]+$' }, currency: { type: 'string' } }, required: ['nanos', 'currency'] } as const;
const unitsObject = { type: 'object', additionalProperties: false, properties: { units: { type: 'string', pattern: '^[0-9]+$' } }, required: ['units'] } as const;
const bookSide = {
  anyOf: [{ type: 'null' }, { type: 'object', additionalProperties: false, properties: { price: priceObject, quantity: unitsObject }, required: ['price', 'quantity'] }],
} as const;
const shardWatermarks = {
  type: 'array',
  items: { type: 'object', additionalProperties: false, properties: { shardId: { type: 'integer' }, sequence: { type: 'integer' } }, required: ['shardId', 'sequence'] },
} as const;

export const snapshotSchema = {
  $id: 'Snapshot',
  type: 'object',
  additionalProperties: false,
  properties: {
    instrumentId: uuid,
    projectionName: { type: 'string' },
    bestBid: bookSide,
    bestAsk: bookSide,
    openQuantity: {
      type: 'object',
      additionalProperties: false,
      description: 'the remaining open displayed LIMIT quantity of the instrument per side, every price ("0" for an empty side); hidden quantity never counts',
      properties: { bid: unitsObject, ask: unitsObject },
      required: ['bid', 'ask'],
    },
    sourceWatermark: { type: 'integer' },
    refreshedAt: timestamp,
  },
  required: ['instrumentId', 'projectionName', 'bestBid', 'bestAsk', 'openQuantity', 'sourceWatermark', 'refreshedAt'],
} as const;

export const snapshotRefreshSchema = {
  $id: 'SnapshotRefresh',
  type: 'object',
  additionalProperties: false,
  properties: {
    projectionName: { type: 'string' },
    sourceProjectionName: { type: 'string' },
    instrumentsRefreshed: { type: 'integer', minimum: 0 },
    sourceWatermark: shardWatermarks,
    refreshedAt: timestamp,
  },
  required: ['projectionName', 'sourceProjectionName', 'instrumentsRefreshed', 'sourceWatermark', 'refreshedAt'],
} as const;

const depthLevel = {
  type: 'object',
  additionalProperties: false,
  properties: { price: priceObject, quantity: unitsObject, orderCount: { type: 'integer', minimum: 1 } },
  required: ['price', 'quantity', 'orderCount'],
} as const;

export const depthSchema = {
  $id: 'Depth',
  type: 'object',
  additionalProperties: false,
  properties: { instrumentId: uuid, levels: { type: 'integer' }, bids: { type: 'array', items: depthLevel }, asks: { type: 'array', items: depthLevel }, watermark: { type: 'integer' } },
  required: ['instrumentId', 'levels', 'bids', 'asks', 'watermark'],
} as const;

export const tapeSchema = {
  $id: 'Tape',
  type: 'object',
  additionalProperties: false,
  properties: {
    instrumentId: uuid,
    rows: {
      type: 'array',
      items: {
        type: 'object',
        additionalProperties: false,
        properties: { tradeId: uuid, price: priceObject, quantity: unitsObject, currency: { type: 'string' }, occurredAt: timestamp, sequence: { type: 'integer', minimum: 1 } },
        required: ['tradeId', 'price', 'quantity', 'currency', 'occurredAt', 'sequence'],
      },
    },
    nextBefore: { anyOf: [{ type: 'null' }, { type: 'integer' }], description: 'the before of the next (older) page; null when this page was not full' },
  },
  required: ['instrumentId', 'rows', 'nextBefore'],
} as const;

export const barsSchema = {
  $id: 'Bars',
  type: 'object',
  additionalProperties: false,
  properties: {
    instrumentId: uuid,
    interval: { type: 'string', enum: ['1m', '5m', '15m', '1h'] },
    start: timestamp,
    end: timestamp,
    bars: {
      type: 'array',
      items: {
        type: 'object',
        additionalProperties: false,
        properties: { start: timestamp, open: priceObject, high: priceObject, low: priceObject, close: priceObject, volume: unitsObject, tradeCount: { type: 'integer', minimum: 1 } },
        required: ['start', 'open', 'high', 'low', 'close', 'volume', 'tradeCount'],
      },
    },
  },
  required: ['instrumentId', 'interval', 'start', 'end', 'bars'],
} as const;

/** An object schema whose every property is required and nothing else is allowed. */
function closed(properties: Record<string, unknown>) {
  return { type: 'object', additionalProperties: false, properties, required: Object.keys(properties) } as const;
}

/** A bounded list read: `{ rows: [...], limit }`. */
function rowList(id: string, row: Record<string, unknown>) {
  return { $id: id, ...closed({ rows: { type: 'array', items: closed(row) }, limit: { type: 'integer' } }) };
}

export const ownOrdersSchema = rowList('OwnOrders', {
  orderId: uuid,
  clientOrderId: { anyOf: [{ type: 'null' }, { type: 'string' }] },
  runId: { type: 'string' },
  venueSessionId: { type: 'string' },
  instrumentId: uuid,
  participantId: uuid,
  accountId: uuid,
  side: { enum: ['BUY', 'SELL'] },
  orderType: { enum: ['LIMIT', 'LIMIT_HIDDEN'] },
  timeInForce: { enum: ['DAY', 'IOC'] },
  state: { enum: ['OPEN', 'PARTIALLY_FILLED', 'FILLED', 'CANCELLED', 'EXPIRED'] },
  limitPrice: priceObject,
  originalQuantity: unitsObject,
  remainingQuantity: unitsObject,
  filledQuantity: unitsObject,
  updatedAt: timestamp,
});

export const fillsSchema = rowList('Fills', {
  executionId: uuid,
  tradeId: uuid,
  orderId: uuid,
  instrumentId: uuid,
  side: { enum: ['BUY', 'SELL'] },
  quantity: unitsObject,
  executionPrice: priceObject,
  occurredAt: timestamp,
});

export const availabilitySchema = {
  $id: 'Availability',
  type: 'object',
  additionalProperties: false,
  properties: {
    reads: {
      type: 'array',
      items: {
        type: 'object',
        additionalProperties: false,
        properties: {
          name: { type: 'string' }, endpoint: { type: 'string' }, sourceType: { enum: ['durable-facts', 'projection', 'live'] }, freshnessModel: { type: 'string' },
          visibilityScope: { type: 'string' }, requiredFilters: { type: 'array', items: { type: 'string' } }, optionalFilters: { type: 'array', items: { type: 'string' } },
          projectionLagMs: { anyOf: [{ type: 'null' }, { type: 'integer', minimum: 0 }] }, watermark: { anyOf: [{ type: 'null' }, shardWatermarks] },
        },
        required: ['name', 'endpoint', 'sourceType', 'freshnessModel', 'visibilityScope', 'requiredFilters', 'optionalFilters', 'projectionLagMs', 'watermark'],
      },
    },
  },
  required: ['reads'],
} as const;

export const projectorStatusSchema = {
  $id: 'ProjectorStatus',
  type: 'object',
  additionalProperties: false,
  properties: {
    enabled: { type: 'boolean' }, running: { type: 'boolean' }, projectionName: { type: 'string' }, sourceProjectionName: { type: 'string' }, intervalMs: { type: 'integer' },
    refreshes: { type: 'integer' }, lastRefreshAt: { anyOf: [{ type: 'null' }, timestamp] }, lastRefreshInstruments: { type: 'integer' },
    watermark: { type: 'array', items: { type: 'integer' }, description: 'per shard: the projection position the snapshots were last refreshed from' },
    sourceWatermark: { type: 'array', items: { type: 'integer' }, description: 'per shard: where the source projection is now' },
    lagSequences: { type: 'integer' }, lagMs: { type: 'integer' }, errors: { type: 'integer' }, lastError: { anyOf: [{ type: 'null' }, { type: 'string' }] },
  },
  required: ['enabled', 'running', 'projectionName', 'sourceProjectionName', 'intervalMs', 'refreshes', 'lastRefreshAt', 'lastRefreshInstruments', 'watermark', 'sourceWatermark', 'lagSequences', 'lagMs', 'errors', 'lastError'],
} as const;

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
  enum: ['CREATED', 'ALLOCATED', 'CONFIRMED', 'AFFIRMED', 'CLEARING_SUBMITTED', 'CLEARED', 'CLEARING_REJECTED', 'NOVATED', 'INSTRUCTED', 'ATTEMPTING', 'BROKEN', 'REPAIR_POSTED', 'SETTLED', 'RESOLVED'],
} as const;
const assetType = { enum: ['CASH', 'SECURITY'] } as const;
const finality = nullable({
  enum: ['LEDGER_PROOF', 'FORCED'],
  description: 'LEDGER_PROOF: both leg outcomes succeeded and the ledger proof passed; FORCED: an operator\'s force-settle; null: unsettled, or settled without a balanced proof',
});
const balanceRow = closed({ participantId: uuid, accountId: uuid, assetType, asset: { type: 'string' }, debits: natural, credits: natural, net: signed });
const proofRow = closed({
  obligationId: uuid, tradeId: uuid, cashDebits: natural, cashCredits: natural, securityDebits: natural, securityCredits: natural,
  balanced: { type: 'boolean' }, cashLegSucceeded: { type: 'boolean' }, securityLegSucceeded: { type: 'boolean' }, settled: { type: 'boolean' }, finality,
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
        obligationId: uuid, tradeId: uuid, buyerParticipantId: uuid, sellerParticipantId: uuid, instrumentId: uuid,
        quantityUnits: natural, priceNanos: natural, cashAmountNanos: natural, currency: { type: 'string' }, state: obligationState,
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
          exceptionId: uuid, obligationId: uuid, exceptionType: { enum: ['CLEARING_REJECTED', 'CASH_LEG_BREAK', 'SECURITY_LEG_BREAK'] }, severity: { enum: ['MEDIUM', 'HIGH'] },
          ownerRole: { type: 'string' }, requiredAction: { type: 'string' }, status: { enum: ['OPEN', 'RESOLVED'] },
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

export const REQUEST_SCHEMAS = [submitOrderSchema, modifyOrderSchema, cancelOrderSchema, cancelByClientOrderSchema] as const;
export const RESPONSE_SCHEMAS = [
  resultEnvelopeSchema,
  acceptedPointerSchema,
  commandStatusSchema,
  commandAuditSchema,
  venueSessionSchema,
  sessionRollAnswerSchema,
  errorSchema,
  rebuildStatusSchema,
  persistenceStatusSchema,
  snapshotSchema,
  snapshotRefreshSchema,
  depthSchema,
  tapeSchema,
  barsSchema,
  ownOrdersSchema,
  fillsSchema,
  availabilitySchema,
  projectorStatusSchema,
  ...SETTLEMENT_RESPONSE_SCHEMAS,
] as const;
