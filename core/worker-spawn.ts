// Starts a worker thread running a TypeScript module (through worker-bootstrap.mjs).

import { Worker, type WorkerOptions } from 'node:worker_threads';

export function spawnWorker(entryUrl: URL, workerData: Record<string, unknown>, options: WorkerOptions = {}): Worker {
  return new Worker(new URL('./worker-bootstrap.mjs', import.meta.url), {
    ...options,
    workerData: { ...workerData, entryUrl: entryUrl.href },
  });
}
