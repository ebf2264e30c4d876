// The catalog of the API's JSON schemas, each defined in the module of its job: those the
// validators are compiled from (validators-build.ts) and every answer. The OpenAPI document
// is built from the same objects, so the published and the enforced contract cannot drift.

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
import { availabilitySchema, barsSchema, depthSchema, fillsSchema, ownOrdersSchema, projectorStatusSchema, QUERY_SCHEMAS, snapshotRefreshSchema, snapshotSchema, tapeSchema } from './read-schemas.ts';
import { errorSchema } from './schema-shared.ts';
import { SETTLEMENT_BODY_SCHEMAS, SETTLEMENT_RESPONSE_SCHEMAS } from './settlement-schemas.ts';

/** The schemas the gateway validates requests with, by the validators' export names: the order routes by name, then `query:<name>` and `body:<name>`. */
export function validatorSchemas(): Record<string, { $id: string }> {
  const schemas: Record<string, { $id: string }> = {
    submit: submitOrderSchema,
    cancel: cancelOrderSchema,
    modify: modifyOrderSchema,
    'cancel-by-client-order': cancelByClientOrderSchema,
  };
  for (const [name, schema] of Object.entries(QUERY_SCHEMAS)) schemas[`query:${name}`] = schema;
  for (const [name, schema] of Object.entries(SETTLEMENT_BODY_SCHEMAS)) schemas[`body:${name}`] = schema;
  schemas['body:session-roll'] = sessionRollSchema;
  return schemas;
}

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
