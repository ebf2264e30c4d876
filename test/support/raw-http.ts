// HTTP/1.1 over raw TCP sockets (node:net), for the requests fetch cannot express:
// duplicated headers, bodies shorter than their Content-Length, header blocks past a
// limit, bodies sent slowly, broken chunked encoding, malformed request lines. The
// answers are parsed here (status line, headers, Content-Length or chunked body).

import net from 'node:net';

export interface RawAnswer {
  status: number;
  /** Header names in lower case; a repeated header keeps every value. */
  headers: Record<string, string[]>;
  body: string;
}

/** One piece of what a client sends, written after `delayMs` (from the previous piece). */
export interface RawPart {
  data: string | Buffer;
  delayMs?: number;
}

export interface RawResult {
  /** Every complete answer, in order (interim 1xx answers are left out). */
  answers: RawAnswer[];
  /** The venue closed the connection (FIN or reset). */
  closedByServer: boolean;
  reset: boolean;
  /** Neither the expected answers nor a close came before the timeout. */
  timedOut: boolean;
  /** Bytes after the last complete answer (a partial answer), as latin1. */
  leftover: string;
  /** Milliseconds from the first byte written to the close (or to the end of the wait). */
  elapsedMs: number;
}

/** The request bytes: request line, the headers as given (in order, repeats kept), then the body. */
export function rawRequest(method: string, target: string, headers: Array<[string, string | Buffer]>, body: string | Buffer = ''): Buffer {
  const head: Buffer[] = [Buffer.from(`${method} ${target} HTTP/1.1\r\n`, 'utf8')];
  for (const [name, value] of headers) {
    head.push(Buffer.from(`${name}: `, 'latin1'), typeof value === 'string' ? Buffer.from(value, 'utf8') : value, Buffer.from('\r\n', 'latin1'));
  }
  head.push(Buffer.from('\r\n', 'latin1'));
  return Buffer.concat([...head, typeof body === 'string' ? Buffer.from(body, 'utf8') : body]);
}

/** Parses the complete answers at the start of `buffer`; returns them and the bytes used. */
export function parseAnswers(buffer: Buffer): { answers: RawAnswer[]; used: number } {
  const answers: RawAnswer[] = [];
  let offset = 0;
  for (;;) {
    const end = buffer.indexOf('\r\n\r\n', offset, 'latin1');
    if (end < 0) break;
    const lines = buffer.toString('latin1', offset, end).split('\r\n');
    const match = /^HTTP\/1\.[01] (\d{3})(?: .*)?$/.exec(lines[0]!);
    if (match === null) throw new Error(`not an HTTP answer: ${JSON.stringify(lines[0])}`);
    const status = Number(match[1]);
    const headers: Record<string, string[]> = {};
    for (const line of lines.slice(1)) {
      const colon = line.indexOf(':');
      const name = line.slice(0, colon).trim().toLowerCase();
      (headers[name] ??= []).push(line.slice(colon + 1).trim());
    }
    let cursor = end + 4;
    if (status >= 100 && status < 200) {
      offset = cursor;
      continue;
    }
    let body: Buffer;
    if (headers['transfer-encoding']?.[0]?.toLowerCase() === 'chunked') {
      const pieces: Buffer[] = [];
      let complete = false;
      for (;;) {
        const lineEnd = buffer.indexOf('\r\n', cursor, 'latin1');
        if (lineEnd < 0) break;
        const size = parseInt(buffer.toString('latin1', cursor, lineEnd), 16);
        if (size === 0) {
          if (buffer.length < lineEnd + 4) break;
          cursor = lineEnd + 4;
          complete = true;
          break;
        }
        if (buffer.length < lineEnd + 2 + size + 2) break;
        pieces.push(buffer.subarray(lineEnd + 2, lineEnd + 2 + size));
        cursor = lineEnd + 2 + size + 2;
      }
      if (!complete) break;
      body = Buffer.concat(pieces);
    } else {
      const length = Number(headers['content-length']?.[0] ?? '0');
      if (buffer.length < cursor + length) break;
      body = buffer.subarray(cursor, cursor + length);
      cursor += length;
    }
    answers.push({ status, headers, body: body.toString('utf8') });
    offset = cursor;
  }
  return { answers, used: offset };
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Opens a connection, writes the parts (each after its delay) and collects answers
 * until the venue closes the connection, or `expectAnswers` answers came and then
 * `graceMs` passed without more, or `timeoutMs` passed. The socket is destroyed at the end.
 */
export function rawExchange(port: number, parts: RawPart[], options: { expectAnswers?: number; graceMs?: number; timeoutMs: number; endAfterWriting?: boolean }): Promise<RawResult> {
  const expectAnswers = options.expectAnswers ?? 1;
  const graceMs = options.graceMs ?? 0;
  return new Promise((resolve) => {
    const socket = net.connect({ host: '127.0.0.1', port, noDelay: true });
    let received = Buffer.alloc(0);
    let answers: RawAnswer[] = [];
    let reset = false;
    let settled = false;
    let started = 0;
    let graceTimer: NodeJS.Timeout | undefined;
    const finish = (closedByServer: boolean, timedOut: boolean) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      clearTimeout(graceTimer);
      socket.destroy();
      let parsed: { answers: RawAnswer[]; used: number };
      try {
        parsed = parseAnswers(received);
      } catch {
        parsed = { answers: [], used: 0 };
      }
      answers = parsed.answers;
      resolve({ answers, closedByServer, reset, timedOut, leftover: received.subarray(parsed.used).toString('latin1'), elapsedMs: Date.now() - started });
    };
    const timer = setTimeout(() => finish(false, true), options.timeoutMs);
    socket.on('data', (chunk: Buffer) => {
      received = Buffer.concat([received, chunk]);
      let count: number;
      try {
        count = parseAnswers(received).answers.length;
      } catch {
        count = 0;
      }
      if (count >= expectAnswers && graceTimer === undefined) {
        graceTimer = setTimeout(() => finish(false, false), graceMs);
      }
    });
    socket.on('error', (error: NodeJS.ErrnoException) => {
      if (error.code === 'ECONNRESET' || error.code === 'EPIPE') reset = true;
    });
    socket.on('close', () => finish(true, false));
    socket.once('connect', () => {
      started = Date.now();
      void (async () => {
        for (const part of parts) {
          if (part.delayMs !== undefined && part.delayMs > 0) await sleep(part.delayMs);
          if (settled || socket.destroyed) return;
          socket.write(part.data);
        }
        if (options.endAfterWriting === true && !socket.destroyed) socket.end();
      })();
    });
  });
}

/**
 * A keep-alive connection that sends one request at a time and waits for its answer.
 * `send` resolves with the answer, or null when the venue closed the connection first.
 */
export class RawConnection {
  private received = Buffer.alloc(0);
  private waiting: ((answer: RawAnswer | null) => void) | null = null;
  closed = false;

  private constructor(private readonly socket: net.Socket) {
    socket.on('data', (chunk: Buffer) => {
      this.received = Buffer.concat([this.received, chunk]);
      this.deliver();
    });
    socket.on('error', () => undefined);
    socket.on('close', () => {
      this.closed = true;
      const waiting = this.waiting;
      this.waiting = null;
      waiting?.(null);
    });
  }

  static open(port: number): Promise<RawConnection> {
    return new Promise((resolve, reject) => {
      const socket = net.connect({ host: '127.0.0.1', port, noDelay: true });
      socket.once('connect', () => resolve(new RawConnection(socket)));
      socket.once('error', reject);
    });
  }

  private deliver(): void {
    if (this.waiting === null) return;
    const { answers, used } = parseAnswers(this.received);
    if (answers.length === 0) return;
    this.received = this.received.subarray(used);
    const waiting = this.waiting;
    this.waiting = null;
    waiting(answers[0]!);
  }

  send(request: Buffer, timeoutMs = 10_000): Promise<RawAnswer | null> {
    if (this.closed) return Promise.resolve(null);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.waiting = null;
        this.socket.destroy();
        reject(new Error(`no answer within ${timeoutMs} ms`));
      }, timeoutMs);
      this.waiting = (answer) => {
        clearTimeout(timer);
        resolve(answer);
      };
      this.socket.write(request);
      this.deliver();
    });
  }

  close(): void {
    this.socket.destroy();
  }
}
