import assert from 'node:assert/strict';
import { test } from 'node:test';
import { buildOpenApi } from '../../gateway/openapi.ts';
import { cancelByClientOrderSchema, cancelOrderSchema, modifyOrderSchema, submitOrderSchema } from '../../gateway/order-schemas.ts';
import { SETTLEMENT_BODY_SCHEMAS } from '../../gateway/settlement-schemas.ts';

const doc = buildOpenApi() as any;

test('the OpenAPI document lists every route with its method', () => {
  assert.equal(doc.openapi, '3.1.0');
  const expected: Record<string, string> = {
    '/api/v1/orders/submit': 'post',
    '/api/v1/orders/cancel': 'post',
    '/api/v1/orders/modify': 'post',
    '/api/v1/orders/cancel-by-client-order': 'post',
    '/api/v1/commands/{commandId}': 'get',
    '/api/v1/venue/session': 'get',
    '/api/v1/openapi.json': 'get',
    '/api/v1/market-data/snapshots/{instrumentId}': 'get',
    '/api/v1/market-data/snapshots': 'post',
    '/api/v1/market-data/depth/{instrumentId}': 'get',
    '/api/v1/market-data/trades/{instrumentId}': 'get',
    '/api/v1/market-data/bars/{instrumentId}': 'get',
    '/api/v1/orders/current': 'get',
    '/api/v1/orders/history': 'get',
    '/api/v1/orders/fills': 'get',
    '/api/v1/data/availability': 'get',
    '/internal/market-data/projector/status': 'get',
    '/admin/v1/audit/commands/{commandId}': 'get',
    '/admin/v1/projections/order-lifecycle/rebuild': 'post',
    '/admin/v1/persistence/status': 'get',
    '/admin/v1/venue/sessions': 'post',
    '/admin/v1/settlement/facts': 'post',
    '/admin/v1/settlement/obligations/materialize': 'post',
    '/admin/v1/settlement/repairs/cash': 'post',
    '/admin/v1/settlement/repairs/security': 'post',
    '/admin/v1/settlement/force-settle': 'post',
    '/admin/v1/settlement/reverse-ledger-entry': 'post',
    '/admin/v1/settlement/profiles': 'post',
    '/api/v1/settlement/facts/{scenarioRunId}': 'get',
    '/api/v1/settlement/obligations/{scenarioRunId}': 'get',
    '/api/v1/settlement/ledger/{scenarioRunId}': 'get',
    '/api/v1/settlement/exceptions/{scenarioRunId}': 'get',
    '/api/v1/settlement/proof/{scenarioRunId}': 'get',
    '/api/v1/settlement/score/{scenarioRunId}': 'get',
    '/api/v1/settlement/leaderboard/{scenarioRunId}': 'get',
    '/healthz': 'get',
    '/readyz': 'get',
  };
  assert.deepEqual(Object.keys(doc.paths).sort(), Object.keys(expected).sort());
  for (const [path, method] of Object.entries(expected)) assert.ok(doc.paths[path][method], `${method} ${path}`);
});

test('order routes document every status code of the contract', () => {
  for (const path of ['/api/v1/orders/submit', '/api/v1/orders/cancel', '/api/v1/orders/modify', '/api/v1/orders/cancel-by-client-order']) {
    assert.deepEqual(Object.keys(doc.paths[path].post.responses).sort(), ['200', '202', '400', '401', '403', '408', '409', '413', '503']);
    assert.deepEqual(doc.paths[path].post.parameters.map((p: { name: string }) => p.name), ['X-Client-Id', 'Idempotency-Key', 'X-Processing-Mode']);
  }
});

test('request bodies are the very schemas the gateway validates with', () => {
  const pairs: Array<[string, { properties: object; required: readonly string[] }]> = [
    ['SubmitOrder', submitOrderSchema],
    ['ModifyOrder', modifyOrderSchema],
    ['CancelOrder', cancelOrderSchema],
    ['CancelByClientOrder', cancelByClientOrderSchema],
  ];
  for (const [name, schema] of pairs) {
    assert.deepEqual(doc.components.schemas[name].properties, schema.properties);
    assert.deepEqual(doc.components.schemas[name].required, schema.required);
    assert.equal(doc.components.schemas[name].additionalProperties, false);
  }
});

test('every $ref points at a defined schema', () => {
  const refs = JSON.stringify(doc).match(/#\/components\/schemas\/[A-Za-z]+/g) ?? [];
  assert.ok(refs.length > 20);
  for (const ref of refs) assert.ok(doc.components.schemas[ref.split('/').pop()!], ref);
});

test('settlement operator routes: the validated body schemas, and every status code the gateway answers', () => {
  for (const schema of Object.values(SETTLEMENT_BODY_SCHEMAS)) {
    const { $id, ...rest } = schema;
    assert.deepEqual(doc.components.schemas[$id], rest, $id);
  }
  for (const [path, item] of Object.entries<any>(doc.paths).filter(([path]) => path.startsWith('/admin/v1/settlement/'))) {
    const codes = Object.keys(item.post.responses);
    for (const code of ['200', '400', '401', '403', '405', '408', '413', '503']) assert.ok(codes.includes(code), `${path} documents ${code}`);
  }
  const leaderboard = doc.paths['/api/v1/settlement/leaderboard/{scenarioRunId}'].get;
  assert.equal(leaderboard.responses['403'], undefined, 'the leaderboard is public');
  assert.deepEqual(doc.paths['/api/v1/settlement/score/{scenarioRunId}'].get.parameters.map((p: { name: string }) => p.name), ['scenarioRunId', 'asOf', 'agedFailAfterSeconds']);
});
