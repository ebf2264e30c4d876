// The HTTP ceiling: a bare uWebSockets.js server with `--threads` threads on one port
// answering every POST with a canned envelope of `--bytes` bytes. Run as a child
// process by the suite (so it competes for the cores like the venue does); prints
// "bare server listening on http://127.0.0.1:<port>".

import net from 'node:net';
import { buildWorkers } from '../../runtime/worker-build.ts';
import { spawnWorker } from '../../runtime/worker-spawn.ts';

const arg = (name: string, fallback: number) => {
  const at = process.argv.indexOf(`--${name}`);
  return at < 0 ? fallback : Number(process.argv[at + 1]);
};
const threads = arg('threads', 2);
const bytes = arg('bytes', 600);
const port = await new Promise<number>((resolve) => {
  const probe = net.createServer().listen(0, '127.0.0.1', () => {
    const { port } = probe.address() as net.AddressInfo;
    probe.close(() => resolve(port));
  });
});
// Built once (runtime/worker-build.ts), as the venue and the load generator do theirs: no tsx loader per thread.
const source = new URL('./bare-worker.ts', import.meta.url);
const entry = (await buildWorkers([source])).get(source.href)!;
const workers = Array.from({ length: threads }, () => spawnWorker(entry, { port, bytes }));
await Promise.all(workers.map((worker) => new Promise<void>((resolve, reject) => worker.once('message', (m: { ready: boolean }) => (m.ready ? resolve() : reject(new Error('cannot listen')))))));
console.log(`bare server listening on http://127.0.0.1:${port}`);
process.on('SIGTERM', () => {
  for (const worker of workers) worker.postMessage('stop');
});
