// The gateways' shared tables and key filters learn what storage holds: at start, beside
// the replay, and later the commands the start itself put in storage, by id.

import type pg from 'pg';
import { KeyFilterFeed } from '../core/key-filter.ts';
import type { VenueConfig } from '../core/config.ts';
import { clientOrderDigest, wordsOf } from '../gateway/keys.ts';
import { SessionRegistry } from '../gateway/sessions.ts';
import { attachForgotten, StoredMemory, tableKeeps, type VenueMemory } from '../gateway/venue-memory.ts';
import { MAIN_APPLICATION_NAME } from '../persistence/connection-names.ts';
import { intakeCommit, loadKeyFilters } from '../persistence/key-filter-snapshot.ts';
import { pgClient } from '../persistence/pg-client.ts';
import { commandsById, intakeKeysSince, knownOrders, ordersById, recentCommands, storedCommandKeys, storedOrderIds, type KnownOrder } from '../persistence/recovery.ts';
import type { OpenedSession } from './storage-start.ts';
import { logger } from './venue.ts';

/**
 * The most recent stored commands the shared tables learn at start (at most the tables'
 * keeps; the orders' part stays tableKeeps). A command the tables hold from storage
 * answers a retry by a read of storage, as one the key filters flag does, so holding more
 * of them spares no read: only an Idempotency-Key reused with another payload is refused
 * without one. The orders are what spares a cancel or modify its storage question. Reading
 * 2 × SHARED_TABLE_BUCKETS commands instead costs PostgreSQL about a CPU-second of a start
 * with a million resting orders (docs/decisions/0013-start-learns-recent-commands.md).
 */
const START_RECENT_COMMANDS = 16_384;

export interface TableLearning {
  /**
   * What storage held at start: settles with the commands in storage that no saved key
   * filter file covers (the next save comes when KEY_FILTER_CHECKPOINT_COMMANDS more than
   * these were taken since the start). Its failure fails the start where it is awaited.
   */
  learnedAtStart: Promise<number>;
  /** The commands the start put in storage (the projections' catch-up and the re-drive), and their orders. */
  learnPending: (ids: { commandIds: string[]; orderIds: string[] }) => Promise<void>;
}

/**
 * Starts the learning of what storage holds, four scans on four connections at once. The
 * commands taken but not yet in the command log (a crash) enter storage during the start:
 * the tables learn those by id once they are in (learnPending), rather than by a second
 * pass over all of storage or by holding this pass until the projections caught up. What
 * the tables hold needs no filter: a key they evict goes into it.
 */
export function learnStorage(config: VenueConfig, memory: VenueMemory, databaseUrl: string, session: OpenedSession): TableLearning {
  const keeps = tableKeeps(memory);
  const registry = new SessionRegistry(session.active, session.known);
  const withReader = async <T>(read: (reader: pg.Client) => Promise<T>): Promise<T> => {
    const reader = pgClient({ connectionString: databaseUrl, application_name: MAIN_APPLICATION_NAME });
    await reader.connect();
    try {
      return await read(reader);
    } finally {
      await reader.end();
    }
  };
  const learnOrder = (stored: StoredMemory, order: KnownOrder) =>
    stored.order(order.ids, order.shard, order.participantId, order.clientOrderId, order.clientOrderId === null ? [0, 0] : registry.numbersOf(order.runId, order.venueSessionId));
  const learnAtStart = async (): Promise<number> => {
    const stored = new StoredMemory(memory);
    // Every stored command's keys (and order's id) go into the filters of forgotten keys: a later miss
    // in the tables for one of them is checked in storage; any other miss is new, with no storage read.
    // The filters saved at a storage mark (a graceful stop, or a checkpoint while running: persistence/
    // key-filter-snapshot.ts) hold every key up to it, the intake records after it the rest; else
    // every stored command and order is scanned. Loaded before the tables, whose loading may evict into the filters.
    const saved = config.dataDir === '' ? 'no DATA_DIR' : await withReader((reader) => loadKeyFilters(config.dataDir, reader, memory.forgotten));
    // Fed in groups: millions of keys, each a cache miss (core/key-filter.ts addMany).
    const scopes = new KeyFilterFeed(attachForgotten(memory, 'idempotency'));
    const commandIds = new KeyFilterFeed(attachForgotten(memory, 'commandIds'));
    const orderIds = new KeyFilterFeed(attachForgotten(memory, 'orderDirectory'));
    const clientOrders = new KeyFilterFeed(attachForgotten(memory, 'clientOrders'));
    const scanned = typeof saved === 'string';
    const [remembered, , storedKeys, storedOrders, takenAfter] = await Promise.all([
      withReader((reader) => recentCommands(reader, Math.min(keeps, START_RECENT_COMMANDS), (scope, payloadHead, commandId) => stored.command(scope, payloadHead, commandId))),
      withReader((reader) => knownOrders(reader, keeps, (order) => learnOrder(stored, order))),
      !scanned
        ? -1
        : withReader((reader) =>
            storedCommandKeys(reader, (scope, commandId) => {
              scopes.push(scope, 0);
              commandIds.push(commandId, 0);
            }),
          ),
      !scanned
        ? -1
        : withReader((reader) =>
            storedOrderIds(
              reader,
              (orderId) => orderIds.push(orderId, 0),
              (participantId, clientOrderId) => clientOrders.push(wordsOf(clientOrderDigest(participantId, clientOrderId)), 0),
            ),
          ),
      scanned
        ? -1
        : withReader((reader) =>
            intakeKeysSince(reader, intakeCommit(saved.mark), (keys) => {
              scopes.push(keys.scope, 0);
              commandIds.push(keys.commandId, 0);
              if (keys.orderId !== null) orderIds.push(keys.orderId, 0);
              if (keys.clientOrder !== null) clientOrders.push(wordsOf(clientOrderDigest(keys.clientOrder.participantId, keys.clientOrder.clientOrderId)), 0);
            }),
          ),
    ]);
    for (const feed of [scopes, commandIds, orderIds, clientOrders]) feed.flush();
    logger.info(
      { remembered, storedKeys, storedOrders, takenAfter, keyFilters: scanned ? `scanned (${saved})` : `saved at ${saved.mark}` },
      'shared tables reloaded with the most recent commands; the key filters hold every stored one',
    );
    return scanned ? storedKeys : takenAfter;
  };
  const learnedAtStart = learnAtStart();
  learnedAtStart.catch(() => undefined); // awaited by the start, where its failure fails it
  const learnPending = async (ids: { commandIds: string[]; orderIds: string[] }) => {
    const stored = new StoredMemory(memory);
    const commands = await withReader((reader) => commandsById(reader, ids.commandIds, (scope, payloadHead, commandId) => stored.command(scope, payloadHead, commandId)));
    const orders = await withReader((reader) => ordersById(reader, ids.orderIds, (order) => learnOrder(stored, order)));
    logger.info({ commands, orders }, 'the commands the start put in storage, and their orders, learned by the shared tables');
  };
  return { learnedAtStart, learnPending };
}
