// The audit trail as tier 1 keeps it: a command's intake record and its JSON text, from
// an intake batch (its records, `stride` bytes each, and their texts back to back, each
// record stating its text's length: core/body-ring.ts).

import { readIntake } from '../core/intake-record.ts';
import type { AuditRecord } from '../core/storage-protocol.ts';
import { formatUuid } from '../core/uuid.ts';

const decoder = new TextDecoder('utf-8', { ignoreBOM: true }); // a leading U+FEFF is text the client sent, not a mark to strip

/** The audit record of the `index`-th command of an intake batch; `bodies` null for a batch stored before texts were kept. */
export function auditOf(payload: Uint8Array, stride: number, bodies: Uint8Array | null, index: number): AuditRecord {
  const aligned = payload.byteOffset % 8 === 0 ? payload : payload.slice();
  const views = {
    words: new Int32Array(aligned.buffer, aligned.byteOffset, aligned.byteLength >> 2),
    floats: new Float64Array(aligned.buffer, aligned.byteOffset, aligned.byteLength >> 3),
    bytes: aligned,
  };
  let bodyAt = 0;
  for (let k = 0; k < index; k++) bodyAt += readIntake(views, k * stride).bodyLength;
  const entry = readIntake(views, index * stride);
  const words = new Int32Array(4);
  for (let k = 0; k < 4; k++) words[k] = (entry.commandId[k * 4]! << 24) | (entry.commandId[k * 4 + 1]! << 16) | (entry.commandId[k * 4 + 2]! << 8) | entry.commandId[k * 4 + 3]!;
  const bodyBytes = bodies === null || entry.bodyLength === 0 ? null : bodies.subarray(bodyAt, bodyAt + entry.bodyLength);
  if (bodyBytes !== null && bodyBytes.byteLength !== entry.bodyLength) throw new Error(`an intake batch's texts end before its record ${index}'s`);
  return {
    commandId: formatUuid(words, 0),
    route: entry.route,
    processingMode: entry.processingMode,
    principal: entry.principal,
    receivedAtUs: entry.receivedAtUs,
    clientId: entry.clientId,
    idempotencyKey: entry.idempotencyKey,
    body: bodyBytes === null ? null : decoder.decode(bodyBytes),
  };
}
