// Matching core alone: no HTTP, no threads. A seeded, realistic command stream
// (resting limits near a moving mid, cancels of resting orders, crossing IOCs, a few
// modifies) on a book kept near 100,000 resting orders, timed in chunks of 10,000
// commands with tinybench. Writes bench/results/core.json and prints a table.
//
// Two ways of driving the engine are timed: one command at a time, and the way a
// shard drains its rings (prefetch a batch of 32 queued commands, then process them).
// Each full pass over the stream is verified against what the generator's own
// engine produced (last sequence, resting orders), and one untimed pass checks the
// trade count, so the figure is for work actually done.

import { Bench } from 'tinybench';
import os from 'node:os';
import {
  COMMAND_ACCOUNT_ID_WORD,
  COMMAND_CURRENCY_WORD,
  COMMAND_HEADER_WORD,
  COMMAND_INSTRUMENT_ID_WORD,
  COMMAND_ORDER_ID_WORD,
  COMMAND_PARTICIPANT_ID_WORD,
  COMMAND_PRICE_NANOS_FLOAT,
  COMMAND_QUANTITY_UNITS_FLOAT,
  COMMAND_RUN_WORD,
  COMMAND_SESSION_WORD,
  COMMAND_SLOT_BYTES,
  packCurrency,
  packHeader,
  slotViews,
} from '../core/command-slot.ts';
import { EVENT_ACCEPTED, EventKind, OPCODE_CANCEL, OPCODE_SUBMIT, ORDER_TYPE_LIMIT, SIDE_BUY, SIDE_SELL, TIME_IN_FORCE_DAY, TIME_IN_FORCE_IOC } from '../core/codes.ts';
import { MatchingEngine } from '../core/matching-engine.ts';
import { buildCoreStream, type CommandStream } from './lib/core-stream.ts';
import { processSlots, SHARD_PREFETCH_BATCH } from './lib/engine-compare.ts';
import { writeResult } from './lib/results.ts';

const CHUNK = 10_000;
const ORDER_CAPACITY = 1 << 21;

class StreamRunner {
  private engine!: MatchingEngine;
  private position = 0;
  passes = 0;

  constructor(
    private readonly stream: CommandStream,
    private readonly prefetchBatch: number,
  ) {
    this.reset();
  }

  /** Fresh engine with the warm-up book; untimed (tinybench beforeEach). */
  reset(): void {
    this.engine = new MatchingEngine({ orderCapacity: ORDER_CAPACITY });
    this.engine.prefault();
    const { words, floats } = this.stream.views;
    processSlots(this.engine, words, floats, 0, this.stream.warmup, this.prefetchBatch);
    this.position = this.stream.warmup;
  }

  resetIfDone(): void {
    if (this.position < this.stream.total) return;
    const { expected } = this.stream;
    if (this.engine.sequence !== expected.lastSequence || this.engine.orders.restingCount !== expected.restingOrders) {
      throw new Error(`pass ${this.passes} diverged: sequence ${this.engine.sequence}, resting ${this.engine.orders.restingCount}`);
    }
    this.passes++;
    this.reset();
  }

  /** The timed work: the next CHUNK commands. */
  runChunk(): void {
    const { words, floats } = this.stream.views;
    const engine = this.engine;
    const end = Math.min(this.position + CHUNK, this.stream.total);
    processSlots(engine, words, floats, this.position, end, this.prefetchBatch);
    this.position = end;
  }
}

/**
 * The same engine on a book small enough to stay in cache: pairs of submit + cancel
 * and of resting order + crossing IOC on a 1,000-order book. Shows the work per
 * command without cache misses, the floor the big-book figure is read against.
 */
class CachedRunner {
  private readonly engine = new MatchingEngine({ orderCapacity: 4096 });
  private readonly views = slotViews(new ArrayBuffer(COMMAND_SLOT_BYTES));
  private orderNo = 0;

  constructor() {
    const { words } = this.views;
    words[COMMAND_RUN_WORD] = 1;
    words[COMMAND_SESSION_WORD] = 1;
    words[COMMAND_CURRENCY_WORD] = packCurrency('USD');
    words[COMMAND_INSTRUMENT_ID_WORD] = 7;
    words[COMMAND_PARTICIPANT_ID_WORD] = 1;
    words[COMMAND_ACCOUNT_ID_WORD] = 1;
    words[COMMAND_ORDER_ID_WORD] = 0xcace;
    for (let i = 0; i < 500; i++) {
      this.submit(SIDE_BUY, TIME_IN_FORCE_DAY, 999 - (i % 50));
      this.submit(SIDE_SELL, TIME_IN_FORCE_DAY, 1002 + (i % 50));
    }
  }

  private submit(side: number, timeInForce: number, price: number): void {
    const { words, floats } = this.views;
    words[COMMAND_HEADER_WORD] = packHeader(OPCODE_SUBMIT, side, ORDER_TYPE_LIMIT, timeInForce);
    words[COMMAND_ORDER_ID_WORD + 3] = ++this.orderNo;
    floats[COMMAND_PRICE_NANOS_FLOAT] = price;
    floats[COMMAND_QUANTITY_UNITS_FLOAT] = 5;
    this.engine.process(words, floats, 0);
  }

  private cancelLast(): void {
    const { words, floats } = this.views;
    words[COMMAND_HEADER_WORD] = packHeader(OPCODE_CANCEL, 0, 0, 0);
    this.engine.process(words, floats, 0);
    if (this.engine.events.kind(0) !== EVENT_ACCEPTED) throw new Error('cancel of the last order was rejected');
  }

  /** CHUNK commands: half submits of resting orders, half cancels of them. */
  submitAndCancel(): void {
    for (let i = 0; i < CHUNK / 2; i++) {
      this.submit(SIDE_BUY, TIME_IN_FORCE_DAY, 990 - (i % 7));
      this.cancelLast();
    }
  }

  /** CHUNK commands: a resting sell, then an IOC buy that fills it. */
  restAndCross(): void {
    for (let i = 0; i < CHUNK / 2; i++) {
      this.submit(SIDE_SELL, TIME_IN_FORCE_DAY, 1001);
      this.submit(SIDE_BUY, TIME_IN_FORCE_IOC, 1001);
      if (this.engine.events.count !== 4) throw new Error('the IOC did not fill the resting order');
    }
  }
}

function countTrades(stream: CommandStream): number {
  const engine = new MatchingEngine({ orderCapacity: ORDER_CAPACITY });
  let trades = 0;
  for (let i = 0; i < stream.total; i++) {
    engine.process(stream.views.words, stream.views.floats, i * COMMAND_SLOT_BYTES);
    trades += engine.events.countOf(EventKind.TRADE);
  }
  return trades;
}

export async function runCoreBench(quick: boolean): Promise<void> {
  const streamOptions = {
    seed: 20261122,
    restingOrders: 100_000,
    commands: quick ? 400_000 : 2_000_000,
    restPct: 58,
    cancelPct: 30,
    crossPct: 10,
    crossQuantityMax: 400,
    // Cancels and modifies name orders resting at that moment (before this option, an IOC
    // order that partly filled stayed on the generator's list, and 7.6% of cancels and
    // modifies named an order already gone: cheap rejections that flattered the figure).
    cancelsNameRestingOnly: true,
  };
  const started = performance.now();
  const stream = buildCoreStream(streamOptions);
  console.log(`core: stream of ${stream.total} commands built in ${((performance.now() - started) / 1000).toFixed(1)} s`);
  if (countTrades(stream) !== stream.expected.trades) throw new Error('trade count differs from the generator');

  const runners: Record<string, StreamRunner> = {
    'one command at a time': new StreamRunner(stream, 1),
    [`prefetch, batches of ${SHARD_PREFETCH_BATCH}`]: new StreamRunner(stream, SHARD_PREFETCH_BATCH),
  };
  const bench = new Bench({ name: 'matching core', time: quick ? 500 : 6000, warmupTime: quick ? 100 : 1000 });
  for (const [name, runner] of Object.entries(runners)) {
    bench.add(name, () => runner.runChunk(), { beforeEach: () => runner.resetIfDone() });
  }
  const cached = new CachedRunner();
  bench.add('cached 1,000-order book: submit + cancel', () => cached.submitAndCancel());
  bench.add('cached 1,000-order book: rest + crossing IOC', () => cached.restAndCross());
  bench.runSync();

  const tasks = bench.tasks.map((task) => {
    const result = task.result;
    if (result.state === 'errored') throw result.error;
    if (result.state !== 'completed') throw new Error(`${task.name}: ${result.state}`);
    const latency = result.latency;
    return {
      name: task.name,
      commandsPerSecondMedian: Math.round((CHUNK / latency.p50) * 1000),
      commandsPerSecondMean: Math.round((CHUNK / latency.mean) * 1000),
      nanosPerCommandMedian: Number(((latency.p50 * 1e6) / CHUNK).toFixed(1)),
      chunkMs: { p50: latency.p50, p99: latency.p99, min: latency.min, max: latency.max },
      samples: latency.samplesCount,
      fullPassesVerified: runners[task.name]?.passes ?? null,
    };
  });
  console.table(
    tasks.map((t) => ({
      task: t.name,
      'commands/s (median)': t.commandsPerSecondMedian.toLocaleString('en-US'),
      'ns/command': t.nanosPerCommandMedian,
      'chunk p99 ms': t.chunkMs.p99.toFixed(2),
      samples: t.samples,
    })),
  );
  writeResult('core', {
    description: 'matching core alone, one thread, book kept near 100,000 resting orders',
    machine: { cpus: os.cpus().length, cpuModel: os.cpus()[0]?.model ?? 'unknown', node: process.version },
    stream: {
      ...streamOptions,
      chunkCommands: CHUNK,
      mix: stream.counts,
      restingAfterStream: stream.expected.restingOrders,
      tradesInStream: stream.expected.trades,
    },
    tasks,
  });
}

if (import.meta.url === `file://${process.argv[1]}`) {
  await runCoreBench(process.argv.includes('--quick'));
}
