// `npm run bench [-- --quick]`: every benchmark, one JSON file each in bench/results/,
// then the Markdown summary (bench/results/SUMMARY.md and the README's table).
import { runCoreBench } from './core-bench.ts';
import { runCoreCompareBench } from './core-compare-bench.ts';
import { runLoadBench } from './load-bench.ts';
import { runMemoryLatencyBench } from './memory-latency-bench.ts';
import { runPersistenceBench } from './persistence-bench.ts';
import { runReadBench } from './read-bench.ts';
import { writeSummary } from './summary.ts';

const quick = process.argv.includes('--quick');
runMemoryLatencyBench();
await runCoreBench(quick);
await runCoreCompareBench(quick);
await runPersistenceBench(quick);
await runReadBench(quick);
await runLoadBench(quick);
writeSummary();
