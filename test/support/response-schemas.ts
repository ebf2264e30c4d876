// Validates answers against the response schemas the OpenAPI document publishes.
import assert from 'node:assert/strict';
import { Ajv } from 'ajv';
import addFormatsModule from 'ajv-formats';
import { isUuid } from '../../core/uuid.ts';
import { RESPONSE_SCHEMAS } from '../../gateway/schemas.ts';

const addFormats = ((addFormatsModule as unknown as { default?: unknown }).default ?? addFormatsModule) as (ajv: Ajv, formats: string[]) => Ajv;
const ajv = new Ajv({ allErrors: true, strict: false });
addFormats(ajv, ['date-time']);
ajv.addFormat('uuid', { type: 'string', validate: isUuid });
for (const schema of RESPONSE_SCHEMAS) ajv.addSchema(schema);

export function assertShape(
  schemaId:
    | 'ResultEnvelope'
    | 'AcceptedPointer'
    | 'CommandStatus'
    | 'VenueSession'
    | 'VenueSessionRolled'
    | 'Error'
    | 'RebuildStatus'
    | 'PersistenceStatus'
    | 'Snapshot'
    | 'SnapshotRefresh'
    | 'Depth'
    | 'Tape'
    | 'Bars'
    | 'OwnOrders'
    | 'Fills'
    | 'Availability'
    | 'ProjectorStatus'
    | 'SettlementFacts'
    | 'SettlementObligations'
    | 'SettlementLedger'
    | 'SettlementExceptions'
    | 'SettlementProof'
    | 'SettlementScore'
    | 'SettlementLeaderboard'
    | 'SettlementAppended'
    | 'SettlementMaterialized'
    | 'SettlementAction'
    | 'SettlementProfileSet',
  value: unknown,
): void {
  const validate = ajv.getSchema(schemaId)!;
  assert.ok(validate(value), `${schemaId}: ${ajv.errorsText(validate.errors)}\n${JSON.stringify(value)}`);
}
