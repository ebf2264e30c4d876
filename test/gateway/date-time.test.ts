import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { test } from 'node:test';
import { isDateTime } from '../../gateway/validator-formats.ts';

const require = createRequire(import.meta.url);
const { fullFormats } = require('ajv-formats/dist/formats') as { fullFormats: Record<string, { validate: (value: string) => boolean }> };
const reference = fullFormats['date-time']!.validate;

const samples = [
  '2026-12-06T02:15:00Z',
  '2026-12-06t02:15:00z',
  '2026-12-06 02:15:00Z',
  '2026-12-06\u00a002:15:00Z',
  '2026-12-06\u200002:15:00Z',
  '2026-12-06T02:15:00.123456Z',
  '2026-12-06T02:15:00.Z',
  '2026-12-06T02:15:00+05',
  '2026-12-06T02:15:00+0530',
  '2026-12-06T02:15:00+05:30',
  '2026-12-06T02:15:00-23:59',
  '2026-12-06T02:15:00+24:00',
  '2026-12-06T02:15:00+05:60',
  '2026-12-06T02:15:00+05:3',
  '2026-12-06T02:15:00+05:',
  '2026-12-06T02:15:00',
  '2026-02-29T00:00:00Z',
  '2024-02-29T00:00:00Z',
  '2000-02-29T00:00:00Z',
  '1900-02-29T00:00:00Z',
  '2026-04-31T00:00:00Z',
  '2026-13-01T00:00:00Z',
  '2026-00-01T00:00:00Z',
  '2026-01-00T00:00:00Z',
  '2026-12-31T23:59:60Z',
  '2026-12-31T23:59:60.5Z',
  '2026-12-31T23:59:61Z',
  '2026-12-31T22:59:60-01:00',
  '2026-12-31T00:59:60+01:00',
  '2026-12-31T23:59:59.99999999999999999Z',
  '2026-12-31T24:00:00Z',
  '2026-12-31T23:60:00Z',
  '2026-12-31T99:99:99Z',
  '２026-12-31T00:00:00Z',
  '2026-12-31T00:00:00ZZ',
  '2026-12-31T00:00:00Z ',
  ' 2026-12-31T00:00:00Z',
  '2026-12-31TT00:00:00Z',
  '2026/12/31T00:00:00Z',
  '',
  '2026-12-31',
  '2026-12-31T00:00Z',
  '2026-12-31T00:00:00.1234567890123+00:00',
  '2026-12-31T00:00:00,5Z',
  '2026-12-31T00:00:00.5.5Z',
  '2026-12-31\n00:00:00Z',
  '2026-12-31\u202800:00:00Z',
];

test('isDateTime agrees with ajv-formats on chosen edge cases', () => {
  let valid = 0;
  for (const text of samples) {
    assert.equal(isDateTime(text), reference(text), JSON.stringify(text));
    if (reference(text)) valid++;
  }
  // Both answers occur: the list tells valid from invalid, not only one of them.
  assert.ok(valid >= 15 && valid <= samples.length - 15, `${valid} valid of ${samples.length}`);
});

test('isDateTime agrees with ajv-formats on 200,000 mutations of valid timestamps (seeded)', () => {
  const alphabet = '0123456789-:.+TtZz \u00a0\u3000xé5960';
  let seed = 12345;
  const next = (n: number) => {
    seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
    return (seed >>> 8) % n;
  };
  let disagreements = 0;
  let valid = 0;
  for (let i = 0; i < 200_000; i++) {
    let text = samples[next(samples.length)]!;
    for (let edits = next(4); edits > 0; edits--) {
      const at = next(text.length + 1);
      const kind = next(3);
      const c = alphabet[next(alphabet.length)]!;
      text = kind === 0 ? text.slice(0, at) + c + text.slice(at + 1) : kind === 1 ? text.slice(0, at) + c + text.slice(at) : text.slice(0, at) + text.slice(at + 1);
    }
    const expected = reference(text);
    if (expected) valid++;
    if (isDateTime(text) !== expected) {
      disagreements++;
      assert.fail(`${JSON.stringify(text)}: ajv-formats ${expected}, isDateTime ${!expected}`);
    }
  }
  assert.equal(disagreements, 0);
  assert.ok(valid > 10_000, `${valid} valid mutations`);
});
