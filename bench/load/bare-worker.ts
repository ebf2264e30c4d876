// One thread of the bare ceiling server: uWebSockets.js on the shared port, reading each
// POST body whole (as the venue does) and answering a canned JSON envelope of the
// venue's answer size. No validation, no rings, no storage: the HTTP ceiling.

import { parentPort, workerData } from 'node:worker_threads';
import uWS from 'uWebSockets.js';

const { port, bytes } = workerData as { port: number; bytes: number };
const prefix = '{"outcome":{"accepted":{}},"executions":[],"trades":[],"pad":"';
const canned = `${prefix}${'x'.repeat(Math.max(0, bytes - prefix.length - 2))}"}`;
const session = JSON.stringify({ runId: 'run-local', venueSessionId: 'session-1', startedAt: new Date().toISOString() });

const app = uWS.App();
let listening: uWS.us_listen_socket | null = null;
// Closing the listen socket lets the thread end by itself (no open handles at exit).
parentPort!.on('message', () => {
  if (listening !== null) uWS.us_listen_socket_close(listening);
  parentPort!.close();
});
app
  .post('/*', (res) => {
    let aborted = false;
    res.onAborted(() => (aborted = true));
    res.onData((_chunk, isLast) => {
      if (!isLast || aborted) return;
      res.cork(() => res.writeStatus('200 OK').writeHeader('Content-Type', 'application/json').end(canned));
    });
  })
  .get('/api/v1/venue/session', (res) => void res.writeHeader('Content-Type', 'application/json').end(session))
  .listen('127.0.0.1', port, (socket) => {
    listening = socket === false ? null : socket;
    parentPort!.postMessage({ ready: socket !== false });
  });
