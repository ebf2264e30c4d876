// The command status view claims no more than storage holds (gateway/status-view.ts):
// every combination of what is durable, and the FAILED outcomes with their lastError.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { rejectCodeOf } from '../../core/codes.ts';
import { INTERNAL, RESULT, STATUS, type CommandSnapshot } from '../../gateway/command-store.ts';
import { renderStatusView, ROUTE_SUBMIT } from '../../gateway/status-view.ts';

const encoder = new TextEncoder();

function record(result: number, rejectCode = 0): CommandSnapshot {
  return {
    status: STATUS.ACCEPTED,
    internalStatus: INTERNAL.RECEIVED,
    processingMode: 1,
    route: ROUTE_SUBMIT,
    responseStatus: 0,
    shard: 1,
    resultStatus: result,
    rejectCode,
    principal: 0,
    ringIndex: 3,
    deliveredCount: 0,
    commandId: 'c0000000-0000-4000-8000-000000000001',
    orderId: 'c0000000-0000-4000-8000-000000000002',
    instrumentId: 'c0000000-0000-4000-8000-000000000003',
    payloadHash: 'ab'.repeat(32),
    clientId: 'c',
    idempotencyKey: 'k',
    response: null,
    result: result === RESULT.NONE ? null : encoder.encode('{"outcome":{}}'),
    streamSequence: result === RESULT.NONE ? 0 : 42,
    batch: 7,
    receivedAtUs: 1,
    completedAtUs: 2,
    intakeCount: 5,
  };
}

const view = (snapshot: CommandSnapshot, durable: { captured: boolean; taken: boolean; outcome: boolean }) => JSON.parse(renderStatusView(snapshot, durable));

test('durably accepted and not yet taken by its shard: ACCEPTED, RECEIVED, nothing delivered', () => {
  const v = view(record(RESULT.NONE), { captured: true, taken: false, outcome: false });
  assert.deepEqual([v.status, v.internalStatus, v.deliveredCount, v.canonicalMaterialized, v.resultStatus], ['ACCEPTED', 'RECEIVED', 0, false, '']);
});

test('durable and taken by its shard, not answered: IN_FLIGHT, PROCESSING', () => {
  const v = view(record(RESULT.NONE), { captured: true, taken: true, outcome: false });
  assert.deepEqual([v.status, v.internalStatus, v.deliveredCount], ['IN_FLIGHT', 'PROCESSING', 1]);
});

test('an outcome the shard gave but the journal does not hold yet is not claimed: IN_FLIGHT, its fields left out', () => {
  const v = view(record(RESULT.ACCEPTED), { captured: true, taken: true, outcome: false });
  assert.deepEqual(
    [v.status, v.internalStatus, v.canonicalMaterialized, v.resultStatus, v.engineResultStatus, v.resultPayloadJson, v.streamSequence, v.batchId, v.rejectCode],
    ['IN_FLIGHT', 'PROCESSING', false, '', '', '', 0, '', ''],
  );
});

test('an outcome on the durable journal: COMPLETED or REJECTED with its fields', () => {
  const completed = view(record(RESULT.ACCEPTED), { captured: true, taken: true, outcome: true });
  assert.deepEqual(
    [completed.status, completed.internalStatus, completed.resultStatus, completed.streamSequence, completed.batchId, completed.lastError],
    ['COMPLETED', 'COMPLETED', 'accepted', 42, '1-7', ''],
  );
  const rejected = view(record(RESULT.REJECTED, rejectCodeOf('ORDER_NOT_FOUND')), { captured: true, taken: true, outcome: true });
  assert.deepEqual([rejected.status, rejected.rejectCode, rejected.lastError], ['REJECTED', 'ORDER_NOT_FOUND', '']);
});

test('a command the shard could not carry out: FAILED, internal FAILED, lastError naming the code and why', () => {
  for (const code of ['SESSION_ENDED', 'INTERNAL_CHECK_FAILED', 'SHARD_HALTED']) {
    const v = view(record(RESULT.REJECTED, rejectCodeOf(code)), { captured: true, taken: true, outcome: true });
    assert.deepEqual([v.status, v.internalStatus, v.rejectCode], ['FAILED', 'FAILED', code]);
    assert.match(v.lastError, new RegExp(`^${code}: .+`));
  }
});
