// gateway/port-claim.ts: the venue's port stays bound from the claim until release(), so
// that nothing the start launches meanwhile (the embedded PostgreSQL picks a free port of
// its own) can be handed the same port; a busy port is refused; release frees it.

import assert from 'node:assert/strict';
import { connect, createServer } from 'node:net';
import { test } from 'node:test';
import { claimPort } from '../../gateway/port-claim.ts';

function listen(port: number): Promise<{ port: number; close: () => Promise<void> } | NodeJS.ErrnoException> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', (error: NodeJS.ErrnoException) => resolve(error));
    server.listen({ host: '127.0.0.1', port, exclusive: true }, () => resolve({ port: (server.address() as { port: number }).port, close: () => new Promise((done) => server.close(() => done())) }));
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
  const servers = others.map((other) => {
    assert.ok('close' in other);
    return other;
  });
  for (const server of servers) assert.notEqual(server.port, claim.port);
  await Promise.all(servers.map((server) => server.close()));

  // A client that connects meanwhile (a /readyz probe during the start) is cut off, and does not hold up the release.
  const client = connect({ host: '127.0.0.1', port: claim.port });
  const ended = await new Promise<string>((resolve) => {
    client.once('close', () => resolve('closed'));
    client.once('error', (error: NodeJS.ErrnoException) => resolve(error.code ?? 'error'));
    client.setTimeout(5_000, () => resolve('still open after 5 s'));
  });
  assert.notEqual(ended, 'still open after 5 s');
  const parked = connect({ host: '127.0.0.1', port: claim.port }); // left as it is: release must not wait for it
  parked.on('error', () => undefined);

  await claim.release();
  await claim.release(); // idempotent
  parked.destroy();
  const after = await listen(claim.port);
  assert.ok('close' in after, `the port stayed busy after release: ${(after as Error).message}`);
  await after.close();
});
