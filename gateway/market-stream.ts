// GET /api/v1/market-data/stream: the market-data stream on the gateway's own listener.
// The persistence thread appends trades and book changes to a broadcast ring once they
// are durable (core/market-stream.ts); each gateway reads it in its result loop and
// publishes every record to a uWS topic per channel and instrument, so fan-out is one
// publish per record per gateway whatever the subscribers, and nothing on the order
// path waits for them. Bounds: SUBSCRIPTIONS_MAX a socket, CLIENT_MESSAGE_BYTES_MAX a
// message in, SLOW_CONSUMER_BYTES unsent before the socket is closed (1013).
//
// Snapshots (depth, top) come from the depth view entry, which carries its channel seqs
// and the ring position its records end at (persistence/market-stream-producer.ts). A
// socket is subscribed to the topic in the same turn as its snapshot is sent, once this
// gateway has read past that position: the next record it publishes is seq + 1. Until
// then the subscription waits (the view can be ahead of this gateway's cursor).

import uWS from 'uWebSockets.js';
import { unpackCurrency } from '../core/command-slot.ts';
import { DEPTH_LEVELS_MAX, DepthView, type DepthBook, type ViewLevel } from '../core/market-view.ts';
import { KIND_DEPTH, KIND_TOP, KIND_TRADE, StreamReader, type StreamRecord } from '../core/market-stream.ts';
import { occurredAtOf } from '../core/outcome-format.ts';
import { formatUuid, uuidWords } from '../core/uuid.ts';
import type { Principal } from './principals.ts';

export const STREAM_PATH = '/api/v1/market-data/stream';
export const SUBSCRIPTIONS_MAX = 256;
/** API contract: more unsent than this and the subscriber is closed with 1013 `slow consumer`. */
export const SLOW_CONSUMER_BYTES = 4 << 20;
export const SLOW_CONSUMER_CODE = 1013;
const CLIENT_MESSAGE_BYTES_MAX = 1024;
/** uWS skips a socket past this: never reached before the slow-consumer check closes it (checked after every poll and send). */
const BACKPRESSURE_MAX = 3 * SLOW_CONSUMER_BYTES;
const RECORDS_PER_POLL = 512;
/** The sweep of every socket's unsent bytes runs at most this often (each costs a native call per socket); a socket's own answers are checked at once. */
const SLOW_CHECK_MS = 5;
const CHANNELS = new Set(['trades', 'top', 'depth']);
const UUID = /^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/;

export interface StreamSocketData {
  principal: Principal;
  /** Topics (`channel:instrumentId`) this socket is subscribed to or waits to be. */
  topics: Set<string>;
  closed: boolean;
}

type StreamSocket = uWS.WebSocket<StreamSocketData>;

interface PendingSnapshot {
  ws: StreamSocket;
  channel: 'top' | 'depth';
  instrumentId: string;
  topic: string;
}

const currencyText = (packed: number) => (packed === 0 ? '' : unpackCurrency(packed));
const amount = (nanos: number, currency: string) => `{"nanos":"${nanos}","currency":"${currency}"}`;
const levelJson = (level: ViewLevel, currency: string) => `{"price":${amount(level.priceNanos, currency)},"quantity":{"units":"${level.quantity}"},"orderCount":${level.count}}`;
const sideJson = (side: { priceNanos: number; quantity: bigint } | null | undefined, currency: string) =>
  side === null || side === undefined ? 'null' : `{"price":${amount(side.priceNanos, currency)},"quantity":{"units":"${side.quantity}"}}`;
const errorJson = (code: 'VALIDATION_FAILED' | 'LIMIT_EXCEEDED' | 'OVERLOADED', message: string) => JSON.stringify({ type: 'error', code, message });

export class MarketStream {
  private readonly reader: StreamReader;
  private readonly depthView: DepthView;
  private app: uWS.TemplatedApp | null = null;
  private readonly sockets = new Set<StreamSocket>();
  private pending: PendingSnapshot[] = [];
  private subscribers = 0;
  private sentSinceCheck = false;
  private lastCheckMs = 0;
  private checkTimer: NodeJS.Timeout | null = null;

  constructor(
    ring: SharedArrayBuffer,
    depthView: SharedArrayBuffer,
    private readonly gatewayId: number,
  ) {
    this.reader = new StreamReader(ring);
    this.depthView = new DepthView(depthView);
  }

  /** Stream sockets of this gateway with at least one subscription (the `venue_market_data_subscribers` gauge sums every gateway's: StreamReader.subscribers()). */
  get subscriberCount(): number {
    return this.subscribers;
  }

  /** Times this gateway fell more than the ring behind (its subscribers saw a seq jump). */
  get overruns(): number {
    return this.reader.overruns;
  }

  /** The upgrade route; `authenticate` answers 401 itself and returns null. */
  register(app: uWS.TemplatedApp, authenticate: (res: uWS.HttpResponse, req: uWS.HttpRequest) => Principal | null): void {
    this.app = app;
    app.ws<StreamSocketData>(STREAM_PATH, {
      compression: uWS.DISABLED,
      maxPayloadLength: 16 * CLIENT_MESSAGE_BYTES_MAX,
      maxBackpressure: BACKPRESSURE_MAX,
      idleTimeout: 120,
      upgrade: (res, req, context) => {
        const principal = authenticate(res, req);
        if (principal === null) return;
        res.upgrade<StreamSocketData>(
          { principal, topics: new Set(), closed: false },
          req.getHeader('sec-websocket-key'),
          req.getHeader('sec-websocket-protocol'),
          req.getHeader('sec-websocket-extensions'),
          context,
        );
      },
      open: (ws) => {
        this.sockets.add(ws);
      },
      message: (ws, message, isBinary) => this.onMessage(ws, message, isBinary),
      drain: () => undefined,
      close: (ws) => {
        const data = ws.getUserData();
        data.closed = true;
        if (data.topics.size > 0) this.setSubscribers(this.subscribers - 1);
        data.topics.clear();
        this.sockets.delete(ws);
      },
    });
  }

  /** Whether the ring holds records this gateway has not read. */
  waiting(): boolean {
    return this.reader.waiting();
  }

  /** Reads and publishes up to RECORDS_PER_POLL records, serves the snapshots that waited for them; returns the records read. */
  poll(): number {
    if (this.subscribers === 0) {
      this.reader.passAll(); // no socket subscribed: nothing to decode, and the order load costs this gateway nothing more
      return 0;
    }
    const read = this.reader.poll(RECORDS_PER_POLL, this.publish);
    if (this.pending.length > 0) this.servePending();
    if (this.sentSinceCheck) this.closeSlowConsumers();
    return read;
  }

  private readonly publish = (record: StreamRecord): void => {
    const app = this.app!;
    const channel = record.kind === KIND_TRADE ? 'trades' : record.kind === KIND_TOP ? 'top' : record.kind === KIND_DEPTH ? 'depth' : null;
    if (channel === null) return;
    const instrumentId = formatUuid(record.instrument, 0);
    const topic = `${channel}:${instrumentId}`;
    if (app.numSubscribers(topic) === 0) return;
    const head = `"channel":"${channel}","instrumentId":"${instrumentId}","seq":"${record.seq}"`;
    const currency = currencyText(record.currency);
    let message: string;
    if (record.kind === KIND_TRADE) {
      message =
        `{"type":"trade",${head},"tradeId":"${formatUuid(record.tradeId, 0)}","price":${amount(record.priceNanos, currency)},` +
        `"quantity":{"units":"${record.quantity}"},"currency":"${currency}","occurredAt":"${occurredAtOf(record.occurredAtUs)}","sequence":${record.tapeSequence}}`;
    } else if (record.kind === KIND_TOP) {
      message = `{"type":"top",${head},"bid":${sideJson(record.bid, currency)},"ask":${sideJson(record.ask, currency)}}`;
    } else {
      const changes: string[] = new Array(record.changes);
      for (let k = 0; k < record.changes; k++) {
        changes[k] =
          `{"side":"${record.changeSide[k] === 0 ? 'bid' : 'ask'}","price":${amount(record.changePrice[k]!, currency)},` +
          `"quantity":{"units":"${record.changeQuantity[k]}"},"orderCount":${record.changeCount[k]}}`;
      }
      message = `{"type":"depth-update",${head},"changes":[${changes.join(',')}]}`;
    }
    app.publish(topic, message, false);
    this.sentSinceCheck = true;
  };

  private onMessage(ws: StreamSocket, message: ArrayBuffer, isBinary: boolean): void {
    const data = ws.getUserData();
    if (data.closed) return;
    if (isBinary || message.byteLength > CLIENT_MESSAGE_BYTES_MAX) {
      ws.send(errorJson('VALIDATION_FAILED', `a message is JSON text of at most ${CLIENT_MESSAGE_BYTES_MAX} bytes`));
      return;
    }
    const request = parseRequest(Buffer.from(message).toString('utf8'));
    if (typeof request === 'string') {
      ws.send(errorJson('VALIDATION_FAILED', request));
      return;
    }
    const { op, channel, instrumentId } = request;
    const topic = `${channel}:${instrumentId}`;
    const answer = `{"type":"${op === 'subscribe' ? 'subscribed' : 'unsubscribed'}","channel":"${channel}","instrumentId":"${instrumentId}"}`;
    const before = data.topics.size;
    if (op === 'unsubscribe') {
      this.stop(ws, topic);
      data.topics.delete(topic);
      ws.send(answer);
    } else if (!data.topics.has(topic) && data.topics.size >= SUBSCRIPTIONS_MAX) {
      ws.send(errorJson('LIMIT_EXCEEDED', `a socket holds at most ${SUBSCRIPTIONS_MAX} subscriptions`));
    } else {
      this.stop(ws, topic); // subscribing again: a fresh snapshot, the client's way to resync
      data.topics.add(topic);
      ws.send(answer);
      if (channel === 'trades') ws.subscribe(topic);
      else if (!this.start(ws, channel, instrumentId, topic)) this.pending.push({ ws, channel, instrumentId, topic });
    }
    if ((before === 0) !== (data.topics.size === 0)) this.setSubscribers(this.subscribers + (before === 0 ? 1 : -1));
    this.closeIfSlow(ws);
  }

  /** Unsubscribes a socket from a topic, and forgets a snapshot it waits for. */
  private stop(ws: StreamSocket, topic: string): void {
    ws.unsubscribe(topic);
    if (this.pending.length > 0) this.pending = this.pending.filter((entry) => entry.ws !== ws || entry.topic !== topic);
  }

  /** Sends the snapshot and subscribes, if this gateway has read every record it includes; false: not yet. */
  private start(ws: StreamSocket, channel: 'top' | 'depth', instrumentId: string, topic: string): boolean {
    const book = this.depthView.read(uuidWords(instrumentId), DEPTH_LEVELS_MAX);
    if (book === null && this.depthView.full) {
      ws.send(errorJson('OVERLOADED', 'more instruments than MARKET_DATA_INSTRUMENTS: this one has no market data stream'));
      ws.getUserData().topics.delete(topic);
      return true;
    }
    if (book !== null && book.marks.position > this.reader.cursor) return false;
    ws.send(channel === 'depth' ? depthSnapshot(instrumentId, book) : topSnapshot(instrumentId, book));
    ws.subscribe(topic);
    this.sentSinceCheck = true;
    return true;
  }

  private servePending(): void {
    const waiting = this.pending;
    this.pending = [];
    for (const entry of waiting) {
      if (entry.ws.getUserData().closed) continue;
      if (!this.start(entry.ws, entry.channel, entry.instrumentId, entry.topic)) this.pending.push(entry);
    }
  }

  /** Closes every socket past SLOW_CONSUMER_BYTES; within SLOW_CHECK_MS of the last sweep, once that much later instead. */
  private closeSlowConsumers(): void {
    const now = performance.now();
    if (now - this.lastCheckMs < SLOW_CHECK_MS) {
      this.checkTimer ??= setTimeout(() => {
        this.checkTimer = null;
        this.closeSlowConsumers();
      }, SLOW_CHECK_MS);
      return;
    }
    this.lastCheckMs = now;
    this.sentSinceCheck = false;
    for (const ws of this.sockets) this.closeIfSlow(ws);
  }

  /** Stops the deferred sweep (the gateway drains). */
  close(): void {
    if (this.checkTimer !== null) clearTimeout(this.checkTimer);
    this.checkTimer = null;
  }

  private closeIfSlow(ws: StreamSocket): void {
    if (ws.getUserData().closed || ws.getBufferedAmount() <= SLOW_CONSUMER_BYTES) return;
    ws.end(SLOW_CONSUMER_CODE, 'slow consumer');
  }

  private setSubscribers(count: number): void {
    this.subscribers = count;
    this.reader.setSubscribers(this.gatewayId, count);
  }
}

function depthSnapshot(instrumentId: string, book: DepthBook | null): string {
  const marks = book?.marks.depthSeq ?? 0;
  const currency = currencyText(book?.currency ?? 0);
  const levels = (side: ViewLevel[] | undefined) => (side ?? []).map((level) => levelJson(level, currency)).join(',');
  return `{"type":"depth-snapshot","channel":"depth","instrumentId":"${instrumentId}","seq":"${marks}","bids":[${levels(book?.bids)}],"asks":[${levels(book?.asks)}]}`;
}

function topSnapshot(instrumentId: string, book: DepthBook | null): string {
  const currency = currencyText(book?.currency ?? 0);
  return `{"type":"top","channel":"top","instrumentId":"${instrumentId}","seq":"${book?.marks.topSeq ?? 0}","bid":${sideJson(book?.bids[0], currency)},"ask":${sideJson(book?.asks[0], currency)}}`;
}

/** A client message, or what is wrong with it. */
function parseRequest(text: string): { op: 'subscribe' | 'unsubscribe'; channel: 'trades' | 'top' | 'depth'; instrumentId: string } | string {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return 'the message is not valid JSON';
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return 'the message must be a JSON object';
  const { op, channel, instrumentId, ...rest } = value as Record<string, unknown>;
  const extra = Object.keys(rest);
  if (extra.length > 0) return `unknown field ${JSON.stringify(extra[0]!.slice(0, 64))}`;
  if (op !== 'subscribe' && op !== 'unsubscribe') return 'op must be subscribe or unsubscribe';
  if (typeof channel !== 'string' || !CHANNELS.has(channel)) return 'channel must be trades, top or depth';
  if (typeof instrumentId !== 'string' || !UUID.test(instrumentId)) return 'instrumentId must be a UUID';
  return { op, channel: channel as 'trades' | 'top' | 'depth', instrumentId: instrumentId.toLowerCase() };
}
