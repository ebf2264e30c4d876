// Slow and abusive clients (issue 8): every way a client can hold the venue's
// resources without finishing its part is bounded, and the other clients are served
// meanwhile.
//  - A body that stops arriving (Content-Length larger than what is sent, a chunked
//    body without its last chunk, a body trickled a byte at a time): 408
//    REQUEST_TIMEOUT with the contract's body after BODY_TIMEOUT_MS (5 s, swept every
//    0.5 s), and the connection closed. 200 of them at once do not delay valid orders.
//  - Connections that send nothing, or a request line and headers that never end, or
//    that stay idle after an answer: closed by uWebSockets.js's idle timeout (10 s,
//    checked every 4 s: 8 to 12 s) without an answer. Thousands of them at once (3,000,
//    fewer if this machine's file-descriptor limit is low) do not stop the venue from
//    accepting and answering others.
//  - Clients that pipeline requests and never read the answers: disconnected once their
//    socket cannot take more (gateway/http-server.ts endAnswer), instead of having the
//    venue buffer answers for them without bound (it grew by 5 GB in 6 s and /healthz
//    took 21 s before); the venue's memory stays flat and /healthz answers.
//  - endAnswer itself: an answer larger than the socket can hold reaches a client that
//    reads it late whole (the onWritable path), run on a bare uWS app in this process.

import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import net from 'node:net';
import { after, before, test } from 'node:test';
import uWS from 'uWebSockets.js';
import { BODY_TIMEOUT_MS, endAnswer } from '../../gateway/http-server.ts';
import { parseAnswers, rawExchange, rawRequest, type RawResult } from '../support/raw-http.ts';
import { cancelBody, submitBody, TOKENS, VenueProcess } from '../support/venue-process.ts';

const AUTH_TRADER = `Bearer ${TOKENS.traderA}`;
const AUTH_OPERATOR = `Bearer ${TOKENS.operator}`;
/** uWS closes an idle HTTP connection 10 s after its last activity, on a 4 s tick: 8 to 12 s; a little slack for a busy machine. */
const IDLE_MIN_MS = 7_000;
const IDLE_MAX_MS = 16_000;

let venue: VenueProcess;
let port: number;

before(async () => {
  venue = await VenueProcess.start();
  port = Number(new URL(venue.baseUrl).port);
  for (let k = 0; (await venue.get('/readyz')).status !== 200; k++) {
    assert.ok(k < 600, 'the venue never became ready');
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
});

after(async () => {
  assert.equal(await venue.stop(), 0);
});

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** `count` resting BUYs and their cancels (sync-result, fetch's own connections), and /healthz: every answer exact. */
async function validLoad(count: number, instrumentId: string): Promise<string[]> {
  const problems: string[] = [];
  for (let k = 0; k < count; k++) {
    const body = submitBody({ instrumentId, side: 'BUY', price: String(10 + (k % 20)), quantity: '3' });
    const submit = await venue.order('/api/v1/orders/submit', body);
    if (submit.status !== 200 || submit.json?.outcome?.accepted?.orderId !== body.orderId || submit.json.executions.length !== 0)
      problems.push(`submit: ${submit.status} ${submit.text.slice(0, 200)}`);
    const cancel = await venue.order('/api/v1/orders/cancel', cancelBody({ orderId: body.orderId as string, instrumentId }));
    if (cancel.status !== 200 || cancel.json?.outcome?.accepted?.orderId !== body.orderId) problems.push(`cancel: ${cancel.status} ${cancel.text.slice(0, 200)}`);
    const health = await venue.get('/healthz');
    if (health.status !== 200) problems.push(`healthz: ${health.status}`);
  }
  return problems;
}

function errorBodyOf(result: RawResult): { status: number; code: string } | null {
  const answer = result.answers[0];
  if (answer === undefined) return null;
  const json = JSON.parse(answer.body) as { error: unknown; code: string };
  assert.equal(typeof json.error, 'string');
  return { status: answer.status, code: json.code };
}

test('200 connections whose body stops arriving get 408 after BODY_TIMEOUT_MS and are closed; valid orders are served meanwhile', async () => {
  const submit = JSON.stringify(submitBody({ instrumentId: 'ab000000-0000-4000-8000-000000000001' }));
  const facts = JSON.stringify({ scenarioRunId: 'run-local', facts: [{ factId: crypto.randomUUID(), factType: 'SettlementX', occurredAt: '2026-01-01T00:00:00Z', payload: {} }] });
  const orderHeaders = (key: string): Array<[string, string]> => [
    ['Host', 'x'],
    ['Authorization', AUTH_TRADER],
    ['X-Client-Id', 'stall'],
    ['Idempotency-Key', key],
  ];
  const stalls: Array<{ what: string; promise: Promise<RawResult> }> = [];
  const stallsStartedAt = Date.now();
  for (let k = 0; k < 200; k++) {
    const kind = k % 4;
    let parts;
    if (kind === 0) {
      // Headers and part of the body, then nothing.
      parts = [{ data: rawRequest('POST', '/api/v1/orders/submit', [...orderHeaders(`s-${k}`), ['Content-Length', String(submit.length)]], submit.slice(0, 100)) }];
    } else if (kind === 1) {
      parts = [
        {
          data: rawRequest(
            'POST',
            '/admin/v1/settlement/facts',
            [
              ['Host', 'x'],
              ['Authorization', AUTH_OPERATOR],
              ['Content-Length', String(facts.length + 50)],
            ],
            facts,
          ),
        },
      ];
    } else if (kind === 2) {
      // A chunked body without its last chunk.
      parts = [{ data: rawRequest('POST', '/api/v1/orders/submit', [...orderHeaders(`s-${k}`), ['Transfer-Encoding', 'chunked']], `10\r\n${submit.slice(0, 16)}\r\n`) }];
    } else {
      // Trickled, a byte every 300 ms: still late.
      parts = [
        { data: rawRequest('POST', '/api/v1/orders/submit', [...orderHeaders(`s-${k}`), ['Content-Length', String(submit.length)]]) },
        ...Array.from({ length: 30 }, (_, i) => ({ data: submit[i]!, delayMs: 300 })),
      ];
    }
    // Wait for the close that follows the answer (an answer count that never comes).
    stalls.push({ what: ['partial body', 'partial operator body', 'unfinished chunked body', 'trickled body'][kind]!, promise: rawExchange(port, parts, { expectAnswers: 2, timeoutMs: 15_000 }) });
  }
  await sleep(200); // all of them in
  const loadStarted = Date.now();
  const problems = await validLoad(40, 'ab000000-0000-4000-8000-000000000002');
  const loadDoneAt = Date.now();
  assert.deepEqual(problems, []);
  const results = await Promise.all(stalls.map((stall) => stall.promise));
  const firstAnswerAt = stallsStartedAt + Math.min(...results.map((result) => result.elapsedMs));
  assert.ok(loadDoneAt < firstAnswerAt, `the valid load (done ${loadDoneAt - loadStarted} ms after it started) waited for the stalled connections`);
  for (const [k, result] of results.entries()) {
    const what = `${stalls[k]!.what} #${k}`;
    assert.deepEqual(errorBodyOf(result), { status: 408, code: 'REQUEST_TIMEOUT' }, what);
    assert.equal(result.answers.length, 1, what);
    assert.ok(result.closedByServer, `${what}: the connection stayed open after the 408`);
    // BODY_TIMEOUT_MS after the headers, swept every 0.5 s (the trickled ones started up to 0.3 s later).
    assert.ok(result.elapsedMs >= BODY_TIMEOUT_MS - 100 && result.elapsedMs <= BODY_TIMEOUT_MS + 2_500, `${what}: 408 after ${result.elapsedMs} ms`);
  }
});

/** The soft limit on open files of this process (and of the venue, which inherits the same). */
function fileLimit(): number {
  const text = execFileSync('/bin/sh', ['-c', 'ulimit -n'], { encoding: 'utf8' }).trim();
  return text === 'unlimited' ? Number.MAX_SAFE_INTEGER : Number(text);
}

interface Watched {
  socket: net.Socket;
  openedAt: number;
  /** When the venue closed it (end or reset), and what it sent before. */
  closedAt: number | null;
  received: number;
}

function watch(socket: net.Socket, openedAt: number): Watched {
  const watched: Watched = { socket, openedAt, closedAt: null, received: 0 };
  socket.on('data', (chunk: Buffer) => (watched.received += chunk.length));
  socket.on('error', () => undefined);
  socket.on('close', () => (watched.closedAt ??= Date.now()));
  return watched;
}

function connect(): Promise<net.Socket> {
  return new Promise((resolve, reject) => {
    const socket = net.connect({ host: '127.0.0.1', port, noDelay: true });
    socket.once('connect', () => resolve(socket));
    socket.once('error', reject);
  });
}

test('a body that arrives in pieces, split inside multi-byte characters, is read whole', async () => {
  // Every chunk but the last is copied (uWS reuses its memory), the last is decoded in place:
  // the pieces must decode as the same text as the body sent at once, which its replay proves
  // (same Idempotency-Key: a different text would hash to another payload, a 409).
  const body = submitBody({ instrumentId: 'ab000000-0000-4000-8000-000000000003', side: 'BUY', price: '12', quantity: '2' });
  body.actorId = 'désk ☃ 😀 ünïcode';
  const bytes = Buffer.from(JSON.stringify(body), 'utf8');
  const cuts = [bytes.indexOf('☃') + 1, bytes.indexOf('😀') + 2, bytes.indexOf('ü') + 1]; // inside a 3-, 4- and 2-byte character
  assert.ok(cuts.every((cut, k) => cut > 0 && (k === 0 || cut > cuts[k - 1]!)));
  const headers: Array<[string, string]> = [
    ['Host', 'x'],
    ['Authorization', AUTH_TRADER],
    ['X-Client-Id', 'pieces'],
    ['Idempotency-Key', `pieces-${body.commandId}`],
    ['Content-Length', String(bytes.length)],
  ];
  const inPieces = await rawExchange(
    port,
    [
      { data: Buffer.concat([rawRequest('POST', '/api/v1/orders/submit', headers), bytes.subarray(0, cuts[0])]) },
      { data: bytes.subarray(cuts[0], cuts[1]), delayMs: 60 },
      { data: bytes.subarray(cuts[1], cuts[2]), delayMs: 60 },
      { data: bytes.subarray(cuts[2]), delayMs: 60 },
    ],
    { expectAnswers: 1, timeoutMs: 10_000 },
  );
  assert.equal(inPieces.answers[0]?.status, 200, inPieces.answers[0]?.body);
  const first = JSON.parse(inPieces.answers[0]!.body) as { outcome: { accepted?: { orderId: string } } };
  assert.equal(first.outcome.accepted?.orderId, body.orderId);
  const atOnce = await rawExchange(port, [{ data: rawRequest('POST', '/api/v1/orders/submit', headers, bytes) }], { expectAnswers: 1, timeoutMs: 10_000 });
  assert.equal(atOnce.answers[0]?.status, 200, atOnce.answers[0]?.body);
  assert.equal(atOnce.answers[0]!.body, inPieces.answers[0]!.body);
});

test('thousands of idle connections, slowloris headers and idle keep-alive connections are closed by the idle timeout; others are served meanwhile', async (t) => {
  const idleCount = Math.min(3_000, fileLimit() - 400);
  assert.ok(idleCount >= 500, `the file-descriptor limit (${fileLimit()}) leaves room for only ${idleCount} connections`);
  t.diagnostic(`${idleCount} idle connections (ulimit -n ${fileLimit()})`);

  // Idle: connected, nothing sent. Opened 250 at a time (the listen backlog).
  const idle: Watched[] = [];
  for (let opened = 0; opened < idleCount; opened += 250) {
    const batch = await Promise.all(Array.from({ length: Math.min(250, idleCount - opened) }, () => connect()));
    const now = Date.now();
    idle.push(...batch.map((socket) => watch(socket, now)));
  }
  // Slowloris: a request line and headers trickled a byte every 500 ms, never finished.
  const slowloris: Watched[] = [];
  const stopTrickle: Array<() => void> = [];
  for (let k = 0; k < 100; k++) {
    const socket = await connect();
    const watched = watch(socket, Date.now());
    const text = `POST /api/v1/orders/submit HTTP/1.1\r\nHost: x\r\nAuthorization: ${AUTH_TRADER}\r\nX-Pad: ${'p'.repeat(200)}`;
    let at = 0;
    const timer = setInterval(() => {
      if (!socket.destroyed && at < text.length) socket.write(text[at++]!);
    }, 500);
    stopTrickle.push(() => clearInterval(timer));
    slowloris.push(watched);
  }
  // Keep-alive connections idle after an answer.
  const afterAnswer: Watched[] = [];
  for (let k = 0; k < 50; k++) {
    const socket = await connect();
    const watched = watch(socket, 0);
    socket.write('GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n');
    afterAnswer.push(watched);
  }
  await sleep(100);
  for (const watched of afterAnswer) watched.openedAt = Date.now(); // idle from their answer on

  try {
    // Meanwhile the venue accepts and serves others: orders, and answers on brand new connections.
    assert.deepEqual(await validLoad(30, 'ab000000-0000-4000-8000-000000000003'), []);
    for (let k = 0; k < 20; k++) {
      const result = await rawExchange(port, [{ data: 'GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n' }], { timeoutMs: 3_000 });
      assert.equal(result.answers[0]?.status, 200);
    }
    for (const watched of afterAnswer) assert.ok(watched.received > 0 && watched.closedAt === null, 'a keep-alive connection was not answered, or closed at once');

    // Every one of them is closed by the venue within the idle timeout's bound.
    const deadline = Date.now() + IDLE_MAX_MS + 1_000;
    const all = [...idle, ...slowloris, ...afterAnswer];
    while (all.some((watched) => watched.closedAt === null) && Date.now() < deadline) await sleep(200);
    const check = (group: Watched[], what: string, sendsNothing: boolean) => {
      const open = group.filter((watched) => watched.closedAt === null).length;
      assert.equal(open, 0, `${open} ${what} connections still open after ${IDLE_MAX_MS} ms`);
      for (const watched of group) {
        const after = watched.closedAt! - watched.openedAt;
        assert.ok(after >= IDLE_MIN_MS && after <= IDLE_MAX_MS, `${what}: closed ${after} ms after its last activity, outside the idle timeout's 8-12 s`);
        if (sendsNothing) assert.equal(watched.received, 0, `${what}: the venue answered a request that was never complete`);
      }
    };
    check(idle, 'idle', true);
    check(slowloris, 'slowloris', true);
    check(afterAnswer, 'idle keep-alive', false);
    // And the venue is as it was.
    assert.equal((await venue.get('/healthz')).status, 200);
    assert.equal(venue.child.exitCode, null);
  } finally {
    for (const stop of stopTrickle) stop();
    for (const watched of [...idle, ...slowloris, ...afterAnswer]) watched.socket.destroy();
  }
});

function venueRssMb(): number {
  return Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${venue.child.pid}/status`, 'utf8'))![1]) / 1024;
}

test('clients that pipeline requests and never read the answers are disconnected; memory stays flat and others are served', async () => {
  const requests = {
    openapi: `GET /api/v1/openapi.json HTTP/1.1\r\nHost: x\r\nAuthorization: ${AUTH_TRADER}\r\n\r\n`,
    depth: `GET /api/v1/market-data/depth/ab000000-0000-4000-8000-000000000004?levels=50 HTTP/1.1\r\nHost: x\r\nAuthorization: ${AUTH_TRADER}\r\n\r\n`,
    session: `GET /api/v1/venue/session HTTP/1.1\r\nHost: x\r\nAuthorization: ${AUTH_TRADER}\r\n\r\n`,
    notFound: 'GET /nothing HTTP/1.1\r\nHost: x\r\n\r\n',
  };
  const rssBefore = venueRssMb();
  let rssPeak = rssBefore;
  const readers: Array<{ what: string; watched: Watched }> = [];
  for (const what of Object.keys(requests)) {
    for (let k = 0; k < 2; k++) {
      const socket = await connect();
      socket.pause(); // never reads
      readers.push({ what, watched: watch(socket, Date.now()) });
    }
  }
  // Keep writing requests (2,000 at a time, while the socket takes them) for up to 8 s.
  const started = Date.now();
  const batches = Object.fromEntries(Object.entries(requests).map(([what, request]) => [what, request.repeat(2_000)]));
  const writer = setInterval(() => {
    for (const { what, watched } of readers) {
      if (watched.closedAt === null && !watched.socket.destroyed && watched.socket.writableLength < 4 << 20) watched.socket.write(batches[what]!);
    }
  }, 20);
  const healthTimes: number[] = [];
  try {
    while (Date.now() - started < 8_000 && readers.some(({ watched }) => watched.closedAt === null)) {
      const asked = Date.now();
      const health = await venue.get('/healthz');
      assert.equal(health.status, 200);
      healthTimes.push(Date.now() - asked);
      rssPeak = Math.max(rssPeak, venueRssMb());
      await sleep(100);
    }
  } finally {
    clearInterval(writer);
  }
  for (const { what, watched } of readers) {
    assert.ok(watched.closedAt !== null, `a ${what} reader that never reads was still connected after 8 s of pipelining`);
  }
  assert.deepEqual(await validLoad(10, 'ab000000-0000-4000-8000-000000000005'), []);
  assert.ok(rssPeak - rssBefore < 256, `the venue grew by ${Math.round(rssPeak - rssBefore)} MB behind clients that do not read`);
  assert.ok(Math.max(...healthTimes) < 3_000, `/healthz took ${Math.max(...healthTimes)} ms while they pipelined`);
  for (const { watched } of readers) watched.socket.destroy();
});

test('endAnswer: an answer larger than the socket can hold reaches a client that reads it late, whole', async () => {
  const big = Buffer.alloc(24 * 1024 * 1024);
  for (let k = 0; k < big.length; k++) big[k] = 97 + (k % 26);
  const bigText = big.toString('latin1');
  let writableUsed = 0;
  const app = uWS.App();
  const answer = (res: uWS.HttpResponse, body: string | Buffer) => {
    const onWritable = res.onWritable.bind(res);
    res.onWritable = (handler: (offset: number) => boolean) => {
      writableUsed++;
      return onWritable(handler);
    };
    res.cork(() => {
      res.writeStatus('200 OK');
      endAnswer(res, body, false);
    });
  };
  app.get('/buffer', (res) => answer(res, big));
  app.get('/text', (res) => answer(res, bigText));
  app.get('/later', (res) => {
    res.onAborted(() => undefined);
    setTimeout(() => answer(res, big), 20);
  });
  let listenSocket: uWS.us_listen_socket | null = null;
  const appPort = await new Promise<number>((resolve, reject) =>
    app.listen('127.0.0.1', 0, (socket) => {
      if (socket === false) return reject(new Error('cannot listen'));
      listenSocket = socket;
      resolve(uWS.us_socket_local_port(socket as unknown as uWS.us_socket));
    }),
  );
  try {
    for (const path of ['/buffer', '/text', '/later']) {
      const socket = net.connect({ host: '127.0.0.1', port: appPort });
      await new Promise((resolve) => socket.once('connect', resolve));
      socket.pause();
      socket.write(`GET ${path} HTTP/1.1\r\nHost: x\r\n\r\n`);
      await sleep(300); // the socket fills up
      const chunks: Buffer[] = [];
      let length = 0;
      const complete = new Promise<void>((resolve, reject) => {
        socket.on('data', (chunk: Buffer) => {
          chunks.push(chunk);
          length += chunk.length;
          if (length >= big.length) resolve();
        });
        socket.on('close', () => reject(new Error(`${path}: closed after ${length} bytes`)));
      });
      socket.resume();
      await complete;
      const answers = parseAnswers(Buffer.concat(chunks)).answers;
      assert.equal(answers.length, 1, path);
      assert.equal(answers[0]!.status, 200);
      assert.equal(answers[0]!.body.length, big.length, path);
      assert.ok(answers[0]!.body === bigText, `${path}: the answer arrived altered`);
      socket.destroy();
    }
    assert.ok(writableUsed >= 3, `the onWritable path was taken ${writableUsed} times: the test did not fill the socket`);
  } finally {
    if (listenSocket !== null) uWS.us_listen_socket_close(listenSocket);
    (app as unknown as { close(): void }).close();
  }
});
