// Starts a worker thread running a module (through worker-bootstrap.mjs): TypeScript
// through tsx, or JavaScript built by core/worker-build.ts.

import { Worker, type WorkerOptions } from 'node:worker_threads';

/** threadName: the OS thread's name (top -H, ps -L), e.g. "gateway-0"; 15 bytes at most. */
export function spawnWorker(entryUrl: URL, workerData: Record<string, unknown>, options: WorkerOptions = {}, threadName?: string): Worker {
  return new Worker(new URL('./worker-bootstrap.mjs', import.meta.url), {
    ...options,
    workerData: { ...workerData, entryUrl: entryUrl.href, threadName },
  });
}
