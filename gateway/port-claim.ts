// The venue's HTTP port, claimed before anything else starts and held until a gateway
// is about to listen on it.
//
// uWebSockets.js listens with SO_REUSEPORT, so a second venue on a busy port would
// silently share it with the first: a plain exclusive bind first refuses that. PORT=0
// takes the free port this bind gets (uWS does not share a port it picked itself).
//
// The bind is held (unref'ed: it never keeps the process up) until release(), which the
// start calls when the first gateway thread says it is about to listen (its `bind`
// message; the port is then free for 1-2 ms). Released before the gateway threads started,
// it was free for about half a second, and one test venue lost it. Closing it at once left the port
// free while the embedded PostgreSQL picked a free port of its own, and the kernel may
// hand out the port just released: in one crash-loop run PostgreSQL took the venue's
// port and the gateways could not listen ("gateway 0 cannot listen").

import { createServer } from 'node:net';

export interface PortClaim {
  port: number;
  /** Frees the port for the gateways; idempotent. */
  release(): Promise<void>;
}

export function claimPort(host: string, port: number): Promise<PortClaim> {
  return new Promise((resolve, reject) => {
    // A client that connects while the port is held (a probe of /readyz during the start) is
    // cut off at once, as a refused connection would be: kept open, it would also hold up
    // close(), whose callback waits for every connection to end, and with it the start.
    const probe = createServer((socket) => socket.destroy());
    probe.once('error', (error: NodeJS.ErrnoException) => reject(new Error(error.code === 'EADDRINUSE' ? `${host}:${port} is already in use (another venue?)` : error.message)));
    probe.listen({ host, port, exclusive: true }, () => {
      probe.unref();
      let released: Promise<void> | null = null;
      resolve({
        port: (probe.address() as { port: number }).port,
        release: () => (released ??= new Promise<void>((done) => probe.close(() => done()))),
      });
    });
  });
}
