// The persistence thread's start: load the projections' watermarks, open orders and the
// intake still waiting, project what the journal holds beyond them, load the books and tape.

import type pg from 'pg';
import { START_APPLICATION_NAME } from './connection-names.ts';
import type { MarketViews } from './market-views.ts';
import type { OpenOrdersCheckpoint } from './open-orders-checkpoint.ts';
import type { RedriveShard } from './pending-intake.ts';
import { serverRun, type StorageConnections } from './persistence-connections.ts';
import { GROUP_BYTES_MAX, GROUP_COMMANDS_MAX } from './persistence-pipeline.ts';
import { analyzeStale } from './planner-statistics.ts';
import { SAVED_AT_STOP } from './projector-load.ts';
import type { Projector } from './projector.ts';

/** The tables the first reads plan queries on, analyzed at start if stale (persistence/planner-statistics.ts analyzeStale). */
const STARTUP_TABLES = ['runtime.command_log', 'runtime.executions', 'runtime.trades', 'runtime.journal_batches', 'runtime.intake_batches'];

export interface StartParts {
  projector: Projector;
  views: MarketViews;
  connections: StorageConnections;
  /** Where the open orders' checkpoints are kept (DATA_DIR), or null: none. */
  checkpoint: OpenOrdersCheckpoint | null;
  /** The open orders saved at the last graceful stop, if the database still names them. */
  savedOpenOrders: { file: string; token: string } | null;
  shardCount: number;
  log: (level: 'info' | 'warn', message: string, fields: object) => void;
}

/** What the start found: what recovery re-drives, the batches the catch-up projected, the pending ids, the last commit stored. */
export interface StartResult {
  redrive: RedriveShard[];
  projectedBatches: number;
  pendingIds: { commandIds: string[]; orderIds: string[] };
  lastCommitNo: number;
}

/**
 * Loads storage and catches the projections up with the journal (a crash may have left
 * them behind). The books load beside the projector's load, on connections of their own.
 */
export async function loadStorage(parts: StartParts): Promise<StartResult> {
  const { projector, views, connections, checkpoint, savedOpenOrders, log } = parts;
  const client = await connections.connectProjector(START_APPLICATION_NAME);
  const lastCommit = await client.query<{ n: string | null }>('SELECT greatest((SELECT max(commit_no) FROM runtime.intake_batches), (SELECT max(commit_no) FROM runtime.journal_batches)) AS n');
  const phaseMs: Record<string, number> = {};
  let phaseStart = performance.now();
  const phase = async <T>(name: string, work: Promise<T>): Promise<T> => {
    const result = await work;
    phaseMs[name] = Math.round(performance.now() - phaseStart);
    phaseStart = performance.now();
    return result;
  };
  // Stale planner statistics can make the books' GROUP BY below sort a million rows on disk:
  // the lifecycle table is analyzed at once, on its own connection, beside the loads that do
  // not need it; the other tables the first reads plan on right after, not waited for.
  const analyzer = connections.connect(`${START_APPLICATION_NAME}-analyze`);
  const analyzed = analyzer.then((reader) => analyzeStale(reader, ['runtime.order_lifecycle_state']));
  void analyzed
    .then(async (first) => [...first, ...(await analyzeStale(await analyzer, STARTUP_TABLES))])
    .then(
      (tables) => log('info', 'planner statistics refreshed', { tables }),
      (error: unknown) => log('warn', 'planner statistics not refreshed', { err: error }),
    )
    .finally(() => analyzer.then((reader) => reader.end()).catch(() => undefined));
  // The displayed books' GROUP BY over the open orders runs beside the projector's load of
  // them, on its own connection, once the lifecycle table is analyzed (only faster reads:
  // a failed analyze is logged above, the start goes on): a snapshot with the projection
  // watermarks it holds, so the catch-up below applies to it exactly what it lacks. Run
  // after the catch-up instead, it would be the last step before the thread is loaded.
  const booksLoaded = analyzed
    .catch(() => [])
    .then(async () => {
      const reader = await connections.connect(`${START_APPLICATION_NAME}-books`);
      try {
        await views.books.load(reader);
      } finally {
        await reader.end().catch(() => undefined);
      }
    });
  booksLoaded.catch(() => undefined); // awaited below
  const note = checkpoint === null ? null : await checkpoint.readNote(client);
  const openOrders = await phase('openOrders', projector.load(client, savedOpenOrders, checkpoint === null ? null : { dir: checkpoint.dir, note }));
  if (checkpoint !== null && savedOpenOrders !== null && openOrders === SAVED_AT_STOP) await checkpoint.adoptSaved(client, savedOpenOrders);
  const pending = await phase('pendingIntake', projector.loadPending(client));
  const pendingIds = projector.pendingIds(); // before the catch-up takes the journaled ones
  await phase('books', booksLoaded);
  await projector.resendLost(client, await serverRun(client)); // nothing to send yet: names the run the catch-up's groups go to
  const projectedBatches = await phase('catchUp', catchUp(client, projector, views, parts.shardCount));
  views.publishAllBooks();
  await phase('tape', views.loadTape(client));
  await client.end();
  const redrive = projector.redrivePlan();
  log('info', 'persistence loaded', { projectedBatches, pendingIntake: pending, toRedrive: projector.pendingCount, openOrders, ownReads: projector.ownReadsLoaded, phaseMs });
  return { redrive, projectedBatches, pendingIds, lastCommitNo: Number(lastCommit.rows[0]!.n ?? 0) };
}

/** Materializes the journal beyond the projection watermarks, from the database (intake is pending already). */
async function catchUp(client: pg.Client, projector: Projector, views: MarketViews, shardCount: number): Promise<number> {
  let batches = 0;
  for (let shard = 0; shard < shardCount; shard++) {
    for (;;) {
      const page = await client.query<{ commit_no: string | null; first_sequence: string; last_sequence: string; command_count: number; event_count: number; payload: Buffer }>(
        'SELECT commit_no, first_sequence, last_sequence, command_count, event_count, payload FROM runtime.journal_batches WHERE shard_id = $1 AND first_sequence > $2 ORDER BY first_sequence LIMIT 100',
        [shard, projector.ingestedWatermark(shard)],
      );
      if (page.rows.length === 0) break;
      for (const row of page.rows) {
        const journal = {
          shard,
          firstSequence: Number(row.first_sequence),
          lastSequence: Number(row.last_sequence),
          commandCount: row.command_count,
          eventCount: row.event_count,
          payload: row.payload,
        };
        const update = projector.ingest({ commitNo: Number(row.commit_no ?? 0), intake: [], journals: [journal] });
        if (update !== null) views.books.apply(update); // the books' snapshot was loaded before: what it holds is skipped
      }
      batches += page.rows.length;
      if (projector.openCommands >= GROUP_COMMANDS_MAX || projector.openBytes >= GROUP_BYTES_MAX) {
        projector.seal();
        while (await projector.flush(client));
      }
    }
  }
  projector.seal();
  while (await projector.flush(client));
  return batches;
}
