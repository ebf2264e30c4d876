// The key filters (core/key-filter.ts) kept across a graceful stop, so that a restart
// need not scan every stored command and order to rebuild them (with a million
// resting orders those two scans were about 1.2 s of a 10-14 s restart, measured).
//
// At a graceful stop, once every command is committed and projected, the keys the
// shared tables still hold are added to the filters (every key storage holds is then
// in a filter: it was there at start, or was evicted into it, or is in a table now),
// and the filters are written to DATA_DIR/key-filters.bin with the storage position
// they cover; that position and a random token are then stored in the database. At
// start the file is used only if the database names the same token and storage is
// still at the same position (nothing was written since), the shapes match and the
// checksum holds; the database's note is removed as it is read, so the file serves
// one start only. Anything else (a crash, a file from another database, a partial
// write) means the full scan, as before.
//
// File (core/snapshot-file.ts): "VKF1", the header (JSON: token, mark, names, bytes per
// filter), each filter's buffer in the header's order, crc32.
//
// The note and the storage position serve the other things a graceful stop saves too
// (the shards' engines and the projector's open orders: BOOK_SNAPSHOT_SETTING).

import { randomUUID } from 'node:crypto';
import path from 'node:path';
import type pg from 'pg';
import { SnapshotFileReader, writeSnapshotFile } from '../core/snapshot-file.ts';
import { keyFilterBitsOf } from '../core/key-filter.ts';

const MAGIC = 'VKF1';
const FILE_NAME = 'key-filters.bin';
const SETTING = 'key_filter_snapshot';
/**
 * The note of the shards' engines saved at a graceful stop (core/engine-snapshot.ts):
 * the same kind of note and storage position, one token for every shard's file.
 */
export const BOOK_SNAPSHOT_SETTING = 'book_snapshot';
const HEADER_BYTES_MAX = 4096;

interface SnapshotHeader {
  token: string;
  mark: string;
  names: string[];
  bytes: number;
}

/**
 * Where storage stands: the last commit (intake) and each shard's last journaled
 * sequence (0 for none); one primary-key lookup each, whatever the journal's length.
 */
export async function storageMark(client: pg.ClientBase, shardCount: number): Promise<string> {
  const intake = await client.query<{ n: string | null }>('SELECT max(commit_no)::text AS n FROM runtime.intake_batches');
  const journal = await client.query<{ n: string }>(
    `SELECT coalesce((SELECT j.last_sequence FROM runtime.journal_batches j WHERE j.shard_id = s ORDER BY j.first_sequence DESC LIMIT 1), 0)::text AS n
       FROM generate_series(0, $1::int - 1) s ORDER BY s`,
    [shardCount],
  );
  // A commit may hold journal batches only; each then moves a shard's last sequence.
  return `intake ${intake.rows[0]!.n ?? 0}; journal ${journal.rows.map((row) => row.n).join(',')}`;
}

export function snapshotPath(dataDir: string): string {
  return path.join(dataDir, FILE_NAME);
}

/** Writes the filters and notes them in the database. Call only when storage holds every command the filters' keys came from. */
export async function saveKeyFilters(
  dataDir: string,
  client: pg.ClientBase,
  shardCount: number,
  filters: Record<string, SharedArrayBuffer>,
): Promise<{ file: string; mark: string }> {
  const names = Object.keys(filters);
  const bytes = filters[names[0]!]!.byteLength;
  if (names.some((name) => filters[name]!.byteLength !== bytes)) throw new Error('the key filters differ in size');
  const token = randomUUID();
  const mark = await storageMark(client, shardCount);
  const file = snapshotPath(dataDir);
  writeSnapshotFile(file, MAGIC, { token, mark, names, bytes } satisfies SnapshotHeader, names.map((name) => new Uint8Array(filters[name]!)));
  await noteSnapshot(client, SETTING, token, mark);
  return { file, mark };
}

/** Notes in the database that the files of `token`, saved at storage position `mark`, may serve the next start. */
export async function noteSnapshot(client: pg.ClientBase, setting: string, token: string, mark: string): Promise<void> {
  await client.query('INSERT INTO runtime.venue_settings (name, value) VALUES ($1, $2) ON CONFLICT (name) DO UPDATE SET value = EXCLUDED.value', [setting, `${token} ${mark}`]);
}

/**
 * Takes the note of `setting` out of the database (a file serves one start): its token
 * and the storage position, if storage is still there; else why the files may not be used.
 */
export async function takeSnapshotNote(client: pg.ClientBase, setting: string, shardCount: number): Promise<{ token: string; mark: string } | string> {
  const noted = await client.query<{ value: string }>('DELETE FROM runtime.venue_settings WHERE name = $1 RETURNING value', [setting]);
  if (noted.rows.length === 0) return 'no graceful stop noted in the database';
  const [token, ...markWords] = noted.rows[0]!.value.split(' ');
  const mark = await storageMark(client, shardCount);
  if (markWords.join(' ') !== mark) return `storage changed since the stop (${markWords.join(' ')} then, ${mark} now)`;
  return { token: token!, mark };
}

/** Each shard's last journaled sequence in a storage mark. */
export function journalSequences(mark: string): number[] {
  return mark.slice(mark.indexOf('journal ') + 'journal '.length).split(',').map(Number);
}

/**
 * Fills the filters from the file written at the last graceful stop, if it is still
 * true of storage. Returns null when loaded, else why not (the caller scans storage,
 * the filters are left empty). Either way the database's note is removed: a file
 * serves one start.
 */
export async function loadKeyFilters(
  dataDir: string,
  client: pg.ClientBase,
  shardCount: number,
  filters: Record<string, SharedArrayBuffer>,
): Promise<string | null> {
  const noted = await takeSnapshotNote(client, SETTING, shardCount);
  if (typeof noted === 'string') return noted;
  const views = Object.values(filters).map((buffer) => new Uint8Array(buffer));
  let why: string | null;
  try {
    why = readFilterFile(snapshotPath(dataDir), noted.token, noted.mark, filters);
  } catch (error) {
    why = `the file could not be read: ${(error as Error).message}`;
  }
  if (why !== null) for (const view of views) view.fill(0);
  return why;
}

/**
 * The bits of each filter in the file the last graceful stop saved, if there is one
 * (its header only; whether it may serve this start is loadKeyFilters's question): the
 * start sizes the filters no smaller, so that an estimate of the stored keys a little
 * lower than the last start's does not cost a scan of storage.
 */
export function savedFilterBits(dataDir: string): number | null {
  const reader = SnapshotFileReader.open(snapshotPath(dataDir), MAGIC, 'a key filter file', HEADER_BYTES_MAX);
  if (typeof reader === 'string') return null;
  try {
    const header = reader.header as SnapshotHeader;
    return typeof header === 'object' && header !== null && Number.isSafeInteger(header.bytes) ? keyFilterBitsOf(header.bytes) : null;
  } finally {
    reader.close();
  }
}

/** Reads the file into the filters (empty until now) if it is the one named and checks out; else says why (the caller empties them). */
function readFilterFile(file: string, token: string, mark: string, filters: Record<string, SharedArrayBuffer>): string | null {
  const reader = SnapshotFileReader.open(file, MAGIC, 'a key filter file', HEADER_BYTES_MAX);
  if (typeof reader === 'string') return reader;
  try {
    const header = reader.header as SnapshotHeader;
    if (typeof header !== 'object' || header === null || !Array.isArray(header.names) || !Number.isSafeInteger(header.bytes)) return 'a damaged header';
    if (header.token !== token || header.mark !== mark) return 'the file is not the one the database names';
    const names = Object.keys(filters);
    if (header.names.join() !== names.join() || names.some((name) => filters[name]!.byteLength !== header.bytes)) {
      return `the filters' shape changed (sized for the stored keys: KEY_FILTER_BITS, KEY_FILTER_BITS_MAX): ${header.names.length} of ${header.bytes} bytes saved, ${names.length} of ${filters[names[0]!]!.byteLength} now`;
    }
    if (!reader.holds(names.length * header.bytes)) return 'a file of the wrong length';
    for (const name of names) if (!reader.read(new Uint8Array(filters[name]!))) return 'a short read';
    return reader.verify() ? null : 'a checksum mismatch';
  } finally {
    reader.close();
  }
}
