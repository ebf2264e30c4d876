// The load generator (bench/load/load-generator.ts) against a plain HTTP server on
// 127.0.0.1: a run can be stopped early (the crash benchmark kills the venue with its
// load still running, then stops the load), and it reports the window it ran.

import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { test } from 'node:test';
import { runLoad } from '../../bench/load/load-generator.ts';

test('an aborted run stops at once, its window ends there, and every answer is counted', { timeout: 30_000 }, async () => {
  let answered = 0;
  const server = createServer((request, response) => {
    request.resume();
    request.on('end', () => {
      answered++;
      response.writeHead(200, { 'content-type': 'application/json', 'content-length': '2' }).end('{}'); // the generator frames answers by Content-Length
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  try {
    const stop = new AbortController();
    const run = runLoad({
      baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, mode: null, threads: 1, connections: 4, warmupMs: 0, durationMs: 600_000,
      ratePerSecond: 0, seed: 1, record: false, parseAnswers: false, quiet: true, label: 'stopped early', signal: stop.signal,
    });
    await new Promise((resolve) => setTimeout(resolve, 500));
    stop.abort();
    const result = await run;
    assert.ok(result.seconds < 60, `the window is the run's, not the 600 s asked (${result.seconds} s)`);
    const ok = result.statuses['200'] ?? 0;
    assert.ok(ok > 0 && ok <= answered - 1, `${ok} answers counted of ${answered} served (one was the session lookup)`);
  } finally {
    await new Promise((resolve) => server.close(resolve));
  }
});
