// The end-to-end tests' stopAfter (test/support/venue-process.ts): a failing body's error is
// the one reported, a venue's unclean exit fails a passing body, and the steps around the
// stop run in order whatever happened.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { stopAfter } from '../support/venue-process.ts';

function venueExiting(code: number | null, steps: string[]) {
  return {
    log: '{"msg":"the last line of the log"}',
    async stop() {
      steps.push('stop');
      return code;
    },
  };
}

test('a failing body reports its own error, with the exit code added, and the venue is still stopped', async () => {
  const steps: string[] = [];
  const venue = venueExiting(1, steps);
  await assert.rejects(
    stopAfter(
      () => venue,
      async () => {
        steps.push('body');
        assert.equal(2 + 2, 5, "the body's own check");
      },
      { before: () => steps.push('before'), after: () => steps.push('after') },
    ),
    (error: Error) => error.message.startsWith("the body's own check") && error.message.endsWith('(the venue then stopped with exit code 1)'),
  );
  assert.deepEqual(steps, ['body', 'before', 'stop', 'after']);
});

test('a passing body fails on an unclean exit, naming the log', async () => {
  const steps: string[] = [];
  await assert.rejects(
    stopAfter(
      () => venueExiting(1, steps),
      async () => undefined,
    ),
    /the venue stops cleanly; its log ends:\n\{"msg":"the last line of the log"\}/,
  );
  await assert.rejects(
    stopAfter(
      () => venueExiting(null, steps),
      async () => undefined,
    ),
    /the venue stops cleanly/,
  );
  await stopAfter(
    () => venueExiting(0, steps),
    async () => undefined,
  );
  assert.deepEqual(steps, ['stop', 'stop', 'stop']);
});

test('the venue stopped is the one the getter names after the body (bodies restart venues)', async () => {
  const steps: string[] = [];
  const first = venueExiting(0, []);
  let venue = first;
  await stopAfter(
    () => venue,
    async () => {
      venue = venueExiting(0, steps);
    },
  );
  assert.deepEqual(steps, ['stop'], 'the restarted venue was stopped');
});

test("a step that fails around the stop does not hide the body's error, and fails a passing body", async () => {
  const steps: string[] = [];
  await assert.rejects(
    stopAfter(
      () => venueExiting(0, steps),
      async () => {
        throw new Error('body');
      },
      {
        before: () => {
          throw new Error('before');
        },
        after: () => steps.push('after'),
      },
    ),
    /^Error: body \(the venue then stopped with exit code 0\)$/,
  );
  assert.deepEqual(steps, ['stop', 'after'], 'the stop and the step after it ran although the step before failed');
  await assert.rejects(
    stopAfter(
      () => venueExiting(0, []),
      async () => undefined,
      {
        after: () => {
          throw new Error('after');
        },
      },
    ),
    /^Error: after$/,
  );
});
