// Entry of every worker thread: registers tsx's loader in the new thread (Node 20
// does not carry `--import tsx` into workers), then loads the real entry module,
// passed as workerData.entryUrl. Thread plumbing only, like ring.ts: no domain code.
import { register } from 'tsx/esm/api';

register();
const { workerData } = await import('node:worker_threads');
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
await import(workerData.entryUrl);
