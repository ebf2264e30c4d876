// Entry of every worker thread: loads the real entry module, passed as workerData.entryUrl.
// A TypeScript entry needs tsx's loader registered in the new thread first (spawnWorker
// starts every worker without the tsx preload flags it would inherit from its parent);
// the venue's own threads get JavaScript built at start (runtime/worker-build.ts) and skip
// it. Thread plumbing only, like ring.ts: no domain code.
import './node-globals.mjs'; // first: before any package loads
const { workerData } = await import('node:worker_threads');
if (/\.ts$/.test(workerData.entryUrl)) {
  const { register } = await import('tsx/esm/api');
  register();
} else {
  process.setSourceMapsEnabled(true); // stack traces name the TypeScript sources (the build inlines its maps)
}
// Names the OS thread (Linux, 15 bytes at most) so that `top -H` and `ps -L` show which
// venue thread is which; best effort, elsewhere it does nothing.
if (typeof workerData.threadName === 'string') {
  try {
    const { writeFileSync } = await import('node:fs');
    writeFileSync('/proc/thread-self/comm', workerData.threadName.slice(0, 15));
  } catch {
    // not Linux, or /proc is not mounted: the name is a convenience only
  }
}
// A piscina pool's thread (the settlement pool) calls the entry's default export for each task.
const entry = await import(workerData.entryUrl);
export default entry.default;
