// The projector's open orders kept across a graceful stop. Loading a million of them
// from order_lifecycle_state (a binary COPY of 15 columns, parsed row by row) was the
// long pole of a restart once the shards' engines were saved (3.6-4 s of about 6.5 s,
// the persistence thread's "openOrders" phase). At a graceful stop every group is
// flushed, so the projector's open orders are exactly the table's open rows: they are
// written to DATA_DIR/open-orders.bin with the projection watermarks they are true at,
// under the token of the shards' engines (the same note in the database, the same
// storage position). At start the file is used only if the token is the note's, the
// watermarks are the ones storage holds and the crc32 holds; else the COPY, as before.
//
// After a crash the COPY was the last step before ready (about 1.1 s of PostgreSQL's CPU
// and 1.5 s of parsing for a million, beside the shards' replays on two busy cores). So
// once a start has loaded the stop's file, the persistence thread moves it to one of two
// checkpoint slots (open-orders.checkpoint-{0,1}.bin, the one the database does not name)
// and names it in runtime.venue_settings (`open_orders_checkpoint`: token, slot,
// watermarks). A start after a crash loads the named file if its watermarks are at or
// below storage's, then replays onto it the journal between the two (Projector.load,
// orderChanges). Checkpoints taken while running were measured and dropped: a capture
// paused the persistence thread 0.8-2.5 s at 250,000 to 1,000,000 open orders.
//
// File (persistence/snapshot-file.ts): "VOO1", the header (JSON: token, count, watermarks),
// three columns of `count` orders (the id words, the small integers, the numbers), crc32.

import path from 'node:path';
import type pg from 'pg';
import { STATE_OPEN, STATE_PARTIALLY_FILLED } from '../core/codes.ts';
import { bytesOf, SnapshotFileReader, writeSnapshotFile, writeSnapshotFileAsync } from './snapshot-file.ts';
import { RestingOrders, type FrozenOrders, type RestingOrder } from './resting-orders.ts';

const MAGIC = 'VOO1';
const HEADER_BYTES_MAX = 4096;
/** Per order: orderId, instrumentId, participantId, accountId. */
const ID_WORDS = 16;
/** Per order: runNo, sessionNo, side, orderType, timeInForce, state, currency, shard. */
const SMALL_WORDS = 8;
/** Per order: priceNanos, quantity, filled. */
const NUMBERS = 3;

interface OpenOrdersHeader {
  token: string;
  count: number;
  watermarks: number[];
}

export function openOrdersPath(dataDir: string): string {
  return path.join(dataDir, 'open-orders.bin');
}

/** Where the checkpoint of the open orders lives (a stop's file, once loaded): two slots, alternating. */
export function openOrdersCheckpointPath(dataDir: string, slot: number): string {
  return path.join(dataDir, `open-orders.checkpoint-${slot}.bin`);
}

/** The database's note of the last checkpoint of the open orders: the file's token, its slot, and the projection watermarks it is true at. */
export interface OpenOrdersNote {
  token: string;
  slot: number;
  watermarks: number[];
}

const NOTE_SETTING = 'open_orders_checkpoint';

/** The checkpoint the database names, or null. */
export async function readOpenOrdersNote(client: pg.ClientBase): Promise<OpenOrdersNote | null> {
  const rows = await client.query<{ value: string }>('SELECT value FROM runtime.venue_settings WHERE name = $1', [NOTE_SETTING]);
  const [token, slot, marks] = (rows.rows[0]?.value ?? '').split(' ');
  const watermarks = (marks ?? '').split(',').map(Number);
  if (token === undefined || token === '' || (slot !== '0' && slot !== '1') || !watermarks.every((mark) => Number.isSafeInteger(mark) && mark >= 0)) return null;
  return { token, slot: Number(slot), watermarks };
}

/** Names a checkpoint: its file must be on disk, and storage must hold the projections up to its watermarks. */
export async function noteOpenOrders(client: pg.ClientBase, note: OpenOrdersNote): Promise<void> {
  await client.query('INSERT INTO runtime.venue_settings (name, value) VALUES ($1, $2) ON CONFLICT (name) DO UPDATE SET value = EXCLUDED.value', [
    NOTE_SETTING,
    `${note.token} ${note.slot} ${note.watermarks.join(',')}`,
  ]);
}

/** The file's three columns. */
interface OpenOrdersColumns {
  ids: Int32Array;
  small: Int32Array;
  numbers: Float64Array;
}

/** Bytes an open order takes in the file's columns. */
const OPEN_ORDER_BYTES = ID_WORDS * 4 + SMALL_WORDS * 4 + NUMBERS * 8;

/** Puts `order` at row `n` of the columns. */
function putOpenOrder(columns: OpenOrdersColumns, n: number, order: RestingOrder): void {
  const { ids, small, numbers } = columns;
  ids.set(order.ids.subarray(0, ID_WORDS), n * ID_WORDS);
  const s = n * SMALL_WORDS;
  small[s] = order.runNo;
  small[s + 1] = order.sessionNo;
  small[s + 2] = order.side;
  small[s + 3] = order.orderType;
  small[s + 4] = order.timeInForce;
  small[s + 5] = order.state;
  small[s + 6] = order.currency;
  small[s + 7] = order.shard;
  numbers[n * NUMBERS] = order.priceNanos;
  numbers[n * NUMBERS + 1] = order.quantity;
  numbers[n * NUMBERS + 2] = order.filled;
}

/** The file's columns for `count` orders, and a writer of them in order that refuses more than `count`. */
function openOrdersColumns(count: number): { columns: OpenOrdersColumns; put: (order: RestingOrder) => void; filled: () => number } {
  const columns: OpenOrdersColumns = { ids: new Int32Array(count * ID_WORDS), small: new Int32Array(count * SMALL_WORDS), numbers: new Float64Array(count * NUMBERS) };
  let n = 0;
  const put = (order: RestingOrder) => {
    if (n === count) throw new Error(`more than the ${count} open orders counted`);
    putOpenOrder(columns, n++, order);
  };
  return { columns, put, filled: () => n };
}

const sectionsOf = (columns: OpenOrdersColumns) => [bytesOf(columns.ids), bytesOf(columns.small), bytesOf(columns.numbers)];

/** Writes `count` orders (what `each` gives) as true at the projection `watermarks`. */
export function writeOpenOrders(file: string, token: string, watermarks: readonly number[], count: number, each: (visit: (order: RestingOrder) => void) => void): number {
  const { columns, put, filled } = openOrdersColumns(count);
  each(put);
  if (filled() !== count) throw new Error(`${filled()} open orders, ${count} counted`);
  return writeSnapshotFile(file, MAGIC, { token, count, watermarks: [...watermarks] } satisfies OpenOrdersHeader, sectionsOf(columns));
}

/** Orders put into a checkpoint's columns between two turns of the event loop (about a millisecond). */
const CHECKPOINT_SLICE_ORDERS = 1 << 14;

/**
 * Writes the frozen orders as true at the projection `watermarks`, while the thread goes
 * on: the columns are filled CHECKPOINT_SLICE_ORDERS orders at a time, each slice a turn
 * of the event loop, then written on the thread pool (writeSnapshotFileAsync: flushed as
 * it goes, renamed when whole). Returns the orders and bytes written.
 */
export async function writeOpenOrdersInBackground(file: string, token: string, watermarks: readonly number[], frozen: FrozenOrders): Promise<{ count: number; bytes: number }> {
  const { columns, put, filled } = openOrdersColumns(frozen.count);
  for (let from = 0; from < frozen.entries; from += CHECKPOINT_SLICE_ORDERS) {
    frozen.visit(from, from + CHECKPOINT_SLICE_ORDERS, put);
    await new Promise((resolve) => setImmediate(resolve));
  }
  if (filled() !== frozen.count) throw new Error(`${filled()} open orders, ${frozen.count} counted`);
  const bytes = await writeSnapshotFileAsync(file, MAGIC, { token, count: frozen.count, watermarks: [...watermarks] } satisfies OpenOrdersHeader, sectionsOf(columns));
  return { count: frozen.count, bytes };
}

/** Orders of the file's small-integer column read at a time, to be packed into a store's. */
const SMALL_CHUNK_ORDERS = 1 << 16;

/**
 * The file's orders in a new store (RestingOrders.filled: its columns read in place) with
 * room for `extra` more, if the file is the one `token` names and is true at the
 * projection `watermarks` (or at watermarks that function accepts: it says why not, or
 * null); else why not (the file is checked whole before a store is given). An order
 * twice in the file throws.
 */
export function readOpenOrders(file: string, token: string, watermarks: readonly number[] | ((held: readonly number[]) => string | null), extra = 0): RestingOrders | string {
  const reader = SnapshotFileReader.open(file, MAGIC, 'an open-orders file', HEADER_BYTES_MAX);
  if (typeof reader === 'string') return reader;
  try {
    const header = reader.header as Partial<OpenOrdersHeader> | null;
    if (typeof header !== 'object' || header === null || typeof header.token !== 'string' || !Number.isSafeInteger(header.count) || header.count! < 0 || !Array.isArray(header.watermarks)) {
      return 'a damaged header';
    }
    if (header.token !== token) return 'the file is not the one the database names';
    if (!header.watermarks.every((mark) => Number.isSafeInteger(mark) && mark >= 0)) return 'a damaged header';
    if (typeof watermarks === 'function') {
      const why = watermarks(header.watermarks as number[]);
      if (why !== null) return why;
    } else if (header.watermarks.join() !== watermarks.join()) return `the file is true at projections ${header.watermarks.join()}, storage holds ${watermarks.join()}`;
    const count = header.count!;
    if (!reader.holds(count * OPEN_ORDER_BYTES)) return 'a file of the wrong length';
    return RestingOrders.filled(count, count + extra, (ids, small, numbers) => {
      if (!reader.read(bytesOf(ids))) return 'a short read';
      const chunk = new Int32Array(Math.min(count, SMALL_CHUNK_ORDERS) * SMALL_WORDS);
      for (let first = 0; first < count; first += SMALL_CHUNK_ORDERS) {
        const n = Math.min(SMALL_CHUNK_ORDERS, count - first);
        if (!reader.read(bytesOf(chunk.subarray(0, n * SMALL_WORDS)))) return 'a short read';
        for (let k = 0; k < n; k++) {
          const f = k * SMALL_WORDS;
          const t = (first + k) * 5;
          small[t] = chunk[f]!; // runNo
          small[t + 1] = chunk[f + 1]!; // sessionNo
          small[t + 2] = chunk[f + 2]! | (chunk[f + 3]! << 8) | (chunk[f + 4]! << 16) | (chunk[f + 5]! << 24); // side, orderType, timeInForce, state
          small[t + 3] = chunk[f + 6]!; // currency
          small[t + 4] = chunk[f + 7]!; // shard
        }
      }
      if (!reader.read(bytesOf(numbers))) return 'a short read';
      if (!reader.verify()) return 'a checksum mismatch';
      return brokenOpenOrder(small, numbers, count);
    });
  } finally {
    reader.close();
  }
}

/**
 * The first loaded order that cannot be open, or null: a file whose checksum holds but whose
 * writer broke an invariant is refused like a damaged one, and the start reads storage.
 */
function brokenOpenOrder(small: Int32Array, numbers: Float64Array, count: number): string | null {
  for (let n = 0; n < count; n++) {
    const packed = small[n * 5 + 2]!;
    const side = packed & 0xff;
    const state = (packed >>> 24) & 0xff;
    const price = numbers[n * 3]!;
    const quantity = numbers[n * 3 + 1]!;
    const filled = numbers[n * 3 + 2]!;
    if (side > 1) return `open order ${n} has side ${side}`;
    if (state !== STATE_OPEN && state !== STATE_PARTIALLY_FILLED) return `open order ${n} is in state ${state}, not open`;
    if (!Number.isSafeInteger(price) || price <= 0) return `open order ${n} has price ${price} nanos`;
    if (!Number.isSafeInteger(quantity) || !Number.isSafeInteger(filled) || filled < 0 || filled >= quantity) return `open order ${n} has ${filled} of ${quantity} filled`;
  }
  return null;
}
