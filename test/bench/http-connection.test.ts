// The load generator's HTTP client against a raw TCP server on 127.0.0.1 that answers
// with exactly the bytes each case needs: answers split across reads, keep-alive reuse,
// Connection: close, and each bound and malformed answer failing the request (then the
// next request opens a fresh connection).

import assert from 'node:assert/strict';
import net from 'node:net';
import { after, before, test } from 'node:test';
import { HttpConnection } from '../../bench/load/http-connection.ts';

/** What the server writes for a request, chosen by its path; null: close without answering; []: never answer. */
type Script = (path: string) => Array<string | Buffer> | null;

let server: net.Server;
let port: number;
let script: Script = () => null;
const accepted: net.Socket[] = [];
let connectionsOpened = 0;
/** When set: a request arriving on a connection idle this long is cut off unanswered (the server was closing it). */
let staleAfterMs: number | null = null;

before(async () => {
  server = net.createServer((socket) => {
    connectionsOpened++;
    accepted.push(socket);
    let buffered = '';
    let lastActive = performance.now();
    socket.on('data', (chunk) => {
      if (staleAfterMs !== null && performance.now() - lastActive > staleAfterMs) {
        socket.destroy();
        return;
      }
      lastActive = performance.now();
      buffered += chunk.toString('latin1');
      for (;;) {
        const end = buffered.indexOf('\r\n\r\n');
        if (end < 0) return;
        const head = buffered.slice(0, end);
        const length = Number(/\r\ncontent-length: (\d+)/i.exec(head)?.[1] ?? 0);
        if (buffered.length < end + 4 + length) return;
        buffered = buffered.slice(end + 4 + length);
        const path = head.split(' ')[1]!;
        const parts = script(path);
        if (parts === null) {
          socket.destroy();
          return;
        }
        // Each part in its own write, a little apart, so that the client sees split reads.
        void (async () => {
          for (const part of parts) {
            socket.write(part);
            await new Promise((resolve) => setTimeout(resolve, 5));
          }
        })();
      }
    });
    socket.on('error', () => {});
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  port = (server.address() as net.AddressInfo).port;
});

after(async () => {
  for (const socket of accepted) socket.destroy();
  await new Promise((resolve) => server.close(resolve));
});

const ok = (body: string, extra = '') => `HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n${extra}Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;

test('answers are framed by Content-Length, also when split across reads, and one connection carries many requests', async () => {
  const body = JSON.stringify({ answer: 'é'.repeat(3000) }); // multi-byte: length in bytes, body decoded as UTF-8
  script = (path) => {
    const whole = ok(path === '/split' ? body : '{"n":1}');
    return path === '/split' ? [whole.slice(0, 7), whole.slice(7, 60), whole.slice(60, 3000), whole.slice(3000)].map((s) => Buffer.from(s, 'utf8')) : [whole];
  };
  const before = connectionsOpened;
  const connection = new HttpConnection('127.0.0.1', port);
  for (let k = 0; k < 20; k++) {
    const answer = await connection.request('POST', k % 2 === 0 ? '/split' : '/small', 'X-Test: 1\r\n', '{"k":1}');
    assert.equal(answer.status, 200);
    assert.equal(answer.body, k % 2 === 0 ? body : '{"n":1}');
  }
  assert.equal(connectionsOpened - before, 1, 'keep-alive: one connection for all twenty requests');
  connection.close();
});

test('a second request while one is in flight is refused', async () => {
  script = () => [ok('{}')];
  const connection = new HttpConnection('127.0.0.1', port);
  const first = connection.request('GET', '/a', '', null);
  await assert.rejects(connection.request('GET', '/b', '', null), /already in flight/);
  assert.equal((await first).status, 200);
  connection.close();
});

test('Connection: close ends the connection after the answer; the next request opens a new one', async () => {
  script = (path) => [ok('{}', path === '/close' ? 'Connection: close\r\n' : '')];
  const connection = new HttpConnection('127.0.0.1', port);
  const before = connectionsOpened;
  assert.equal((await connection.request('GET', '/close', '', null)).status, 200);
  assert.equal((await connection.request('GET', '/open', '', null)).status, 200);
  assert.equal(connectionsOpened - before, 2);
  connection.close();
});

test('malformed or unbounded answers fail the request, and the connection recovers for the next one', async () => {
  const cases: Array<[string, Array<string | Buffer>, RegExp]> = [
    ['/no-length', ['HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n'], /without Content-Length/],
    ['/bad-status', ['HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\n{}'], /malformed status line/],
    ['/huge-head', [`HTTP/1.1 200 OK\r\nX-Pad: ${'a'.repeat(17 * 1024)}`], /header block too large/],
    ['/huge-body', ['HTTP/1.1 200 OK\r\nContent-Length: 9999999999\r\n\r\n'], /Content-Length out of bounds/],
    ['/extra', [`${ok('{}')}HTTP/1.1 200 OK\r\n`], /bytes after the answer/],
    ['/closed', [], /closed by the server/],
  ];
  const connection = new HttpConnection('127.0.0.1', port);
  for (const [path, parts, error] of cases) {
    script = (p) => (p === '/closed' ? null : p === path ? parts : [ok('{"fine":true}')]);
    await assert.rejects(connection.request('GET', path, '', null), error, path);
    const next = await connection.request('GET', '/fine', '', null);
    assert.deepEqual([next.status, next.body], [200, '{"fine":true}'], `after ${path}`);
  }
  connection.close();
});

test('an answer that does not come within the timeout fails the request, and the next request gets a fresh connection', { timeout: 10_000 }, async () => {
  script = (path) => (path === '/silent' ? [] : [ok('{"late":false}')]);
  const connection = new HttpConnection('127.0.0.1', port, 300);
  const before = connectionsOpened;
  const started = Date.now();
  await assert.rejects(connection.request('GET', '/silent', '', null), /no answer within 300 ms/);
  const waited = Date.now() - started;
  assert.ok(waited >= 300 && waited < 3_000, `failed after ${waited} ms`);
  const next = await connection.request('GET', '/fine', '', null);
  assert.deepEqual([next.status, next.body], [200, '{"late":false}']);
  assert.equal(connectionsOpened - before, 2, 'the silent connection was dropped');
  connection.close();
});

test('a connection idle longer than its reuse bound is replaced before the request, so a server closing idle connections fails none', { timeout: 10_000 }, async () => {
  script = () => [ok('{"idle":"ok"}')];
  staleAfterMs = 250;
  try {
    const connection = new HttpConnection('127.0.0.1', port, 60_000, 150);
    const before = connectionsOpened;
    for (let k = 0; k < 3; k++) {
      const answer = await connection.request('GET', '/after-idle', '', null);
      assert.deepEqual([answer.status, answer.body], [200, '{"idle":"ok"}']);
      await new Promise((resolve) => setTimeout(resolve, 300));
    }
    assert.equal(connectionsOpened - before, 3, 'each request after 300 ms idle went on a fresh connection');
    // Within the bound the connection is kept: the first of these opens one (after the last idle spell), the rest reuse it.
    for (let k = 0; k < 5; k++) assert.equal((await connection.request('GET', '/busy', '', null)).status, 200);
    assert.equal(connectionsOpened - before, 4, 'busy requests reuse the connection');
    connection.close();

    // Without the bound the same pattern loses requests: the check above is what saves them.
    const unbounded = new HttpConnection('127.0.0.1', port, 60_000, Number.POSITIVE_INFINITY);
    assert.equal((await unbounded.request('GET', '/first', '', null)).status, 200);
    await new Promise((resolve) => setTimeout(resolve, 300));
    await assert.rejects(unbounded.request('GET', '/stale', '', null), /closed by the server/);
    unbounded.close();
  } finally {
    staleAfterMs = null;
  }
});
