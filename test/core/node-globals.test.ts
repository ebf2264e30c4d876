// runtime/node-globals.mjs: the venue's threads load pg without Node's fetch implementation.
// On Node 20, pg's load constructs a `Response` to ask whether it runs in a Cloudflare
// Worker unless `navigator` is defined, and that loads undici into the thread (about
// 0.1 s of CPU per thread that uses pg).

import assert from 'node:assert/strict';
import { once } from 'node:events';
import { test } from 'node:test';
import { spawnWorker } from '../../runtime/worker-spawn.ts';

test('a worker thread started through the bootstrap loads pg without loading undici, with navigator as Node 21 defines it', async () => {
  const worker = spawnWorker(new URL('./fixtures/loads-pg.worker.ts', import.meta.url), {}, {}, 'loads-pg');
  try {
    const [answer] = (await once(worker, 'message')) as [{ pgLoaded: boolean; navigator: string | null; undici: boolean }];
    assert.equal(answer.pgLoaded, true);
    assert.equal(answer.navigator, `Node.js/${process.versions.node.split('.')[0]}`);
    assert.equal(answer.undici, false, 'undici was loaded into the thread');
  } finally {
    await worker.terminate();
  }
});
