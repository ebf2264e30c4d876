// The real venue runs settlement's work on its settlement pool: SETTLEMENT_THREADS threads
// named "settlement" beside the read thread, a read answered from there, and a graceful
// stop that ends them with the rest (exit 0).

import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { test } from 'node:test';
import { TOKENS, VenueProcess } from '../support/venue-process.ts';

/** The names of the venue process's threads (Linux: /proc/<pid>/task/<tid>/comm). */
function threadNames(pid: number): string[] {
  return readdirSync(`/proc/${pid}/task`).map((tid) => {
    try {
      return readFileSync(`/proc/${pid}/task/${tid}/comm`, 'utf8').trim();
    } catch {
      return ''; // a thread that ended while listed
    }
  });
}

test('SETTLEMENT_THREADS settlement threads answer the settlement reads, and a graceful stop ends them', async () => {
  const venue = await VenueProcess.start({ SETTLEMENT_THREADS: '2' });
  try {
    const answer = await venue.get('/api/v1/settlement/proof/pool-e2e-run', TOKENS.operator);
    assert.equal(answer.status, 200, answer.text);
    assert.equal(answer.json.scenarioRunId, 'pool-e2e-run');
    assert.equal(answer.json.status, 'CLEAN');
    const names = threadNames(venue.child.pid!);
    assert.equal(names.filter((name) => name === 'settlement').length, 2, names.join(' '));
    assert.equal(names.filter((name) => name === 'read').length, 1, names.join(' '));
  } finally {
    assert.equal(await venue.stop(), 0, 'the venue stopped cleanly');
  }
});
