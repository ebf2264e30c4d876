// The OpenAPI 3.1 document, built from the same schema objects the gateway validates
// with (schemas.ts). Served at GET /api/v1/openapi.json.

import {
  acceptedPointerSchema,
  cancelByClientOrderSchema,
  cancelOrderSchema,
  commandStatusSchema,
  errorSchema,
  availabilitySchema,
  barsSchema,
  depthSchema,
  fillsSchema,
  modifyOrderSchema,
  ownOrdersSchema,
  persistenceStatusSchema,
  projectorStatusSchema,
  QUERY_SCHEMAS,
  snapshotRefreshSchema,
  snapshotSchema,
  tapeSchema,
  type QueryName,
  rebuildStatusSchema,
  resultEnvelopeSchema,
  submitOrderSchema,
  venueSessionSchema,
} from './schemas.ts';

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

function orderOperation(summary: string, schemaName: string) {
  return {
    post: {
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
        409: error('IDEMPOTENCY_CONFLICT: the key was used with another payload, or the commandId by another command'),
        413: error('the body is larger than MAX_BODY_BYTES'),
        503: error('OVERLOADED or UNAVAILABLE: not accepted; retry later with the same Idempotency-Key (Retry-After)'),
      },
    },
  };
}

/** A read route: its query parameters come from the schema the gateway validates them with. */
function readOperation(
  summary: string,
  queryName: QueryName | null,
  response: string,
  extra: { pathParam?: boolean; notFound?: string; forbidden?: string } = {},
): Record<string, unknown> {
  const query = queryName === null ? [] : Object.entries(QUERY_SCHEMAS[queryName].properties).map(([name, schema]) => ({ name, in: 'query', required: false, schema }));
  const path = extra.pathParam ? [{ name: 'instrumentId', in: 'path', required: true, schema: { type: 'string', format: 'uuid' } }] : [];
  return {
    summary,
    security: [{ bearer: [] }],
    parameters: [...path, ...query],
    responses: {
      200: { description: summary, content: json(ref(response)) },
      400: error('an unknown, repeated or invalid query parameter, or a value out of range'),
      401: error('missing or unknown bearer token'),
      403: error(extra.forbidden ?? 'the role may not use this route'),
      ...(extra.notFound === undefined ? {} : { 404: error(extra.notFound) }),
      503: error('storage is unavailable or the projections are behind past the bound'),
    },
  };
}

export function buildOpenApi(): Record<string, unknown> {
  return {
    openapi: '3.1.0',
    info: { title: 'Trading venue', version: '1.0.0', description: 'Order entry, command status, venue session, market data, own-order reads, availability and the operator storage routes (this release).' },
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
        VenueSession: strip(venueSessionSchema),
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
      },
    },
    paths: {
      '/api/v1/orders/submit': orderOperation('Submit a limit order', 'SubmitOrder'),
      '/api/v1/orders/cancel': orderOperation('Cancel an order (full target context)', 'CancelOrder'),
      '/api/v1/orders/modify': orderOperation('Modify an order: new total quantity and price', 'ModifyOrder'),
      '/api/v1/orders/cancel-by-client-order': orderOperation('Cancel the open order of a clientOrderId', 'CancelByClientOrder'),
      '/api/v1/commands/{commandId}': {
        get: {
          summary: 'Command status (traders: their own commands; operators: any)',
          security: [{ bearer: [] }],
          parameters: [{ name: 'commandId', in: 'path', required: true, schema: { type: 'string', format: 'uuid' } }],
          responses: {
            200: { description: 'the command status view', content: json(ref('CommandStatus')) },
            401: error('missing or unknown bearer token'),
            403: error('the role may not read command status'),
            404: error('no such command (or not yours)'),
          },
        },
      },
      '/api/v1/venue/session': {
        get: {
          summary: 'The active venue session',
          security: [{ bearer: [] }],
          responses: { 200: { description: 'runId, venueSessionId, startedAt', content: json(ref('VenueSession')) }, 401: error('missing or unknown bearer token') },
        },
      },
      '/api/v1/openapi.json': {
        get: { summary: 'This document', security: [{ bearer: [] }], responses: { 200: { description: 'OpenAPI 3.1' }, 401: error('missing or unknown bearer token') } },
      },
      '/api/v1/market-data/snapshots/{instrumentId}': {
        get: readOperation('The stored top-of-book snapshot (displayed LIMIT quantity only)', 'snapshot', 'Snapshot', {
          pathParam: true,
          notFound: 'market data snapshot not found (none produced yet under this projectionName)',
        }),
      },
      '/api/v1/market-data/snapshots': {
        post: readOperation('Refresh the snapshots (one instrument, or all with open orders or a snapshot) from the order lifecycle projection', 'refresh', 'SnapshotRefresh', {
          notFound: 'market data snapshot not found (the named instrument has never traded here)',
        }),
      },
      '/api/v1/market-data/depth/{instrumentId}': {
        get: readOperation('Displayed depth per price level, best first, from the order lifecycle projection', 'depth', 'Depth', {
          pathParam: true,
          notFound: 'market data depth not found (no order was ever accepted for the instrument)',
        }),
      },
      '/api/v1/market-data/trades/{instrumentId}': {
        get: readOperation('The public trade tape, most recent first, no identities', 'tape', 'Tape', { pathParam: true }),
      },
      '/api/v1/market-data/bars/{instrumentId}': {
        get: readOperation('OHLCV bars from runtime.trades (intervals without trades are left out)', 'bars', 'Bars', { pathParam: true }),
      },
      '/api/v1/orders/current': { get: readOperation("The open orders of the principal's participants", 'own', 'OwnOrders', { forbidden: 'traders only' }) },
      '/api/v1/orders/history': { get: readOperation("All orders of the principal's participants, most recently updated first", 'own', 'OwnOrders', { forbidden: 'traders only' }) },
      '/api/v1/orders/fills': { get: readOperation("The fills of the principal's participants, most recent first", 'own', 'Fills', { forbidden: 'traders only' }) },
      '/api/v1/data/availability': { get: readOperation('The read-surface inventory: source, freshness, scope, filters, lag, watermark per read', null, 'Availability') },
      '/internal/market-data/projector/status': {
        get: readOperation('The snapshot loop (MARKET_DATA_PROJECTOR_ENABLED): running, last refresh, lag, watermark, errors', null, 'ProjectorStatus'),
      },
      '/admin/v1/projections/order-lifecycle/rebuild': {
        post: {
          summary: 'Operator: rebuild runtime.order_lifecycle_state from the journal (no body fields)',
          security: [{ bearer: [] }],
          responses: {
            200: { description: 'the rebuild-status payload', content: json(ref('RebuildStatus')) },
            401: error('missing or unknown bearer token'),
            403: error('operators only'),
            503: error('storage is unavailable'),
          },
        },
      },
      '/admin/v1/persistence/status': {
        get: {
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
      '/healthz': { get: { summary: 'Liveness: 200 while the process lives', responses: { 200: { description: '{ "status": "ok" }' } } } },
      '/readyz': {
        get: {
          summary: 'Readiness: 200 once migrations ran and the books are recovered; 503 while starting, draining or while PostgreSQL is unreachable',
          responses: { 200: { description: '{ "status": "ready" }' }, 503: error('not ready') },
        },
      },
    },
  };
}
