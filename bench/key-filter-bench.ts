// How fast does a start's scan of storage fill the key filters? Every stored command
// adds two keys and every stored order one, millions at a start after a crash, each add
// a cache miss in a filter of 16 MiB or more. One key at a time (KeyFilter.add) against
// groups whose misses overlap (KeyFilterFeed -> addMany), alternating rounds on the same
// keys, each into a fresh filter of the default size; the filters are checked equal.
// Writes bench/results/key-filter.json.

import { createKeyFilter, KeyFilter, KeyFilterFeed } from '../core/key-filter.ts';
import { SeededRandom } from './lib/seeded-random.ts';
import { writeResult } from './lib/results.ts';

const BITS = 2 ** 27; // KEY_FILTER_BITS's default

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

export function runKeyFilterBench(quick = false): Record<string, unknown> {
  const count = quick ? 1_000_000 : 3_000_000;
  const rounds = quick ? 3 : 5;
  const random = new SeededRandom(7);
  const keys = new Int32Array(count * 4);
  for (let i = 0; i < keys.length; i++) keys[i] = random.below(2 ** 31) ^ (random.below(2) << 31);
  const one: number[] = [];
  const grouped: number[] = [];
  for (let round = 0; round < rounds; round++) {
    const single = createKeyFilter(BITS);
    const filter = new KeyFilter(single);
    let started = performance.now();
    for (let k = 0; k < count; k++) filter.add(keys, k * 4);
    one.push(((performance.now() - started) * 1e6) / count);
    const fed = createKeyFilter(BITS);
    const feed = new KeyFilterFeed(new KeyFilter(fed));
    started = performance.now();
    for (let k = 0; k < count; k++) feed.push(keys, k * 4);
    feed.flush();
    grouped.push(((performance.now() - started) * 1e6) / count);
    if (Buffer.compare(Buffer.from(single), Buffer.from(fed)) !== 0) throw new Error('the two ways set different bits');
  }
  const result = {
    description: `${count} random keys into a fresh ${BITS}-bit filter, ${rounds} alternating rounds (ns per key)`,
    oneByOneNs: Number(median(one).toFixed(1)),
    groupedNs: Number(median(grouped).toFixed(1)),
    rounds: { oneByOne: one.map((ns) => Number(ns.toFixed(1))), grouped: grouped.map((ns) => Number(ns.toFixed(1))) },
  };
  console.log(`key filter: one by one ${result.oneByOneNs} ns a key, in groups ${result.groupedNs} ns (medians of ${rounds})`);
  writeResult('key-filter', result);
  return result;
}

if (import.meta.url === `file://${process.argv[1]}`) runKeyFilterBench(process.argv.includes('--quick'));
