// The filter of forgotten keys (core/key-filter.ts): no false negatives, few false
// positives at its rated load, "maybe" for everything past it, and every key a shared
// table evicts ends up in it.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createKeyFilter, KeyFilter } from '../../core/key-filter.ts';
import { createSharedKeyTable, NOT_FOUND, SharedKeyTable } from '../../core/shared-key-table.ts';
import { SeededRandom } from '../../bench/lib/seeded-random.ts';

const random = new SeededRandom(42);
const randomKey = () => Int32Array.of(random.below(2 ** 31) | 0, random.below(2 ** 31) ^ 0x5a5a5a5a, random.below(2 ** 31) | 0, random.below(2 ** 31) | 0);

test('every added key is found; about 1% of other keys are false positives at the rated load', () => {
  const filter = new KeyFilter(createKeyFilter(1 << 16));
  const added = Array.from({ length: filter.ratedKeys }, randomKey);
  for (const key of added) filter.add(key, 0);
  assert.equal(filter.added, filter.ratedKeys);
  for (const key of added) assert.equal(filter.mightContain(key, 0), true);
  let positives = 0;
  const probes = 20_000;
  for (let k = 0; k < probes; k++) if (filter.mightContain(randomKey(), 0)) positives++;
  const rate = positives / probes;
  assert.ok(rate > 0.002 && rate < 0.02, `false positive rate ${rate}`);
});

test('an empty filter holds nothing; past its rated load it answers "maybe" for every key', () => {
  const filter = new KeyFilter(createKeyFilter(1 << 10));
  assert.equal(filter.mightContain(randomKey(), 0), false);
  for (let k = 0; k <= filter.ratedKeys; k++) filter.add(randomKey(), 0);
  for (let k = 0; k < 100; k++) assert.equal(filter.mightContain(randomKey(), 0), true);
});

test('a table with a filter puts every key it evicts there, and only those', () => {
  const shape = { bucketCount: 1, extraWords: 0 }; // one bucket of 8 entries
  const filter = new KeyFilter(createKeyFilter(1 << 16));
  const table = new SharedKeyTable(createSharedKeyTable(shape), shape, filter);
  const keys = Array.from({ length: 20 }, randomKey);
  keys.forEach((key, n) => table.insertIfAbsent(key, 0, n));
  assert.equal(table.evictions, 12);
  assert.equal(filter.added, 12);
  keys.forEach((key, n) => {
    const kept = table.get(key, 0) !== NOT_FOUND;
    assert.equal(kept, n >= 12, `key ${n} kept`);
    if (!kept) assert.equal(filter.mightContain(key, 0), true, `forgotten key ${n} is in the filter`);
  });
});

test('sizes that are not powers of two in range are refused', () => {
  assert.throws(() => createKeyFilter(1000), /power of two/);
  assert.throws(() => createKeyFilter(2 ** 31), /power of two/);
});
