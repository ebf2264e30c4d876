// `npm run bench [-- --quick]`: every benchmark, one JSON file each in bench/results/.
import { runCoreBench } from './core-bench.ts';
import { runMemoryLatencyBench } from './memory-latency-bench.ts';
import { runPersistenceBench } from './persistence-bench.ts';
import { runReadBench } from './read-bench.ts';

const quick = process.argv.includes('--quick');
runMemoryLatencyBench();
await runCoreBench(quick);
await runPersistenceBench(quick);
await runReadBench(quick);
