// Bulk COPY FROM off the acknowledgement's path (the lifecycle rebuild, backfills),
// through pg-copy-streams' writable. Rows are encoded (BinaryCopy) into pieces of about
// COPY_PIECE_BYTES, and a piece is made only once the socket took the one before
// (pipeline awaits 'drain'): memory stays bounded whatever the row count, where
// pg-script.ts sends one buffer holding every row. Each COPY costs its own round trips
// (query, CopyInResponse, data, CommandComplete), so the journal commit and the regular
// projection groups keep pg-script.ts' one round trip: the figures are in decision 0045.

import { pipeline } from 'node:stream/promises';
import type pg from 'pg';
import { from as copyFrom } from 'pg-copy-streams';
import { BinaryCopy } from './copy-binary.ts';

/** The size of one piece of COPY data written to the stream (one CopyData message). */
export const COPY_PIECE_BYTES = 1 << 20;

/**
 * `COPY <target> FROM STDIN (FORMAT binary)` of one row per item (written by writeRow),
 * through the stream in pieces of about `pieceBytes`; resolves with the rows the server
 * counted and the pieces sent. Inside a transaction (streamedTransaction) it is part of it: a row refused or
 * the connection lost rejects, and the transaction's rollback keeps none of its rows.
 */
export async function copyIn<T>(client: pg.ClientBase, target: string, items: Iterable<T>, writeRow: (copy: BinaryCopy, item: T) => void, pieceBytes = COPY_PIECE_BYTES): Promise<CopyCount> {
  function* pieces(): Generator<Buffer> {
    // Room for a piece and one row past it: the buffer never grows.
    const copy = new BinaryCopy(pieceBytes + 64 * 1024);
    for (const item of items) {
      writeRow(copy, item);
      if (copy.byteLength >= pieceBytes) yield copy.take();
    }
    yield copy.finish();
  }
  return copyInPieces(client, target, pieces());
}

/** What a streamed COPY stored: rows (the server's count) and the pieces they went in. */
export interface CopyCount {
  rows: number;
  pieces: number;
}

/** The same COPY of data already encoded (BinaryCopy's pieces, header first, trailer last). */
export async function copyInPieces(client: pg.ClientBase, target: string, pieces: Iterable<Buffer> | AsyncIterable<Buffer>): Promise<CopyCount> {
  const stream = client.query(copyFrom(`COPY ${target} FROM STDIN (FORMAT binary)`));
  let count = 0;
  async function* counted(): AsyncGenerator<Buffer> {
    for await (const piece of pieces) {
      count++;
      yield piece;
    }
  }
  await pipeline(counted(), stream);
  return { rows: stream.rowCount, pieces: count };
}

/**
 * BEGIN, `body` (its COPYs through the stream and any statements, on this client), then
 * `closing` and COMMIT in one query; on any failure ROLLBACK (a lost connection rolled
 * back already) and the error again. A statement of `closing` that fails skips the COMMIT
 * after it (the rest of a simple query is discarded), so all of it commits or none.
 */
export async function streamedTransaction<T>(client: pg.ClientBase, body: () => Promise<T>, closing = ''): Promise<T> {
  await client.query('BEGIN');
  try {
    const result = await body();
    await client.query(closing === '' ? 'COMMIT' : `${closing};\nCOMMIT`);
    return result;
  } catch (error) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw error;
  }
}
