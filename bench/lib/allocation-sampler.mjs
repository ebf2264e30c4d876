// Preloaded into every venue thread by bench/allocation-bench.ts (node --import): V8's
// sampling heap profiler, counting what is collected as well as what is kept, runs while
// `<dir>/start` exists and `<dir>/stop` does not; each thread then writes its profile to
// `<dir>/thread-<threadId>.heapprofile`. Inert unless VENUE_ALLOCATION_SAMPLES names <dir>.
import { existsSync, renameSync, writeFileSync } from 'node:fs';
import inspector from 'node:inspector';
import { threadId } from 'node:worker_threads';

const dir = process.env.VENUE_ALLOCATION_SAMPLES;
const SAMPLING_INTERVAL_BYTES = 2048;

if (dir !== undefined && dir !== '') {
  const session = new inspector.Session();
  session.connect();
  let state = 'waiting';
  const poll = setInterval(() => {
    if (state === 'waiting' && existsSync(`${dir}/start`)) {
      state = 'sampling';
      session.post('HeapProfiler.startSampling', {
        samplingInterval: SAMPLING_INTERVAL_BYTES,
        includeObjectsCollectedByMajorGC: true,
        includeObjectsCollectedByMinorGC: true,
      });
    } else if (state === 'sampling' && existsSync(`${dir}/stop`)) {
      state = 'done';
      clearInterval(poll);
      session.post('HeapProfiler.stopSampling', (error, result) => {
        // Written aside, then renamed: the bench reads whatever file it sees named .heapprofile.
        const file = `${dir}/thread-${threadId}.heapprofile`;
        writeFileSync(`${file}.part`, JSON.stringify(error ? { error: String(error) } : result.profile));
        renameSync(`${file}.part`, file);
      });
    }
  }, 20);
  poll.unref();
}
