// A stored command's result envelope: not kept as text, but rendered from the bytes of
// its command on the journal (the same function and bytes the gateway answered from,
// core/journal-format.ts). The command log locates it: its journal batch
// (shard_id, batch_first_sequence) and its offset and length in the batch. Rows carried
// over from before offsets were kept (migration 005) carry none: their whole batch is
// fetched and searched.

import { findCommand, journalView, renderJournalCommand } from '../core/journal-format.ts';
import { uuidWords } from '../core/uuid.ts';

/** Select-list item and join that fetch, as `journal`, what storedEnvelope() needs; the command log is `cl`. */
export const JOURNAL_OF_COMMAND = {
  column: 'CASE WHEN cl.journal_offset IS NULL THEN jb.payload ELSE substring(jb.payload FROM cl.journal_offset + 1 FOR cl.journal_length) END AS journal',
  join: 'JOIN runtime.journal_batches jb ON jb.shard_id = cl.shard_id AND jb.first_sequence = cl.batch_first_sequence',
};

/** The envelope of a command_log row that selected `command_id`, `shard_id`, `journal_offset` and JOURNAL_OF_COMMAND's `journal`. */
export function storedEnvelope(row: { command_id: string; shard_id: number | string; journal_offset: number | null; journal: Buffer }): string {
  const view = journalView(row.journal);
  const at = row.journal_offset === null ? findCommand(view, uuidWords(row.command_id)) : 0;
  if (at < 0) throw new Error(`command ${row.command_id} is not in its journal batch`);
  return renderJournalCommand(view, at, Number(row.shard_id)).json;
}
