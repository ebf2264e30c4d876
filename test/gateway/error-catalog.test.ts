// The error catalog (gateway/error-catalog.ts) against the codes threads pass
// (core/error-codes.ts) and the OpenAPI document: the document's Error schema names
// exactly the catalog's codes, every status the catalog answers is documented, and a
// refusal a thread passes reaches the wire as its code's status and body.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ERROR_CODES } from '../../core/error-codes.ts';
import { refused } from '../../core/storage-protocol.ts';
import { ERRORS, errorBody, sendPlaneAnswer, STATUS_LINES } from '../../gateway/error-catalog.ts';
import { buildOpenApi } from '../../gateway/openapi.ts';

const doc = buildOpenApi() as any;
const catalogCodes = Object.keys(ERRORS);

/** Every response status any operation of the document lists. */
function documentedStatuses(): Set<number> {
  const statuses = new Set<number>();
  for (const item of Object.values<Record<string, any>>(doc.paths)) {
    for (const operation of Object.values<any>(item)) for (const status of Object.keys(operation.responses ?? {})) statuses.add(Number(status));
  }
  return statuses;
}

test('the catalog has an entry for every code threads pass, and no other', () => {
  assert.deepEqual(catalogCodes, [...ERROR_CODES]);
});

test("the document's Error code is an enum of exactly the catalog's codes", () => {
  const code = doc.components.schemas.Error.properties.code;
  assert.ok(Array.isArray(code.enum), 'the Error schema lists its codes');
  for (const name of catalogCodes) assert.ok(code.enum.includes(name), `${name} is in the document's enum`);
  for (const name of code.enum) assert.ok(catalogCodes.includes(name), `${name} of the document's enum is in the catalog`);
});

test('every status the catalog answers is a response status of the document, and every documented error status is a catalog status', () => {
  const documented = documentedStatuses();
  const used = new Set<number>(Object.values(ERRORS).map((entry) => entry.status));
  for (const [name, entry] of Object.entries(ERRORS)) assert.ok(documented.has(entry.status), `${name} answers ${entry.status}, which no path documents`);
  for (const status of documented) if (status >= 400) assert.ok(used.has(status), `the document lists ${status}, which no code answers`);
});

test('each status line starts with its status, and is the line the gateway writes for it', () => {
  for (const [name, entry] of Object.entries(ERRORS)) {
    assert.match(entry.line, new RegExp(`^${entry.status} [A-Z]`), name);
    assert.equal(STATUS_LINES[entry.status], entry.line, name);
    assert.ok(entry.message.length > 0, `${name} has a default message`);
  }
});

test("a thread's refusal reaches the wire as its code's status and body; a 5xx adds a request id and Retry-After", () => {
  const sent: { status: number; body: string; headers?: Record<string, string> }[] = [];
  const send = (status: number, body: string, headers?: Record<string, string>) => sent.push({ status, body, headers });
  sendPlaneAnswer(refused('LIMIT_EXCEEDED', 'you have created 4 names'), send);
  sendPlaneAnswer(refused('OVERLOADED', 'more instruments than the view holds'), send);
  sendPlaneAnswer({ ok: true, body: '{"rows":[]}', error: null }, send);
  assert.deepEqual(sent[0], { status: 409, body: '{"error":"you have created 4 names","code":"LIMIT_EXCEEDED"}', headers: undefined });
  assert.equal(sent[1]!.status, 503);
  assert.deepEqual(sent[1]!.headers, { 'Content-Type': 'application/json', 'Retry-After': '1' });
  assert.match(JSON.parse(sent[1]!.body).requestId, /^[0-9a-f-]{36}$/);
  assert.deepEqual(sent[2], { status: 200, body: '{"rows":[]}', headers: undefined });
  assert.equal(errorBody('NOT_FOUND'), JSON.stringify({ error: ERRORS.NOT_FOUND.message, code: 'NOT_FOUND' }), 'the default message');
});
