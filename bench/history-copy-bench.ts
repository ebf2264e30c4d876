// The projection groups' history (command_log, executions, trades, lifecycle rows) sent
// two ways, alternated on one PostgreSQL: as today, one script in one round trip
// (persistence/pg-script.ts), and through pg-copy-streams (BEGIN with the first COPY,
// each COPY its own streamed query, the statements and COMMIT last). Both run the same
// sealed groups (persistence/projection-group.ts sealedGroup) on the projector's session,
// while a second client on the same thread commits journal-like transactions waiting
// for the WAL, as the journal writer does beside the flusher on the persistence thread.
// Reported per way, the groups sent alone: rows/s, PostgreSQL backend CPU per row (/proc
// of the backend), this process's CPU per row, group latency; sent again beside the
// journal-like commits: rows/s and the journal commits' latency.
//
//   node --import tsx bench/history-copy-bench.ts [commandsPerGroup=200] [groups=100] [rounds=3]

import { readFileSync } from 'node:fs';
import os from 'node:os';
import { pipeline } from 'node:stream/promises';
import pg from 'pg';
import { from as copyFrom } from 'pg-copy-streams';
import { packCurrency } from '../core/command-slot.ts';
import { STATE_FILLED, STATE_OPEN } from '../core/codes.ts';
import { parseUuidInto } from '../core/uuid.ts';
import { BinaryCopy } from '../persistence/copy-binary.ts';
import { startEmbeddedPostgres } from '../persistence/embedded-postgres.ts';
import { migrate } from '../persistence/migrations.ts';
import { ACCOUNT_ID, INSTRUMENT_ID, ORDER_ID, PARTICIPANT_ID, type OrderState } from '../persistence/order-changes.ts';
import { runScript } from '../persistence/pg-script.ts';
import { PROJECTOR_SESSION_SQL, Rows, SessionBytes, sealedGroup } from '../persistence/projection-group.ts';
import { scratchFolder } from './lib/leftovers.ts';
import { writeResult } from './lib/results.ts';

const COMMANDS = Number(process.argv[2] ?? 200);
const GROUPS = Number(process.argv[3] ?? 100);
const ROUNDS = Number(process.argv[4] ?? 3);
const TICK_MS = 1000 / 100; // USER_HZ
const sessions = new SessionBytes(() => ['run-1', 'session-1']);

const uuidBytes = (kind: number, n: number) => Buffer.from(`${kind.toString(16).padStart(8, '0')}00004000800${n.toString(16).padStart(13, '0')}`, 'hex');
function uuidInto(kind: number, n: number, target: Int32Array, at: number): void {
  parseUuidInto(`${kind.toString(16).padStart(8, '0')}-0000-4000-8${n.toString(16).padStart(15, '0').slice(0, 3)}-${n.toString(16).padStart(15, '0').slice(3)}`, target, at);
}

/** Order n, as the projector keeps it. */
function order(n: number): OrderState {
  const ids = new Int32Array(16);
  uuidInto(1, n, ids, ORDER_ID);
  uuidInto(2, n % 8, ids, INSTRUMENT_ID);
  uuidInto(3, n % 5, ids, PARTICIPANT_ID);
  uuidInto(4, n % 5, ids, ACCOUNT_ID);
  return {
    ids,
    runNo: 1,
    sessionNo: 1,
    side: n % 2,
    orderType: 0,
    timeInForce: 0,
    state: STATE_OPEN,
    priceNanos: 100_000_000_000 + (n % 7) * 1_000_000_000,
    quantity: 10,
    filled: 0,
    currency: packCurrency('USD'),
    shard: n % 2,
    engineOrderId: `e-${n}`,
    createdAtUs: 1_800_000_000_000_000 + n,
    updatedAtUs: 1_800_000_000_000_000 + n,
    lastSequence: n,
    clientOrderId: Buffer.from(`c-${n}`),
    fresh: true,
    clientOrderKnown: true,
  };
}

/**
 * Group g of a round: COMMANDS submits (a command_log row and a new lifecycle row each);
 * every second one crosses an order of the group before (two executions, a trade, that
 * order's row updated), as the venue's mix of about one trade per two orders.
 */
function group(g: number, previous: OrderState[]): { flush: ReturnType<typeof sealedGroup>; orders: OrderState[] } {
  const rows = new Rows();
  const orders: OrderState[] = [];
  for (let k = 0; k < COMMANDS; k++) {
    const n = g * COMMANDS + k + 1;
    const o = order(n);
    orders.push(o);
    rows.lifecycle.set(`n${n}`, o);
    rows.commands
      .row(24)
      .range(uuidBytes(5, n), 0, 16)
      .range(uuidBytes(6, n), 0, 16)
      .range(Buffer.alloc(32, n & 0xff), 0, 32)
      .text('trader-a')
      .text('bench')
      .text(`k-${n}`)
      .smallint(0)
      .smallint(1)
      .smallint(n % 2)
      .range(uuidBytes(1, n), 0, 16)
      .range(uuidBytes(2, n % 8), 0, 16)
      .text(`c-${n}`)
      .timestampUs(1_800_000_000_000_000 + n)
      .bigint(n)
      .bigint(n)
      .bigint(1 + (n >> 4))
      .smallint(1)
      .text(null)
      .timestampUs(1_800_000_000_000_000 + n)
      .integer(0)
      .integer(256)
      .bigint(1 + (n >> 4))
      .smallint(0)
      .integer(n & 0xffff);
    const maker = previous[k];
    if (k % 2 === 1 && maker !== undefined) {
      maker.state = STATE_FILLED;
      maker.filled = maker.quantity;
      maker.lastSequence = n;
      maker.updatedAtUs += 1000;
      rows.lifecycle.set(`m${n}`, maker);
      for (const [x, mine, other, liquidity] of [
        [0, o, maker, 'TAKER'],
        [1, maker, o, 'MAKER'],
      ] as const) {
        rows.executions
          .row(16)
          .range(uuidBytes(7, 2 * n + x), 0, 16)
          .smallint(n % 2)
          .bigint(2 * n + x)
          .range(uuidBytes(5, n), 0, 16)
          .range(uuidBytes(8, n), 0, 16)
          .uuidWords(mine.ids, ORDER_ID)
          .uuidWords(other.ids, ORDER_ID)
          .uuidWords(mine.ids, INSTRUMENT_ID)
          .uuidWords(mine.ids, PARTICIPANT_ID)
          .uuidWords(mine.ids, ACCOUNT_ID)
          .text(mine.side === 0 ? 'BUY' : 'SELL')
          .text(liquidity)
          .bigint(10)
          .bigint(maker.priceNanos)
          .text('USD')
          .timestampUs(1_800_000_000_000_000 + n);
      }
      rows.trades
        .row(20)
        .range(uuidBytes(8, n), 0, 16)
        .smallint(n % 2)
        .bigint(2 * n)
        .range(uuidBytes(5, n), 0, 16)
        .range(uuidBytes(7, 2 * n), 0, 16)
        .text('run-1')
        .text('session-1')
        .uuidWords(o.ids, INSTRUMENT_ID)
        .uuidWords(o.ids, ORDER_ID)
        .uuidWords(maker.ids, ORDER_ID)
        .uuidWords(o.ids, PARTICIPANT_ID)
        .uuidWords(o.ids, ACCOUNT_ID)
        .uuidWords(maker.ids, PARTICIPANT_ID)
        .uuidWords(maker.ids, ACCOUNT_ID)
        .text('BUY')
        .bigint(10)
        .bigint(maker.priceNanos)
        .text('USD')
        .timestampUs(1_800_000_000_000_000 + n)
        .bigint(n);
    }
  }
  rows.watermarks.set(0, (g + 1) * COMMANDS).set(1, (g + 1) * COMMANDS);
  return { flush: sealedGroup(rows, (g + 1) * COMMANDS, (g + 1) * COMMANDS, new Set(), sessions), orders };
}

/**
 * A sealed group through pg-copy-streams, in one transaction: BEGIN goes with the first
 * COPY's query, each COPY is streamed, and the other statements (moved after the COPYs:
 * none reads what a later COPY writes) go with COMMIT in one query.
 */
async function runStreamed(client: pg.ClientBase, sql: string, copies: Buffer[]): Promise<void> {
  const statements = sql.split(';\n');
  const rest: string[] = [];
  let c = 0;
  try {
    for (const statement of statements) {
      const copy = /^COPY (.+) FROM STDIN \(FORMAT binary\)$/s.exec(statement);
      if (copy === null) rest.push(statement);
      else {
        const stream = client.query(copyFrom(`${c === 0 ? 'BEGIN;\n' : ''}${statement}`));
        await pipeline([copies[c++]!], stream);
      }
    }
    await client.query(`${rest.join(';\n')};\nCOMMIT`);
  } catch (error) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw error;
  }
}

function backendCpuMs(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(fields[11]) + Number(fields[12])) * TICK_MS; // utime, stime
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[values.length >> 1]!;
const percentile = (values: number[], p: number) => [...values].sort((a, b) => a - b)[Math.min(values.length - 1, Math.floor(values.length * p))] ?? 0;

/** The round's groups, sent one way; `journal` set: with the journal-like commits beside them. */
async function send(way: 'script' | 'stream', projector: pg.Client, projectorPid: number, journal: pg.Client | null): Promise<Record<string, number>> {
  await projector.query('TRUNCATE runtime.command_log, runtime.executions, runtime.trades, runtime.order_lifecycle_state; CHECKPOINT');
  // Groups made first (the encoding is the same either way), sent after.
  const groups: ReturnType<typeof sealedGroup>[] = [];
  let previous: OrderState[] = [];
  for (let g = 0; g < GROUPS; g++) {
    const made = group(g, previous);
    groups.push(made.flush);
    previous = made.orders;
  }
  const rows = groups.reduce((sum, flush) => sum + flush.copies.reduce((s, data) => s + countRows(data), 0), 0);
  let journaling = journal !== null;
  const journalUs: number[] = [];
  const payload = new BinaryCopy().row(2).bigint(1).bytea(Buffer.alloc(4096, 7)).finish();
  const journalLoop = (async () => {
    while (journaling) {
      const at = performance.now();
      await runScript(journal!, 'COPY bench_journal (commit_no, payload) FROM STDIN (FORMAT binary)', [payload]);
      journalUs.push((performance.now() - at) * 1000);
      await new Promise((resolve) => setTimeout(resolve, 2)); // about the venue's commit rate at its load
    }
  })();
  const groupUs: number[] = [];
  const cpu0 = backendCpuMs(projectorPid);
  const client0 = process.cpuUsage();
  const started = performance.now();
  for (const flush of groups) {
    const at = performance.now();
    if (way === 'script') await runScript(projector, flush.sql, flush.copies);
    else await runStreamed(projector, flush.sql, flush.copies);
    groupUs.push((performance.now() - at) * 1000);
  }
  const seconds = (performance.now() - started) / 1000;
  const backendMs = backendCpuMs(projectorPid) - cpu0;
  const clientCpu = process.cpuUsage(client0);
  journaling = false;
  await journalLoop;
  const stored = (await projector.query<{ n: string }>('SELECT (SELECT count(*) FROM runtime.command_log) + (SELECT count(*) FROM runtime.executions) + (SELECT count(*) FROM runtime.trades) AS n'))
    .rows[0]!.n;
  const expected = groups.length * COMMANDS + (groups.length - 1) * (COMMANDS / 2) * 3; // commands; two executions and a trade per cross
  if (Number(stored) !== expected) throw new Error(`${way}: stored ${stored} history rows, not ${expected}`);
  if (journal !== null) return { rowsPerSecondBesideJournal: Math.round(rows / seconds), journalP50Us: Math.round(median(journalUs)), journalP99Us: Math.round(percentile(journalUs, 0.99)) };
  return {
    rowsPerSecond: Math.round(rows / seconds),
    backendUsPerRow: +((backendMs * 1000) / rows).toFixed(2),
    clientUsPerRow: +((clientCpu.user + clientCpu.system) / rows).toFixed(2),
    groupP50Us: Math.round(median(groupUs)),
    groupP99Us: Math.round(percentile(groupUs, 0.99)),
    rows,
  };
}

/** One round of a way: alone (throughput and CPU per row), then beside the journal-like commits (their latency). */
async function round(way: 'script' | 'stream', projector: pg.Client, projectorPid: number, journal: pg.Client): Promise<Record<string, number>> {
  return { ...(await send(way, projector, projectorPid, null)), ...(await send(way, projector, projectorPid, journal)) };
}

/** The rows of one binary COPY's data (header 19 bytes, then rows until the -1 trailer). */
function countRows(data: Buffer): number {
  let at = 19;
  let rows = 0;
  for (;;) {
    const fields = data.readInt16BE(at);
    if (fields === -1) return rows;
    at += 2;
    for (let f = 0; f < fields; f++) {
      const length = data.readInt32BE(at);
      at += 4 + Math.max(0, length);
    }
    rows++;
  }
}

export async function runHistoryCopyBench(): Promise<Record<string, unknown>> {
  const folder = scratchFolder('history-copy-');
  const server = await startEmbeddedPostgres(folder, () => undefined, { template: true });
  const projector = new pg.Client({ connectionString: server.url, application_name: 'bench-projector' });
  const journal = new pg.Client({ connectionString: server.url, application_name: 'bench-journal' });
  try {
    await projector.connect();
    await journal.connect();
    await migrate(projector);
    await projector.query(PROJECTOR_SESSION_SQL);
    await projector.query('CREATE TABLE IF NOT EXISTS bench_journal (commit_no bigint, payload bytea)');
    const pid = (await projector.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid;
    const figures: Record<'script' | 'stream', Record<string, number>[]> = { script: [], stream: [] };
    await round('script', projector, pid, journal); // warm-up: JIT, caches, relation extension
    for (let r = 0; r < ROUNDS; r++) {
      for (const way of r % 2 === 0 ? (['script', 'stream'] as const) : (['stream', 'script'] as const)) {
        const result = await round(way, projector, pid, journal);
        figures[way].push(result);
        console.log(`round ${r + 1} ${way.padEnd(6)} ${JSON.stringify(result)}`);
      }
    }
    const medianOf = (way: 'script' | 'stream') => Object.fromEntries(Object.keys(figures[way][0]!).map((key) => [key, median(figures[way].map((f) => f[key]!))]));
    const result = { commandsPerGroup: COMMANDS, groups: GROUPS, rounds: ROUNDS, script: medianOf('script'), stream: medianOf('stream'), runs: figures };
    console.log(`medians of ${ROUNDS}: script ${JSON.stringify(result.script)}\n              stream ${JSON.stringify(result.stream)}`);
    return result;
  } finally {
    await projector.end().catch(() => undefined);
    await journal.end().catch(() => undefined);
    await server.stop();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const result = await runHistoryCopyBench();
  writeResult(`history-copy-${COMMANDS}`, { machine: { cpus: os.cpus().length, node: process.version }, ...result });
}
