// Keeps the open orders a start loaded as the checkpoint the database names, so that a
// crash after this start replays onto them only the journal since it.

import { randomUUID } from 'node:crypto';
import { rename } from 'node:fs/promises';
import type pg from 'pg';
import { START_APPLICATION_NAME } from './connection-names.ts';
import { noteOpenOrders, openOrdersCheckpointPath, readOpenOrdersNote, writeOpenOrdersInBackground, type OpenOrdersNote } from './open-orders-snapshot.ts';
import type { Projector } from './projector.ts';

export class OpenOrdersCheckpoint {
  /** The checkpoint of the open orders the database names (persistence/open-orders-snapshot.ts). */
  noted: OpenOrdersNote | null = null;

  constructor(
    /** DATA_DIR, where the checkpoints are kept. */
    readonly dir: string,
    private readonly projector: Projector,
    private readonly shardCount: number,
    private readonly connect: (name: string) => Promise<pg.Client>,
    private readonly log: (level: 'info' | 'warn', message: string, fields: object) => void,
  ) {}

  /** Reads which checkpoint the database names, before the projector loads one. */
  async readNote(client: pg.ClientBase): Promise<OpenOrdersNote | null> {
    this.noted = await readOpenOrdersNote(client);
    return this.noted;
  }

  /**
   * The open orders a graceful stop saved, once loaded, are a checkpoint at the projections
   * storage holds: the file becomes the slot the database does not name, and is named, so
   * that a start after a crash replays onto it only the journal since this start.
   */
  async adoptSaved(client: pg.Client, saved: { file: string; token: string }): Promise<void> {
    const slot = this.noted?.slot === 0 ? 1 : 0;
    const watermarks = Array.from({ length: this.shardCount }, (_, shard) => this.projector.watermark(shard));
    try {
      await rename(saved.file, openOrdersCheckpointPath(this.dir, slot));
      await noteOpenOrders(client, { token: saved.token, slot, watermarks });
      this.noted = { token: saved.token, slot, watermarks };
    } catch (error) {
      this.log('warn', 'the open orders saved at the stop were not kept as a checkpoint', { err: error });
    }
  }

  /**
   * The open orders the start loaded (from storage, or a checkpoint with the journal after
   * it replayed onto it: Projector.takeLoadedOrders), written once the venue is ready as the
   * checkpoint the database names, in the slot it does not name, while the thread goes on
   * (writeOpenOrdersInBackground), then named on a connection of its own. Without it, each
   * crash after a crash would replay the journal since the last graceful stop, the last
   * step of the start before ready.
   */
  async writeLoaded(): Promise<void> {
    const loaded = this.projector.takeLoadedOrders();
    if (loaded === null) return;
    const began = performance.now();
    const slot = this.noted?.slot === 0 ? 1 : 0;
    const note: OpenOrdersNote = { token: randomUUID(), slot, watermarks: loaded.watermarks };
    try {
      const { count, bytes } = await writeOpenOrdersInBackground(openOrdersCheckpointPath(this.dir, slot), note.token, note.watermarks, loaded.frozen);
      const client = await this.connect(START_APPLICATION_NAME);
      try {
        await noteOpenOrders(client, note);
      } finally {
        await client.end().catch(() => undefined);
      }
      this.noted = note;
      this.log('info', 'open orders checkpoint written after the start', { count, bytes, slot, watermarks: note.watermarks, ms: Math.round(performance.now() - began) });
    } catch (error) {
      this.log('warn', 'the open orders the start loaded were not kept as a checkpoint: a crash replays the journal after the one named before', { err: error });
    }
  }
}
