// Restarts with a book of resting orders, on their own (the full `npm run bench` runs them
// inside bench/load-bench.ts): a fill, three starts after a graceful stop and three after a
// kill -9 of the venue and its PostgreSQL under load, each timed to /readyz with its start's
// steps. The summary takes the newer of this file's figure and load.json's.
//
//   npx tsx bench/restart-bench.ts [--orders 1000000] [--times 3]
//
// Result: bench/results/restart.json (the shape of load.json's `restart`).

import { fileURLToPath } from 'node:url';
import { restartBench } from './load-bench.ts';
import { writeResult } from './lib/results.ts';

const argument = (name: string, fallback: number): number => {
  const at = process.argv.indexOf(`--${name}`);
  const value = at < 0 ? fallback : Number(process.argv[at + 1]);
  if (!Number.isSafeInteger(value) || value < 1) throw new Error(`--${name} takes a whole number of at least 1`);
  return value;
};

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  writeResult('restart', await restartBench(argument('orders', 1_000_000), argument('times', 3), { walFraction: 0.9, loadMsMax: 90_000 }));
  process.exit(0);
}
