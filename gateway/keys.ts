// How the shared tables are keyed, in one place: the gateways use these to claim and
// look up, and the main thread to reload the tables from storage after a restart.

import { hash } from 'node:crypto';
import { cancelByClientOrderSchema, cancelOrderSchema, modifyOrderSchema, submitOrderSchema } from './order-schemas.ts';
import { ROUTE_CANCEL, ROUTE_CANCEL_BY_CLIENT_ORDER, ROUTE_MODIFY, ROUTE_SUBMIT } from './status-view.ts';

/** SHA-256 of the parts joined by NUL (one-shot crypto.hash: ~40% cheaper than createHash here). */
export function digest(...parts: string[]): Buffer {
  return hash('sha256', parts.join('\u0000'), 'buffer') as unknown as Buffer;
}

/** The first 16 bytes of a digest as the four words the tables take (big-endian; no DataView: creating one cost 0.13 µs). */
export function wordsOf(buffer: Uint8Array): Int32Array {
  const words = new Int32Array(4);
  for (let k = 0; k < 4; k++) {
    const b = k * 4;
    words[k] = (buffer[b]! << 24) | (buffer[b + 1]! << 16) | (buffer[b + 2]! << 8) | buffer[b + 3]!;
  }
  return words;
}

/** The idempotency scope: (principal, X-Client-Id, Idempotency-Key). */
export function scopeDigest(principalId: string, clientId: string, idempotencyKey: string): Buffer {
  return digest(principalId, clientId, idempotencyKey);
}

/** A clientOrderId belongs to a participant. */
export function clientOrderDigest(participantId: string, clientOrderId: string): Buffer {
  return digest(participantId.toLowerCase(), clientOrderId);
}

/** Each route's body properties, sorted once, by route number. */
const SORTED_KEYS: (readonly string[])[] = [];
SORTED_KEYS[ROUTE_SUBMIT] = Object.keys(submitOrderSchema.properties).sort();
SORTED_KEYS[ROUTE_CANCEL] = Object.keys(cancelOrderSchema.properties).sort();
SORTED_KEYS[ROUTE_MODIFY] = Object.keys(modifyOrderSchema.properties).sort();
SORTED_KEYS[ROUTE_CANCEL_BY_CLIENT_ORDER] = Object.keys(cancelByClientOrderSchema.properties).sort();

/** One property in the canonical form: its name, its value's length, its value. */
function canonicalField(key: string, raw: unknown): string {
  const value = String(raw);
  return `${key}:${value.length}:${value}\u0000`;
}

/**
 * The payload in a canonical form: keys sorted and each value length-prefixed, so the
 * same payload hashes the same whatever its key order or spacing. Validated bodies
 * are flat objects of strings, which keeps this a single pass without JSON escaping.
 * A validated body has only its schema's properties (additionalProperties: false), so
 * walking the route's presorted list gives the same text as sorting the body's own
 * keys, without a sort per command (2.2 -> 1.8 µs a call, medians of 7 alternating
 * rounds); a body with any other key (never one the gateway validated) is sorted.
 */
export function payloadDigest(route: number, body: Record<string, unknown>): Buffer {
  const sorted = SORTED_KEYS[route];
  let out = '';
  let present = 0;
  if (sorted !== undefined) {
    for (let k = 0; k < sorted.length; k++) {
      const raw = body[sorted[k]!];
      if (raw === undefined) continue;
      present++;
      out += canonicalField(sorted[k]!, raw);
    }
  }
  if (sorted === undefined || present !== Object.keys(body).length) {
    const keys = Object.keys(body).sort();
    out = '';
    for (let k = 0; k < keys.length; k++) out += canonicalField(keys[k]!, body[keys[k]!]);
  }
  return digest(String(route), out);
}
