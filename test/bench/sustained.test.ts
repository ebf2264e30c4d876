// The sustained benchmark's windows (bench/sustained-bench.ts sustainedWindows): each
// window's answers from the slots within it, and its projection lag, WAL, checkpoints and
// the projection backend's run and run-queue time from what changed between its two edges.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { sustainedWindows, type EdgeSample } from '../../bench/sustained-bench.ts';

const edge = (lagBuckets: [number, number][], walBytes: number, fullPageImages: number, checkpoints: number, projector: EdgeSample['projector'] = null): EdgeSample => ({
  lagBuckets,
  walBytes,
  fullPageImages,
  checkpoints,
  projector,
});

test('a sustained run in windows: answers from the slots of each window, lag, WAL and checkpoints from what changed between its edges', () => {
  // 100 ms slots, 1 s windows: 10 slots each. Window 0 answers 100 a slot, window 1 50 a slot;
  // slots past the last window (the run's tail) are left out.
  const slots = [...new Array(10).fill(100), ...new Array(10).fill(50), 999];
  const edges = [
    edge([[1000, 5]], 0, 0, 0, { pid: 77, runNs: 1_000_000_000, waitNs: 500_000_000 }),
    // Window 0: 95 lags of 2 ms and 5 of 300 ms recorded (100 in all); 1,000 commands, 2,048,000 bytes of WAL, 100 full-page images;
    // the projection backend ran 450 ms and waited 320 ms for a core in that second.
    edge(
      [
        [1000, 5],
        [2000, 95],
        [300000, 5],
      ],
      2_048_000,
      100,
      1,
      { pid: 77, runNs: 1_450_000_000, waitNs: 820_000_000 },
    ),
    // Window 1: 500 commands; lags 1 ms (49) and 4 ms (1); 512,000 bytes, no images, no checkpoint; the projection
    // backend is another process at its end (it reconnected): no figure.
    edge(
      [
        [1000, 54],
        [2000, 95],
        [4000, 1],
        [300000, 5],
      ],
      2_560_000,
      100,
      1,
      { pid: 78, runNs: 1_000_000, waitNs: 1_000_000 },
    ),
  ];
  const windows = sustainedWindows(slots, 100, 1000, edges, [{ 'VACUUM runtime.command_log': 2 }, {}]);
  assert.equal(windows.length, 2);
  assert.deepEqual(windows[0], {
    endsAtSecond: 1,
    okPerSecond: 1000,
    projectionLagUs: { count: 100, p50: 2000, p99: 300000 },
    walKBPerCommand: 2,
    fullPageImagesPerCommand: 0.1,
    checkpoints: 1,
    autovacuum: { 'VACUUM runtime.command_log': 2 },
    projectorMsPerSecond: { run: 450, waitedForCore: 320 },
  });
  assert.deepEqual(windows[1], {
    endsAtSecond: 2,
    okPerSecond: 500,
    projectionLagUs: { count: 50, p50: 1000, p99: 4000 },
    walKBPerCommand: 1,
    fullPageImagesPerCommand: 0,
    checkpoints: 0,
    autovacuum: {},
    projectorMsPerSecond: null,
  });
  // A window with no answers has no per-command figures.
  const idle = sustainedWindows([0, 0], 100, 200, [edge([], 0, 0, 0), edge([], 10, 0, 0)], [{}]);
  assert.equal(idle[0]!.okPerSecond, 0);
  assert.equal(idle[0]!.walKBPerCommand, null);
  assert.equal(idle[0]!.projectorMsPerSecond, null, 'no projection backend read at the edges');
  // Refused: windows of part slots, edges that do not bound the windows, readings swapped.
  assert.throws(() => sustainedWindows(slots, 100, 150, edges, [{}, {}]), /whole slots/);
  assert.throws(() => sustainedWindows(slots, 100, 1000, edges, [{}]), /edges/);
  assert.throws(() => sustainedWindows(slots, 100, 1000, [edges[1]!, edges[0]!], [{}]), /not a later reading/);
});
