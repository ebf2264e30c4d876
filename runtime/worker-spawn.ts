// Starts a worker thread running a module (through worker-bootstrap.mjs): TypeScript
// through tsx, or JavaScript built by runtime/worker-build.ts.

import { Worker, type WorkerOptions } from 'node:worker_threads';

const PRELOAD_FLAGS = new Set(['--import', '--require', '-r', '--loader', '--experimental-loader']);
const TSX_MODULE = /^(tsx(\/.*)?|.*[\\/]node_modules[\\/]tsx[\\/].*)$/;

/**
 * The parent's node flags without the ones that preload tsx (`--import tsx`, and the
 * `--require …/tsx/dist/preflight.cjs --import …/tsx/dist/loader.mjs` the tsx command adds).
 *
 * Why: a worker inherits its parent's flags, and with tsx's preload every module a worker
 * imports (the venue's built JavaScript and its packages too) goes through tsx's loader
 * hooks: a worker that imports pg, ajv and pino was ready in about 250 ms with them against
 * 150 ms without (4 pairs, a throwaway script). worker-bootstrap.mjs registers tsx itself
 * for a TypeScript entry, so nothing needs the preload; every other flag is kept (see
 * startWorker for those Node refuses in a worker's list).
 */
export function withoutTsxPreload(execArgv: readonly string[]): string[] {
  const kept: string[] = [];
  for (let k = 0; k < execArgv.length; k++) {
    const flag = execArgv[k]!;
    const equals = flag.indexOf('=');
    if (equals > 0 && PRELOAD_FLAGS.has(flag.slice(0, equals)) && TSX_MODULE.test(flag.slice(equals + 1))) continue;
    if (PRELOAD_FLAGS.has(flag) && k + 1 < execArgv.length && TSX_MODULE.test(execArgv[k + 1]!)) {
      k++;
      continue;
    }
    kept.push(flag);
  }
  return kept;
}

/**
 * The flags a worker is given: the parent's without tsx's preload, or undefined (inherit
 * them all) when there is no preload to drop or Node refuses the list. Node refuses, in
 * an explicit list, the flags that act on the whole process (V8's, such as
 * --max-old-space-size, --perf-basic-prof, --expose-gc), which an inherited list may hold;
 * those already act in every thread, so they are dropped from the list, and if Node still
 * refuses it the worker inherits everything, as before (a slower start, nothing lost).
 * Decided once per process, at its first worker.
 */
let workerFlags: { execArgv: string[] | undefined } | null = null;

function startWorker(url: URL, options: WorkerOptions): Worker {
  if (workerFlags === null) {
    const kept = withoutTsxPreload(process.execArgv);
    let execArgv: string[] | undefined = kept.length === process.execArgv.length ? undefined : kept;
    for (let attempt = 0; execArgv !== undefined && attempt < 2; attempt++) {
      try {
        const worker = new Worker(url, { execArgv, ...options });
        workerFlags = { execArgv };
        return worker;
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'ERR_WORKER_INVALID_EXEC_ARGV') throw error;
        const refused = new Set(/flags: (.*)$/.exec((error as Error).message)?.[1]?.split(/[\s,]+/) ?? []);
        const fewer: string[] = execArgv.filter((flag) => !refused.has(flag));
        execArgv = attempt === 0 && refused.size > 0 && fewer.length < execArgv.length ? fewer : undefined;
      }
    }
    workerFlags = { execArgv };
  }
  return new Worker(url, { execArgv: workerFlags.execArgv, ...options });
}

/** The module every worker thread starts with, piscina's threads included (persistence/settlement-pool.ts). */
export const WORKER_BOOTSTRAP = new URL('./worker-bootstrap.mjs', import.meta.url);

/** threadName: the OS thread's name (top -H, ps -L), e.g. "gateway-0"; 15 bytes at most. */
export function spawnWorker(entryUrl: URL, workerData: Record<string, unknown>, options: WorkerOptions = {}, threadName?: string): Worker {
  return startWorker(WORKER_BOOTSTRAP, {
    ...options,
    workerData: { ...workerData, entryUrl: entryUrl.href, threadName },
  });
}
