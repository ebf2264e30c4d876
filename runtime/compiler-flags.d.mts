/** See runtime/compiler-flags.mjs. */
export const COMPILER_FLAGS: readonly string[];
export function compilerFlagsToSet(execArgv?: readonly string[]): string[];
