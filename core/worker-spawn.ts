// Starts a worker thread running a module (through worker-bootstrap.mjs): TypeScript
// through tsx, or JavaScript built by core/worker-build.ts.

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
 * for a TypeScript entry, so nothing needs the preload; every other flag (profilers, heap
 * limits) is kept.
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

/** threadName: the OS thread's name (top -H, ps -L), e.g. "gateway-0"; 15 bytes at most. */
export function spawnWorker(entryUrl: URL, workerData: Record<string, unknown>, options: WorkerOptions = {}, threadName?: string): Worker {
  return new Worker(new URL('./worker-bootstrap.mjs', import.meta.url), {
    execArgv: withoutTsxPreload(process.execArgv),
    ...options,
    workerData: { ...workerData, entryUrl: entryUrl.href, threadName },
  });
}
