import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createSharedKeyTable, NOT_FOUND, SharedKeyTable } from '../../core/shared-key-table.ts';
import { spawnWorker } from '../../runtime/worker-spawn.ts';
import { createKeyFilter, KeyFilter } from '../../core/key-filter.ts';

const keyOf = (n: number) => Int32Array.of(n, 0x5eed, n * 31, ~n);

function table(bucketCount: number, extraWords = 2): SharedKeyTable {
  const shape = { bucketCount, extraWords };
  return new SharedKeyTable(createSharedKeyTable(shape), shape);
}

test('insertIfAbsent inserts once and then answers the existing value and extra words', () => {
  const t = table(16);
  const out = new Int32Array(2);
  assert.equal(t.insertIfAbsent(keyOf(1), 0, 10, Int32Array.of(7, 8)), NOT_FOUND);
  assert.equal(t.insertIfAbsent(keyOf(1), 0, 11, Int32Array.of(0, 0), out), 10);
  assert.deepEqual([...out], [7, 8]);
  assert.equal(t.get(keyOf(1), 0), 10);
  assert.equal(t.get(keyOf(2), 0), NOT_FOUND);
});

test('replace is a compare-and-set and remove needs the expected value', () => {
  const t = table(16);
  t.insertIfAbsent(keyOf(1), 0, 10);
  assert.equal(t.replace(keyOf(1), 0, 99, 12), false);
  assert.equal(t.replace(keyOf(1), 0, 10, 12), true);
  assert.equal(t.get(keyOf(1), 0), 12);
  assert.equal(t.remove(keyOf(1), 0, 10), false);
  assert.equal(t.remove(keyOf(1), 0, 12), true);
  assert.equal(t.get(keyOf(1), 0), NOT_FOUND);
  t.put(keyOf(1), 0, 13);
  assert.equal(t.get(keyOf(1), 0), 13);
});

test('a full bucket evicts its oldest entry and counts the eviction', () => {
  const t = table(1); // a single bucket of 8 entries
  for (let n = 0; n < 8; n++) t.insertIfAbsent(keyOf(n), 0, n);
  assert.equal(t.evictions, 0);
  t.insertIfAbsent(keyOf(8), 0, 8);
  assert.equal(t.evictions, 1);
  assert.equal(t.get(keyOf(0), 0), NOT_FOUND, 'the oldest went');
  for (let n = 1; n <= 8; n++) assert.equal(t.get(keyOf(n), 0), n);
});

test('addKeysTo puts every key the table holds (not the removed ones) into a filter, each once', () => {
  const t = table(256);
  for (let n = 0; n < 300; n++) t.insertIfAbsent(keyOf(n), 0, n);
  assert.equal(t.evictions, 0);
  for (let n = 0; n < 300; n += 3) assert.ok(t.remove(keyOf(n), 0, n));
  const filter = new KeyFilter(createKeyFilter(1 << 16));
  const held = 200;
  assert.equal(t.addKeysTo(filter), held);
  assert.equal(filter.added, held);
  let found = 0;
  for (let n = 0; n < 300; n++) {
    if (t.get(keyOf(n), 0) !== NOT_FOUND) {
      assert.ok(filter.mightContain(keyOf(n), 0), `key ${n}`);
      found++;
    }
  }
  assert.equal(found, held);
  assert.equal(t.addKeysTo(filter), 0, 'a second call adds nothing: the count stays the keys learnt');
  assert.equal(filter.added, held);
});

test('addKeysTo since a stamp: only the entries written since (new keys, rewritten ones), in the bucket range asked; the stamps wrap', () => {
  const t = table(64);
  for (let n = 0; n < 100; n++) t.insertIfAbsent(keyOf(n), 0, n);
  const since = t.stamp;
  assert.equal(since, 100, 'one stamp per write');
  for (let n = 100; n < 130; n++) t.insertIfAbsent(keyOf(n), 0, n);
  t.put(keyOf(5), 0, 55); // rewritten: a new stamp
  const filter = new KeyFilter(createKeyFilter(1 << 16));
  assert.equal(t.addKeysTo(filter, since), 31);
  for (let n = 0; n < 130; n++) assert.equal(filter.mightContain(keyOf(n), 0), n >= 100 || n === 5, `key ${n}`);
  // A range of buckets: the two halves add what the whole does.
  const halves = new KeyFilter(createKeyFilter(1 << 16));
  assert.equal(t.addKeysTo(halves, null, 0, 32) + t.addKeysTo(halves, null, 32, 64), 130);
  // Past 2^31 writes the stamp counter's sign flips; "since" still compares by distance.
  const words = t.words;
  Atomics.store(words, 0, 0x7ffffff0);
  for (let n = 200; n < 210; n++) t.insertIfAbsent(keyOf(n), 0, n); // stamps 0x7ffffff0 .. 0x7ffffff9
  const beforeWrap = t.stamp;
  for (let n = 210; n < 230; n++) t.insertIfAbsent(keyOf(n), 0, n); // crosses to negative stamps
  assert.ok(t.stamp < 0);
  const wrapped = new KeyFilter(createKeyFilter(1 << 16));
  assert.equal(t.addKeysTo(wrapped, beforeWrap), 20);
  for (let n = 200; n < 230; n++) assert.equal(wrapped.mightContain(keyOf(n), 0), n >= 210, `key ${n} across the wrap`);
});

test('addKeysTo reads only the groups of 8 buckets a write reached: an entry planted in an unwritten group is not seen, one planted beside a written key is', () => {
  // The layout of core/shared-key-table.ts with 2 extra words: a 16-word header, buckets of
  // a 16-word lock line and 8 entries of 9 words (used, stamp, 4 key words, value, extras),
  // then a written word per 8 buckets.
  const buckets = 64;
  const bucketWords = 16 + 8 * 9;
  const writtenAt = 16 + buckets * bucketWords;
  const t = table(buckets);
  const words = t.words;
  assert.equal(words.length, writtenAt + buckets / 8);
  assert.deepEqual([...words.subarray(writtenAt)], [0, 0, 0, 0, 0, 0, 0, 0], 'nothing written yet');
  t.insertIfAbsent(keyOf(1), 0, 1);
  const marked = [...words.subarray(writtenAt)];
  assert.equal(
    marked.reduce((a, b) => a + b, 0),
    1,
    `one group marked by the insert: ${marked.join(' ')}`,
  );
  const group = marked.indexOf(1);
  // An entry in use with key 77 in the first bucket of another group, and key 78 in the last
  // bucket of the marked group (its last entry: the insert took the first of its own bucket).
  const plant = (bucket: number, n: number) => {
    const entry = 16 + bucket * bucketWords + 16 + 7 * 9;
    words[entry] = 1;
    words[entry + 1] = t.stamp;
    words.set(keyOf(n), entry + 2);
  };
  plant(((group + 1) % 8) * 8, 77);
  plant(group * 8 + 7, 78);
  const filter = new KeyFilter(createKeyFilter(1 << 16));
  assert.equal(t.addKeysTo(filter), 2);
  assert.ok(filter.mightContain(keyOf(1), 0) && filter.mightContain(keyOf(78), 0), 'the written group is read, every bucket of it');
  assert.equal(filter.mightContain(keyOf(77), 0), false, 'a group no write reached is passed over');
  // Removing the key leaves its group marked: later writes there are found without a new mark.
  assert.ok(t.remove(keyOf(1), 0, 1));
  assert.equal(words[writtenAt + group], 1);
});

test('three threads racing to insert the same 20,000 keys: exactly one wins each key, all agree', async () => {
  const shape = { bucketCount: 65536, extraWords: 1 }; // roomy: no bucket overflows, so no eviction
  const buffer = createSharedKeyTable(shape);
  const keys = 20_000;
  const results = await Promise.all(
    [1, 2, 3].map(
      (racer) =>
        new Promise<Int32Array>((resolve, reject) => {
          const worker = spawnWorker(new URL('./fixtures/key-table-racer.worker.ts', import.meta.url), {
            table: buffer,
            shape,
            racer,
            keys,
          });
          worker.once('message', resolve);
          worker.once('error', reject);
        }),
    ),
  );
  const t = new SharedKeyTable(buffer, shape);
  const extra = new Int32Array(1);
  for (let n = 0; n < keys; n++) {
    const winners = results.filter((seen) => seen[n] === NOT_FOUND).length;
    assert.equal(winners, 1, `key ${n} won ${winners} times`);
    const stored = t.get(keyOf(n), 0, extra);
    assert.equal(stored % 1_000_000, n);
    assert.equal(extra[0], Math.floor(stored / 1_000_000), 'value and extra words come from the same insert');
    for (const seen of results) if (seen[n] !== NOT_FOUND) assert.equal(seen[n], stored);
  }
  assert.equal(t.evictions, 0);
});
