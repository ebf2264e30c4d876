// How the order flow answers a request: the Reply it writes to, and the JSON, error and
// storage 503 answers each of its parts sends (never after the client went away).

import type { StorageFailure } from '../core/storage-protocol.ts';
import { errorBody, type ErrorCode, type ErrorDetail, ERRORS, serverErrorBody } from './error-catalog.ts';

/** How a request is answered; implemented over a uWebSockets.js response. */
export interface Reply {
  send(status: number, body: string | Uint8Array, headers?: Record<string, string>): void;
  readonly aborted: boolean;
  /** What a 200 or 202 answer means for the metrics (core/venue-metrics.ts OUTCOME_*): accepted unless marked rejected or replayed. */
  outcome: number;
}

export const RETRY_AFTER = { 'Retry-After': '1' };
const JSON_HEADERS = { 'Content-Type': 'application/json' };

/** The 503 of an answer that storage did not make durable within its bound; the command goes on. */
export const STORAGE_LATE = 'storage did not confirm in time; retry with the same Idempotency-Key (the command keeps its outcome)';

export function send(reply: Reply, status: number, body: string | Uint8Array, headers?: Record<string, string>): void {
  if (reply.aborted) return;
  reply.send(status, body, headers === undefined ? JSON_HEADERS : { ...JSON_HEADERS, ...headers });
}

/** An error answer: the code's status and body (`message` defaults to the code's own); a 503 says when to retry. */
export function fail(reply: Reply, code: ErrorCode, message?: string, headers?: Record<string, string>): void {
  const status = ERRORS[code].status;
  send(reply, status, errorBody(code, message), status !== 503 ? headers : headers === undefined ? RETRY_AFTER : { ...headers, ...RETRY_AFTER });
}

/** The 400 of a request with these problems. */
export function invalid(reply: Reply, details: ErrorDetail[]): void {
  send(reply, ERRORS.VALIDATION_FAILED.status, errorBody('VALIDATION_FAILED', undefined, details));
}

/** A 503 for a question storage failed: its message, its cause logged under the answer's request id. */
export function storageFailed(reply: Reply, failure: StorageFailure): void {
  send(reply, 503, serverErrorBody('UNAVAILABLE', `${failure.message} (retry with the same Idempotency-Key)`, failure.cause), RETRY_AFTER);
}

/** A 503 for a question storage did not answer (the port's error: full, timed out). */
export function storageSilent(reply: Reply, error: unknown): void {
  send(reply, 503, serverErrorBody('UNAVAILABLE', 'storage did not answer; retry with the same Idempotency-Key', error), RETRY_AFTER);
}
