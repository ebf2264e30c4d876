import assert from 'node:assert/strict';
import { test } from 'node:test';
import { MessageChannel } from 'node:worker_threads';
import { QueueMarks } from '../../core/queue-marks.ts';
import { PortClient, PortFullError } from '../../gateway/storage-client.ts';

interface Ask {
  id: number;
  n: number;
}

/** Resolves once `arrived` holds `count` items (messages arrive on their own loop turn; a busy machine delays them). */
async function until(arrived: unknown[], count: number): Promise<void> {
  for (let waited = 0; arrived.length < count; waited += 5) {
    if (waited > 10_000) throw new Error(`${arrived.length} of ${count} messages arrived in 10 s`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

test('a port client lets at most maxWaiting requests wait, refuses the next at once, and reports its depth as a high-water mark', async () => {
  const { port1, port2 } = new MessageChannel();
  const marks = new QueueMarks(QueueMarks.create(1));
  const client = new PortClient<Ask, Ask>(port1, 5_000, 3, (depth) => marks.note(0, depth));
  try {
    const asked: Ask[] = [];
    port2.on('message', (request: Ask) => asked.push(request));
    const answers = [1, 2, 3].map((n) => client.request({ n }));
    await assert.rejects(client.request({ n: 4 }), PortFullError);
    assert.equal(marks.now(0), 3);
    // A marker sent on the client's port after the refusal: a port delivers in order, so once it
    // is there, a refused request that had been sent would be there before it.
    port1.postMessage({ id: -1, n: -1 });
    await until(asked, 4);
    assert.deepEqual(
      asked.map((request) => request.n),
      [1, 2, 3, -1],
      'the refused request never reached the other side',
    );
    for (const request of asked.slice(0, 3)) port2.postMessage({ id: request.id, n: request.n * 10 });
    assert.deepEqual(
      (await Promise.all(answers)).map((answer) => answer.n),
      [10, 20, 30],
    );
    assert.equal(marks.now(0), 0);
    assert.equal(marks.highWater(0), 3);
    const again = client.request({ n: 5 }); // room again
    await until(asked, 5);
    port2.postMessage({ id: asked[4]!.id, n: 50 });
    assert.equal((await again).n, 50);
  } finally {
    // Closed whatever happened above: an open port keeps this file's process, and so the whole run, alive.
    client.close();
    port2.close();
  }
});

test('a request the other side never answers is rejected after the timeout and leaves the queue', async () => {
  const { port1, port2 } = new MessageChannel();
  const marks = new QueueMarks(QueueMarks.create(1));
  const client = new PortClient<Ask, Ask>(port1, 50, 2, (depth) => marks.note(0, depth));
  try {
    await assert.rejects(client.request({ n: 1 }), /did not answer in time/);
    assert.equal(marks.now(0), 0);
    assert.equal(marks.highWater(0), 1);
  } finally {
    client.close();
    port2.close();
  }
});
