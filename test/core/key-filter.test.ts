// The filter of forgotten keys (core/key-filter.ts): no false negatives, few false
// positives at its rated load and gradually more past it, the warning when it passes
// that load, and every key a shared table evicts ends up in it; adding keys in groups
// (addMany, KeyFilterFeed) sets exactly the bits adding them one by one sets.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createKeyFilter, filterBitsFor, KeyFilter, KeyFilterFeed, keyFilterBitsOf, ratedLoadWatch } from '../../core/key-filter.ts';
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

test('an empty filter holds nothing; past its rated load its false positives grow gradually, and it never loses a key', () => {
  const filter = new KeyFilter(createKeyFilter(1 << 16)); // rated for 6553 keys
  assert.equal(filter.mightContain(randomKey(), 0), false);
  const added: Int32Array[] = [];
  const falsePositives = (load: number) => {
    while (added.length < filter.ratedKeys * load) {
      const key = randomKey();
      filter.add(key, 0);
      added.push(key);
    }
    for (const key of added) assert.equal(filter.mightContain(key, 0), true, `no added key is ever missing (${load} times the rated load)`);
    let positives = 0;
    for (let k = 0; k < 20_000; k++) if (filter.mightContain(randomKey(), 0)) positives++;
    return positives / 20_000;
  };
  // Measured with this filter's shape (blocked, 7 probes): about 5.5% at 1.5 times, 14% at 2, 64% at 4.
  const [atOneAndAHalf, atTwo, atFour] = [falsePositives(1.5), falsePositives(2), falsePositives(4)];
  assert.ok(atOneAndAHalf > 0.03 && atOneAndAHalf < 0.09, `1.5 times the rated load: ${atOneAndAHalf}`);
  assert.ok(atTwo > 0.1 && atTwo < 0.2, `twice the rated load: ${atTwo}`);
  assert.ok(atFour > 0.55 && atFour < 0.75, `4 times the rated load: ${atFour}`);
});

test('keys fed in groups (KeyFilterFeed, addMany) set the very bits and count that adding them one by one does', () => {
  const keys = Array.from({ length: 1000 }, randomKey); // three full groups of 256 and a part, flushed
  const one = createKeyFilter(1 << 14);
  const fed = createKeyFilter(1 << 14);
  for (const key of keys) new KeyFilter(one).add(key, 0);
  const feed = new KeyFilterFeed(new KeyFilter(fed));
  for (const key of keys) feed.push(key, 0);
  assert.equal(new KeyFilter(fed).added, 768, 'full groups go in as they fill');
  feed.flush();
  feed.flush(); // nothing left: adds nothing
  assert.deepEqual(new Uint8Array(fed), new Uint8Array(one));
  assert.equal(new KeyFilter(fed).added, 1000);
});

test('ratedLoadWatch says once per filter that it passed its rated load, and nothing before', () => {
  const small = new KeyFilter(createKeyFilter(1 << 10)); // rated for 102 keys
  const large = new KeyFilter(createKeyFilter(1 << 16));
  const said: [string, number, number][] = [];
  const check = ratedLoadWatch({ small, large }, (name, added, rated) => said.push([name, added, rated]));
  for (let k = 0; k < small.ratedKeys; k++) small.add(randomKey(), 0);
  check();
  assert.deepEqual(said, [], 'at the rated load: nothing');
  small.add(randomKey(), 0);
  check();
  check();
  small.add(randomKey(), 0);
  check();
  assert.deepEqual(said, [['small', 103, 102]]);
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

test("keyFilterBitsOf reads a filter's size back from its buffer, and names no size no filter has", () => {
  for (const bits of [1024, 1 << 20, 1 << 30]) assert.equal(keyFilterBitsOf(createKeyFilter(bits).byteLength), bits);
  assert.equal(keyFilterBitsOf(createKeyFilter(1024).byteLength + 4), null);
  assert.equal(keyFilterBitsOf(64 + 512 / 8), null, 'below 2^10 bits');
  assert.equal(keyFilterBitsOf(0), null);
});

test('the start sizes the filters for the stored keys at half their rated load, from the floor, up to the maximum', () => {
  const floor = 1 << 10;
  const max = 1 << 20;
  assert.deepEqual(filterBitsFor(0, floor, max), { bits: floor, short: false }, 'an empty store keeps the floor');
  assert.deepEqual(filterBitsFor(51, floor, max), { bits: floor, short: false }, '51 keys: half of the 102 that 1024 bits are rated for');
  assert.deepEqual(filterBitsFor(52, floor, max), { bits: 2048, short: false });
  assert.deepEqual(filterBitsFor(300, floor, max), { bits: 8192, short: false }, '300 keys want 6,000 bits');
  assert.deepEqual(filterBitsFor(52_428, floor, max), { bits: max, short: false }, "exactly half the maximum's rating");
  assert.deepEqual(filterBitsFor(52_429, floor, max), { bits: max, short: true }, 'more: the maximum, and said to be short');
  assert.deepEqual(filterBitsFor(10, 1 << 16, max), { bits: 1 << 16, short: false }, 'never below the floor');
  assert.deepEqual(filterBitsFor(13_400_000, 1 << 27, 1 << 30), { bits: 1 << 28, short: false }, "the defaults, 13.4 M stored keys (the floor's rating): 2^28, 32 MiB a filter");
});
