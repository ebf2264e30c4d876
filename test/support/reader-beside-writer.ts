// A seqlock's test: a reader on this thread, one read per turn of the event loop, for as
// long as a writer thread runs (and until one read found something).

import { spawnWorker } from '../../runtime/worker-spawn.ts';

/** Runs `read` beside the writer thread `worker` (given `data`); `read` says whether it found something to check. */
export async function readBesideWriter(worker: URL, data: Record<string, unknown>, read: () => boolean): Promise<{ reads: number; exitCode: number }> {
  const writer = spawnWorker(worker, data);
  const exited = new Promise<number>((resolve, reject) => {
    writer.on('error', reject);
    writer.on('exit', resolve);
  });
  let reads = 0;
  let done = false;
  void exited.then(() => (done = true));
  while (!done || reads === 0) {
    if (read()) reads++;
    await new Promise((resolve) => setImmediate(resolve));
  }
  return { reads, exitCode: await exited };
}
