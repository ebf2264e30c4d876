// The persistence thread's displayed books (persistence/book-model.ts), alone: the
// cost of one commit's book work for one instrument (apply its level changes, then
// publish the instrument's best 50 levels per side to the gateways' shared view), on
// books 100 to 100,000 price levels wide per side. Each commit changes the quantity of
// a level near the touch and removes or restores a level at a random rank (levels
// appear and go anywhere in the book). tinybench; writes bench/results/book-model.json.
//
// The venue does this once per durable commit for every instrument the commit touched,
// on the same thread that feeds PostgreSQL: its cost must not grow with the width of a
// book, which any participant decides by where it rests orders.

import os from 'node:os';
import { Bench } from 'tinybench';
import { DepthView } from '../core/market-view.ts';
import { BookModel } from '../persistence/book-model.ts';
import type { BookUpdate } from '../persistence/projector.ts';
import { writeResult } from './lib/results.ts';
import { SeededRandom } from './lib/seeded-random.ts';

const INSTRUMENT = '5eed5eed-0000-4000-8000-000000000001';
const TICK = 10_000_000; // 0.01 in nanos
const BEST_BID = 100_000_000_000;
const BEST_ASK = BEST_BID + TICK;
const WIDTHS = [100, 1_000, 10_000, 100_000];

class Book {
  private readonly model = new BookModel(1);
  private readonly view = new DepthView(DepthView.create(4));
  private readonly present: Uint8Array;
  private readonly random = new SeededRandom(7);
  private sequence = 1;

  constructor(readonly width: number) {
    this.present = new Uint8Array(width * 2).fill(1);
    const levels: BookUpdate['levels'] = [];
    for (let rank = 0; rank < width; rank++) {
      levels.push([INSTRUMENT, 'BUY', BEST_BID - rank * TICK, 100, 1], [INSTRUMENT, 'SELL', BEST_ASK + rank * TICK, 100, 1]);
    }
    this.model.apply({ instruments: [[INSTRUMENT, 'USD', 0]], levels, watermarks: [[0, this.sequence]] });
  }

  /** One commit's book work for this instrument. */
  commit(): void {
    const buy = this.random.chance(0.5);
    const side = buy ? 'BUY' : 'SELL';
    const priceAt = (rank: number) => (buy ? BEST_BID - rank * TICK : BEST_ASK + rank * TICK);
    const rank = this.random.below(this.width);
    const slot = rank * 2 + (buy ? 0 : 1);
    const toggle: BookUpdate['levels'][number] = this.present[slot] === 1 ? [INSTRUMENT, side, priceAt(rank), -100, -1] : [INSTRUMENT, side, priceAt(rank), 100, 1];
    this.present[slot] = this.present[slot] === 1 ? 0 : 1;
    this.sequence++;
    this.model.apply({ instruments: [], levels: [[INSTRUMENT, side, priceAt(0), 1, 0], toggle], watermarks: [[0, this.sequence]] });
    this.model.publish(this.view, [INSTRUMENT], [[0, this.sequence]]);
  }
}

export async function runBookModelBench(quick: boolean): Promise<void> {
  const bench = new Bench({ name: 'book model', time: quick ? 300 : 1500, warmupTime: quick ? 100 : 300 });
  for (const width of WIDTHS) {
    const book = new Book(width);
    bench.add(`${width.toLocaleString('en-US')} levels per side`, () => book.commit());
  }
  bench.runSync();
  const tasks = bench.tasks.map((task, k) => {
    const result = task.result;
    if (result.state === 'errored') throw result.error;
    if (result.state !== 'completed') throw new Error(`${task.name}: ${result.state}`);
    return {
      name: task.name,
      levelsPerSide: WIDTHS[k]!,
      microsPerCommitMedian: Number((result.latency.p50 * 1000).toFixed(2)),
      microsPerCommitP99: Number((result.latency.p99 * 1000).toFixed(2)),
      samples: result.latency.samplesCount,
    };
  });
  console.table(tasks.map((t) => ({ book: t.name, 'µs per commit (median)': t.microsPerCommitMedian, 'p99 µs': t.microsPerCommitP99, samples: t.samples })));
  writeResult('book-model', {
    description: "one commit's displayed-book work for one instrument (apply two level changes, publish the best 50 levels per side), by book width",
    machine: { cpus: os.cpus().length, cpuModel: os.cpus()[0]?.model ?? 'unknown', node: process.version },
    tasks,
  });
}

if (import.meta.url === `file://${process.argv[1]}`) {
  await runBookModelBench(process.argv.includes('--quick'));
}
