// Rows storage refuses (API contract, "Text that storage must hold"): the edge keeps out
// what PostgreSQL cannot hold, but a projection row it still refuses must not stop the
// rows behind it. A refused COPY row is cut out of its group and kept, with its journal
// position and the server's reason, in runtime.quarantined_rows, written in the group's
// own transaction; the group is sent again. A refusal that names no COPY row, or more than
// QUARANTINE_ROWS_PER_GROUP_MAX of them, quarantines the group's data whole. The journal
// keeps every command either way: the projections can be rebuilt from it.
//
// Binary COPY data (https://www.postgresql.org/docs/17/sql-copy.html#id-1.9.3.55.9.4):
//   header 19 bytes | tuples: int16 field count, then per field int32 length (-1: NULL)
//   and its bytes | trailer int16 -1

import { BinaryCopy } from './copy-binary.ts';

/** Rows a group may lose one by one before its data is quarantined whole. */
export const QUARANTINE_ROWS_PER_GROUP_MAX = 16;
const HEADER_BYTES = 19;
const MESSAGE_MAX = 1000;

export const QUARANTINE_COPY_SQL = 'COPY runtime.quarantined_rows (target, shard_id, stream_sequence, row_key, journal_position, sqlstate, message, data) FROM STDIN (FORMAT binary)';

export interface QuarantinedRow {
  /** The table the row was for, or `<table> (whole group)`. */
  target: string;
  shard: number | null;
  sequence: number | null;
  /** The row's id (its first column: a command, execution, trade or order id), 16 bytes. */
  key: Buffer | null;
  /** Where the journal holds what the row came from, as an operator reads it. */
  journalPosition: string;
  sqlstate: string;
  message: string;
  /** The refused tuple in binary COPY form, or a whole COPY's data. */
  data: Buffer;
}

/**
 * Whether a failed script is storage refusing data (SQLSTATE class 22, data exception, or
 * 23, integrity constraint violation) rather than storage being down or busy (which is
 * retried as it is).
 */
export function isDataRefusal(error: unknown): error is Error & { code: string; where?: string } {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' && (code.startsWith('22') || code.startsWith('23'));
}

/** The relation and 1-based row a refusal names in its context ("COPY trades, line 17, column ..."), or null. */
export function refusedCopyRow(error: { where?: string }): { relation: string; line: number } | null {
  const match = /COPY (\S+), line (\d+)/.exec(error.where ?? '');
  return match === null ? null : { relation: match[1]!, line: Number(match[2]) };
}

/** Byte offsets of every tuple of binary COPY data: tuple k spans [ends[k-1] or header, ends[k]). */
function tupleEnds(data: Buffer): number[] {
  const ends: number[] = [];
  let at = HEADER_BYTES;
  for (;;) {
    const fields = data.readInt16BE(at);
    if (fields === -1) return ends;
    at += 2;
    for (let k = 0; k < fields; k++) {
      const length = data.readInt32BE(at);
      at += 4 + Math.max(0, length);
    }
    ends.push(at);
  }
}

/** Cuts tuple `line` (1-based) out of binary COPY data: the data without it, and the tuple; null if there is no such tuple. */
export function cutTuple(data: Buffer, line: number): { rest: Buffer; tuple: Buffer } | null {
  const ends = tupleEnds(data);
  if (line < 1 || line > ends.length) return null;
  const start = line === 1 ? HEADER_BYTES : ends[line - 2]!;
  const end = ends[line - 1]!;
  return { rest: Buffer.concat([data.subarray(0, start), data.subarray(end)]), tuple: Buffer.from(data.subarray(start, end)) };
}

/** The rows binary COPY data holds. */
export function tupleCount(data: Buffer): number {
  return tupleEnds(data).length;
}

/** Field k of a tuple: its bytes, or null for SQL NULL (or a tuple with fewer fields). */
export function tupleField(tuple: Buffer, k: number): Buffer | null {
  const fields = tuple.readInt16BE(0);
  if (k >= fields) return null;
  let at = 2;
  for (let field = 0; field < k; field++) at += 4 + Math.max(0, tuple.readInt32BE(at));
  const length = tuple.readInt32BE(at);
  return length < 0 ? null : tuple.subarray(at + 4, at + 4 + length);
}

/** An int2, int4 or int8 field as a number (|value| < 2^53), or null. */
export function tupleInteger(tuple: Buffer, k: number): number | null {
  const bytes = tupleField(tuple, k);
  if (bytes === null) return null;
  if (bytes.byteLength === 2) return bytes.readInt16BE(0);
  if (bytes.byteLength === 4) return bytes.readInt32BE(0);
  if (bytes.byteLength === 8) return bytes.readInt32BE(0) * 4_294_967_296 + bytes.readUInt32BE(4);
  return null;
}

/** The server's message, as a text column holds it. */
export function refusalMessage(error: Error & { detail?: string }): string {
  const text = error.detail === undefined ? error.message : `${error.message} (${error.detail})`;
  return text.replaceAll('\u0000', '').slice(0, MESSAGE_MAX);
}

/** The COPY data of QUARANTINE_COPY_SQL for these rows. */
export function quarantineCopy(rows: readonly QuarantinedRow[]): Buffer {
  const copy = new BinaryCopy();
  for (const row of rows) {
    copy.row(8).text(row.target);
    if (row.shard === null) copy.null();
    else copy.integer(row.shard);
    if (row.sequence === null) copy.null();
    else copy.bigint(row.sequence);
    copy.uuid(row.key !== null && row.key.byteLength === 16 ? row.key : null);
    copy.text(row.journalPosition).text(row.sqlstate).text(row.message).bytea(row.data);
  }
  return copy.finish();
}
