// The load generator's HTTP/1.1 client: one keep-alive TCP connection, one request in
// flight at a time, each request written as a single buffer and each answer framed by
// its Content-Length. It does only what the generator needs, so that the generator
// spends less of these 2 cores on itself and more is left for the venue. With it (and
// the flow's bodies built without object spreads) the generator spends about 60 µs of
// CPU a request against the bare server, a third of what undici's Pool cost.
//
// Bounded: one answer at a time, its header block at most 16 KiB, its body at most
// 8 MiB, and it must arrive within `timeoutMs` of the request (checked once a second);
// anything else (a chunked answer, no Content-Length, a malformed status line, a closed
// connection, no answer in time) fails the request with a transport error and the
// connection is opened afresh for the next one.
//
// A connection idle for longer than `idleReuseMs` (4 s, undici's keep-alive default) is
// not reused: it is closed and a fresh one carries the request. uWebSockets.js closes a
// keep-alive connection 8 to 12 s after its last activity, and a request written just as
// that close is under way would fail, with no way to tell whether the server read it.

import net from 'node:net';

export interface HttpAnswer {
  status: number;
  body: string;
}

const HEADER_BLOCK_MAX = 16 * 1024;
const BODY_MAX = 8 * 1024 * 1024;
const HEADER_END = Buffer.from('\r\n\r\n');
const TIMEOUT_SWEEP_MS = 1_000;
const IDLE_REUSE_MS = 4_000;

export class HttpConnection {
  private socket: net.Socket | null = null;
  private received: Buffer | null = null;
  private waiting: { resolve: (answer: HttpAnswer) => void; reject: (error: Error) => void; sentAt: number } | null = null;
  private sweep: NodeJS.Timeout | null = null;
  /** When the socket last finished an answer (or was opened). */
  private idleSince = 0;
  private readonly hostHeader: string;

  constructor(
    private readonly host: string,
    private readonly port: number,
    /** An answer not complete this long after its request fails it (the venue's own bounds are far shorter). */
    private readonly timeoutMs = 60_000,
    /** A connection idle longer than this is closed and replaced before a request (the server may be closing it). */
    private readonly idleReuseMs = IDLE_REUSE_MS,
  ) {
    this.hostHeader = `${host}:${port}`;
  }

  /** Sends one request (head lines without Host and Content-Length) and resolves with its answer. */
  request(method: string, path: string, headerLines: string, body: string | null): Promise<HttpAnswer> {
    if (this.waiting !== null) return Promise.reject(new Error('a request is already in flight on this connection'));
    const now = performance.now();
    if (this.socket !== null && now - this.idleSince > this.idleReuseMs) {
      this.socket.destroy();
      this.socket = null;
    }
    const socket = this.socket ?? this.connect();
    const length = body === null ? '' : `Content-Length: ${Buffer.byteLength(body)}\r\n`;
    return new Promise<HttpAnswer>((resolve, reject) => {
      this.waiting = { resolve, reject, sentAt: now };
      socket.write(`${method} ${path} HTTP/1.1\r\nHost: ${this.hostHeader}\r\n${headerLines}${length}\r\n${body ?? ''}`);
    });
  }

  close(): void {
    this.socket?.destroy();
    this.socket = null;
    if (this.sweep !== null) clearInterval(this.sweep);
    this.sweep = null;
  }

  private connect(): net.Socket {
    const socket = net.connect({ host: this.host, port: this.port, noDelay: true });
    this.socket = socket;
    this.received = null;
    this.idleSince = performance.now();
    socket.on('data', (chunk: Buffer) => this.onData(socket, chunk));
    socket.on('error', () => this.drop(socket, new Error('connection error')));
    socket.on('close', () => this.drop(socket, new Error('connection closed by the server')));
    if (this.sweep === null) {
      this.sweep = setInterval(
        () => {
          if (this.waiting !== null && this.socket !== null && performance.now() - this.waiting.sentAt > this.timeoutMs) {
            this.drop(this.socket, new Error(`no answer within ${this.timeoutMs} ms`));
          }
        },
        Math.min(TIMEOUT_SWEEP_MS, this.timeoutMs),
      );
      this.sweep.unref();
    }
    return socket;
  }

  private onData(socket: net.Socket, chunk: Buffer): void {
    const data = this.received === null ? chunk : Buffer.concat([this.received, chunk]);
    this.received = data;
    const headerEnd = data.indexOf(HEADER_END);
    if (headerEnd < 0) {
      if (data.length > HEADER_BLOCK_MAX) this.drop(socket, new Error('answer header block too large'));
      return;
    }
    // "HTTP/1.1 200 OK": the status is bytes 9..11.
    const status = (data[9]! - 48) * 100 + (data[10]! - 48) * 10 + (data[11]! - 48);
    if (data.toString('latin1', 0, 9) !== 'HTTP/1.1 ' || !(status >= 100 && status <= 599)) {
      this.drop(socket, new Error('malformed status line'));
      return;
    }
    const head = data.toString('latin1', 0, headerEnd);
    const at = head.search(/\r\ncontent-length:/i);
    if (at < 0) {
      this.drop(socket, new Error('answer without Content-Length'));
      return;
    }
    const bodyLength = Number.parseInt(head.slice(at + 17), 10);
    if (!(bodyLength >= 0 && bodyLength <= BODY_MAX)) {
      this.drop(socket, new Error('answer Content-Length out of bounds'));
      return;
    }
    const bodyStart = headerEnd + 4;
    if (data.length < bodyStart + bodyLength) return; // the rest of the body is still coming
    if (data.length > bodyStart + bodyLength) {
      this.drop(socket, new Error('bytes after the answer with no request in flight'));
      return;
    }
    this.received = null;
    this.idleSince = performance.now();
    const waiting = this.waiting;
    this.waiting = null;
    if (/\r\nconnection:\s*close\s*(\r\n|$)/i.test(head)) this.close();
    waiting?.resolve({ status, body: data.toString('utf8', bodyStart, bodyStart + bodyLength) });
  }

  private drop(socket: net.Socket, error: Error): void {
    if (socket !== this.socket) return;
    socket.destroy();
    this.socket = null;
    this.received = null;
    const waiting = this.waiting;
    this.waiting = null;
    waiting?.reject(error);
  }
}
