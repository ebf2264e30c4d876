import assert from 'node:assert/strict';
import { test } from 'node:test';
import { allocationOf, summarize, threadKind } from '../../bench/allocation-bench.ts';

type Node = Parameters<typeof threadKind>[0];
const node = (fn: string, url: string, selfSize: number, children: Node[] = []): Node => ({ callFrame: { functionName: fn, url, lineNumber: 9 }, selfSize, children });

const gateway = (handle: number, parse: number) =>
  node('(root)', '', 0, [node('handle', 'file:///x/.build/workers-1/gateway-thread.mjs', handle, [node('parse', '', parse)]), node('', 'node:internal/timers', 8)]);

test('a profile is counted per command, by function, and told apart by the bundle it runs', () => {
  const one = allocationOf(gateway(3000, 1000), 10);
  assert.equal(one.bytesPerCommand, 400.8);
  assert.equal(one.byFunction.get('handle gateway-thread.mjs:10'), 300);
  assert.equal(one.byFunction.get('parse :10'), 100);
  assert.equal(one.byFunction.get('(anonymous) timers:10'), 0.8);
  assert.equal(threadKind(gateway(1, 1)), 'gateway');
  assert.equal(threadKind(node('(root)', '', 0, [node('main', 'file:///x/.build/workers-2/server.mjs', 5)])), 'main');
  assert.equal(threadKind(node('(root)', '', 0, [node('ingest', 'file:///x/persistence-thread.mjs', 5)])), 'persistence');
});

test('the gateways add up, each having taken its share of the commands; kinds sort by bytes', () => {
  const persistence = node('(root)', '', 0, [node('ingest', 'file:///x/persistence-thread.mjs', 500)]);
  const summary = summarize([gateway(3000, 1000), gateway(1000, 0), persistence], 10);
  assert.deepEqual(
    summary.map((t) => [t.thread, t.bytesPerCommand]),
    [
      ['gateway', 502],
      ['persistence', 50],
    ],
  );
  assert.deepEqual(summary[0]!.top[0], { fn: 'handle gateway-thread.mjs:10', bytesPerCommand: 400 });
});
