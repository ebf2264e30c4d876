// Where this start's books start from: the engines and open orders the last graceful stop
// saved, else each shard's last checkpoint the journal reaches, else an empty book.

import type pg from 'pg';
import type { ShardThreadData } from '../core/shard-messages.ts';
import type { VenueConfig } from '../core/config.ts';
import { checkpointPath, readCheckpointNotes, type CheckpointNote } from '../persistence/engine-checkpoints.ts';
import { engineSnapshotPath } from '../persistence/engine-snapshot.ts';
import { BOOK_SNAPSHOT_SETTING, journalSequences, storageMark, takeSnapshotNote } from '../persistence/key-filter-snapshot.ts';
import { openOrdersPath } from '../persistence/open-orders-snapshot.ts';
import type { PersistenceThreadData } from '../persistence/persistence-messages.ts';

export interface RestorePoint {
  /** The note of the files the last graceful stop saved, if they serve this start; else why not. */
  books: { token: string; mark: string } | string;
  /** The checkpoint each shard's last note names (persistence/engine-checkpoints.ts), journal reached or not. */
  checkpointNotes: (CheckpointNote | null)[];
  /** Each shard's last journal sequence in storage. */
  journalEnd: number[];
  /** The engine a shard's thread loads, if any. */
  snapshot: (shardId: number) => ShardThreadData['snapshot'];
  /** The sequence a crash now would replay a shard from (ShardThreadData.checkpointFrom). */
  checkpointFrom: (shardId: number) => number;
  /** The open orders the persistence thread loads, if the stop's files serve. */
  openOrders: PersistenceThreadData['openOrders'];
}

/**
 * The stop's saved files serve this start if storage is still where it was then (the note
 * is consumed: one start per save); else the projector reads the open orders' table and
 * each shard replays its journal after its last checkpoint if the journal reaches it, else all of it.
 */
export async function chooseRestorePoint(client: pg.ClientBase, config: VenueConfig): Promise<RestorePoint> {
  const books = config.dataDir === '' ? 'no DATA_DIR' : await takeSnapshotNote(client, BOOK_SNAPSHOT_SETTING, config.matchingShards);
  const checkpointNotes = config.dataDir === '' ? [] : await readCheckpointNotes(client, config.matchingShards);
  const journalEnd = typeof books === 'string' ? journalSequences(await storageMark(client, config.matchingShards)) : journalSequences(books.mark);
  // The checkpoint the database names for a shard, if the journal reaches it: what a crash would start from.
  const usableCheckpoint = (shardId: number) => {
    const note = checkpointNotes[shardId];
    return note === null || note === undefined || note.sequence > journalEnd[shardId]! ? null : note;
  };
  return {
    books,
    checkpointNotes,
    journalEnd,
    snapshot: (shardId) => {
      if (typeof books !== 'string') return { file: engineSnapshotPath(config.dataDir, shardId), token: books.token, sequence: journalEnd[shardId]!, source: 'stop' };
      const note = usableCheckpoint(shardId);
      return note === null ? null : { file: checkpointPath(config.dataDir, shardId, note.slot), token: note.token, sequence: note.sequence, source: 'checkpoint' };
    },
    // A stop's saved engine becomes the shard's checkpoint once loaded (adoptSavedEngines).
    checkpointFrom: (shardId) => (typeof books === 'string' ? (usableCheckpoint(shardId)?.sequence ?? 0) : journalEnd[shardId]!),
    openOrders: typeof books === 'string' ? null : { file: openOrdersPath(config.dataDir), token: books.token },
  };
}
