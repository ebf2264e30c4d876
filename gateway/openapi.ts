// The OpenAPI 3.1 document, built from the same schema objects the gateway validates
// with (the *-schemas.ts modules schemas.ts lists). Served at GET /api/v1/openapi.json.
// Each operationId is the method name generated clients call, so it stays fixed when a summary changes.

import { persistenceStatusSchema, rebuildStatusSchema, sessionRollAnswerSchema, sessionRollSchema, venueSessionSchema } from './admin-schemas.ts';
import {
  acceptedPointerSchema,
  cancelByClientOrderSchema,
  cancelOrderSchema,
  commandAuditSchema,
  commandStatusSchema,
  modifyOrderSchema,
  resultEnvelopeSchema,
  submitOrderSchema,
} from './order-schemas.ts';
import {
  availabilitySchema,
  barsSchema,
  depthSchema,
  fillsSchema,
  ownOrdersSchema,
  projectorStatusSchema,
  QUERY_SCHEMAS,
  snapshotRefreshSchema,
  snapshotSchema,
  tapeSchema,
  type QueryName,
  QUERY_SCHEMAS as QUERIES,
} from './read-schemas.ts';
import { errorSchema } from './schema-shared.ts';
import { SETTLEMENT_BODY_SCHEMAS, SETTLEMENT_RESPONSE_SCHEMAS } from './settlement-schemas.ts';

/** The operation groups; every operation names one of them. */
const TAGS = {
  orders: 'Order commands (submit, cancel, modify, cancel by clientOrderId) and the status of a command',
  'own orders': "The open orders, order history and fills of the principal's participants",
  'market data': 'Snapshots, depth, the public trade tape, bars, the snapshot loop and the market-data stream',
  venue: 'The active venue session, the read-surface inventory and this document',
  settlement: 'Settlement evidence of a scenario run: facts, obligations, ledger, exceptions, proof, scores',
  admin: 'Operator routes: command audit, projection rebuild, persistence status, session roll, settlement facts and repairs',
  probes: 'Liveness and readiness; no token',
  metrics: 'The Prometheus metrics, for operators and viewers',
} as const;
type Tag = keyof typeof TAGS;

const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });
const json = (schema: unknown) => ({ 'application/json': { schema } });
const error = (description: string) => ({ description, content: json(ref('Error')) });

function strip<T extends { $id?: string }>(schema: T): Omit<T, '$id'> {
  const { $id: _id, ...rest } = schema;
  return rest;
}

const orderHeaders = [
  { name: 'X-Client-Id', in: 'header', required: true, schema: { type: 'string', minLength: 1, maxLength: 128 } },
  {
    name: 'Idempotency-Key',
    in: 'header',
    required: true,
    schema: { type: 'string', minLength: 1, maxLength: 128 },
    description: 'scope (principal, X-Client-Id, Idempotency-Key): the same payload replays the original answer byte for byte; another payload is 409',
  },
  {
    name: 'X-Processing-Mode',
    in: 'header',
    required: false,
    schema: { enum: ['sync-result', 'captured-ack', 'stream-ack', 'accepted-async'] },
    description: 'overrides PROCESSING_MODE for this request',
  },
];

function orderOperation(operationId: string, summary: string, schemaName: string) {
  return {
    post: {
      operationId,
      tags: ['orders'],
      summary,
      security: [{ bearer: [] }],
      parameters: orderHeaders,
      requestBody: { required: true, content: json(ref(schemaName)) },
      responses: {
        200: { description: 'sync-result: the outcome (a business rejection is also 200, with outcome.rejected)', content: json(ref('ResultEnvelope')) },
        202: { description: 'captured-ack, stream-ack, accepted-async: the accepted pointer', content: json(ref('AcceptedPointer')) },
        400: error('validation failed, missing X-Client-Id or Idempotency-Key, or the body is not JSON; nothing is recorded'),
        401: error('missing or unknown bearer token'),
        403: error('the role may not use this route, or the participant/account is not yours'),
        408: error('REQUEST_TIMEOUT: the body did not arrive within 5 s of the headers; nothing is recorded and the connection is closed'),
        409: error('IDEMPOTENCY_CONFLICT: the key was used with another payload, or the commandId by another command'),
        413: error('the body is larger than MAX_BODY_BYTES'),
        503: error('OVERLOADED or UNAVAILABLE: not accepted; retry later with the same Idempotency-Key (Retry-After)'),
      },
    },
  };
}

/** A read route: its query parameters come from the schema the gateway validates them with. */
function readOperation(
  operationId: string,
  tag: Tag,
  summary: string,
  queryName: QueryName | null,
  response: string,
  extra: { pathParam?: boolean; notFound?: string; forbidden?: string; conflict?: string } = {},
): Record<string, unknown> {
  const query = queryName === null ? [] : Object.entries(QUERY_SCHEMAS[queryName].properties).map(([name, schema]) => ({ name, in: 'query', required: false, schema }));
  const path = extra.pathParam ? [{ name: 'instrumentId', in: 'path', required: true, schema: { type: 'string', format: 'uuid' } }] : [];
  return {
    operationId,
    tags: [tag],
    summary,
    security: [{ bearer: [] }],
    parameters: [...path, ...query],
    responses: {
      200: { description: summary, content: json(ref(response)) },
      400: error('an unknown, repeated or invalid query parameter, or a value out of range'),
      401: error('missing or unknown bearer token'),
      // Market data and the inventory are open to every role: only a role-scoped read has a 403.
      ...(extra.forbidden === undefined ? {} : { 403: error(extra.forbidden) }),
      ...(extra.notFound === undefined ? {} : { 404: error(extra.notFound) }),
      ...(extra.conflict === undefined ? {} : { 409: error(extra.conflict) }),
      503: error('storage is unavailable or the projections are behind past the bound'),
    },
  };
}

/** An operator settlement route: POST, a JSON body validated with its schema, the answer's schema. */
function settlementAdminOperation(operationId: string, summary: string, body: string, response: string, extra: { notFound?: string; conflict?: string } = {}) {
  return {
    post: {
      operationId,
      tags: ['admin'],
      summary: `Operator: ${summary}`,
      security: [{ bearer: [] }],
      requestBody: { required: true, content: json(ref(body)) },
      responses: {
        200: { description: summary, content: json(ref(response)) },
        400: error('the body is not JSON or does not match the schema (every problem listed in details)'),
        401: error('missing or unknown bearer token'),
        403: error('operators only'),
        ...(extra.notFound === undefined ? {} : { 404: error(extra.notFound) }),
        ...(extra.conflict === undefined ? {} : { 409: error(extra.conflict) }),
        408: error('REQUEST_TIMEOUT: the body did not arrive within 5 s of the headers; nothing is stored and the connection is closed'),
        413: error('the body is larger than ADMIN_MAX_BODY_BYTES'),
        503: error('storage is unavailable'),
      },
    },
  };
}

/** A settlement read of one scenario run (a venue runId). */
function settlementReadOperation(operationId: string, summary: string, response: string, options: { query?: boolean; public?: boolean; notFound?: string } = {}) {
  const query = options.query ? Object.entries(QUERIES.score.properties).map(([name, schema]) => ({ name, in: 'query', required: false, schema })) : [];
  return {
    get: {
      operationId,
      tags: ['settlement'],
      summary,
      security: [{ bearer: [] }],
      parameters: [{ name: 'scenarioRunId', in: 'path', required: true, schema: { type: 'string', pattern: '^[A-Za-z0-9._:-]{1,64}$' } }, ...query],
      responses: {
        200: { description: summary, content: json(ref(response)) },
        400: error(options.query ? 'an invalid scenarioRunId, or an unknown, repeated or invalid query parameter' : 'an invalid scenarioRunId, or any query parameter'),
        401: error('missing or unknown bearer token'),
        ...(options.public ? {} : { 403: error('viewers may not read settlement evidence (traders see the rows of their own participants)') }),
        ...(options.notFound === undefined ? {} : { 404: error(options.notFound) }),
        503: error('storage is unavailable'),
      },
    },
  };
}

const SETTLEMENT_SCHEMA_NAMES = Object.fromEntries([...Object.values(SETTLEMENT_BODY_SCHEMAS), ...SETTLEMENT_RESPONSE_SCHEMAS].map((schema) => [schema.$id, strip(schema)]));

export function buildOpenApi(): Record<string, unknown> {
  return withMethodNotAllowed({
    openapi: '3.1.0',
    info: {
      title: 'Trading venue',
      version: '1.0.0',
      description: 'Order entry, command status, venue session, market data, own-order reads, availability, settlement evidence and the operator routes.',
      // package.json is private with no license: SPDX's form for a license of its own is LicenseRef-<name>.
      license: { name: 'Proprietary (private package, all rights reserved)', identifier: 'LicenseRef-Proprietary' },
    },
    // npm start serves on HOST and PORT, 127.0.0.1:8080 unless set.
    servers: [{ url: 'http://127.0.0.1:8080', description: 'The local venue (npm start with the default HOST and PORT)' }],
    // Every route needs a bearer token unless it declares `security: []` (the probes).
    security: [{ bearer: [] }],
    tags: Object.entries(TAGS).map(([name, description]) => ({ name, description })),
    components: {
      securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } },
      schemas: {
        SubmitOrder: strip(submitOrderSchema),
        ModifyOrder: strip(modifyOrderSchema),
        CancelOrder: strip(cancelOrderSchema),
        CancelByClientOrder: strip(cancelByClientOrderSchema),
        ResultEnvelope: strip(resultEnvelopeSchema),
        AcceptedPointer: strip(acceptedPointerSchema),
        CommandStatus: strip(commandStatusSchema),
        CommandAudit: strip(commandAuditSchema),
        VenueSession: strip(venueSessionSchema),
        VenueSessionRoll: strip(sessionRollSchema),
        VenueSessionRolled: strip(sessionRollAnswerSchema),
        Error: strip(errorSchema),
        RebuildStatus: strip(rebuildStatusSchema),
        PersistenceStatus: strip(persistenceStatusSchema),
        Snapshot: strip(snapshotSchema),
        SnapshotRefresh: strip(snapshotRefreshSchema),
        Depth: strip(depthSchema),
        Tape: strip(tapeSchema),
        Bars: strip(barsSchema),
        OwnOrders: strip(ownOrdersSchema),
        Fills: strip(fillsSchema),
        Availability: strip(availabilitySchema),
        ProjectorStatus: strip(projectorStatusSchema),
        ...SETTLEMENT_SCHEMA_NAMES,
      },
    },
    paths: {
      '/api/v1/orders/submit': orderOperation('submitOrder', 'Submit a limit order', 'SubmitOrder'),
      '/api/v1/orders/cancel': orderOperation('cancelOrder', 'Cancel an order (full target context)', 'CancelOrder'),
      '/api/v1/orders/modify': orderOperation('modifyOrder', 'Modify an order: new total quantity and price', 'ModifyOrder'),
      '/api/v1/orders/cancel-by-client-order': orderOperation('cancelOrderByClientOrderId', 'Cancel the open order of a clientOrderId', 'CancelByClientOrder'),
      '/api/v1/commands/{commandId}': {
        get: {
          operationId: 'getCommandStatus',
          tags: ['orders'],
          summary: 'Command status (traders: their own commands; operators: any)',
          security: [{ bearer: [] }],
          parameters: [{ name: 'commandId', in: 'path', required: true, schema: { type: 'string', format: 'uuid' } }],
          responses: {
            200: { description: 'the command status view', content: json(ref('CommandStatus')) },
            401: error('missing or unknown bearer token'),
            403: error('the role may not read command status'),
            404: error('no such command (or not yours)'),
            503: error('storage is unavailable'),
          },
        },
      },
      '/api/v1/venue/session': {
        get: {
          operationId: 'getVenueSession',
          tags: ['venue'],
          summary: 'The active venue session',
          security: [{ bearer: [] }],
          responses: { 200: { description: 'runId, venueSessionId, startedAt', content: json(ref('VenueSession')) }, 401: error('missing or unknown bearer token') },
        },
      },
      '/api/v1/openapi.json': {
        get: {
          operationId: 'getOpenApiDocument',
          tags: ['venue'],
          summary: 'This document',
          security: [{ bearer: [] }],
          responses: { 200: { description: 'OpenAPI 3.1' }, 401: error('missing or unknown bearer token') },
        },
      },
      '/api/v1/market-data/snapshots/{instrumentId}': {
        get: readOperation('getMarketDataSnapshot', 'market data', 'The stored top-of-book snapshot (displayed LIMIT quantity only)', 'snapshot', 'Snapshot', {
          pathParam: true,
          notFound: 'market data snapshot not found (none produced yet under this projectionName)',
        }),
      },
      '/api/v1/market-data/snapshots': {
        post: readOperation(
          'refreshMarketDataSnapshots',
          'market data',
          'Refresh the snapshots (one instrument, or all with open orders or a snapshot) from the order lifecycle projection',
          'refresh',
          'SnapshotRefresh',
          {
            notFound: 'market data snapshot not found (the named instrument has never traded here)',
            conflict: "LIMIT_EXCEEDED: a new projectionName past the caller's MARKET_DATA_PROJECTION_NAMES_PER_PRINCIPAL (the default name and names that exist are always refreshed)",
          },
        ),
      },
      '/api/v1/market-data/depth/{instrumentId}': {
        get: readOperation('getMarketDepth', 'market data', 'Displayed depth per price level, best first, from the order lifecycle projection', 'depth', 'Depth', {
          pathParam: true,
          notFound: 'market data depth not found (no order was ever accepted for the instrument)',
        }),
      },
      '/api/v1/market-data/stream': {
        get: {
          operationId: 'streamMarketData',
          tags: ['market data'],
          summary: 'The market-data stream: a WebSocket of trades, top of book and depth updates',
          description:
            'Upgrades to a WebSocket on the same listener (any role; the bearer token on the upgrade request). JSON text messages. ' +
            'Send {"op":"subscribe"|"unsubscribe","channel":"trades"|"top"|"depth","instrumentId":"<uuid>"}; at most 256 subscriptions a socket. ' +
            'Data messages carry channel, instrumentId and seq (consecutive per channel and instrument: a gap means resubscribe). ' +
            'A trade is sent once durable; depth sends a 50-level snapshot, then updates (quantity "0" removes a level). ' +
            'A subscriber more than 4 MiB behind is closed with 1013 "slow consumer". Messages: docs/api.md.',
          security: [{ bearer: [] }],
          responses: {
            101: { description: 'Switching Protocols: the socket is open' },
            400: error('a GET without the WebSocket upgrade headers'),
            401: error('missing or unknown bearer token, answered before the upgrade (no socket opens)'),
            503: error('the venue is starting or shutting down'),
            // A refusal is never a 2xx here: the lint's rule wants a 2xx or a default.
            default: error("any refusal of the upgrade, in the error catalog's shape"),
          },
        },
      },
      '/api/v1/market-data/trades/{instrumentId}': {
        get: readOperation('getTradeTape', 'market data', 'The public trade tape, most recent first, no identities', 'tape', 'Tape', { pathParam: true }),
      },
      '/api/v1/market-data/bars/{instrumentId}': {
        get: readOperation('getBars', 'market data', 'OHLCV bars from runtime.trades (intervals without trades are left out)', 'bars', 'Bars', { pathParam: true }),
      },
      '/api/v1/orders/current': { get: readOperation('listCurrentOrders', 'own orders', "The open orders of the principal's participants", 'own', 'OwnOrders', { forbidden: 'traders only' }) },
      '/api/v1/orders/history': {
        get: readOperation('listOrderHistory', 'own orders', "All orders of the principal's participants, most recently updated first", 'own', 'OwnOrders', { forbidden: 'traders only' }),
      },
      '/api/v1/orders/fills': { get: readOperation('listFills', 'own orders', "The fills of the principal's participants, most recent first", 'own', 'Fills', { forbidden: 'traders only' }) },
      '/api/v1/data/availability': {
        get: readOperation('getDataAvailability', 'venue', 'The read-surface inventory: source, freshness, scope, filters, lag, watermark per read', null, 'Availability'),
      },
      '/internal/market-data/projector/status': {
        get: readOperation('getProjectorStatus', 'market data', 'The snapshot loop (MARKET_DATA_PROJECTOR_ENABLED): running, last refresh, lag, watermark, errors', null, 'ProjectorStatus'),
      },
      '/admin/v1/projections/order-lifecycle/rebuild': {
        post: {
          operationId: 'rebuildOrderLifecycleProjection',
          tags: ['admin'],
          summary: 'Operator: rebuild runtime.order_lifecycle_state from the journal (no body fields)',
          security: [{ bearer: [] }],
          responses: {
            200: { description: 'the rebuild-status payload', content: json(ref('RebuildStatus')) },
            401: error('missing or unknown bearer token'),
            403: error('operators only'),
            503: error('storage is unavailable, or the rebuild could not lock the table within REBUILD_LOCK_TIMEOUT_MS (nothing changed); Retry-After'),
          },
        },
      },
      '/admin/v1/venue/sessions': {
        post: {
          operationId: 'rollVenueSession',
          tags: ['admin'],
          summary:
            "Operator: roll the venue session. Ends the open session and opens this one (runId: the open session's if absent; venueSessionId: session-<n> if absent); every new order is stamped with it, and the open DAY orders of the ended session expire (state EXPIRED). Answers once the expiry is durable. Naming the open session again (a retry) changes nothing and finishes its expiry.",
          security: [{ bearer: [] }],
          requestBody: { required: false, content: json(ref('VenueSessionRoll')) },
          responses: {
            200: { description: 'the session now open, the one that ended (null if none), the DAY orders this call expired', content: json(ref('VenueSessionRolled')) },
            400: error('not JSON, or not the body shape (unknown fields, names outside [A-Za-z0-9._:-]{1,64})'),
            401: error('missing or unknown bearer token'),
            403: error('operators only'),
            408: error('the body did not arrive in time'),
            409: error('SESSION_CONFLICT: the venue ran a session with these names before (names are never reused)'),
            413: error('the body is larger than MAX_BODY_BYTES'),
            503: error('the venue is starting or storage is unavailable (nothing changed), or the new session is open but its expiry is not durable yet (retry naming it); Retry-After'),
          },
        },
      },
      '/admin/v1/audit/commands/{commandId}': {
        get: {
          operationId: 'getCommandAudit',
          tags: ['admin'],
          summary: 'Operator: an order command exactly as it arrived and was validated (the audit trail), durable once it was acknowledged',
          security: [{ bearer: [] }],
          parameters: [{ name: 'commandId', in: 'path', required: true, schema: { type: 'string', format: 'uuid' } }],
          responses: {
            200: { description: 'the command as received', content: json(ref('CommandAudit')) },
            401: error('missing or unknown bearer token'),
            403: error('operators only'),
            404: error('no such command is durably accepted'),
            503: error('storage is unavailable'),
          },
        },
      },
      '/admin/v1/persistence/status': {
        get: {
          operationId: 'getPersistenceStatus',
          tags: ['admin'],
          summary: 'Operator: both storage tiers, their watermarks and lag, throughput and commit latency',
          security: [{ bearer: [] }],
          responses: {
            200: { description: 'the persistence status', content: json(ref('PersistenceStatus')) },
            401: error('missing or unknown bearer token'),
            403: error('operators only'),
            503: error('storage is unavailable'),
          },
        },
      },
      '/admin/v1/settlement/facts': settlementAdminOperation(
        'appendSettlementFacts',
        'append a bundle of facts to a scenario run, all or nothing (an identical fact again is a duplicate)',
        'SettlementFactsBundle',
        'SettlementAppended',
        { conflict: 'FACT_CONFLICT: a factId already stored with other content; nothing of the bundle was stored' },
      ),
      '/admin/v1/settlement/obligations/materialize': settlementAdminOperation(
        'materializeSettlementObligations',
        'one obligation per persisted trade of the run not yet materialized (gross per trade); under instant-post-trade-v1 each chain runs to its end',
        'SettlementMaterialize',
        'SettlementMaterialized',
      ),
      '/admin/v1/settlement/repairs/cash': settlementAdminOperation(
        'repairCashLeg',
        "post cash to the buyer's account for an open cash-leg break, then the deterministic retry",
        'SettlementCashRepair',
        'SettlementAction',
        {
          notFound: 'the obligation is not in the scenario run',
          conflict: 'FACT_CONFLICT: the obligation has no open cash-leg break',
        },
      ),
      '/admin/v1/settlement/repairs/security': settlementAdminOperation(
        'repairSecurityLeg',
        "post securities to the seller's account for an open security-leg break, then the deterministic retry",
        'SettlementSecurityRepair',
        'SettlementAction',
        {
          notFound: 'the obligation is not in the scenario run',
          conflict: 'FACT_CONFLICT: the obligation has no open security-leg break',
        },
      ),
      '/admin/v1/settlement/force-settle': settlementAdminOperation(
        'forceSettle',
        'finality by operator decision: the ledger entries and SettlementSettled marked FORCED',
        'SettlementForceSettle',
        'SettlementAction',
        {
          notFound: 'the obligation is not in the scenario run',
          conflict: 'FACT_CONFLICT: the obligation is already settled',
        },
      ),
      '/admin/v1/settlement/reverse-ledger-entry': settlementAdminOperation(
        'reverseLedgerEntry',
        'a compensating ledger entry (nothing is deleted)',
        'SettlementReverseLedgerEntry',
        'SettlementAction',
        {
          notFound: 'the ledger entry is not in the scenario run',
          conflict: 'FACT_CONFLICT: the entry is already reversed, or is itself a reversal',
        },
      ),
      '/admin/v1/settlement/profiles': settlementAdminOperation(
        'setSettlementProfile',
        'set a post-trade profile override (platform, venueSession or scenarioRun scope)',
        'SettlementProfileOverride',
        'SettlementProfileSet',
      ),
      '/api/v1/settlement/facts/{scenarioRunId}': settlementReadOperation('getSettlementFacts', 'The fact trail of a scenario run, in sequence order', 'SettlementFacts'),
      '/api/v1/settlement/obligations/{scenarioRunId}': settlementReadOperation('getSettlementObligations', 'One obligation per materialized trade, with its state', 'SettlementObligations'),
      '/api/v1/settlement/ledger/{scenarioRunId}': settlementReadOperation(
        'getSettlementLedger',
        'Ledger entries, balances per participant/account/asset, and proof totals per settlement',
        'SettlementLedger',
      ),
      '/api/v1/settlement/exceptions/{scenarioRunId}': settlementReadOperation(
        'getSettlementExceptions',
        'Exceptions (clearing rejections, leg breaks) with open/resolved counts',
        'SettlementExceptions',
      ),
      '/api/v1/settlement/proof/{scenarioRunId}': settlementReadOperation('getSettlementProof', 'The replay proof: CLEAN or GAPPED, causation gaps, fact counts, checksum', 'SettlementProof'),
      '/api/v1/settlement/score/{scenarioRunId}': settlementReadOperation(
        'getSettlementScore',
        'Participant scores: settled balances, pending and haircut value, fails, aged fails, penalties',
        'SettlementScore',
        { query: true },
      ),
      '/api/v1/settlement/leaderboard/{scenarioRunId}': settlementReadOperation(
        'getSettlementLeaderboard',
        'Public competition leaderboard (served only when COMPETITION_PROFILE is set)',
        'SettlementLeaderboard',
        { query: true, public: true, notFound: 'COMPETITION_PROFILE is not set: the route is not served' },
      ),
      '/metrics': {
        get: {
          operationId: 'getMetrics',
          tags: ['metrics'],
          summary:
            'Prometheus text exposition (written by prom-client): requests, commands, their durations, journal commits, projection lag, queue high-water marks, market-data subscribers and the process metrics',
          security: [{ bearer: [] }],
          responses: {
            200: { description: 'the metrics, in the Prometheus text format 0.0.4', content: { 'text/plain; version=0.0.4; charset=utf-8': { schema: { type: 'string' } } } },
            401: error('missing or unknown bearer token'),
            403: error('operators and viewers only'),
            405: error('the route takes GET'),
            503: error('the metrics could not be gathered'),
          },
        },
      },
      // The probes are the only routes that take no token (API contract, Authentication).
      '/healthz': {
        get: { operationId: 'getLiveness', tags: ['probes'], summary: 'Liveness: 200 while the process lives', security: [], responses: { 200: { description: '{ "status": "ok" }' } } },
      },
      '/readyz': {
        get: {
          operationId: 'getReadiness',
          tags: ['probes'],
          security: [],
          summary: 'Readiness: 200 once migrations ran and the books are recovered; 503 while starting, draining or while PostgreSQL is unreachable',
          responses: { 200: { description: '{ "status": "ready" }' }, 503: error('not ready') },
        },
      },
    },
  });
}

const HTTP_METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'] as const;

/**
 * Every path answers 405 to a method it does not take (RFC 9110: the resource exists),
 * so each operation documents it; that is also the probes' one client error.
 */
function withMethodNotAllowed(doc: Record<string, unknown>): Record<string, unknown> {
  for (const item of Object.values(doc.paths as Record<string, Partial<Record<(typeof HTTP_METHODS)[number], { responses: Record<string, unknown> }>>>)) {
    const methods = HTTP_METHODS.filter((method) => item[method] !== undefined);
    for (const method of methods) {
      item[method]!.responses['405'] = error(`METHOD_NOT_ALLOWED: the path takes ${methods.map((m) => m.toUpperCase()).join(', ')} only`);
    }
  }
  return doc;
}
