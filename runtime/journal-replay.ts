// Each shard's book brought to its journal's end: the engine its thread restored, then the
// journal after it replayed, every shard at once, each on its own connection.

import type { MessagePort, Worker } from 'node:worker_threads';
import type pg from 'pg';
import type { ShardReady } from '../core/shard-messages.ts';
import type { VenueConfig } from '../core/config.ts';
import { MAIN_APPLICATION_NAME } from '../persistence/connection-names.ts';
import { adoptSavedEngines } from '../persistence/engine-checkpoints.ts';
import { engineSnapshotPath } from '../persistence/engine-snapshot.ts';
import { pgClient } from '../persistence/pg-client.ts';
import { readJournal } from '../persistence/recovery.ts';
import type { RestorePoint } from './restore-point.ts';
import { once, pipelinedAsker } from './thread-messages.ts';
import { logger } from './venue.ts';

export interface RestoredBooks {
  shardsReady: ShardReady[];
  /** Each shard's last journaled sequence, which its book now holds. */
  journalDurable: number[];
}

export async function restoreBooks(restoring: {
  config: VenueConfig;
  databaseUrl: string;
  /** The start's connection, for the adoption of the stop's saved engines as checkpoints. */
  client: pg.ClientBase;
  shards: readonly Worker[];
  recovery: readonly MessagePort[];
  restore: RestorePoint;
  checkpointing: boolean;
  started: (step: string) => void;
}): Promise<RestoredBooks> {
  const { config, databaseUrl, client, shards, recovery, restore, checkpointing, started } = restoring;
  const { journalEnd, checkpointNotes } = restore;
  const shardsReady = await Promise.all(shards.map((worker, id) => once<ShardReady>(worker, (m) => m.type === 'ready', `shard ${id}`)));
  let replayed = 0;
  started('shardsLoaded');
  const replayMs = recovery.map(() => 0);
  const journalDurable = await Promise.all(
    recovery.map(async (port, shard) => {
      const replayStarted = performance.now();
      const held = shardsReady[shard]!.restored === null ? 0 : shardsReady[shard]!.sequence;
      if (held === journalEnd[shard]) return held;
      const reader = pgClient({ connectionString: databaseUrl, application_name: MAIN_APPLICATION_NAME });
      await reader.connect();
      const replay = pipelinedAsker(port);
      try {
        return await readJournal(reader, shard, held, async (payload, bytes, lastSequence) => {
          const answer = await replay.ask({ type: 'replay', payload, bytes }, [payload]);
          if (answer.type !== 'replayed') throw new Error(`shard ${shard} answered a replay with ${answer.type}`);
          if (answer.sequence !== lastSequence) throw new Error(`shard ${shard} replayed up to ${answer.sequence}, the journal holds ${lastSequence}`);
          replayed += answer.commands;
          return answer.payload; // the page's buffer, back for the next page
        });
      } finally {
        replay.close();
        replayMs[shard] = Math.round(performance.now() - replayStarted);
        await reader.end();
      }
    }),
  );
  started('books');
  const stopBooks = restore.books;
  if (checkpointing && typeof stopBooks !== 'string') {
    const saved = shardsReady
      .filter((ready) => ready.restored === 'stop')
      .map((ready) => ({ shard: ready.shardId, file: engineSnapshotPath(config.dataDir, ready.shardId), token: stopBooks.token, sequence: journalEnd[ready.shardId]! }));
    await adoptSavedEngines(client, config.dataDir, saved, checkpointNotes, logger);
  }
  logger.info(
    {
      replayed,
      journalDurable,
      loadMs: shardsReady.map((ready) => ready.loadMs),
      replayMs,
      books: shardsReady.map((ready) =>
        ready.restored === 'stop'
          ? 'saved at the last stop'
          : ready.restored === 'checkpoint'
            ? `checkpoint at ${ready.sequence}, then the journal to ${journalDurable[ready.shardId]}`
            : `replayed (${ready.why ?? (checkpointNotes[ready.shardId] ? `the checkpoint at ${checkpointNotes[ready.shardId]!.sequence} is past the journal's end` : (stopBooks as string))})`,
      ),
    },
    'order books restored',
  );
  return { shardsReady, journalDurable };
}
