// Checkpoints of the shards' engines while the venue runs, so that a start after a crash
// replays only the journal written since the last one instead of the whole journal, which
// at a million resting orders is most of a start (decision 0007; a graceful stop saves the
// engines anyway, persistence/engine-snapshot.ts).
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
// by persistence/engine-snapshot.ts) and replays the journal after it; anything else replays the
// whole journal, as before. The note is not consumed: the next checkpoint replaces it.
//
// The copy goes into a SharedArrayBuffer the shard reuses while it is big enough: a fresh
// buffer's page faults cost 30-160 ms for 78 MB here (160 with the huge pages npm start
// asks for), the copy alone 4 ms. This module sends the shard a bigger one, its pages
// faulted in here, before the copies outgrow it (past 60%: twice the last copy), and one
// at the start (twice the engine's state then), so the shard allocates only if a copy
// outgrows both.
//
// Bounds: one checkpoint in flight per shard (SHARD_CHECKPOINT_WORD: the shard takes no
// other, nor writes its buffer, until this module clears it); a buffer of at most twice
// the engine's state per shard (and the one it replaces, until the shard switches); two
// files per shard on disk.

import { randomUUID } from 'node:crypto';
import { renameSync } from 'node:fs';
import path from 'node:path';
import type { MessagePort } from 'node:worker_threads';
import pg from 'pg';
import { pgClient } from './pg-client.ts';
import type { Logger } from 'pino';
import { writeEngineCapture } from './engine-snapshot.ts';
import { SHARD_CHECKPOINT_WORD } from '../core/shard-runner.ts';
import type { ShardCheckpoint } from '../core/shard-messages.ts';
import { MAIN_APPLICATION_NAME } from './connection-names.ts';

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

const NOTE_SQL = 'INSERT INTO runtime.venue_settings (name, value) VALUES ($1, $2) ON CONFLICT (name) DO UPDATE SET value = EXCLUDED.value';

/**
 * After a start from a graceful stop's saved engines (loaded by their shards), each file
 * becomes its shard's checkpoint: renamed into the slot the database does not name, then
 * named, at the journal position it was saved at (durable: the stop saved after the last
 * commit). Without this a crash before the next checkpoint replayed the journal from an
 * older one. `notes` is updated; a file that cannot be adopted leaves its shard's note.
 */
export async function adoptSavedEngines(
  client: pg.ClientBase,
  dataDir: string,
  saved: { shard: number; file: string; token: string; sequence: number }[],
  notes: (CheckpointNote | null)[],
  logger: Logger,
): Promise<void> {
  for (const { shard, file, token, sequence } of saved) {
    const slot = notes[shard]?.slot === 0 ? 1 : 0;
    try {
      renameSync(file, checkpointPath(dataDir, shard, slot));
      await client.query(NOTE_SQL, [settingOf(shard), `${token} ${slot} ${sequence}`]);
      notes[shard] = { token, slot, sequence };
    } catch (error) {
      logger.warn({ shard, sequence, err: error }, 'the engine saved at the last stop was not kept as a checkpoint: a crash replays the journal from the previous one');
    }
  }
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
  /** Each shard's port for the buffers its copies go into (ShardThreadData.checkpointBuffers). */
  buffers: MessagePort[];
}

/** How long a checkpoint waits for its journal to become durable before it is dropped. */
const DURABLE_WAIT_MS = 60_000;

/** Takes the shards' checkpoints (ShardCheckpoint messages) and names each in the database once its journal is durable. */
export class EngineCheckpoints {
  private readonly inFlight = new Set<Promise<void>>();
  private stopping = false;
  /** The size of the last buffer offered to each shard. */
  private readonly offered: number[];

  constructor(private readonly options: CheckpointOptions) {
    this.offered = options.shardControls.map(() => 0);
  }

  /** Sends each shard a buffer of `bytes[shard]` for its first copies. */
  provide(bytes: number[]): void {
    for (let shard = 0; shard < this.options.buffers.length; shard++) this.sendBuffer(shard, bytes[shard]!);
  }

  /**
   * Faults the pages of a new buffer in here, not in the shard, 4 MiB per turn of the
   * event loop (the main thread has other work: 140 MB at once held it about half a
   * second), then sends it, unless a bigger one was sent meanwhile.
   */
  private sendBuffer(shard: number, bytes: number): void {
    if (bytes <= this.offered[shard]!) return;
    this.offered[shard] = bytes;
    const buffer = new SharedArrayBuffer(bytes);
    const view = new Uint8Array(buffer);
    const touch = (from: number) => {
      if (this.offered[shard] !== bytes) return; // a bigger one is on its way
      const to = Math.min(bytes, from + (4 << 20));
      for (let at = from; at < to; at += 4096) view[at] = 0;
      if (to < bytes) setImmediate(touch, to);
      else this.options.buffers[shard]!.postMessage(buffer);
    };
    touch(0);
  }

  take(message: ShardCheckpoint): void {
    const { capture, shardId } = message;
    // Said when taken as well as when noted: the pause is the shard's stall, and a crash
    // between the two (the write under load can take seconds) shows which one was in flight.
    this.options.logger.info({ shard: shardId, sequence: capture.header.sequence, bytes: capture.bytes, pauseMs: message.pauseMs }, 'engine checkpoint taken');
    if (capture.bytes > capture.body.byteLength * 0.6) this.sendBuffer(shardId, capture.bytes * 2);
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
      const deadline = Date.now() + DURABLE_WAIT_MS;
      while (options.journalCommitted(shard) < sequence) {
        if (this.stopping || Date.now() > deadline) {
          options.logger.warn({ shard, sequence, journalDurable: options.journalCommitted(shard) }, 'engine checkpoint dropped: its journal did not become durable');
          return;
        }
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      const client = pgClient({ connectionString: options.databaseUrl, application_name: MAIN_APPLICATION_NAME });
      try {
        await client.connect();
        await client.query(NOTE_SQL, [settingOf(shard), `${token} ${slot} ${sequence}`]);
      } finally {
        await client.end().catch(() => undefined);
      }
      options.notes[shard] = { token, slot, sequence };
      options.logger.info({ shard, sequence, bytes, pauseMs, wroteMs, notedMs: Math.round(performance.now() - started) }, 'engine checkpoint noted');
    } catch (error) {
      options.logger.warn({ shard, sequence, err: error }, 'engine checkpoint not kept: a crash replays the journal from the previous one');
    }
  }
}
