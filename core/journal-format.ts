// The journal payload, as one shard batch stores it: for each command, in sequence
// order, its 128-byte slot as sequenced, its result header and its event records
// (64 bytes each; core/result-slot.ts). Read here without copying per field: by word
// and float views over one aligned copy of the payload.
//
//   command at `at`:  slot [at, at+128) | header [at+128, at+192) | events, 64 bytes each

import { COMMAND_CURRENCY_WORD, COMMAND_ID_WORD, COMMAND_INSTRUMENT_ID_WORD, COMMAND_SLOT_BYTES, unpackCurrency } from './command-slot.ts';
import { renderEnvelope, type RenderedOutcome } from './outcome-format.ts';
import { readEvent, readHeader, RESULT_COUNT_WORD, RESULT_CURRENCY_WORD, RESULT_RECORD_BYTES, type ResultEvent } from './result-slot.ts';
import { formatUuid } from './uuid.ts';

export interface JournalView {
  bytes: Uint8Array;
  words: Int32Array;
  floats: Float64Array;
}

/** Word and float views over an aligned copy of a journal payload (or of one command of it). */
export function journalView(payload: Uint8Array): JournalView {
  const bytes = new Uint8Array(payload); // a copy on its own ArrayBuffer: aligned for the views
  return { bytes, words: new Int32Array(bytes.buffer, 0, bytes.byteLength >> 2), floats: new Float64Array(bytes.buffer, 0, bytes.byteLength >> 3) };
}

/**
 * journalView's copies in one buffer, reused while big enough (it doubles when a payload
 * does not fit): for a loop that is done with each payload's view before it asks for the
 * next, and keeps nothing of it. A start that replays the journal after the open orders'
 * checkpoint reads 100 MB or more of it; a new buffer per batch took the page faults of
 * fresh memory for all of it, and full collections for the external memory (the
 * persistence thread's `journalView` 232 ms and its collector 244 ms in a profiled start).
 */
export class JournalScratch {
  private buffer = new ArrayBuffer(0);

  /** The payload's views; valid until the next call. */
  view(payload: Uint8Array): JournalView {
    if (this.buffer.byteLength < payload.byteLength) this.buffer = new ArrayBuffer(Math.max(payload.byteLength, 2 * this.buffer.byteLength, 1 << 16));
    const bytes = new Uint8Array(this.buffer, 0, payload.byteLength);
    bytes.set(payload);
    return { bytes, words: new Int32Array(this.buffer, 0, payload.byteLength >> 2), floats: new Float64Array(this.buffer, 0, payload.byteLength >> 3) };
  }
}

/** Byte offset of a command's result header. */
export function headerOffset(at: number): number {
  return at + COMMAND_SLOT_BYTES;
}

/** Events of the command at `at`. */
export function eventCountAt(view: JournalView, at: number): number {
  return view.words[((at + COMMAND_SLOT_BYTES) >> 2) + RESULT_COUNT_WORD]!;
}

/** Bytes the command at `at` takes: slot, header, events. */
export function commandBytesAt(view: JournalView, at: number): number {
  return COMMAND_SLOT_BYTES + (1 + eventCountAt(view, at)) * RESULT_RECORD_BYTES;
}

/** Offset of the command with this id (four words), or -1. */
export function findCommand(view: JournalView, commandId: Int32Array): number {
  const words = view.words;
  for (let at = 0; at < view.bytes.byteLength; at += commandBytesAt(view, at)) {
    const w = (at >> 2) + COMMAND_ID_WORD;
    if (words[w] === commandId[0] && words[w + 1] === commandId[1] && words[w + 2] === commandId[2] && words[w + 3] === commandId[3]) return at;
  }
  return -1;
}

/** The result envelope of the command at `at`, exactly as the gateway rendered it when it answered. */
export function renderJournalCommand(view: JournalView, at: number, shard: number): RenderedOutcome {
  const headerAt = at + COMMAND_SLOT_BYTES;
  const header = readHeader(view, headerAt);
  const events: ResultEvent[] = [];
  for (let i = 0; i < header.eventCount; i++) events.push(readEvent(view, headerAt + (1 + i) * RESULT_RECORD_BYTES));
  const headerCurrency = view.words[(headerAt >> 2) + RESULT_CURRENCY_WORD]!;
  const slotCurrency = view.words[(at >> 2) + COMMAND_CURRENCY_WORD]!;
  const currency = headerCurrency !== 0 ? unpackCurrency(headerCurrency) : slotCurrency > 0 ? unpackCurrency(slotCurrency) : '';
  return renderEnvelope({ shard, instrumentId: formatUuid(view.words, (at >> 2) + COMMAND_INSTRUMENT_ID_WORD), currency }, header, events);
}
