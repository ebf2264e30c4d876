// The command status view of the specification, from a command record (in a
// gateway's shared memory, or read back from storage).

import { isFailureCode, rejectName, rejectReason } from '../core/codes.ts';
import { PROCESSING_MODES } from '../core/config.ts';
import { INTERNAL, INTERNAL_NAMES, RESULT, STATUS, STATUS_NAMES, type CommandSnapshot } from './command-store.ts';

export const ROUTES = [
  { path: '/api/v1/orders/submit', commandType: 'SubmitOrder' },
  { path: '/api/v1/orders/cancel', commandType: 'CancelOrder' },
  { path: '/api/v1/orders/modify', commandType: 'ModifyOrder' },
  { path: '/api/v1/orders/cancel-by-client-order', commandType: 'CancelOrderByClientOrderId' },
] as const;
export const ROUTE_SUBMIT = 0;
export const ROUTE_CANCEL = 1;
export const ROUTE_MODIFY = 2;
export const ROUTE_CANCEL_BY_CLIENT_ORDER = 3;

const decoder = new TextDecoder('utf-8', { ignoreBOM: true }); // a leading U+FEFF is text the client sent, not a mark to strip

/** What storage holds of a command at the time of a status read. */
export interface Durable {
  /** Its intake record is committed: the command is durably accepted. */
  captured: boolean;
  /** The shard has taken it off its ring (processing has started). */
  taken: boolean;
  /** Its outcome is on the durable journal (canonicalMaterialized). */
  outcome: boolean;
}

/**
 * The status view, claiming no more than is durable: ACCEPTED once the intake record is
 * committed; IN_FLIGHT once the shard took it, or has an outcome not yet durable (whose
 * fields are left out); COMPLETED, REJECTED or FAILED (lastError set) once the outcome is
 * on the journal. The caller answers only for a captured command.
 */
export function renderStatusView(snapshot: CommandSnapshot, durable: Durable): string {
  const outcome = durable.outcome && snapshot.resultStatus !== RESULT.NONE;
  const failed = outcome && isFailureCode(snapshot.rejectCode);
  let status: number = STATUS.ACCEPTED;
  let internal: number = INTERNAL.RECEIVED;
  if (failed) {
    status = STATUS.FAILED;
    internal = INTERNAL.FAILED;
  } else if (outcome) {
    status = snapshot.resultStatus === RESULT.ACCEPTED ? STATUS.COMPLETED : STATUS.REJECTED;
    internal = INTERNAL.COMPLETED;
  } else if (durable.taken || snapshot.resultStatus !== RESULT.NONE) {
    status = STATUS.IN_FLIGHT;
    internal = INTERNAL.PROCESSING;
  }
  const shard = snapshot.shard;
  const routed = shard >= 0;
  const resultStatus = !outcome ? '' : snapshot.resultStatus === RESULT.ACCEPTED ? 'accepted' : 'rejected';
  const route = ROUTES[snapshot.route]!;
  return JSON.stringify({
    commandId: snapshot.commandId,
    clientId: snapshot.clientId,
    route: route.path,
    idempotencyKey: snapshot.idempotencyKey,
    status: STATUS_NAMES[status],
    internalStatus: INTERNAL_NAMES[internal],
    processingMode: PROCESSING_MODES[snapshot.processingMode],
    responseStatus: snapshot.responseStatus,
    responsePayloadJson: snapshot.response === null ? '' : decoder.decode(snapshot.response),
    lastError: failed ? `${rejectName(snapshot.rejectCode)}: ${rejectReason(snapshot.rejectCode)}` : '',
    canonicalMaterialized: outcome,
    engineResultStatus: resultStatus,
    resultStatus,
    batchId: outcome ? `${shard}-${snapshot.batch}` : '',
    shardId: routed ? String(shard) : '',
    partition: routed ? shard : -1,
    commandStream: routed ? `shard-${shard}-commands` : '',
    eventStream: routed ? `shard-${shard}-events` : '',
    streamSequence: outcome ? snapshot.streamSequence : 0,
    deliveredCount: status === STATUS.ACCEPTED ? 0 : 1,
    commandType: route.commandType,
    payloadHash: snapshot.payloadHash,
    instrumentId: snapshot.instrumentId ?? '',
    orderId: snapshot.orderId ?? '',
    rejectCode: outcome && snapshot.rejectCode !== 0 ? rejectName(snapshot.rejectCode) : '',
    resultPayloadJson: outcome && snapshot.result !== null ? decoder.decode(snapshot.result) : '',
  });
}
