// How the shared tables are keyed, in one place: the gateways use these to claim and
// look up, and the main thread to reload the tables from storage after a restart.

import { hash } from 'node:crypto';

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

/**
 * The payload in a canonical form: keys sorted and each value length-prefixed, so the
 * same payload hashes the same whatever its key order or spacing. Validated bodies
 * are flat objects of strings, which keeps this a single pass without JSON escaping.
 */
export function payloadDigest(route: number, body: Record<string, unknown>): Buffer {
  const keys = Object.keys(body).sort();
  let out = '';
  for (let k = 0; k < keys.length; k++) {
    const value = String(body[keys[k]!]);
    out += `${keys[k]}:${value.length}:${value}\u0000`;
  }
  return digest(String(route), out);
}
