// Renders what the engine decided as the API's JSON: the result envelope, the
// accepted pointer, and the ids and timestamps of events.
//
// Event ids are UUIDs (version 8, "custom") that encode the shard and the event's
// sequence on the shard stream, so every id is unique on the venue's streams and a
// replay reproduces it: eventId = E(shard, sequence). An execution's executionId and
// a trade's tradeId are their eventIds; a trade's executionId is the incoming
// order's execution, two sequences before the trade.

import { EVENT_ACCEPTED, EVENT_EXECUTION, EVENT_REJECTED, EVENT_TRADE, rejectName, rejectReason } from './codes.ts';
import type { ResultEvent, ResultHeader } from './result-slot.ts';
import { formatUuid } from './uuid.ts';
/** The names of the processing modes, in the order of their numbers on the wire and in storage. */
export const PROCESSING_MODE_NAMES = ['sync-result', 'captured-ack', 'stream-ack', 'accepted-async'] as const;
export type ProcessingMode = (typeof PROCESSING_MODE_NAMES)[number];

const TWO_POW_32 = 4_294_967_296;

/** The words of the event id being formatted: made once, so an id costs one string. */
const EVENT_ID_WORDS = new Int32Array(4);

export function eventIdOf(shard: number, sequence: number): string {
  eventIdWords(shard, sequence, EVENT_ID_WORDS, 0);
  return formatUuid(EVENT_ID_WORDS, 0);
}

/** The four words of eventIdOf(shard, sequence), most significant first (core/uuid.ts): no text on the way to storage. */
export function eventIdWords(shard: number, sequence: number, target: Int32Array, at: number): void {
  const high = Math.floor(sequence / TWO_POW_32);
  target[at] = 0xe0000000 | shard;
  target[at + 1] = ((high >>> 12) << 16) | 0x8000 | (high & 0xfff);
  target[at + 2] = 0x80000000 | 0;
  target[at + 3] = sequence >>> 0;
}

// The text of the last second formatted ("2026-11-22T03:00:00."): a tape read's or an
// envelope's events mostly fall in one second, and Date's toISOString costs more than the
// reuse (a CPU profile of tape reads shows it).
let formattedSecond = Number.NaN;
let secondText = '';

/** RFC 3339 UTC with microseconds, from integer microseconds since the epoch. */
export function occurredAtOf(microseconds: number): string {
  const second = Math.floor(microseconds / 1_000_000);
  if (second !== formattedSecond) {
    secondText = new Date(second * 1000).toISOString().slice(0, 20);
    formattedSecond = second;
  }
  let fraction = microseconds - second * 1_000_000;
  const f0 = fraction % 10;
  const f1 = (fraction = (fraction - f0) / 10) % 10;
  const f2 = (fraction = (fraction - f1) / 10) % 10;
  const f3 = (fraction = (fraction - f2) / 10) % 10;
  const f4 = (fraction = (fraction - f3) / 10) % 10;
  const f5 = (fraction - f4) / 10;
  return secondText + String.fromCharCode(48 + f5, 48 + f4, 48 + f3, 48 + f2, 48 + f1, 48 + f0, 90); // six digits and "Z"
}

export function engineOrderIdOf(shard: number, engineNo: number): string {
  return `${shard}-${engineNo}`;
}

export interface RenderContext {
  shard: number;
  instrumentId: string;
  /** The book's currency from the result header, else the command's (a submit), else ''. */
  currency: string;
}

/** A rejection of a command that named no order (cancel by an unknown clientOrderId) carries this id; rendered as null. */
export const NO_ORDER_ID = '00000000-0000-0000-0000-000000000000';

export interface RenderedOutcome {
  json: string;
  accepted: boolean;
  rejectCode: string;
  rejectCodeNumber: number;
  /** Sequence of the outcome event: the command's position on the shard stream. */
  streamSequence: number;
}

/**
 * The envelope's JSON, written as text: every value is either a string this module
 * formats (ids, timestamps, digits), a catalog text JSON-quoted once, or one of the
 * context's two strings, quoted per call. The key order is the schema's, and the
 * bytes are what JSON.stringify gives for the same object (test/core/outcome-format
 * checks this against that rendering), at about a quarter of JSON.stringify's cost for
 * a command with two executions and a trade.
 */
export function renderEnvelope(context: RenderContext, header: ResultHeader, events: ResultEvent[]): RenderedOutcome {
  const { shard } = context;
  const first = events[0];
  if (first === undefined) throw new Error('a command result without an outcome event');
  const occurredAt = `"occurredAt":"${occurredAtOf(header.timestampUs)}"}`;
  let json: string;
  if (first.kind === EVENT_ACCEPTED) {
    json = `{"outcome":{"accepted":{"eventId":"${eventIdOf(shard, first.sequence)}","orderId":"${first.orderA}","engineOrderId":"${engineOrderIdOf(shard, header.engineOrderId)}",${occurredAt}}`;
  } else if (first.kind === EVENT_REJECTED) {
    const orderId = first.orderA === NO_ORDER_ID ? 'null' : `"${first.orderA}"`;
    json = `{"outcome":{"rejected":{"eventId":"${eventIdOf(shard, first.sequence)}","orderId":${orderId},"code":"${rejectName(first.code)}","reason":${quotedReason(first.code)},${occurredAt}}`;
  } else {
    throw new Error(`a command result starting with event kind ${first.kind}`);
  }
  let executions = '';
  let trades = '';
  if (events.length > 1) {
    const instrumentId = JSON.stringify(context.instrumentId);
    const currency = JSON.stringify(context.currency);
    for (let i = 1; i < events.length; i++) {
      const event = events[i]!;
      const eventId = eventIdOf(shard, event.sequence);
      if (event.kind === EVENT_EXECUTION) {
        executions += `${executions === '' ? '' : ','}{"eventId":"${eventId}","executionId":"${eventId}","orderId":"${event.orderA}","instrumentId":${instrumentId},"quantity":{"units":"${event.quantity}"},"executionPrice":{"nanos":"${event.price}","currency":${currency}},${occurredAt}`;
      } else if (event.kind === EVENT_TRADE) {
        trades += `${trades === '' ? '' : ','}{"eventId":"${eventId}","tradeId":"${eventId}","executionId":"${eventIdOf(shard, event.sequence - 2)}","buyOrderId":"${event.orderA}","sellOrderId":"${event.orderB}","instrumentId":${instrumentId},"quantity":{"units":"${event.quantity}"},"price":{"nanos":"${event.price}","currency":${currency}},${occurredAt}`;
      }
    }
  }
  return {
    json: `${json},"executions":[${executions}],"trades":[${trades}]}`,
    accepted: first.kind === EVENT_ACCEPTED,
    rejectCode: first.kind === EVENT_REJECTED ? rejectName(first.code) : '',
    rejectCodeNumber: first.kind === EVENT_REJECTED ? first.code : 0,
    streamSequence: first.sequence,
  };
}

/** The catalog's reasons as JSON strings, quoted once. */
const quotedReasons = new Map<number, string>();

function quotedReason(code: number): string {
  let quoted = quotedReasons.get(code);
  if (quoted === undefined) {
    quoted = JSON.stringify(rejectReason(code));
    quotedReasons.set(code, quoted);
  }
  return quoted;
}

export function renderPointer(commandId: string, mode: ProcessingMode): string {
  return JSON.stringify({ commandId, status: 'ACCEPTED', processingMode: mode, statusUrl: `/api/v1/commands/${commandId}` });
}
