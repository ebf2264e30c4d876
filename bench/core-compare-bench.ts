// Our matching core against the npm package nodejs-order-book on the same seeded
// stream, one thread, in the same process: 60% resting limits near a moving mid,
// 30% cancels of resting orders, 10% crossing IOCs, no hidden orders, no modifies
// (bench/lib/engine-compare.ts says why only these). Writes
// bench/results/core-compare.json and prints one line.
//
// Each engine builds the same warm-up book untimed, then the timed part runs once
// per repetition on a fresh engine; the figure is the median. Before any timing,
// an untimed pass through each engine tallies trades and reads the final book, and
// the two books are compared level by level (price, quantity, order count): equal
// books and equal trade counts are what make the ratio a comparison of the same
// work. Every timed run must leave its engine's verified book.

import os from 'node:os';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import type { MatchingEngine } from '../core/matching-engine.ts';
import {
  bookTotals,
  buildCompareStream,
  COMPARE_MIX,
  firstBookDifference,
  newOurEngine,
  newTheirBook,
  readOurBook,
  readTheirBook,
  runOurs,
  runOursTallied,
  runTheirs,
  runTheirsTallied,
  SHARD_PREFETCH_BATCH,
  theirOrderIds,
  type BookSides,
  type CompareStream,
  type ReplayTally,
} from './lib/engine-compare.ts';
import { writeResult } from './lib/results.ts';

const SEED = 20261123;
const WARMUP_ORDERS = 10_000;
const COMMANDS_FULL = 1_000_000;
const COMMANDS_QUICK = 100_000; // nodejs-order-book takes ~40 µs a command here: 200,000 twice was 15 s of the quick run's 2 minutes
const REPETITIONS_FULL = 5;
const REPETITIONS_QUICK = 2;

interface Verified {
  book: BookSides;
  warmup: ReplayTally;
  timed: ReplayTally;
}

interface RunTiming {
  ms: number;
  opsPerSecond: number;
}

function verifyOurs(stream: CompareStream): Verified {
  const engine = newOurEngine();
  const warmup = runOursTallied(engine, stream, 0, stream.warmup);
  const timed = runOursTallied(engine, stream, stream.warmup, stream.total);
  const { expected } = stream;
  if (engine.sequence !== expected.lastSequence || engine.orders.restingCount !== expected.restingOrders || warmup.trades + timed.trades !== expected.trades) {
    throw new Error(`our engine diverged from the generator: sequence ${engine.sequence}, resting ${engine.orders.restingCount}`);
  }
  return { book: readOurBook(engine, stream.ops.tickNanos), warmup, timed };
}

function verifyTheirs(stream: CompareStream, ids: string[]): Verified {
  const book = newTheirBook();
  const warmup = runTheirsTallied(book, stream.ops, ids, 0, stream.warmup);
  const timed = runTheirsTallied(book, stream.ops, ids, stream.warmup, stream.total);
  return { book: readTheirBook(book), warmup, timed };
}

/** A timed run must leave the book its engine's verification pass left. */
function checkSameBook(engine: string, book: BookSides, verified: BookSides): void {
  const difference = firstBookDifference(book, verified);
  if (difference) throw new Error(`${engine}: a timed run left another book than its verified pass: ${JSON.stringify(difference)}`);
}

/** `batch` 1: one command at a time; SHARD_PREFETCH_BATCH: as a shard drains its rings (see processSlots). */
function timeOurs(stream: CompareStream, verified: BookSides, batch: number): RunTiming {
  const engine: MatchingEngine = newOurEngine();
  // The untimed warm-up book goes in the way the timed part will, so that the feed's
  // code (prefetch included) is compiled before the clock starts.
  runOurs(engine, stream, 0, stream.warmup, batch);
  const started = performance.now();
  runOurs(engine, stream, stream.warmup, stream.total, batch);
  const ms = performance.now() - started;
  checkSameBook('our engine', readOurBook(engine, stream.ops.tickNanos), verified);
  return { ms, opsPerSecond: Math.round(((stream.total - stream.warmup) / ms) * 1000) };
}

function timeTheirs(stream: CompareStream, ids: string[], verified: BookSides): RunTiming {
  const book = newTheirBook();
  runTheirs(book, stream.ops, ids, 0, stream.warmup);
  const started = performance.now();
  runTheirs(book, stream.ops, ids, stream.warmup, stream.total);
  const ms = performance.now() - started;
  checkSameBook('nodejs-order-book', readTheirBook(book), verified);
  return { ms, opsPerSecond: Math.round(((stream.total - stream.warmup) / ms) * 1000) };
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = sorted.length >> 1;
  return sorted.length % 2 === 1 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
}

function summarize(runs: RunTiming[]): { opsPerSecondMedian: number; nanosPerOpMedian: number; runs: RunTiming[] } {
  const opsPerSecondMedian = Math.round(median(runs.map((run) => run.opsPerSecond)));
  return { opsPerSecondMedian, nanosPerOpMedian: Number((1e9 / opsPerSecondMedian).toFixed(1)), runs };
}

function theirVersion(): string {
  // The installed package, not the one package.json asks for, is what ran.
  const manifest = createRequire(import.meta.url)('nodejs-order-book/package.json') as { version: string };
  return manifest.version;
}

export async function runCoreCompareBench(quick: boolean): Promise<void> {
  const commands = quick ? COMMANDS_QUICK : COMMANDS_FULL;
  const repetitions = quick ? REPETITIONS_QUICK : REPETITIONS_FULL;
  const loadBefore = os.loadavg();
  const built = performance.now();
  const stream = buildCompareStream({ seed: SEED, restingOrders: WARMUP_ORDERS, commands });
  const ids = theirOrderIds(stream.ops);
  console.log(`core-compare: stream of ${stream.total} commands built in ${((performance.now() - built) / 1000).toFixed(1)} s`);

  // The verification passes also warm both engines' code up before the timed runs.
  const ours = verifyOurs(stream);
  const theirs = verifyTheirs(stream, ids);
  const difference = firstBookDifference(ours.book, theirs.book);
  const booksEqual = difference === null;

  const ourRuns: RunTiming[] = [];
  const ourShardRuns: RunTiming[] = [];
  const theirRuns: RunTiming[] = [];
  // Alternating spreads any outside load (this machine is shared) over both engines.
  for (let r = 0; r < repetitions; r++) {
    ourRuns.push(timeOurs(stream, ours.book, 1));
    ourShardRuns.push(timeOurs(stream, ours.book, SHARD_PREFETCH_BATCH));
    theirRuns.push(timeTheirs(stream, ids, theirs.book));
  }
  const oursSummary = summarize(ourRuns);
  const oursShardSummary = summarize(ourShardRuns);
  const theirsSummary = summarize(theirRuns);
  const ratio = Number((oursSummary.opsPerSecondMedian / theirsSummary.opsPerSecondMedian).toFixed(2));
  const shardRatio = Number((oursShardSummary.opsPerSecondMedian / theirsSummary.opsPerSecondMedian).toFixed(2));
  const totals = bookTotals(ours.book);
  const tradesEqual = ours.timed.trades === theirs.timed.trades && ours.timed.tradedQuantity === theirs.timed.tradedQuantity;

  writeResult('core-compare', {
    description: 'our matching core against nodejs-order-book on the same seeded stream, one thread, same process',
    quick,
    ...(quick ? { quickNote: `quick mode: ${commands.toLocaleString('en-US')} timed commands instead of ${COMMANDS_FULL.toLocaleString('en-US')}` } : {}),
    machine: { cpus: os.cpus().length, cpuModel: os.cpus()[0]?.model ?? 'unknown', node: process.version },
    loadAverage1m: { before: loadBefore[0], after: os.loadavg()[0] },
    stream: {
      description:
        '60% resting limits 1..500 ticks from a slowly moving mid (80% within 20), 30% cancels of resting orders, 10% IOC limits crossing the opposite best by 0..3 ticks; no hidden orders, no modifies',
      seed: SEED,
      commands,
      warmupRestingOrders: WARMUP_ORDERS,
      ...COMPARE_MIX,
      tickNanos: stream.ops.tickNanos,
      mix: stream.counts,
    },
    feeding: {
      ours: 'pre-encoded 128-byte command slots, MatchingEngine.process() one command at a time, as bench/core-bench.ts',
      oursAsShard: `the same slots as a shard drains its rings: MatchingEngine.prefetch() of the next ${SHARD_PREFETCH_BATCH} commands, then process() of each`,
      nodejsOrderBook: `nodejs-order-book ${theirVersion()}: limit({ id, side, size, price, timeInForce }) with GTC (resting) or IOC (crossing), cancel(id); prices in integer ticks, string ids built before timing`,
    },
    repetitions,
    ours: oursSummary,
    oursAsShard: oursShardSummary,
    prefetchBatch: SHARD_PREFETCH_BATCH,
    nodejsOrderBook: theirsSummary,
    ratio,
    ratioAsShard: shardRatio,
    booksEqual,
    firstDifference: difference,
    levelsCompared: {
      bids: Math.max(ours.book.bids.length, theirs.book.bids.length),
      asks: Math.max(ours.book.asks.length, theirs.book.asks.length),
    },
    finalBook: { ours: totals, nodejsOrderBook: bookTotals(theirs.book) },
    trades: { ours: ours.timed.trades, nodejsOrderBook: theirs.timed.trades },
    tradedQuantity: { ours: ours.timed.tradedQuantity, nodejsOrderBook: theirs.timed.tradedQuantity },
    tradesEqual,
    tradesInWarmup: { ours: ours.warmup.trades, nodejsOrderBook: theirs.warmup.trades },
    refusedCommands: { ours: ours.timed.refused, nodejsOrderBook: theirs.timed.refused },
  });
  const k = (n: number) => (n >= 1e6 ? `${(n / 1e6).toFixed(2)} M` : `${(n / 1e3).toFixed(1)} k`);
  console.log(
    `core-compare: ours ${k(oursSummary.opsPerSecondMedian)} ops/s (as a shard drains: ${k(oursShardSummary.opsPerSecondMedian)}), nodejs-order-book ${k(theirsSummary.opsPerSecondMedian)} ops/s, ` +
      `ratio ${ratio}x; booksEqual ${booksEqual} (${totals.bidLevels + totals.askLevels} levels, ${totals.restingOrders} orders); ` +
      `trades ${ours.timed.trades} / ${theirs.timed.trades}${quick ? ' (quick)' : ''}`,
  );
  if (!booksEqual || !tradesEqual || ours.timed.refused !== theirs.timed.refused) {
    console.error(`core-compare: the engines did different work; first book difference: ${JSON.stringify(difference)}`);
    process.exitCode = 1;
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) await runCoreCompareBench(process.argv.includes('--quick'));
