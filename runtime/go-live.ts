// The start's last phase: the engines' and key filters' checkpoints while running, the
// shards run, the venue says ready, then the fresh memory is faulted in.

import type { MessagePort } from 'node:worker_threads';
import type { PersistenceControl } from '../core/persistence-control.ts';
import type { RecoveryRequest, ShardCheckpoint, ShardReady } from '../core/shard-messages.ts';
import { rememberTableKeys, VENUE_READY_WORD } from '../gateway/venue-memory.ts';
import { MAIN_APPLICATION_NAME } from '../persistence/connection-names.ts';
import { EngineCheckpoints, type CheckpointNote } from '../persistence/engine-checkpoints.ts';
import { KeyFilterCheckpoints, saveKeyFilters } from '../persistence/key-filter-snapshot.ts';
import { pgClient } from '../persistence/pg-client.ts';
import { prefaultInTurns } from './prefault.ts';
import { logger, venueThreads, type Venue } from './venue.ts';

export interface GoLive {
  control: PersistenceControl;
  recovery: readonly MessagePort[];
  checkpointing: boolean;
  checkpointNotes: (CheckpointNote | null)[];
  /** The main thread's ends of the shards' checkpoint buffer ports. */
  bufferPorts: MessagePort[];
  shardsReady: readonly ShardReady[];
  orderMemory: readonly SharedArrayBuffer[];
  /** Commands in storage that no saved key filter file covers (runtime/table-learning.ts). */
  uncovered: number;
  databaseReady: () => void;
  started: (step: string) => void;
}

export function goLive(venue: Venue, live: GoLive): void {
  const { config, memory } = venue;
  const { control, checkpointing } = live;
  let checkpoints: EngineCheckpoints | null = null;
  if (checkpointing) {
    checkpoints = new EngineCheckpoints({
      dataDir: config.dataDir,
      databaseUrl: venue.databaseUrl,
      shardControls: memory.shardControls,
      journalCommitted: (shard) => control.journalCommitted(shard),
      notes: live.checkpointNotes,
      logger,
      buffers: live.bufferPorts,
    });
    venue.checkpoints = checkpoints;
    for (const worker of venue.shards) worker.on('message', (message: ShardCheckpoint) => message.type === 'checkpoint' && checkpoints!.take(message));
  }
  for (const port of live.recovery) port.postMessage({ type: 'start' } satisfies RecoveryRequest);
  for (const worker of venueThreads(venue)) {
    worker.on('error', (error) => {
      logger.fatal({ err: error }, 'a venue thread failed');
      void venue.stopDatabase().finally(() => process.exit(1));
    });
  }
  if (config.dataDir !== '') {
    venue.keyFilterCheckpoints = new KeyFilterCheckpoints({
      every: config.keyFilterCheckpointCommands,
      taken: () => {
        let sum = 0;
        for (let gateway = 0; gateway < config.gatewayThreads; gateway++) sum += control.intakeCommitted(gateway);
        return sum;
      },
      uncovered: live.uncovered,
      save: () => checkpointKeyFilters(venue),
      onFailure: (error) => logger.warn({ err: error }, 'the key filters could not be saved: a start after a crash reads more of storage (the next save tries again)'),
    });
  }
  Atomics.store(new Int32Array(memory.venueControl), VENUE_READY_WORD, 1);
  live.started('ready');
  live.databaseReady();
  venue.persistence!.postMessage({ type: 'venue-ready' }); // it writes the open orders it loaded as the next checkpoint
  // After ready, not before: the first copies' buffers, room for the engine's state at start and as much again.
  checkpoints?.provide(live.shardsReady.map((ready) => 2 * ready.stateBytes));
  // And the rest of the fresh memory: the gateways' command stores and the shards' order
  // stores, faulted in here a slice per turn of the event loop (runtime/prefault.ts): their
  // page faults would slow the start (docs/decisions/0012-page-faults-after-ready.md). A page a thread reaches first is faulted there.
  venue.prefaulting = prefaultInTurns([...memory.commandStores, ...live.orderMemory]);
  void venue.prefaulting.done.then((ms) => logger.info({ ms: Math.round(ms) }, 'the command and order stores faulted in'));
}

/**
 * A save of the key filters while the venue runs (persistence/key-filter-snapshot.ts): the
 * tables' keys written since the last save go into the filters, on this thread between
 * pauses, then the filters go to DATA_DIR/key-filters.bin on the thread pool.
 */
async function checkpointKeyFilters(venue: Venue): Promise<void> {
  const began = performance.now();
  const client = pgClient({ connectionString: venue.databaseUrl, application_name: MAIN_APPLICATION_NAME });
  await client.connect();
  try {
    const pause = () => new Promise<void>((resolve) => setImmediate(resolve));
    const { mark, tableKeys, bytes } = await saveKeyFilters(venue.config.dataDir, client, venue.config.matchingShards, venue.memory.forgotten, () =>
      rememberTableKeys(venue.memory, venue.tableSince, pause),
    );
    logger.info({ mark, tableKeys, bytes, ms: Math.round(performance.now() - began) }, 'key filters saved (a checkpoint while running)');
  } finally {
    await client.end().catch(() => undefined);
  }
}
