// Command bodies on their way from a gateway to the journal, beside its intake records:
// the JSON text of each order command exactly as validated (the audit trail keeps it).
// A ring of 64-byte slots (core/ring.ts); a body of n bytes of UTF-8 takes the
// ceil(n / 64) slots that follow the last body, wrapping at the end of the ring:
//
//   … | body k: slots i .. i+2 (130 bytes, 62 unused) | body k+1: slots i+3 .. | …
//
// The gateway publishes a command's body before its intake record, which states the
// body's length (core/intake-record.ts), so the journal writer that takes a batch of
// records finds every body they announce already published.

import type { RingConsumer, RingProducer } from './ring.ts';

export const BODY_SLOT_BYTES = 64;

/** Slots a body of `bytes` bytes takes. */
export function bodySlots(bytes: number): number {
  return (bytes + BODY_SLOT_BYTES - 1) >> 6;
}

const encoder = new TextEncoder();

/**
 * Writes the UTF-8 of `text` (`bytes` long) into the slots from logical index `index` on;
 * the caller has checked the room. `scratch` (at least `bytes` long) takes a body that
 * wraps at the end of the ring, which is then copied in two pieces.
 */
export function writeBody(ring: RingProducer, index: number, text: string, bytes: number, scratch: Uint8Array): void {
  const start = ring.slotOffset(index);
  const room = ring.bytes.byteLength - start;
  if (bytes <= room) {
    encoder.encodeInto(text, ring.bytes.subarray(start, start + bytes));
    return;
  }
  encoder.encodeInto(text, scratch.subarray(0, bytes));
  ring.bytes.set(scratch.subarray(0, room), start);
  ring.bytes.set(scratch.subarray(room, bytes), ring.slotOffset(0));
}

/**
 * Takes the bodies of `lengths` (bytes each, in order) off the ring: one buffer holding
 * them back to back, and the slots released. Throws if the ring holds fewer slots than
 * they take (the gateway publishes bodies before their records: a bug otherwise).
 */
export function takeBodies(ring: RingConsumer, lengths: readonly number[]): Uint8Array {
  let slots = 0;
  let total = 0;
  for (const length of lengths) {
    slots += bodySlots(length);
    total += length;
  }
  if (slots > ring.available()) throw new Error(`the body ring holds ${ring.available()} slots, the intake records announce ${slots}`);
  const bodies = new Uint8Array(total);
  if (slots === 0) return bodies;
  const raw = new Uint8Array(slots * BODY_SLOT_BYTES);
  ring.copyOut(slots, raw, 0);
  ring.release(slots);
  let from = 0;
  let to = 0;
  for (const length of lengths) {
    bodies.set(raw.subarray(from, from + length), to);
    from += bodySlots(length) * BODY_SLOT_BYTES;
    to += length;
  }
  return bodies;
}
