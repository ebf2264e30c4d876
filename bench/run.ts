// `npm run bench [-- --quick]`: every benchmark, one JSON file each in bench/results/,
// then the Markdown summary (bench/results/SUMMARY.md and the README's table). Each
// benchmark's wall time is printed, so a slow one is seen (the quick run must stay
// under 2 minutes on the 2-core machine).
import '../runtime/compiler-flags.mjs'; // first: the venue's V8 inlining budgets, so the core runs here as the venue compiles it
import { runAllocationBench } from './allocation-bench.ts';
import { runBookModelBench } from './book-model-bench.ts';
import { runCoreBench } from './core-bench.ts';
import { runCoreCompareBench } from './core-compare-bench.ts';
import { runDurableSubmitBench } from './durable-submit-bench.ts';
import { runKeyFilterBench } from './key-filter-bench.ts';
import { runLoadBench } from './load-bench.ts';
import { runMemoryLatencyBench } from './memory-latency-bench.ts';
import { runPersistenceBench } from './persistence-bench.ts';
import { runReadBench } from './read-bench.ts';
import { runSnapshotRefreshBench } from './snapshot-refresh-bench.ts';
import { runSustainedBench } from './sustained-bench.ts';
import { writeResult } from './lib/results.ts';
import { writeSummary } from './summary.ts';

const quick = process.argv.includes('--quick');
const started = performance.now();
const timed = async (name: string, run: () => unknown) => {
  const at = performance.now();
  await run();
  console.log(`-- ${name}: ${((performance.now() - at) / 1000).toFixed(1)} s`);
};
await timed('memory latency', () => runMemoryLatencyBench(quick));
await timed('core', () => runCoreBench(quick));
await timed('core against nodejs-order-book', () => runCoreCompareBench(quick));
await timed('displayed books', () => runBookModelBench(quick));
await timed('key filters', () => runKeyFilterBench(quick));
await timed('persistence', () => runPersistenceBench(quick));
await timed('snapshot refresh', () => runSnapshotRefreshBench(quick));
// The quick run leaves the standalone read benchmark out: the load benchmark measures reads beside orders too.
if (!quick) await timed('reads', () => runReadBench(quick));
await timed('load (ceilings, modes, open loop, reads beside, restart)', () => runLoadBench(quick));
// What a durable command costs, part by part and thread by thread, in each mode beside the bare server; left out of the quick run (minutes).
if (!quick) await timed('durable command cost per mode', async () => writeResult('durable-submit', await runDurableSubmitBench(3, 8)));
// What each thread allocates per order (issue 58's gateway budget), the figure and the functions behind it; two venue runs, so the full run only.
if (!quick) await timed('allocation per command', async () => writeResult('allocation', await runAllocationBench(6)));
// Last: minutes of load on one venue (4 minutes in a full run, 4 s in a quick one), the trend the short runs cannot show.
await timed('sustained load', () => runSustainedBench(quick));
writeSummary();
console.log(`-- all benchmarks: ${((performance.now() - started) / 1000).toFixed(1)} s${quick ? ' (quick)' : ''}`);
