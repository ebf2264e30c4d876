// The key filters (core/key-filter.ts) saved at a storage mark, so that a start need not
// scan every stored command and order to rebuild them (with a million resting orders
// those scans, about 3 M keys, cost 2.6 s of the main thread's CPU beside PostgreSQL's
// own, in a start after a crash that is CPU-bound on two cores, measured).
//
// Saved at a graceful stop and, while the venue runs, every KEY_FILTER_CHECKPOINT_COMMANDS
// commands taken (intake records committed; runtime/go-live.ts): first the storage mark is read (storageMark: the last intake
// commit and each shard's last journaled sequence), then the keys the shared tables hold
// are added to the filters (rememberTableKeys), then the filters are written to
// DATA_DIR/key-filters.bin with that mark, and the mark and a random token are noted in
// the database. The file then holds every key of every command in a commit up to the
// mark: such a command claimed its keys in the tables before the mark was read, and a
// key claimed then is in a table when the scan locks its bucket (added then) or was
// evicted into its filter before (a table adds an evicted key to its filter under the
// bucket's lock). The keys the start held in its filters were in them already. Bits are
// only ever set, so a file written while gateways add keys holds at least the bits set
// before the write began (each chunk is copied before its crc and write).
//
// At start the file is used if the database names its token and mark, the shapes match
// and the checksum holds; the keys of every command taken after the mark are then read
// from the intake records of the commits after it (persistence/recovery.ts
// intakeKeysSince: nothing after a graceful stop, at most about
// KEY_FILTER_CHECKPOINT_COMMANDS plus what was in flight after a crash). The note is not
// consumed: storage only grows past the mark, and the next save replaces it. Anything
// else (no note, a file from another database or an older save, a partial write, filters
// sized otherwise) means the full scan, as before. A save writes its file beside the last
// one (key-filters.next.bin), notes it, and only then renames it over the last one: a
// crash at any point of a save leaves the file the database names, the last one or the
// new one, and the start tries both (a crash between the write and the note had cost
// the next start the full scan). The intake records after the noted mark must be kept
// (no retention removes them today; one that does must keep those).
//
// File (persistence/snapshot-file.ts): "VKF1", the header (JSON: token, mark, names, bytes per
// filter), each filter's buffer in the header's order, crc32.
//
// storageMark and the note also serve the other things a graceful stop saves (the
// shards' engines and the projector's open orders: BOOK_SNAPSHOT_SETTING), which are
// still consumed by the start that uses them.

import { randomUUID } from 'node:crypto';
import { rename } from 'node:fs/promises';
import path from 'node:path';
import type pg from 'pg';
import { SnapshotFileReader, writeSnapshotFileAsync } from './snapshot-file.ts';
import { keyFilterBitsOf } from '../core/key-filter.ts';

const MAGIC = 'VKF1';
const FILE_NAME = 'key-filters.bin';
/** Where a save writes before its note; renamed over FILE_NAME after it. */
const NEXT_FILE_NAME = 'key-filters.next.bin';
const SETTING = 'key_filter_snapshot';
/**
 * The note of the shards' engines saved at a graceful stop (persistence/engine-snapshot.ts):
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

/** The file a save writes before the database notes it (saveKeyFilters), then renamed to snapshotPath. */
export function nextSnapshotPath(dataDir: string): string {
  return path.join(dataDir, NEXT_FILE_NAME);
}

/**
 * Saves the filters at a storage mark (see the top of this file): reads the mark, then
 * calls `addTableKeys` (the keys the shared tables hold go into the filters; it returns
 * how many were new), writes the file beside the last one, notes it in the database,
 * then renames it over the last one.
 */
export async function saveKeyFilters(
  dataDir: string,
  client: pg.ClientBase,
  shardCount: number,
  filters: Record<string, SharedArrayBuffer>,
  addTableKeys: () => Promise<number>,
): Promise<{ file: string; mark: string; tableKeys: number; bytes: number }> {
  const names = Object.keys(filters);
  const bytesEach = filters[names[0]!]!.byteLength;
  if (names.some((name) => filters[name]!.byteLength !== bytesEach)) throw new Error('the key filters differ in size');
  const token = randomUUID();
  const mark = await storageMark(client, shardCount); // before the tables' keys: every command up to it claimed its keys before
  const tableKeys = await addTableKeys();
  const file = snapshotPath(dataDir);
  const next = nextSnapshotPath(dataDir);
  const header: SnapshotHeader = { token, mark, names, bytes: bytesEach };
  const bytes = await writeSnapshotFileAsync(
    next,
    MAGIC,
    header,
    names.map((name) => new Uint8Array(filters[name]!)),
    true,
  );
  await noteSnapshot(client, SETTING, token, mark);
  await rename(next, file);
  return { file, mark, tableKeys, bytes };
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
  return mark
    .slice(mark.indexOf('journal ') + 'journal '.length)
    .split(',')
    .map(Number);
}

/** The last intake commit in a storage mark. */
export function intakeCommit(mark: string): number {
  const found = /^intake (\d+);/.exec(mark);
  if (found === null) throw new Error(`not a storage mark: ${mark}`);
  return Number(found[1]);
}

/**
 * Fills the filters from the file the database names (the last save), if it is whole
 * and of the filters' shape: returns the storage mark it holds every key up to (the
 * caller adds the keys of the commands taken after it: intakeKeysSince), else why not
 * (the caller scans storage; the filters are left empty). The note stays.
 */
export async function loadKeyFilters(dataDir: string, client: pg.ClientBase, filters: Record<string, SharedArrayBuffer>): Promise<{ mark: string } | string> {
  const noted = await client.query<{ value: string }>('SELECT value FROM runtime.venue_settings WHERE name = $1', [SETTING]);
  if (noted.rows.length === 0) return 'no saved key filters noted in the database';
  const [token, ...markWords] = noted.rows[0]!.value.split(' ');
  const mark = markWords.join(' ');
  if (!/^intake \d+; journal \d+(,\d+)*$/.test(mark)) return `a damaged note in the database: ${JSON.stringify(noted.rows[0]!.value)}`;
  const views = Object.values(filters).map((buffer) => new Uint8Array(buffer));
  // The last save's file, or the one a crash left between its note and its rename.
  let first: string | null = null;
  for (const file of [snapshotPath(dataDir), nextSnapshotPath(dataDir)]) {
    let why: string | null;
    try {
      why = readFilterFile(file, token!, mark, filters);
    } catch (error) {
      why = `the file could not be read: ${(error as Error).message}`;
    }
    if (why === null) return { mark };
    for (const view of views) view.fill(0);
    first ??= why;
  }
  return first!;
}

/**
 * The bits of each filter in the file the last save wrote, if there is one
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

export interface KeyFilterCheckpointOptions {
  /** Commands between two saves while running (KEY_FILTER_CHECKPOINT_COMMANDS; 0: none). */
  every: number;
  /** Commands taken so far: intake records committed, all gateways (a counter that only grows; what a start after a crash reads back). */
  taken: () => number;
  /** Commands storage took that no saved file covers at the start (the tail read after the file, or every command scanned). */
  uncovered: number;
  /** One save (saveKeyFilters with the tables' keys); its failure is logged, and the next one tries again. */
  save: () => Promise<void>;
  onFailure: (error: Error) => void;
}

/**
 * A start whose filters did not cover at least every/START_TAIL_SAVE_DIVISOR stored
 * commands from a file (after a crash, the intake records after the last save; or a
 * scan) saves at the first poll, not once `every` commands are counted: else a venue that
 * crashes again before then reads that tail again at each start, longer each time (96,000,
 * 175,000 and 247,000 intake records in the benchmark's chain of crashes, the shared
 * tables' fill the last step before ready in its later starts).
 */
export const START_TAIL_SAVE_DIVISOR = 8;

/**
 * The saves of the key filters while the venue runs: poll() (the main thread's guard
 * timer) starts one when `every` commands were taken since the last (counting the
 * commands the start's filters did not cover from a file; at the first poll when those
 * are every/START_TAIL_SAVE_DIVISOR or more), one at a time; close() waits for the one in
 * flight and starts no other (the stop saves its own).
 */
export class KeyFilterCheckpoints {
  private readonly options: KeyFilterCheckpointOptions;
  private base: number;
  private running: Promise<void> | null = null;
  private closed = false;

  constructor(options: KeyFilterCheckpointOptions) {
    this.options = options;
    const dueAtOnce = options.uncovered * START_TAIL_SAVE_DIVISOR >= options.every;
    this.base = options.taken() - (dueAtOnce ? options.every : options.uncovered);
  }

  poll(): void {
    if (this.closed || this.running !== null || this.options.every === 0) return;
    const taken = this.options.taken();
    if (taken - this.base < this.options.every) return;
    this.base = taken;
    this.running = this.options
      .save()
      .catch((error: Error) => this.options.onFailure(error))
      .finally(() => (this.running = null));
  }

  async close(): Promise<void> {
    this.closed = true;
    await this.running;
  }
}
