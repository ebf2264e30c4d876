// A market-data stream client for the tests: the `ws` package over a real socket, every
// message kept in arrival order, and waits for the next one that matches.

import { once } from 'node:events';
import WebSocket from 'ws';

export type StreamMessage = Record<string, any>;

export class StreamClient {
  readonly messages: StreamMessage[] = [];
  /** Messages next() has handed out (each once; others stay for a later match). */
  private readonly taken: boolean[] = [];
  private wake: (() => void) | null = null;
  closed: { code: number; reason: string } | null = null;

  private constructor(readonly socket: WebSocket) {
    socket.on('message', (data, isBinary) => {
      this.messages.push(isBinary ? { binary: true } : JSON.parse(data.toString('utf8')));
      this.wake?.();
    });
    socket.on('close', (code, reason) => {
      this.closed = { code, reason: reason.toString('utf8') };
      this.wake?.();
    });
  }

  /** Opens a stream socket; rejects with the HTTP status if the upgrade is refused. */
  static async connect(baseUrl: string, token: string | null): Promise<StreamClient> {
    const url = `${baseUrl.replace(/^http/, 'ws')}/api/v1/market-data/stream`;
    const socket = new WebSocket(url, { headers: token === null ? {} : { authorization: `Bearer ${token}` }, perMessageDeflate: false });
    const refused = new Promise<never>((_, reject) =>
      socket.once('unexpected-response', (_request, response) => reject(Object.assign(new Error(`upgrade refused: ${response.statusCode}`), { status: response.statusCode }))),
    );
    refused.catch(() => undefined);
    await Promise.race([once(socket, 'open'), refused]);
    return new StreamClient(socket);
  }

  send(message: unknown): void {
    this.socket.send(typeof message === 'string' ? message : JSON.stringify(message));
  }

  subscribe(channel: string, instrumentId: string): void {
    this.send({ op: 'subscribe', channel, instrumentId });
  }

  /** The first message not handed out yet that matches `match` (the others stay for later calls); throws after `timeoutMs`. */
  async next(match: (message: StreamMessage) => boolean = () => true, timeoutMs = 10_000): Promise<StreamMessage> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      for (let k = 0; k < this.messages.length; k++) {
        if (this.taken[k] === true || !match(this.messages[k]!)) continue;
        this.taken[k] = true;
        return this.messages[k]!;
      }
      if (this.closed !== null) throw new Error(`the stream closed (${this.closed.code} ${this.closed.reason}) before the message came`);
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`no matching message within ${timeoutMs} ms; last: ${JSON.stringify(this.messages.slice(-3))}`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left);
        this.wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      this.wake = null;
    }
  }

  /** Every data message of a channel and instrument received so far. */
  of(channel: string, instrumentId: string): StreamMessage[] {
    return this.messages.filter((message) => message.channel === channel && message.instrumentId === instrumentId && message.seq !== undefined);
  }

  async close(): Promise<void> {
    if (this.closed !== null) return;
    this.socket.close();
    await once(this.socket, 'close');
  }
}
