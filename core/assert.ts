// Invariant checks for where state is built (a snapshot's load): a broken invariant throws
// at once rather than let the engine run on wrong state. Not for the per-command path.

/** Throws an Error with `message` when `condition` is false. */
export function assert(condition: boolean, message: string): asserts condition {
  if (!condition) throw new Error(message);
}

/** Throws an Error with `message`: for a check inside a loop, whose message is built only when it fails. */
export function fail(message: string): never {
  throw new Error(message);
}
