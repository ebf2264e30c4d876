// gateway/port-claim.ts: the venue's port stays bound from the claim until release(), so
// that nothing the start launches meanwhile (the embedded PostgreSQL picks a free port of
// its own) can be handed the same port; a busy port is refused; release frees it.

import assert from 'node:assert/strict';
import { createServer } from 'node:net';
import { test } from 'node:test';
import { claimPort } from '../../gateway/port-claim.ts';

function listen(port: number): Promise<{ port: number; close: () => Promise<void> } | NodeJS.ErrnoException> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', (error: NodeJS.ErrnoException) => resolve(error));
    server.listen({ host: '127.0.0.1', port, exclusive: true }, () =>
      resolve({ port: (server.address() as { port: number }).port, close: () => new Promise((done) => server.close(() => done())) }),
    );
  });
}

test('a claimed port stays bound until released, a busy one is refused, and release frees it', async () => {
  const claim = await claimPort('127.0.0.1', 0);
  assert.ok(claim.port > 0);

  // While held, nobody else can bind it.
  const during = await listen(claim.port);
  assert.ok(!('close' in during), `the port was free while claimed (${claim.port})`);
  assert.equal((during as NodeJS.ErrnoException).code, 'EADDRINUSE');
  // Nor can a second venue claim it.
  await assert.rejects(claimPort('127.0.0.1', claim.port), /already in use/);
  // A free port asked of the kernel meanwhile, as the embedded PostgreSQL asks for one, is never this one.
  const others = await Promise.all(Array.from({ length: 50 }, () => listen(0)));
  for (const other of others) {
    assert.ok('close' in other);
    assert.notEqual(other.port, claim.port);
  }
  await Promise.all(others.map((other) => ('close' in other ? other.close() : undefined)));

  await claim.release();
  await claim.release(); // idempotent
  const after = await listen(claim.port);
  assert.ok('close' in after, `the port stayed busy after release: ${(after as Error).message}`);
  await after.close();
});
