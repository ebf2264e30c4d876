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
    '/api/v1/market-data/stream': 'get',
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
    '/metrics': 'get',
  };
  assert.deepEqual(Object.keys(doc.paths).sort(), Object.keys(expected).sort());
  for (const [path, method] of Object.entries(expected)) assert.ok(doc.paths[path][method], `${method} ${path}`);
});

test('order routes document every status code of the contract', () => {
  for (const path of ['/api/v1/orders/submit', '/api/v1/orders/cancel', '/api/v1/orders/modify', '/api/v1/orders/cancel-by-client-order']) {
    assert.deepEqual(Object.keys(doc.paths[path].post.responses).sort(), ['200', '202', '400', '401', '403', '405', '408', '409', '413', '503']);
    assert.deepEqual(
      doc.paths[path].post.parameters.map((p: { name: string }) => p.name),
      ['X-Client-Id', 'Idempotency-Key', 'X-Processing-Mode'],
    );
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

/** Resolves a local JSON pointer (`#/a/b~1c`) against the document; undefined when nothing is there. */
function resolvePointer(root: unknown, ref: string): unknown {
  if (!ref.startsWith('#/')) return undefined;
  let node: any = root;
  for (const raw of ref.slice(2).split('/')) {
    const key = decodeURIComponent(raw).replaceAll('~1', '/').replaceAll('~0', '~');
    if (node === null || typeof node !== 'object' || !Object.hasOwn(node, key)) return undefined;
    node = node[key];
  }
  return node;
}

function collectRefs(node: unknown, out: string[] = []): string[] {
  if (Array.isArray(node)) for (const item of node) collectRefs(item, out);
  else if (node !== null && typeof node === 'object') {
    for (const [key, value] of Object.entries(node)) {
      if (key === '$ref' && typeof value === 'string') out.push(value);
      else collectRefs(value, out);
    }
  }
  return out;
}

test('every $ref resolves inside the document', () => {
  const refs = collectRefs(doc);
  assert.ok(refs.length > 20);
  for (const ref of refs) assert.notEqual(resolvePointer(doc, ref), undefined, ref);
  assert.equal(resolvePointer(doc, '#/components/schemas/NoSuchSchema'), undefined, 'the resolver finds no schema that is not there');
});

const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'];
const operations: Array<{ path: string; method: string; op: any }> = Object.entries<any>(doc.paths).flatMap(([path, item]) =>
  METHODS.filter((method) => item[method] !== undefined).map((method) => ({ path, method, op: item[method] })),
);
// The routes the gateway answers without a token (API contract, Authentication).
const PUBLIC_ROUTES = ['/healthz', '/readyz'];

test('the document names the local venue as its server', () => {
  assert.ok(Array.isArray(doc.servers) && doc.servers.length > 0, 'servers');
  const local = doc.servers.find((server: { url: string }) => server.url === 'http://127.0.0.1:8080');
  assert.ok(local, 'the default HOST and PORT');
  assert.ok(typeof local.description === 'string' && local.description.length > 0, 'the server is described');
});

test('every operation has a unique camelCase operationId and a summary', () => {
  assert.ok(operations.length >= 38);
  const seen = new Map<string, string>();
  for (const { path, method, op } of operations) {
    const where = `${method} ${path}`;
    assert.match(op.operationId ?? '', /^[a-z][A-Za-z0-9]*$/, `${where} has a camelCase operationId`);
    assert.equal(seen.get(op.operationId), undefined, `${where} reuses the operationId of ${seen.get(op.operationId)}`);
    seen.set(op.operationId, where);
    assert.ok(typeof op.summary === 'string' && op.summary.length > 0, `${where} has a summary`);
  }
  assert.equal(doc.paths['/api/v1/orders/submit'].post.operationId, 'submitOrder');
  assert.equal(doc.paths['/api/v1/orders/cancel'].post.operationId, 'cancelOrder');
  assert.equal(doc.paths['/api/v1/commands/{commandId}'].get.operationId, 'getCommandStatus');
});

test('every operation has a tag, and every tag is declared once with a description and used', () => {
  const declared: string[] = doc.tags.map((tag: { name: string }) => tag.name);
  assert.equal(new Set(declared).size, declared.length, 'tag names are unique');
  for (const tag of doc.tags) assert.ok(typeof tag.description === 'string' && tag.description.length > 0, `tag ${tag.name} is described`);
  const used = new Set<string>();
  for (const { path, method, op } of operations) {
    assert.ok(Array.isArray(op.tags) && op.tags.length > 0, `${method} ${path} has a tag`);
    for (const tag of op.tags) {
      assert.ok(declared.includes(tag), `${method} ${path}: tag ${tag} is declared`);
      used.add(tag);
    }
  }
  assert.deepEqual([...used].sort(), [...declared].sort(), 'every declared tag groups some operation');
});

test('the probes take no token; every other operation needs the bearer scheme', () => {
  assert.deepEqual(doc.components.securitySchemes.bearer, { type: 'http', scheme: 'bearer' });
  assert.deepEqual(doc.security, [{ bearer: [] }], 'bearer is the default');
  for (const path of PUBLIC_ROUTES)
    assert.ok(
      operations.some((o) => o.path === path),
      `${path} is documented`,
    );
  for (const { path, method, op } of operations) {
    const where = `${method} ${path}`;
    if (PUBLIC_ROUTES.includes(path)) assert.deepEqual(op.security, [], `${where} declares security: []`);
    else assert.deepEqual(op.security ?? doc.security, [{ bearer: [] }], `${where} needs a bearer token`);
    for (const requirement of op.security ?? doc.security) {
      for (const scheme of Object.keys(requirement)) assert.ok(doc.components.securitySchemes[scheme], `${where}: scheme ${scheme} is defined`);
    }
  }
});

test('every operation documents a success, a 4xx, and the 405 of a method its path does not take', () => {
  for (const { path, method, op } of operations) {
    const codes = Object.keys(op.responses);
    // The stream's success is the upgrade (101 Switching Protocols).
    const success = path === '/api/v1/market-data/stream' ? ['101'] : codes.filter((code) => code.startsWith('2'));
    assert.ok(success.length > 0 && success.every((code) => codes.includes(code)), `${method} ${path} documents a success`);
    assert.ok(
      codes.some((code) => code.startsWith('4')),
      `${method} ${path} documents a 4xx`,
    );
    assert.match(op.responses['405']?.description ?? '', new RegExp(`takes ${method.toUpperCase()} only`), `${method} ${path} documents 405`);
  }
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
  assert.deepEqual(
    doc.paths['/api/v1/settlement/score/{scenarioRunId}'].get.parameters.map((p: { name: string }) => p.name),
    ['scenarioRunId', 'asOf', 'agedFailAfterSeconds'],
  );
});
