// The read plane's schemas: the query parameters of each read and its answer (snapshots,
// depth, tape, bars, own orders and fills, availability, the projector's status).

import { closed, timestamp, uuid } from './schema-shared.ts';

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
    properties: { limit: countParam('rows, 1 to 500 (default 100)'), before: countParam("only trades with a smaller sequence (the previous page's nextBefore)") },
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

// ---- read-plane responses ----

const priceObject = {
  type: 'object',
  additionalProperties: false,
  properties: { nanos: { type: 'string', pattern: '^[0-9]+$' }, currency: { type: 'string' } },
  required: ['nanos', 'currency'],
} as const;
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
          name: { type: 'string' },
          endpoint: { type: 'string' },
          sourceType: { enum: ['durable-facts', 'projection', 'live'] },
          freshnessModel: { type: 'string' },
          visibilityScope: { type: 'string' },
          requiredFilters: { type: 'array', items: { type: 'string' } },
          optionalFilters: { type: 'array', items: { type: 'string' } },
          projectionLagMs: { anyOf: [{ type: 'null' }, { type: 'integer', minimum: 0 }] },
          watermark: { anyOf: [{ type: 'null' }, shardWatermarks] },
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
    enabled: { type: 'boolean' },
    running: { type: 'boolean' },
    projectionName: { type: 'string' },
    sourceProjectionName: { type: 'string' },
    intervalMs: { type: 'integer' },
    refreshes: { type: 'integer' },
    lastRefreshAt: { anyOf: [{ type: 'null' }, timestamp] },
    lastRefreshInstruments: { type: 'integer' },
    watermark: { type: 'array', items: { type: 'integer' }, description: 'per shard: the projection position the snapshots were last refreshed from' },
    sourceWatermark: { type: 'array', items: { type: 'integer' }, description: 'per shard: where the source projection is now' },
    lagSequences: { type: 'integer' },
    lagMs: { type: 'integer' },
    errors: { type: 'integer' },
    lastError: { anyOf: [{ type: 'null' }, { type: 'string' }] },
  },
  required: [
    'enabled',
    'running',
    'projectionName',
    'sourceProjectionName',
    'intervalMs',
    'refreshes',
    'lastRefreshAt',
    'lastRefreshInstruments',
    'watermark',
    'sourceWatermark',
    'lagSequences',
    'lagMs',
    'errors',
    'lastError',
  ],
} as const;
