// What does a random memory read cost on this machine? The matching core's speed on
// a large book is bound by it, so the core figures are read against these.
// A dependent chain (each address comes from the previous read, like following an
// order's queue links) and independent reads (addresses known up front, like a
// batch prefetch) over buffers from 1 MiB to 256 MiB. Writes
// bench/results/memory-latency.json.

import { SeededRandom } from './lib/seeded-random.ts';
import { writeResult } from './lib/results.ts';

const STEPS = 2_000_000;

function measure(mebibytes: number, random: SeededRandom): { mebibytes: number; dependentNs: number; independentNs: number } {
  const length = (mebibytes * 1024 * 1024) / 4;
  // A single random cycle through every element (Sattolo's algorithm).
  const next = new Int32Array(length);
  for (let i = 0; i < length; i++) next[i] = i;
  for (let i = length - 1; i > 0; i--) {
    const j = random.below(i);
    const t = next[i]!;
    next[i] = next[j]!;
    next[j] = t;
  }
  const addresses = new Int32Array(STEPS);
  for (let i = 0; i < STEPS; i++) addresses[i] = random.below(length);
  let at = 0;
  let started = performance.now();
  for (let i = 0; i < STEPS; i++) at = next[at]!;
  const dependentNs = ((performance.now() - started) * 1e6) / STEPS;
  let sum = 0;
  started = performance.now();
  for (let i = 0; i < STEPS; i++) sum += next[addresses[i]!]!;
  const independentNs = ((performance.now() - started) * 1e6) / STEPS;
  if (at < 0 || sum < 0) throw new Error('unreachable: keeps the loops alive');
  return { mebibytes, dependentNs: Number(dependentNs.toFixed(1)), independentNs: Number(independentNs.toFixed(1)) };
}

export function runMemoryLatencyBench(quick = false): void {
  const random = new SeededRandom(1);
  const rows = (quick ? [1, 16, 64] : [1, 4, 16, 64, 256]).map((mebibytes) => measure(mebibytes, random));
  console.table(rows.map((r) => ({ 'buffer MiB': r.mebibytes, 'dependent read ns': r.dependentNs, 'independent read ns': r.independentNs })));
  writeResult('memory-latency', { description: 'random 4-byte reads, dependent chain vs independent', rows });
}

if (import.meta.url === `file://${process.argv[1]}`) runMemoryLatencyBench();
