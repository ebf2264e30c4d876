// How the venue stops: on SIGINT/SIGTERM no new commands, in-flight ones finish, the threads
// drain and stop, what the next start can reuse is saved, exit 0; a failed start exits 1.

import { randomUUID } from 'node:crypto';
import type { Worker } from 'node:worker_threads';
import { Doorbell } from '../core/doorbell.ts';
import type { ShardSave, ShardSaved } from '../core/shard-messages.ts';
import { SHARD_STOP_WORD } from '../core/shard-runner.ts';
import type { GatewayMessage } from '../gateway/gateway-thread.ts';
import { rememberTableKeys, VENUE_DRAINING_WORD, VENUE_READY_WORD } from '../gateway/venue-memory.ts';
import { MAIN_APPLICATION_NAME } from '../persistence/connection-names.ts';
import { engineSnapshotPath } from '../persistence/engine-snapshot.ts';
import { BOOK_SNAPSHOT_SETTING, journalSequences, noteSnapshot, saveKeyFilters, storageMark } from '../persistence/key-filter-snapshot.ts';
import { openOrdersPath } from '../persistence/open-orders-snapshot.ts';
import type { PersistenceSave, PersistenceSaved } from '../persistence/persistence-messages.ts';
import { pgClient } from '../persistence/pg-client.ts';
import { once } from './thread-messages.ts';
import { logger, venueThreads, type Venue } from './venue.ts';

const SHUTDOWN_TIMEOUT_MS = 30_000;

/** The venue's books as the stopped threads saved them, under one token. */
type SavedBooks = { token: string; sequences: number[]; bytes: number; openOrders: number };

/**
 * SIGINT and SIGTERM stop the venue once (the one `venueRef` holds, or none yet) and end
 * the process: 0 when stopped, 1 past SHUTDOWN_TIMEOUT_MS or on a failure (the database stopped first).
 */
export function stopOnSignals(venueRef: { venue: Venue | null }): void {
  let stopping = false;
  const shutdown = (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'shutting down: no new commands, finishing those in flight');
    const timer = setTimeout(() => {
      logger.error('shutdown timed out');
      void (venueRef.venue?.stopDatabase() ?? Promise.resolve()).finally(() => process.exit(1));
    }, SHUTDOWN_TIMEOUT_MS);
    const venue = venueRef.venue;
    (venue === null ? Promise.resolve() : stopVenue(venue)).then(
      () => {
        clearTimeout(timer);
        logger.info('venue stopped');
        process.exit(0);
      },
      (error: unknown) => {
        logger.error({ err: error }, 'shutdown failed');
        void (venue?.stopDatabase() ?? Promise.resolve()).finally(() => process.exit(1));
      },
    );
  };
  process.on('SIGINT', () => shutdown('SIGINT'));
  process.on('SIGTERM', () => shutdown('SIGTERM'));
}

/** A start that failed: the threads it started end, the database stops, exit 1. */
export async function abandonStart(venue: Venue | null, error: unknown): Promise<never> {
  logger.fatal({ err: error }, 'the venue could not start');
  if (venue !== null) await Promise.all(venueThreads(venue).map((worker) => worker.terminate()));
  await (venue?.stopDatabase() ?? Promise.resolve()).catch(() => undefined);
  process.exit(1);
}

async function stopVenue(venue: Venue): Promise<void> {
  if (venue.guardTimer !== null) clearInterval(venue.guardTimer);
  venue.prefaulting?.stop(); // nothing more to fault in for a venue that stops
  const control = new Int32Array(venue.memory.venueControl);
  Atomics.store(control, VENUE_DRAINING_WORD, 1);
  await Promise.all(
    venue.gateways.map((worker, id) => {
      const drained = once<GatewayMessage>(worker, (m) => m.type === 'drained', `gateway ${id} drain`);
      worker.postMessage({ type: 'drain' });
      return drained;
    }),
  );
  await Promise.all(
    venue.shards.map((worker, id) => {
      const stopped = once<{ type: string }>(worker, (m) => m.type === 'stopped', `shard ${id} stop`);
      Atomics.store(new Int32Array(venue.memory.shardControls[id]!), SHARD_STOP_WORD, 1);
      new Doorbell(venue.memory.shardDoorbells[id]!).ringAlways();
      return stopped;
    }),
  );
  for (const worker of [venue.persistence, venue.read]) {
    if (worker === null) continue;
    const stopped = once<{ type: string }>(worker, (m) => m.type === 'stopped', 'storage thread stop');
    worker.postMessage({ type: 'stop' });
    await stopped;
  }
  // Every command is journaled now: a checkpoint being written is named (or dropped) before the stop goes on.
  await venue.checkpoints?.close();
  await venue.keyFilterCheckpoints?.close(); // the stop saves the filters itself, below
  // A stop during recovery keeps nothing: the books and filters may not be whole yet.
  const keep = venue.config.dataDir !== '' && Atomics.load(control, VENUE_READY_WORD) === 1;
  const books = keep ? await saveBooks(venue) : null;
  await Promise.all(venueThreads(venue).map((worker) => worker.terminate()));
  if (keep) await keepForNextStart(venue, books);
  await venue.stopDatabase();
}

/**
 * Each stopped shard writes its engine (persistence/engine-snapshot.ts) and the stopped
 * persistence thread the projector's open orders (persistence/open-orders-snapshot.ts),
 * all at once, under one token; null if any could not.
 */
async function saveBooks(venue: Venue): Promise<SavedBooks | null> {
  const token = randomUUID();
  const ask = <T extends { type: string }>(worker: Worker, request: ShardSave | PersistenceSave, what: string) => {
    const answer = once<T>(worker, (m) => m.type === 'saved' || m.type === 'save-failed', what);
    worker.postMessage(request);
    return answer;
  };
  const [projector, ...shards] = await Promise.all([
    ask<PersistenceSaved>(venue.persistence!, { type: 'save', file: openOrdersPath(venue.config.dataDir), token }, 'open orders save'),
    ...venue.shards.map((worker, id) => ask<ShardSaved>(worker, { type: 'save', file: engineSnapshotPath(venue.config.dataDir, id), token }, `shard ${id} save`)),
  ]);
  if (projector!.type === 'save-failed' || shards.some((answer) => answer.type === 'save-failed')) {
    const failed = [projector!, ...shards].find((answer) => answer.type === 'save-failed') as { message: string };
    logger.warn({ err: failed.message }, 'the order books could not be saved: the next start replays the journals and reads the open orders from storage');
    return null;
  }
  const saved = shards as Extract<ShardSaved, { type: 'saved' }>[];
  const openOrders = projector as Extract<PersistenceSaved, { type: 'saved' }>;
  return { token, sequences: saved.map((answer) => answer.sequence), bytes: openOrders.bytes + saved.reduce((sum, answer) => sum + answer.bytes, 0), openOrders: openOrders.count };
}

/**
 * Every command is committed and projected now. The shards' saved engines are noted if
 * they hold exactly the journal storage holds; the keys the tables still hold go into
 * the filters, which then hold every stored key, and are saved (persistence/key-filter-snapshot.ts).
 * A failure costs the next start its replay or its full scan only.
 */
async function keepForNextStart(venue: Venue, books: SavedBooks | null): Promise<void> {
  const client = pgClient({ connectionString: venue.databaseUrl, application_name: MAIN_APPLICATION_NAME });
  try {
    await client.connect();
    if (books !== null) {
      const mark = await storageMark(client, venue.config.matchingShards);
      if (journalSequences(mark).join() === books.sequences.join()) {
        await noteSnapshot(client, BOOK_SNAPSHOT_SETTING, books.token, mark);
        logger.info({ mark, bytes: books.bytes, openOrders: books.openOrders }, 'order books and open orders saved for the next start');
      } else logger.warn({ mark, sequences: books.sequences }, "the saved order books are not at the journal's end: the next start replays the journals");
    }
    const { file, mark, tableKeys } = await saveKeyFilters(venue.config.dataDir, client, venue.config.matchingShards, venue.memory.forgotten, () => rememberTableKeys(venue.memory, venue.tableSince));
    logger.info({ file, mark, tableKeys }, 'key filters saved for the next start');
  } catch (error) {
    logger.warn({ err: error }, 'what the next start could reuse was not saved: it replays the journals and scans storage');
  } finally {
    await client.end().catch(() => undefined);
  }
}
