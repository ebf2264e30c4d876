// The API's error codes and the failure every thread passes with one. Threads and the
// settlement workflows refuse with a code and the venue's own words; only the gateway
// gives a code its HTTP status and body (gateway/error-catalog.ts).

export const ERROR_CODES = [
  'VALIDATION_FAILED',
  'UNAUTHENTICATED',
  'FORBIDDEN',
  'NOT_FOUND',
  'METHOD_NOT_ALLOWED',
  'REQUEST_TIMEOUT',
  'IDEMPOTENCY_CONFLICT',
  'FACT_CONFLICT',
  'SESSION_CONFLICT',
  'LIMIT_EXCEEDED',
  'PAYLOAD_TOO_LARGE',
  'OVERLOADED',
  'UNAVAILABLE',
] as const;

export type ErrorCode = (typeof ERROR_CODES)[number];

/** One problem of a refused request: the field it is in, and what is wrong with it. */
export interface ErrorDetail {
  field: string;
  message: string;
}

/** A refusal as it crosses threads: a code, a message fit for the client, and for a 400 the problems. */
export interface Failure {
  code: ErrorCode;
  message: string;
  details?: ErrorDetail[];
}

/** A decision's result: its value, or the refusal. */
export type Outcome<T> = { ok: true; value: T } | { ok: false; error: Failure };

export function refusal(code: ErrorCode, message: string): { ok: false; error: Failure } {
  return { ok: false, error: { code, message } };
}
