import assert from 'node:assert/strict';
import { test } from 'node:test';
import { formatUuid, isUuid, parseUuidInto, uuidWords, UuidWordsCache } from '../../core/uuid.ts';
import { SeededRandom } from '../../bench/lib/seeded-random.ts';

test('a UUID parses to four big-endian words and formats back in lower case', () => {
  const words = uuidWords('0123ABCD-4567-89ab-CDEF-0123456789ab');
  assert.deepEqual(
    [...words].map((w) => (w >>> 0).toString(16)),
    ['123abcd', '456789ab', 'cdef0123', '456789ab'],
  );
  assert.equal(formatUuid(words, 0), '0123abcd-4567-89ab-cdef-0123456789ab');
});

test('random UUIDs round-trip through words at any offset', () => {
  const random = new SeededRandom(3);
  const target = new Int32Array(12);
  for (let i = 0; i < 2000; i++) {
    const text = crypto.randomUUID();
    const offset = random.below(9);
    assert.ok(parseUuidInto(text, target, offset));
    assert.equal(formatUuid(target, offset), text);
  }
});

test('any four words format as their hex digits, most significant first, and parse back', () => {
  const random = new SeededRandom(11);
  const words = new Int32Array(4);
  const hex = (word: number) => (word >>> 0).toString(16).padStart(8, '0');
  for (let i = 0; i < 5000; i++) {
    for (let k = 0; k < 4; k++) words[k] = i < 3 ? [0, -1, 0x80000000 | 0][i]! : (random.below(0x10000) << 16) | random.below(0x10000);
    const all = words.reduce((text, word) => text + hex(word), '');
    const text = formatUuid(words, 0);
    assert.equal(text, `${all.slice(0, 8)}-${all.slice(8, 12)}-${all.slice(12, 16)}-${all.slice(16, 20)}-${all.slice(20)}`);
    assert.deepEqual([...uuidWords(text)], [...words]);
  }
});

test('anything but the canonical 8-4-4-4-12 hex form is rejected', () => {
  for (const text of [
    '',
    '0123abcd4567-89ab-cdef-0123456789ab',
    '0123abcd-4567-89ab-cdef-0123456789a',
    '0123abcd-4567-89ab-cdef-0123456789abc',
    '0123abcg-4567-89ab-cdef-0123456789ab',
    '{0123abcd-4567-89ab-cdef-0123456789a}',
    '0123abcd_4567-89ab-cdef-0123456789ab',
    '0123abcd-4567-89ab-cdef-0123456789aé',
  ]) {
    assert.equal(isUuid(text), false, text);
  }
  assert.throws(() => uuidWords('nope'), TypeError);
});

test('UuidWordsCache gives the words of each id, the same array for the same text, and stays within its bound', () => {
  const cache = new UuidWordsCache(3);
  const ids = Array.from({ length: 10 }, () => crypto.randomUUID());
  const first = cache.words(ids[0]!);
  assert.deepEqual([...first], [...uuidWords(ids[0]!)]);
  assert.equal(cache.words(ids[0]!), first, 'a second lookup returns the kept array');
  for (const id of ids) {
    assert.deepEqual([...cache.words(id)], [...uuidWords(id)], id);
    assert.ok(cache.size <= 3, `size ${cache.size}`);
  }
  assert.throws(() => cache.words('not-a-uuid'), /not a UUID/);
});
