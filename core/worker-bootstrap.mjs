// Entry of every worker thread: registers tsx's loader in the new thread (Node 20
// does not carry `--import tsx` into workers), then loads the real entry module,
// passed as workerData.entryUrl. Thread plumbing only, like ring.ts: no domain code.
import { register } from 'tsx/esm/api';

register();
const { workerData } = await import('node:worker_threads');
await import(workerData.entryUrl);
