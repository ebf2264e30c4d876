// The command status view of the specification, from a command record (in a
// gateway's shared memory, or read back from storage).

import { rejectName } from '../core/codes.ts';
import { PROCESSING_MODES } from './config.ts';
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

const decoder = new TextDecoder();

/**
 * `taken`: whether the shard has already taken the command off its ring (its read
 * index passed the command's position), which turns ACCEPTED into IN_FLIGHT.
 * `materialized`: whether the outcome is on the durable journal (canonicalMaterialized).
 */
export function renderStatusView(snapshot: CommandSnapshot, taken: boolean, materialized: boolean): string {
  let status = snapshot.status;
  let internal = snapshot.internalStatus;
  let delivered = snapshot.deliveredCount;
  if (status === STATUS.ACCEPTED && taken) {
    status = STATUS.IN_FLIGHT;
    internal = INTERNAL.PROCESSING;
    delivered = 1;
  }
  const shard = snapshot.shard;
  const routed = shard >= 0;
  const resultStatus = snapshot.resultStatus === RESULT.ACCEPTED ? 'accepted' : snapshot.resultStatus === RESULT.REJECTED ? 'rejected' : '';
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
    lastError: '',
    canonicalMaterialized: materialized,
    engineResultStatus: resultStatus,
    resultStatus,
    batchId: snapshot.resultStatus === RESULT.NONE ? '' : `${shard}-${snapshot.batch}`,
    shardId: routed ? String(shard) : '',
    partition: routed ? shard : -1,
    commandStream: routed ? `shard-${shard}-commands` : '',
    eventStream: routed ? `shard-${shard}-events` : '',
    streamSequence: snapshot.streamSequence,
    deliveredCount: delivered,
    commandType: route.commandType,
    payloadHash: snapshot.payloadHash,
    instrumentId: snapshot.instrumentId ?? '',
    orderId: snapshot.orderId ?? '',
    rejectCode: snapshot.rejectCode === 0 ? '' : rejectName(snapshot.rejectCode),
    resultPayloadJson: snapshot.result === null ? '' : decoder.decode(snapshot.result),
  });
}
