// V8's inlining budgets for the venue's process, set before any of its code is optimized.
// Imported first by runtime/venue-start.mjs (so every thread of the venue compiles with them:
// V8's flags are the process's, worker threads included) and by bench/run.ts (so the
// benchmarks run the matching core as the venue compiles it). Plain JavaScript: it runs
// before anything loads tsx.
//
// Why: V8 inlines a call only while the function being optimized stays within a budget of
// inlined bytecode (920 bytes in all, 460 for one callee, 4,600 for the whole function, in
// Node 20's V8 11.3). A command's path through the engine is one call tree (process, submit,
// execute, match, rest, the order store's and price levels' helpers) of several thousand
// bytes of bytecode, so with the defaults most of its calls stay calls. With these budgets
// `process` inlines the whole tree: the 1,000,000-command compare stream as a shard feeds
// it ran 10-13% faster in the suite's own benchmark (alternating with V8's defaults) and
// 20-25% in a plain feed; larger budgets gained nothing more
// (docs/decisions/0015-v8-inlining-budgets.md, which also has what the rest of the venue
// pays: compilation in its first minute).
//
// Flags given on node's own command line win: a budget named there is not set here, so
// `node --max-inlined-bytecode-size-cumulative=920 runtime/venue-start.mjs` runs with V8's
// default for it (how the venue's figures were compared with and without these).
import v8 from 'node:v8';

/** The budgets, as node's command line would take them. */
export const COMPILER_FLAGS = Object.freeze(['--max-inlined-bytecode-size=2000', '--max-inlined-bytecode-size-cumulative=12000', '--max-inlined-bytecode-size-absolute=12000']);

/** The flags of COMPILER_FLAGS that node's command line does not name itself. */
export function compilerFlagsToSet(execArgv = process.execArgv) {
  const named = new Set(execArgv.map((arg) => arg.split('=')[0].replaceAll('_', '-')));
  return COMPILER_FLAGS.filter((flag) => !named.has(flag.split('=')[0]));
}

for (const flag of compilerFlagsToSet()) v8.setFlagsFromString(flag);
