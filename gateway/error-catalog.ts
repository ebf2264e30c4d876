// One catalog of every error the HTTP API answers: for each code (core/error-codes.ts)
// its HTTP status, the status line uWebSockets.js writes and a default message. Threads
// refuse with a code; this is the one place a code becomes a status. Bodies are always
// { "error": "<message>", "code": "<CODE>", "details"?: [...] } (API contract), and a
// 5xx body adds the "requestId" its cause is logged under.

import { randomUUID } from 'node:crypto';
import type { ErrorCode, ErrorDetail } from '../core/error-codes.ts';
import type { PlaneAnswer, ReadPlaneAnswer } from '../core/storage-protocol.ts';

export type { ErrorCode, ErrorDetail } from '../core/error-codes.ts';

interface CatalogEntry {
  status: number;
  line: string;
  /** The message of a refusal that has nothing more specific to say. */
  message: string;
}

export const ERRORS = {
  VALIDATION_FAILED: { status: 400, line: '400 Bad Request', message: 'the request is invalid' },
  UNAUTHENTICATED: { status: 401, line: '401 Unauthorized', message: 'a valid Authorization: Bearer token is required' },
  FORBIDDEN: { status: 403, line: '403 Forbidden', message: 'the principal may not do this' },
  NOT_FOUND: { status: 404, line: '404 Not Found', message: 'no such route' },
  METHOD_NOT_ALLOWED: { status: 405, line: '405 Method Not Allowed', message: 'the route does not take this method' },
  REQUEST_TIMEOUT: { status: 408, line: '408 Request Timeout', message: 'the body did not arrive in time' },
  IDEMPOTENCY_CONFLICT: { status: 409, line: '409 Conflict', message: 'this Idempotency-Key was used with a different payload' },
  FACT_CONFLICT: { status: 409, line: '409 Conflict', message: 'the request conflicts with the facts stored' },
  /** A session roll names a (runId, venueSessionId) the venue ran before: a session's names are never reused. */
  SESSION_CONFLICT: { status: 409, line: '409 Conflict', message: "the venue ran a session with these names before; a session's names are never reused" },
  /** A bounded resource one principal may hold is full for it (snapshot projection names it created). */
  LIMIT_EXCEEDED: { status: 409, line: '409 Conflict', message: 'the principal holds the most of this it may' },
  PAYLOAD_TOO_LARGE: { status: 413, line: '413 Payload Too Large', message: 'the body is too large' },
  OVERLOADED: { status: 503, line: '503 Service Unavailable', message: 'the venue is at capacity; retry later' },
  UNAVAILABLE: { status: 503, line: '503 Service Unavailable', message: 'the venue cannot answer now; retry shortly' },
} as const satisfies Record<ErrorCode, CatalogEntry>;

/** The body of an error answer; `message` defaults to the code's own. */
export function errorBody(code: ErrorCode, message: string = ERRORS[code].message, details?: ErrorDetail[]): string {
  if (ERRORS[code].status >= 500) return serverErrorBody(code as ServerErrorCode, message);
  return JSON.stringify(details === undefined ? { error: message, code } : { error: message, code, details });
}

/** Every 503 tells the client when to come back. */
export const RETRY_HEADERS: Record<string, string> = { 'Content-Type': 'application/json', 'Retry-After': '1' };

/** How a route writes a whole answer; `headers` undefined: the JSON content type alone. */
export type Send = (status: number, body: string, headers?: Record<string, string>) => void;
/** A Send that also writes bytes (a settlement answer: gateway/settlement-routes.ts). */
export type SendAnswer = (status: number, body: string | Uint8Array, headers?: Record<string, string>) => void;

/** Writes an error answer: the code's status and body (`message` defaults to the code's own); a 503 with Retry-After. */
export function sendError(send: Send, code: ErrorCode, message?: string, details?: ErrorDetail[]): void {
  const status = ERRORS[code].status;
  send(status, errorBody(code, message, details), status === 503 ? RETRY_HEADERS : undefined);
}

/** Writes a read-plane answer: its 200, or its refusal mapped through the catalog. */
export function sendPlaneAnswer(answer: PlaneAnswer, send: Send): void;
export function sendPlaneAnswer(answer: ReadPlaneAnswer, send: SendAnswer): void;
export function sendPlaneAnswer(answer: ReadPlaneAnswer, send: Send | SendAnswer): void {
  if (answer.ok)
    (send as SendAnswer)(200, answer.body); // bytes come with a SendAnswer only (the overloads)
  else sendError(send, answer.error.code, answer.error.message, answer.error.details);
}

export type ServerErrorCode = 'OVERLOADED' | 'UNAVAILABLE';

/** Where the causes of 5xx answers go: the thread's logger (gateway-thread.ts sets it). */
let causeLog: (fields: { requestId: string; err: unknown }, message: string) => void = () => undefined;

export function setCauseLog(log: typeof causeLog): void {
  causeLog = log;
}

/**
 * A 5xx body: a stable message and a request id. What went wrong underneath (a driver's
 * or the runtime's message) is never in the body: it goes to the log under that id.
 */
export function serverErrorBody(code: ServerErrorCode, message: string, cause?: unknown): string {
  const requestId = randomUUID();
  if (cause !== undefined) causeLog({ requestId, err: cause }, message); // the logger's serializer (core/log-format.ts) writes it
  return JSON.stringify({ error: message, code, requestId });
}

/** The status lines the venue writes: its two successes and every status of the catalog. */
export const STATUS_LINES: Record<number, string> = {
  200: '200 OK',
  202: '202 Accepted',
  ...Object.fromEntries(Object.values(ERRORS).map((entry) => [entry.status, entry.line])),
};
