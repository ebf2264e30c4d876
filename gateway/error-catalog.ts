// One catalog of every error the HTTP API answers: a stable code, its HTTP status
// and the status line uWebSockets.js writes. Bodies are always
// { "error": "<message>", "code": "<CODE>", "details"?: [...] } (API contract), and a
// 5xx body adds the "requestId" its cause is logged under.

import { randomUUID } from 'node:crypto';

export const ERRORS = {
  VALIDATION_FAILED: { status: 400, line: '400 Bad Request' },
  UNAUTHENTICATED: { status: 401, line: '401 Unauthorized' },
  FORBIDDEN: { status: 403, line: '403 Forbidden' },
  NOT_FOUND: { status: 404, line: '404 Not Found' },
  METHOD_NOT_ALLOWED: { status: 405, line: '405 Method Not Allowed' },
  REQUEST_TIMEOUT: { status: 408, line: '408 Request Timeout' },
  IDEMPOTENCY_CONFLICT: { status: 409, line: '409 Conflict' },
  FACT_CONFLICT: { status: 409, line: '409 Conflict' },
  /** A session roll names a (runId, venueSessionId) the venue ran before: a session's names are never reused. */
  SESSION_CONFLICT: { status: 409, line: '409 Conflict' },
  /** A bounded resource one principal may hold is full for it (snapshot projection names it created). */
  LIMIT_EXCEEDED: { status: 409, line: '409 Conflict' },
  PAYLOAD_TOO_LARGE: { status: 413, line: '413 Payload Too Large' },
  UNSUPPORTED_MEDIA_TYPE: { status: 415, line: '415 Unsupported Media Type' },
  OVERLOADED: { status: 503, line: '503 Service Unavailable' },
  UNAVAILABLE: { status: 503, line: '503 Service Unavailable' },
} as const;

export type ErrorCode = keyof typeof ERRORS;

export interface ErrorDetail {
  field: string;
  message: string;
}

export function errorBody(code: ErrorCode, message: string, details?: ErrorDetail[]): string {
  if (ERRORS[code].status >= 500) return serverErrorBody(code as ServerErrorCode, message);
  return JSON.stringify(details === undefined ? { error: message, code } : { error: message, code, details });
}

export type ServerErrorCode = 'OVERLOADED' | 'UNAVAILABLE';

/** Where the causes of 5xx answers go: the thread's logger (gateway-thread.ts sets it). */
let causeLog: (fields: { requestId: string; err: string }, message: string) => void = () => undefined;

export function setCauseLog(log: typeof causeLog): void {
  causeLog = log;
}

/**
 * A 5xx body: a stable message and a request id. What went wrong underneath (a driver's
 * or the runtime's message) is never in the body: it goes to the log under that id.
 */
export function serverErrorBody(code: ServerErrorCode, message: string, cause?: unknown): string {
  const requestId = randomUUID();
  if (cause !== undefined) causeLog({ requestId, err: cause instanceof Error ? cause.message : String(cause) }, message);
  return JSON.stringify({ error: message, code, requestId });
}

export const STATUS_LINES: Record<number, string> = {
  200: '200 OK',
  202: '202 Accepted',
  400: '400 Bad Request',
  401: '401 Unauthorized',
  403: '403 Forbidden',
  404: '404 Not Found',
  405: '405 Method Not Allowed',
  408: '408 Request Timeout',
  409: '409 Conflict',
  413: '413 Payload Too Large',
  415: '415 Unsupported Media Type',
  503: '503 Service Unavailable',
};
