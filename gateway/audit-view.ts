// The audit trail's answer (API contract, "Audit trail"): a command as it arrived, from
// what tier 1 keeps of it (persistence/audit.ts).

import { occurredAtOf } from '../core/outcome-format.ts';
import type { AuditRecord } from '../core/storage-protocol.ts';
import { PROCESSING_MODES } from '../core/config.ts';
import type { Principals } from './principals.ts';
import { ROUTES } from './status-view.ts';

/** `{ commandId, route, receivedAt, principalId, clientId, idempotencyKey, processingMode, body }`; body null if its text was not kept. */
export function renderAudit(record: AuditRecord, principals: Principals): string {
  return JSON.stringify({
    commandId: record.commandId,
    route: ROUTES[record.route]!.path,
    receivedAt: occurredAtOf(record.receivedAtUs),
    principalId: principals.list[record.principal]?.principalId ?? `#${record.principal}`,
    clientId: record.clientId,
    idempotencyKey: record.idempotencyKey,
    processingMode: PROCESSING_MODES[record.processingMode],
    body: record.body === null ? null : (JSON.parse(record.body) as unknown),
  });
}
