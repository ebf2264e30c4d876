// One catalog of every error the HTTP API answers: a stable code, its HTTP status
// and the status line uWebSockets.js writes. Bodies are always
// { "error": "<message>", "code": "<CODE>", "details"?: [...] } (API contract).

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
  return JSON.stringify(details === undefined ? { error: message, code } : { error: message, code, details });
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
