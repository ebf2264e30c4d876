import assert from 'node:assert/strict';
import { createHash, randomUUID } from 'node:crypto';
import { test } from 'node:test';
import { clientOrderDigest, payloadDigest, scopeDigest } from '../../gateway/keys.ts';
import { cancelByClientOrderSchema, cancelOrderSchema, modifyOrderSchema, submitOrderSchema } from '../../gateway/order-schemas.ts';
import { ROUTE_CANCEL, ROUTE_CANCEL_BY_CLIENT_ORDER, ROUTE_MODIFY, ROUTE_SUBMIT } from '../../gateway/status-view.ts';

/** The canonical form written out independently: route, NUL, then every own key in sorted order as key:length:value NUL. */
function reference(route: number, body: Record<string, string>): Buffer {
  let text = `${route}\u0000`;
  for (const key of Object.keys(body).sort()) text += `${key}:${body[key]!.length}:${body[key]}\u0000`;
  return createHash('sha256').update(text, 'utf8').digest();
}

/** Shuffled with a seeded generator so a failure replays. */
function shuffled<T>(items: T[], seed: number): T[] {
  const out = items.slice();
  let s = seed;
  for (let i = out.length - 1; i > 0; i--) {
    s = (Math.imul(s, 1103515245) + 12345) >>> 0;
    const j = s % (i + 1);
    [out[i], out[j]] = [out[j]!, out[i]!];
  }
  return out;
}

const routes = [
  { route: ROUTE_SUBMIT, schema: submitOrderSchema },
  { route: ROUTE_CANCEL, schema: cancelOrderSchema },
  { route: ROUTE_MODIFY, schema: modifyOrderSchema },
  { route: ROUTE_CANCEL_BY_CLIENT_ORDER, schema: cancelByClientOrderSchema },
];

test('the payload digest is the canonical form of every route, whatever the key order, with optional keys present or absent', () => {
  let cases = 0;
  for (const { route, schema } of routes) {
    const all = Object.keys(schema.properties);
    const required = new Set<string>(schema.required);
    for (let seed = 1; seed <= 50; seed++) {
      // Every required key, and each optional one on alternate seeds; values of varied length, non-ASCII too.
      const keys = all.filter((key) => required.has(key) || seed % 2 === 0);
      const values = new Map(keys.map((key, i) => [key, i % 5 === 0 ? `é${seed}-${'x'.repeat(i)}` : randomUUID()]));
      const body = Object.fromEntries(shuffled(keys, seed).map((key) => [key, values.get(key)!]));
      const digest = payloadDigest(route, body);
      assert.deepEqual(digest, reference(route, body), `route ${route}, keys ${Object.keys(body).join(',')}`);
      const reordered = Object.fromEntries(shuffled(keys, seed + 1000).map((key) => [key, values.get(key)!]));
      assert.deepEqual(payloadDigest(route, reordered), digest);
      cases++;
    }
  }
  assert.equal(cases, 200);
});

test('the payload digest tells apart what differs: a value, a route, a key that moved its value, a key outside the schema', () => {
  const body = { commandId: randomUUID(), traceId: randomUUID(), reason: 'done', orderId: randomUUID() };
  const base = payloadDigest(ROUTE_CANCEL, body);
  assert.notDeepEqual(payloadDigest(ROUTE_CANCEL, { ...body, reason: 'donf' }), base);
  assert.notDeepEqual(payloadDigest(ROUTE_MODIFY, body), base);
  // The length prefix keeps "ab"+"c" apart from "a"+"bc".
  assert.notDeepEqual(payloadDigest(ROUTE_CANCEL, { ...body, actorId: 'ab', reason: 'c' }), payloadDigest(ROUTE_CANCEL, { ...body, actorId: 'a', reason: 'bc' }));
  // A key no schema has (the gateway never hashes such a body: validation refuses it) still counts.
  const extra = { ...body, unknownKey: 'v' };
  assert.deepEqual(payloadDigest(ROUTE_CANCEL, extra), reference(ROUTE_CANCEL, extra));
  assert.notDeepEqual(payloadDigest(ROUTE_CANCEL, extra), base);
  // A route outside the table is hashed from the body's own keys.
  assert.deepEqual(payloadDigest(9, body), reference(9, body));
});

test('every digest equals its text form for hostile and long values, across the reused buffer growing', () => {
  const hostile = ['\u{1F600}x', '\ud800', 'a\udfffb', '\u0000', '\ufeffbom', 'é'.repeat(3000), 'x'.repeat(70_000), '', '0'];
  const text = (...parts: string[]) => createHash('sha256').update(parts.join('\u0000'), 'utf8').digest();
  for (const value of hostile) {
    const body = { commandId: randomUUID(), orderId: randomUUID(), reason: value };
    assert.deepEqual(payloadDigest(ROUTE_CANCEL, body), reference(ROUTE_CANCEL, body), `reason of ${value.length} units`);
    assert.deepEqual(scopeDigest('principal-1', value, 'key-1'), text('principal-1', value, 'key-1'));
    assert.deepEqual(scopeDigest(value, 'client', value), text(value, 'client', value));
    assert.deepEqual(clientOrderDigest('A1000000-0000-4000-8000-00000000000B', value), text('a1000000-0000-4000-8000-00000000000b', value));
  }
  // A short input after the buffer grew still hashes only its own bytes.
  assert.deepEqual(scopeDigest('p', 'c', 'k'), text('p', 'c', 'k'));
  const small = { commandId: 'c', orderId: 'o' };
  assert.deepEqual(payloadDigest(ROUTE_CANCEL, small), reference(ROUTE_CANCEL, small));
});
