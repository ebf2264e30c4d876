// Fresh memory faulted in ahead of use (runtime/prefault.ts): every page mapped (the
// process's resident memory grows by the buffers' size), nothing anyone wrote changed,
// the work spread over turns of the event loop, and stop() ends it early. faultPages
// alone, over a store in use: test/gateway/command-store.test.ts.

import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { prefaultInTurns } from '../../runtime/prefault.ts';

const MIB = 1 << 20;

/** This process's resident anonymous memory (bytes), as Linux counts it. */
function rssAnon(): number {
  const found = /^RssAnon:\s+(\d+) kB$/m.exec(readFileSync('/proc/self/status', 'utf8'));
  assert.ok(found !== null, 'no RssAnon line in /proc/self/status');
  return Number(found[1]) * 1024;
}

test('prefaultInTurns faults in every buffer a slice per turn of the event loop, beside other work', async () => {
  // 35 MiB, of which at least 28 must become resident: the process's other memory moves
  // meanwhile (a collection in the suite freed 2.2 MiB of 15 once), a no-op adds none.
  const buffers = [new SharedArrayBuffer(32 * MIB), new SharedArrayBuffer(3 * MIB + 4096)];
  new Int32Array(buffers[1]!)[1024] = 42;
  let turns = 0;
  const ticker = setInterval(() => turns++, 0);
  const before = rssAnon();
  await prefaultInTurns(buffers, MIB).done;
  clearInterval(ticker);
  assert.ok(rssAnon() - before >= 28 * MIB, `resident memory grew by ${rssAnon() - before} bytes, 35 MiB expected`);
  assert.ok(turns >= 3, `other work ran ${turns} times while 36 slices were faulted in`);
  assert.equal(new Int32Array(buffers[1]!)[1024], 42);
});

test('prefaultInTurns stops after the current slice when told', async () => {
  const buffer = new SharedArrayBuffer(64 * MIB);
  const before = rssAnon();
  const work = prefaultInTurns([buffer], MIB);
  work.stop();
  await work.done;
  assert.ok(rssAnon() - before < 8 * MIB, `stopped at once, yet resident memory grew by ${rssAnon() - before} bytes`);
});
