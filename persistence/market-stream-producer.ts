// The producer side of the market-data stream (core/market-stream.ts), on the persistence
// thread right after a durable commit is applied: each trade, and per instrument whose
// best levels changed a depth record (what changed among the DEPTH_LEVELS_MAX best levels
// of each side, a level pushed out of them as quantity 0) and a top record when the best
// bid or ask changed. Every record carries its channel's next seq for the instrument.
//
// Books: the records are staged, the instrument's depth view entry is written with the
// seqs and the ring position the records will end at, and only then are they appended.
// A gateway that has read past that position and reads the entry holds a snapshot that
// includes every record up to it and no later one (gateway/market-stream.ts).

import type { StreamMarks, ViewLevel } from '../core/market-view.ts';
import { DEPTH_CHANGES_MAX, StreamWriter } from '../core/market-stream.ts';
import type { TapeBatch } from '../core/tape-view.ts';
import { formatUuid } from '../core/uuid.ts';

interface InstrumentStream {
  bids: readonly ViewLevel[];
  asks: readonly ViewLevel[];
  depthSeq: number;
  tradeSeq: number;
  topSeq: number;
  position: number;
}

interface Staged {
  stream: InstrumentStream;
  bids: readonly ViewLevel[];
  asks: readonly ViewLevel[];
  marks: StreamMarks;
}

const SIDE_BID = 0;
const SIDE_ASK = 1;

export class MarketStreamProducer {
  private readonly writer: StreamWriter;
  private readonly streams = new Map<string, InstrumentStream>();
  private staged: Staged | null = null;
  /** Records appended since the last takeAppended() (the gateways are woken once per batch). */
  private appended = 0;
  // A depth change list being built: both sides, at most every level out and every level in.
  private readonly changePrice = new Float64Array(DEPTH_CHANGES_MAX);
  private readonly changeQuantity = new BigInt64Array(DEPTH_CHANGES_MAX);
  private readonly changeCount = new Int32Array(DEPTH_CHANGES_MAX);
  private readonly changeSide = new Int32Array(DEPTH_CHANGES_MAX);
  private changes = 0;

  constructor(buffer: SharedArrayBuffer) {
    this.writer = new StreamWriter(buffer);
  }

  private stream(id: string): InstrumentStream {
    let stream = this.streams.get(id);
    if (stream === undefined) {
      stream = { bids: [], asks: [], depthSeq: 0, tradeSeq: 0, topSeq: 0, position: 0 };
      this.streams.set(id, stream);
    }
    return stream;
  }

  /** The trades a commit added to the tape batch, from row `from` on, in tape order. */
  trades(tape: TapeBatch, from: number): void {
    const writer = this.writer;
    for (let row = from; row < tape.length; row++) {
      const w = row * 18;
      const f = row * 9;
      const stream = this.stream(formatUuid(tape.words, w));
      writer.stageTrade(tape.words, w, ++stream.tradeSeq, tape.words, w + 4, tape.floats[f + 4]!, tape.floats[f + 5]!, tape.floats[f + 6]!, tape.floats[f + 7]!, tape.words[w + 16]!);
      writer.appendStaged();
      this.appended++;
    }
  }

  /**
   * An instrument's best levels as they are now: stages its depth and top records
   * (none with `emit` false: the start takes the books as they are) and returns the
   * marks to write with its view entry. Then finishBook.
   */
  stageBook(id: string, words: Int32Array, currency: number, bids: readonly ViewLevel[], asks: readonly ViewLevel[], emit: boolean): StreamMarks {
    const stream = this.stream(id);
    const marks = { depthSeq: stream.depthSeq, topSeq: stream.topSeq, position: stream.position };
    if (!emit) {
      stream.bids = bids;
      stream.asks = asks;
      return marks;
    }
    this.changes = 0;
    this.diff(stream.bids, bids, SIDE_BID, true);
    this.diff(stream.asks, asks, SIDE_ASK, false);
    if (this.changes > 0) {
      marks.depthSeq++;
      const record = this.writer.stageDepth(words, marks.depthSeq, currency, this.changes);
      for (let k = 0; k < this.changes; k++) this.writer.setChange(record, k, this.changeSide[k]!, this.changePrice[k]!, this.changeQuantity[k]!, this.changeCount[k]!);
    }
    if (!sameLevel(stream.bids[0], bids[0]) || !sameLevel(stream.asks[0], asks[0])) {
      marks.topSeq++;
      this.writer.stageTop(words, marks.topSeq, currency, bids[0], asks[0]);
    }
    if (marks.depthSeq !== stream.depthSeq || marks.topSeq !== stream.topSeq) marks.position = this.writer.stagedEnd();
    this.staged = { stream, bids, asks, marks };
    return marks;
  }

  /** After the view entry was written (`written`) or found no room (the stream stays silent for it, as its depth answers 503). */
  finishBook(written: boolean): void {
    const staged = this.staged;
    this.staged = null;
    if (staged === null) return;
    if (!written) {
      this.writer.dropStaged();
      return;
    }
    const { stream, marks } = staged;
    if (marks.position !== stream.position) this.appended++;
    this.writer.appendStaged();
    stream.bids = staged.bids;
    stream.asks = staged.asks;
    stream.depthSeq = marks.depthSeq;
    stream.topSeq = marks.topSeq;
    stream.position = marks.position;
  }

  /** Records appended since the last call. */
  takeAppended(): number {
    const appended = this.appended;
    this.appended = 0;
    return appended;
  }

  /** Appends the changes from `before` to `after` (one side, best first) to the change list. */
  private diff(before: readonly ViewLevel[], after: readonly ViewLevel[], side: number, descending: boolean): void {
    let i = 0;
    let j = 0;
    while (i < before.length || j < after.length) {
      const old = before[i];
      const now = after[j];
      if (old !== undefined && now !== undefined && old.priceNanos === now.priceNanos) {
        if (old.quantity !== now.quantity || old.count !== now.count) this.change(side, now.priceNanos, now.quantity, now.count);
        i++;
        j++;
      } else if (now === undefined || (old !== undefined && (descending ? old.priceNanos > now.priceNanos : old.priceNanos < now.priceNanos))) {
        this.change(side, old!.priceNanos, 0n, 0); // gone, or pushed out of the best levels
        i++;
      } else {
        this.change(side, now.priceNanos, now.quantity, now.count);
        j++;
      }
    }
  }

  private change(side: number, priceNanos: number, quantity: bigint, count: number): void {
    const k = this.changes++;
    this.changeSide[k] = side;
    this.changePrice[k] = priceNanos;
    this.changeQuantity[k] = quantity;
    this.changeCount[k] = count;
  }
}

function sameLevel(a: ViewLevel | undefined, b: ViewLevel | undefined): boolean {
  if (a === undefined || b === undefined) return a === b;
  return a.priceNanos === b.priceNanos && a.quantity === b.quantity;
}
