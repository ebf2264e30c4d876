// Reads a venue's committed history back from PostgreSQL, independently of the venue:
// each shard's journal batches in sequence order, cut into commands (the slot as
// sequenced, then the result header and events), and an engine replay of it.

import type pg from 'pg';
import { COMMAND_ID_WORD, COMMAND_SLOT_BYTES } from '../../core/command-slot.ts';
import { readEvent, readHeader, RESULT_RECORD_BYTES, type ResultEvent } from '../../core/result-slot.ts';
import { formatUuid } from '../../core/uuid.ts';
import { EngineDriver } from './engine-driver.ts';

export interface CommittedCommand {
  shard: number;
  slot: Uint8Array;
  commandId: string;
  events: ResultEvent[];
}

export async function committedHistory(client: pg.ClientBase, shardCount: number): Promise<CommittedCommand[][]> {
  const shards: CommittedCommand[][] = [];
  for (let shard = 0; shard < shardCount; shard++) {
    const rows = await client.query<{ payload: Buffer }>('SELECT payload FROM runtime.journal_batches WHERE shard_id = $1 ORDER BY first_sequence', [shard]);
    const commands: CommittedCommand[] = [];
    for (const row of rows.rows) {
      const bytes = new Uint8Array(row.payload); // aligned copy
      const views = { words: new Int32Array(bytes.buffer), floats: new Float64Array(bytes.buffer), bytes };
      for (let at = 0; at < bytes.byteLength;) {
        const slot = bytes.slice(at, at + COMMAND_SLOT_BYTES);
        const headerAt = at + COMMAND_SLOT_BYTES;
        const header = readHeader(views, headerAt);
        const events: ResultEvent[] = [];
        for (let i = 0; i < header.eventCount; i++) events.push(readEvent(views, headerAt + (1 + i) * RESULT_RECORD_BYTES));
        commands.push({ shard, slot, commandId: formatUuid(new Int32Array(slot.buffer), COMMAND_ID_WORD), events });
        at = headerAt + (1 + header.eventCount) * RESULT_RECORD_BYTES;
      }
    }
    shards.push(commands);
  }
  return shards;
}

/** Engines (one per shard) that ran the committed history again. */
export function replayHistory(history: CommittedCommand[][]): EngineDriver[] {
  return history.map((commands) => {
    const driver = new EngineDriver({ orderCapacity: 65536 });
    for (const command of commands) driver.runSlot(command.slot);
    return driver;
  });
}
