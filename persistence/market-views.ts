// The gateways' shared views this thread writes: the displayed books, from every ingested
// commit, and the trade tape, from every group storage holds.

import type pg from 'pg';
import { DepthView } from '../core/market-view.ts';
import { TapeView, type TapeBatch } from '../core/tape-view.ts';
import { BookModel } from './book-model.ts';
import { MarketStreamProducer } from './market-stream-producer.ts';
import { loadTapeView } from './market-data.ts';
import type { BookUpdate } from './projector.ts';

export class MarketViews {
  /** The displayed books, kept from every ingested commit and published to the gateways' view. */
  readonly books: BookModel;
  private readonly depthView: DepthView;
  private viewFull = false;
  /** The most recent trades per instrument, for the gateways' tape reads: loaded from storage after the catch-up, then kept by every projection commit. */
  private readonly tapeView: TapeView;
  /** The market-data stream: trades and book changes, once durable (persistence/market-stream-producer.ts). */
  private readonly stream: MarketStreamProducer | null;

  constructor(
    shardCount: number,
    depthView: SharedArrayBuffer,
    tapeView: SharedArrayBuffer,
    private readonly log: (level: 'warn', message: string) => void,
    streamRing: SharedArrayBuffer | null = null,
  ) {
    this.books = new BookModel(shardCount);
    this.depthView = new DepthView(depthView);
    this.tapeView = new TapeView(tapeView);
    this.stream = streamRing === null ? null : new MarketStreamProducer(streamRing);
  }

  /** A durable commit's trades (rows `from` on of the open group's tape batch), to the stream. */
  streamTrades(tape: TapeBatch, from: number): void {
    this.stream?.trades(tape, from);
  }

  /** Stream records appended since the last call (the gateways are woken when there are any). */
  takeStreamed(): number {
    return this.stream?.takeAppended() ?? 0;
  }

  /** One commit's changes to the books, published for the instruments it changed. */
  publishBooks(update: BookUpdate): void {
    const books = this.books;
    books.apply(update);
    const instruments = new Set<string>();
    for (const level of update.levels) instruments.add(level[0]);
    for (const [id] of update.instruments) instruments.add(id);
    const stream = this.stream === null ? undefined : { producer: this.stream, emit: true };
    if (!books.publish(this.depthView, instruments, update.watermarks, stream) && !this.viewFull) {
      this.viewFull = true;
      this.log('warn', 'more instruments than MARKET_DATA_INSTRUMENTS: the depth of the others answers 503 until it is raised');
    }
  }

  /**
   * Every book published whole, at the watermarks the model holds. At the start (`emit`
   * false) the stream takes the books as they are; after a rebuild it sends what changed.
   */
  publishAllBooks(emit = false): void {
    this.books.publish(this.depthView, null, this.books.watermarkEntries(), this.stream === null ? undefined : { producer: this.stream, emit });
  }

  /** The books read again from storage (after the lifecycle rebuild), then published whole. */
  async loadBooks(client: pg.ClientBase): Promise<void> {
    await this.books.load(client);
    this.publishAllBooks(true);
  }

  /** A group's trades, once storage holds them; none during the start's catch-up (the load reads them back from storage). */
  readonly tapeStored = (trades: TapeBatch): void => {
    if (!this.tapeView.loaded) return;
    const wasFull = this.tapeView.full;
    this.tapeView.publish(trades);
    this.tapeWritten(wasFull);
  };

  /** The tape view loaded from storage after the start's catch-up; from then on every stored group adds to it. */
  async loadTape(client: pg.ClientBase): Promise<void> {
    const wasFull = this.tapeView.full;
    await loadTapeView(client, this.tapeView);
    this.tapeWritten(wasFull);
    this.tapeView.markLoaded();
  }

  /** After a write to the tape view: says so (once) when it filled the view. A view of 0 rows is full from the start: off, not filled. */
  private tapeWritten(wasFull: boolean): void {
    if (!wasFull && this.tapeView.full) this.log('warn', 'more instruments than MARKET_DATA_INSTRUMENTS: the tape of the others is read from storage');
  }
}
