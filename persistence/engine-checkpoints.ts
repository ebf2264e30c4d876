// Checkpoints of the shards' engines while the venue runs, so that a start after a crash
// replays only the journal written since the last one instead of the whole journal (with
// a million resting orders that replay was 11.4 s of an 11.8 s start on the 2-core
// machine, measured; a graceful stop saves the engines anyway, core/engine-snapshot.ts).
//
// Every ENGINE_CHECKPOINT_COMMANDS commands a shard copies its engine between two
// batches (the copy is the shard's only pause) and hands the copy to the main thread,
// which writes it here, on the thread pool, to one of two files per shard: the one the
// database does not name, so the named one is never overwritten. Once the journal is
// durable up to the copy's sequence, the database is told: `engine_checkpoint_<shard>`
// in runtime.venue_settings, "<token> <slot> <sequence>". Only then may a start use the
// file: the journal up to that sequence is what the engine was built from, and stored
// journal batches never change. A checkpoint whose journal never became durable (a crash
// first, storage down) is never named and never used.
//
// At start, without a graceful stop's files: a shard whose note names a sequence the
// stored journal reaches loads that file (token, shard, sequence, shape and crc checked
// by core/engine-snapshot.ts) and replays the journal after it; anything else replays the
// whole journal, as before. The note is not consumed: the next checkpoint replaces it.
//
// Bounds: one checkpoint in flight per shard (SHARD_CHECKPOINT_WORD: the shard takes no
// other until this module clears it), so at most one copy of each engine in memory; two
// files per shard on disk.

import { randomUUID } from 'node:crypto';
import path from 'node:path';
import pg from 'pg';
import type { Logger } from 'pino';
import { writeEngineCapture } from '../core/engine-snapshot.ts';
import { SHARD_CHECKPOINT_WORD } from '../core/shard-runner.ts';
import type { ShardCheckpoint } from '../core/shard-thread.ts';

/** Where a shard's checkpoint lives: two slots, alternating. */
export function checkpointPath(dataDir: string, shard: number, slot: number): string {
  return path.join(dataDir, `shard-${shard}.checkpoint-${slot}.bin`);
}

export interface CheckpointNote {
  token: string;
  slot: number;
  sequence: number;
}

const settingOf = (shard: number) => `engine_checkpoint_${shard}`;

/** Each shard's last checkpoint the database names, or null. */
export async function readCheckpointNotes(client: pg.ClientBase, shardCount: number): Promise<(CheckpointNote | null)[]> {
  const names = Array.from({ length: shardCount }, (_, shard) => settingOf(shard));
  const rows = await client.query<{ name: string; value: string }>('SELECT name, value FROM runtime.venue_settings WHERE name = ANY($1::text[])', [names]);
  return names.map((name) => {
    const value = rows.rows.find((row) => row.name === name)?.value;
    if (value === undefined) return null;
    const [token, slot, sequence] = value.split(' ');
    const note = { token: token!, slot: Number(slot), sequence: Number(sequence) };
    return (note.slot === 0 || note.slot === 1) && Number.isSafeInteger(note.sequence) && note.sequence > 0 ? note : null;
  });
}

export interface CheckpointOptions {
  dataDir: string;
  databaseUrl: string;
  shardControls: SharedArrayBuffer[];
  /** The shard's journal position durable in storage. */
  journalCommitted: (shard: number) => number;
  /** What the database named at start (the next checkpoint takes the other slot). */
  notes: (CheckpointNote | null)[];
  logger: Logger;
  /** How long a checkpoint waits for its journal to become durable before it is dropped. */
  durableWaitMs?: number;
}

/** Takes the shards' checkpoints (ShardCheckpoint messages) and names each in the database once its journal is durable. */
export class EngineCheckpoints {
  private readonly inFlight = new Set<Promise<void>>();
  private stopping = false;
  /** Checkpoints named in the database since start, per shard. */
  readonly noted: number[];

  constructor(private readonly options: CheckpointOptions) {
    this.noted = options.shardControls.map(() => 0);
  }

  take(message: ShardCheckpoint): void {
    const done = this.write(message).finally(() => {
      Atomics.store(new Int32Array(this.options.shardControls[message.shardId]!), SHARD_CHECKPOINT_WORD, 0);
      this.inFlight.delete(done);
    });
    this.inFlight.add(done);
  }

  /** Waits for the checkpoints being written; one whose journal is not durable by now is dropped. */
  async close(): Promise<void> {
    this.stopping = true;
    await Promise.all([...this.inFlight]);
  }

  private async write({ shardId: shard, capture, pauseMs }: ShardCheckpoint): Promise<void> {
    const { options } = this;
    const sequence = capture.header.sequence;
    const slot = options.notes[shard]?.slot === 0 ? 1 : 0;
    const token = randomUUID();
    const started = performance.now();
    try {
      const file = checkpointPath(options.dataDir, shard, slot);
      const bytes = await writeEngineCapture(file, { ...capture, header: { ...capture.header, token } });
      const wroteMs = Math.round(performance.now() - started);
      const deadline = Date.now() + (options.durableWaitMs ?? 60_000);
      while (options.journalCommitted(shard) < sequence) {
        if (this.stopping || Date.now() > deadline) {
          options.logger.warn({ shard, sequence, journalDurable: options.journalCommitted(shard) }, 'engine checkpoint dropped: its journal did not become durable');
          return;
        }
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      const client = new pg.Client({ connectionString: options.databaseUrl });
      try {
        await client.connect();
        await client.query('INSERT INTO runtime.venue_settings (name, value) VALUES ($1, $2) ON CONFLICT (name) DO UPDATE SET value = EXCLUDED.value', [
          settingOf(shard),
          `${token} ${slot} ${sequence}`,
        ]);
      } finally {
        await client.end().catch(() => undefined);
      }
      options.notes[shard] = { token, slot, sequence };
      this.noted[shard]!++;
      options.logger.info({ shard, sequence, bytes, pauseMs, wroteMs, notedMs: Math.round(performance.now() - started) }, 'engine checkpoint noted');
    } catch (error) {
      options.logger.warn({ shard, sequence, err: (error as Error).message }, 'engine checkpoint not kept: a crash replays the journal from the previous one');
    }
  }
}
