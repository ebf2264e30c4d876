// How every thread's pino logger is configured, and the one error serializer they share.
// An error is logged as `err: { type, message, stack, code?, cause? }` whichever thread
// met it: workers pass errors to other threads already serialized (a plain object, as
// every cross-thread message is), and the serializer passes such an object through.

/** An error as a log line carries it, and as it crosses threads. */
export interface SerializedError {
  type: string;
  message: string;
  stack?: string;
  /** A driver's or the runtime's code (PostgreSQL's SQLSTATE, ECONNREFUSED). */
  code?: string;
  cause?: SerializedError;
}

/** How deep a chain of causes is followed: a cycle or a long chain stays one bounded line. */
const CAUSE_DEPTH_MAX = 3;

function isSerialized(value: unknown): value is SerializedError {
  return typeof value === 'object' && value !== null && !(value instanceof Error) && typeof (value as SerializedError).type === 'string' && typeof (value as SerializedError).message === 'string';
}

/** The one error serializer: an Error, an error serialized by another thread, or any thrown value. */
export function serializeError(value: unknown, depth = 0): SerializedError {
  if (isSerialized(value)) return value;
  if (!(value instanceof Error)) return { type: typeof value, message: String(value) };
  const serialized: SerializedError = { type: value.constructor?.name || value.name, message: value.message };
  if (value.stack !== undefined) serialized.stack = value.stack;
  const code = (value as { code?: unknown }).code;
  if (typeof code === 'string' || typeof code === 'number') serialized.code = String(code);
  if (value.cause !== undefined && depth < CAUSE_DEPTH_MAX) serialized.cause = serializeError(value.cause, depth + 1);
  return serialized;
}

/** The options of a thread's pino logger: its level, its thread name on every line, the one error serializer. */
export function loggerOptions(thread: string, level: string): { level: string; base: { thread: string }; serializers: { err: (value: unknown) => SerializedError } } {
  return { level, base: { thread }, serializers: { err: (value: unknown) => serializeError(value) } };
}
