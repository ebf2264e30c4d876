// Rows of a projection group that storage refused (bad data, not an outage): cut out of
// the group's COPY and kept in runtime.quarantined_rows, so the projections go on past them.

import { formatUuid } from '../core/uuid.ts';
import { wordsOfBytes } from './pending-intake.ts';
import type { Flush } from './projection-group.ts';
import { cutTuple, QUARANTINE_ROWS_PER_GROUP_MAX, refusalMessage, refusedCopyRow, tupleField, tupleInteger } from './quarantine.ts';

const SCRATCH = new Int32Array(4);

/**
 * Sets aside what storage refused in a group: the COPY row its error names, or the
 * group's data whole when the error names none or the group has lost too many rows.
 * `projected`: per shard, the last sequence storage holds (where the group's ranges start).
 */
export function quarantineRefused(flush: Flush, error: Error & { code: string; where?: string }, projected: readonly number[]): void {
  const named = refusedCopyRow(error);
  const index = named === null ? -1 : flush.copyTargets.findIndex((target) => target.relation === named.relation);
  const cut = index < 0 || flush.quarantined.length >= QUARANTINE_ROWS_PER_GROUP_MAX ? null : cutTuple(flush.copies[index]!, named!.line);
  const ranges = [...flush.watermarks].map(([shard, last]) => `shard ${shard} sequences ${projected[shard]! + 1}-${last}`).join(', ');
  const message = refusalMessage(error);
  if (cut === null) {
    flush.whole = true;
    flush.quarantined.push(
      ...flush.copies.map((data, k) => ({
        target: `${flush.copyTargets[k]!.relation} (whole group)`,
        shard: null,
        sequence: null,
        key: null,
        journalPosition: ranges,
        sqlstate: error.code,
        message,
        data,
      })),
    );
    return;
  }
  const { columns, relation } = flush.copyTargets[index]!;
  const shardField = columns.indexOf('shard_id');
  const sequenceField = columns.includes('stream_sequence') ? columns.indexOf('stream_sequence') : columns.indexOf('last_sequence');
  const shard = shardField < 0 ? null : tupleInteger(cut.tuple, shardField);
  const sequence = sequenceField < 0 ? null : tupleInteger(cut.tuple, sequenceField);
  const key = tupleField(cut.tuple, 0);
  flush.copies[index] = cut.rest;
  flush.quarantined.push({
    target: relation,
    shard,
    sequence,
    key: key === null ? null : Buffer.from(key),
    journalPosition: shard !== null && sequence !== null ? `shard ${shard} sequence ${sequence}` : `in ${ranges}`,
    sqlstate: error.code,
    message,
    data: cut.tuple,
  });
}

/** Logs each row (or COPY, for a group quarantined whole) a flushed group set aside. */
export function reportQuarantine(flush: Flush, log: (level: 'error', message: string, fields: object) => void): void {
  for (const row of flush.quarantined) {
    log('error', flush.whole ? 'storage refused a projection group: its data is quarantined whole' : 'storage refused a projection row: it is quarantined', {
      target: row.target,
      journalPosition: row.journalPosition,
      key: row.key === null ? null : formatUuid(wordsOfBytes(row.key, 0, SCRATCH), 0),
      sqlstate: row.sqlstate,
      reason: row.message,
      table: 'runtime.quarantined_rows',
    });
  }
}
