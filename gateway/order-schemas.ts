// The order commands' schemas: the bodies of submit, modify, cancel and cancel by
// clientOrderId, and their answers (result envelope, 202 pointer, command status, audit).

import { freeText, identifier, sessionString, timestamp, uuid } from './schema-shared.ts';

const decimalString = (description: string) => ({ type: 'string', minLength: 1, maxLength: 32, description }) as const;

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
  required: [...commonRequired, 'orderId', 'instrumentId', 'participantId', 'accountId', 'side', 'orderType', 'quantityUnits', 'limitPrice', 'currency', 'timeInForce'],
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
    'commandId',
    'clientId',
    'route',
    'idempotencyKey',
    'status',
    'internalStatus',
    'processingMode',
    'responseStatus',
    'responsePayloadJson',
    'lastError',
    'canonicalMaterialized',
    'engineResultStatus',
    'resultStatus',
    'batchId',
    'shardId',
    'partition',
    'commandStream',
    'eventStream',
    'streamSequence',
    'deliveredCount',
    'commandType',
    'payloadHash',
    'instrumentId',
    'orderId',
    'rejectCode',
    'resultPayloadJson',
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
