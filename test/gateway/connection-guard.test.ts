// The connection guard's decisions (gateway/connection-guard.ts): the limit from
// MAX_CONNECTIONS and the file-descriptor limit, when the gateways stop and start
// accepting, and the count of open files it is fed. The venue end to end is in
// test/faults/connection-limit.test.ts.

import assert from 'node:assert/strict';
import { closeSync, openSync, readdirSync } from 'node:fs';
import { test } from 'node:test';
import { ConnectionGuard, connectionLimit, FILE_RESERVE, fileLimit, openFiles } from '../../gateway/connection-guard.ts';

test('the limit is MAX_CONNECTIONS or what the file-descriptor limit leaves after the reserve, whichever is lower', () => {
  assert.equal(connectionLimit({ maxConnections: 10_000, fileLimit: 20_000, baseline: 40 }), 10_000);
  assert.equal(connectionLimit({ maxConnections: 10_000, fileLimit: 1_024, baseline: 40 }), 1_024 - FILE_RESERVE - 40);
  assert.equal(connectionLimit({ maxConnections: 10_000, fileLimit: Infinity, baseline: 40 }), 10_000);
  assert.equal(connectionLimit({ maxConnections: 1, fileLimit: FILE_RESERVE + 41, baseline: 40 }), 1);
  assert.throws(() => connectionLimit({ maxConnections: 10_000, fileLimit: FILE_RESERVE + 40, baseline: 40 }), /ulimit -n 296\) leaves no room/);
});

test('the soft limit on open files is read from /proc/self/limits', () => {
  const text = (soft: string) =>
    `Limit                     Soft Limit           Hard Limit           Units\nMax processes             unlimited            unlimited            processes\nMax open files            ${soft}                20000                files\n`;
  assert.equal(fileLimit(text('1024')), 1024);
  assert.equal(fileLimit(text('unlimited')), Infinity);
  assert.throws(() => fileLimit('Max processes 10 10 processes\n'), /Max open files/);
  const own = fileLimit();
  assert.ok(Number.isInteger(own) && own > 0, `this process's limit: ${own}`);
});

test("openFiles counts this process's open files", () => {
  // Other threads of this process (the module loader's, libuv's pool) may open or close a
  // file while the test counts, so a round proves the count only if nothing else changed
  // during it (the count after closing equals the one before opening); a few rounds find one.
  const rounds: string[] = [];
  for (let round = 0; round < 20; round++) {
    const before = openFiles();
    const files = Array.from({ length: 100 }, () => openSync('/dev/null', 'r'));
    const during = openFiles();
    // Listing the folder opens one more file while it lists.
    const listed = readdirSync('/proc/self/fd').length - 1;
    for (const fd of files) closeSync(fd);
    const after = openFiles();
    rounds.push(`${before}/${during}/${listed}/${after}`);
    if (before === after && during === before + 100 && listed === during) return;
  }
  // Twenty rounds that all disagree: the count is wrong, not the timing.
  assert.fail(`no round counted the 100 files (before/during/listed/after): ${rounds.join(' ')}`);
});

test('the gateways stop accepting at the limit, once, and start again only below the resume mark', () => {
  const changes: Array<[boolean, number]> = [];
  const notes: number[] = [];
  const guard = new ConnectionGuard(
    { maxConnections: 100, fileLimit: 20_000, baseline: 30 },
    (accepting, connections) => changes.push([accepting, connections]),
    (connections) => notes.push(connections),
  );
  assert.equal(guard.limit, 100);
  assert.equal(guard.resumeAt, 95);
  const feed = (files: number[]) => files.forEach((count) => guard.update(count));

  feed([10, 30, 80, 129]); // below the baseline counts as none; 99 connections: still accepting
  assert.deepEqual(notes, [0, 0, 50, 99]);
  assert.deepEqual(changes, []);
  assert.equal(guard.isAccepting, true);

  feed([130, 180, 131]); // 100: the limit; more while refusing changes nothing
  assert.deepEqual(changes, [[false, 100]]);
  assert.equal(guard.isAccepting, false);

  feed([129, 126]); // 99, 96: below the limit but above the resume mark
  assert.deepEqual(changes, [[false, 100]]);

  feed([125, 124]); // 95: accepting again, once
  assert.deepEqual(changes, [
    [false, 100],
    [true, 95],
  ]);
  assert.equal(guard.isAccepting, true);

  feed([130]);
  assert.deepEqual(changes, [
    [false, 100],
    [true, 95],
    [false, 100],
  ]);
  assert.deepEqual(notes.slice(-3), [95, 94, 100]);
});

test('a limit of one connection still has a resume mark below it', () => {
  const changes: boolean[] = [];
  const guard = new ConnectionGuard(
    { maxConnections: 1, fileLimit: 20_000, baseline: 0 },
    (accepting) => changes.push(accepting),
    () => undefined,
  );
  assert.equal(guard.resumeAt, 0);
  guard.update(1);
  guard.update(1);
  guard.update(0);
  assert.deepEqual(changes, [false, true]);
});
