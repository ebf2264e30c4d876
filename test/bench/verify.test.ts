// What the load verification (bench/load/verify.ts) takes from the runs before it asks the
// database: the 2xx commands with their body hashes, every reported trade, the unanswered.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { collectAnswered } from '../../bench/load/verify.ts';

test('the verification collects the 2xx commands, their hashes and every reported trade, from runs with hundreds of thousands of trades', () => {
  // A 30 s closed loop reports 150,000 trades and more; a spread of that many arguments overflowed the stack.
  const many = Array.from({ length: 400_000 }, (_, k) => `t${k}`);
  const runs = [
    {
      transportErrors: 0,
      recordedTruncated: false,
      recorded: { commandIds: ['a', 'b', 'c'], statuses: [200, 409, 202], bodyMd5: ['h-a', null, null], tradeIds: many, kinds: ['submit', 'submit', 'cancel'] },
    },
    { transportErrors: 2, recordedTruncated: true, recorded: { commandIds: ['d'], statuses: [200], bodyMd5: ['h-d'], tradeIds: ['t-last'], kinds: ['submit'] } },
  ];
  const got = collectAnswered(runs);
  assert.deepEqual(got.ids, ['a', 'c', 'd']);
  assert.deepEqual(got.md5, ['h-a', null, 'h-d']);
  assert.equal(got.reported.length, 400_001);
  assert.equal(got.reported[0], 't0');
  assert.equal(got.reported[399_999], 't399999');
  assert.equal(got.reported[400_000], 't-last');
  assert.equal(got.unanswered, 3);
});
