// Tier 2 of storage: materializes tier-1 commits into relational projections, right
// behind the journal writer and in commit order:
//   runtime.command_log            one row per command: its intake record and its outcome
//   runtime.executions             one row per execution (both sides of every fill)
//   runtime.trades                 one row per trade, with both counterparties
//   runtime.order_lifecycle_state  the current state of every order
//   runtime.instruments            every instrument the venue took an order for
//
// Two steps. ingest() takes each commit as soon as it is durable: it applies it to the
// in-memory order lifecycle, returns what it changed in the displayed books (the read
// thread's depth follows the durable journal within a millisecond) and appends the
// commit's rows to the open group. seal() closes the open group into one transaction
// and flush() sends it (pg-script.ts: one round trip), together with the watermarks
// (runtime.projection_watermarks): per shard the last journal sequence materialized
// ('runtime'), and for intake ('runtime-intake') the last commit all of whose intake
// records have their command_log row. Groups are made large on purpose (the caller
// seals by size and age): each transaction costs the server a fixed amount, whatever
// it holds. A crash never applies a commit twice: start-up projects from the watermarks.
//
// A command's intake record (same or earlier commit) waits in `pending` until its
// outcome arrives on the journal; then the two make its command_log row. What is still
// pending after the start-up catch-up was taken but never sequenced: recovery re-drives
// it (redrivePlan()).
//
// Everything is read from the binary records (core/journal-format.ts,
// core/intake-record.ts) and written as binary COPY: ids stay as words or bytes
// from the rings to PostgreSQL, never text. Open orders are held in memory (`live`, and
// the compact store loaded at start from the file a graceful stop saved, from that file
// with the journal after it replayed after a crash, or from order_lifecycle_state) so a
// fill of a resting order knows whose it is.

import path from 'node:path';
import { crc32 } from 'node:zlib';
import type pg from 'pg';
import {
  COMMAND_ACCOUNT_ID_WORD,
  COMMAND_CURRENCY_WORD,
  COMMAND_HEADER_WORD,
  COMMAND_ID_WORD,
  COMMAND_INSTRUMENT_ID_WORD,
  COMMAND_ORDER_ID_WORD,
  COMMAND_PARTICIPANT_ID_WORD,
  COMMAND_PRICE_NANOS_FLOAT,
  COMMAND_QUANTITY_UNITS_FLOAT,
  COMMAND_RUN_WORD,
  COMMAND_SESSION_WORD,
  COMMAND_SLOT_BYTES,
  unpackCurrency,
} from '../core/command-slot.ts';
import {
  EVENT_ACCEPTED,
  EVENT_EXECUTION,
  EVENT_EXPIRED,
  EVENT_TRADE,
  OPCODE_CANCEL,
  OPCODE_EXPIRE,
  OPCODE_MODIFY,
  OPCODE_SUBMIT,
  ORDER_STATE_NAMES,
  ORDER_TYPE_LIMIT,
  ORDER_TYPE_NAMES,
  rejectName,
  SIDE_NAMES,
  STATE_OPEN,
  STATE_PARTIALLY_FILLED,
  TIME_IN_FORCE_NAMES,
} from '../core/codes.ts';
import {
  INTAKE_CLIENT_ID_BYTE,
  INTAKE_CLIENT_ID_LENGTH_WORD,
  INTAKE_CLIENT_ORDER_ID_BYTE,
  INTAKE_CLIENT_ORDER_ID_LENGTH_WORD,
  INTAKE_COMMAND_ID_BYTE,
  INTAKE_FLAGS_WORD,
  INTAKE_HAS_INSTRUMENT,
  INTAKE_HAS_ORDER_ID,
  INTAKE_INSTRUMENT_ID_BYTE,
  INTAKE_KEY_BYTE,
  INTAKE_KEY_LENGTH_WORD,
  INTAKE_ORDER_ID_BYTE,
  INTAKE_PAYLOAD_HASH_BYTE,
  INTAKE_PRINCIPAL_WORD,
  INTAKE_RECEIVED_AT_FLOAT,
  INTAKE_RECORD_BYTES,
  INTAKE_SCOPE_BYTE,
  INTAKE_SHARD_WORD,
  INTAKE_SLOT_BYTE,
  storedIntake,
} from '../core/intake-record.ts';
import { JournalScratch, journalView, type JournalView } from '../core/journal-format.ts';
import { engineOrderIdOf, eventIdWords } from '../core/outcome-format.ts';
import { PersistenceControl } from '../core/persistence-control.ts';
import {
  RESULT_AGGRESSOR_BYTE,
  RESULT_BATCH_FLOAT,
  RESULT_CODE_WORD,
  RESULT_COUNT_WORD,
  RESULT_ENGINE_ORDER_FLOAT,
  RESULT_KIND_BYTE,
  RESULT_PRICE_FLOAT,
  RESULT_QUANTITY_FLOAT,
  RESULT_RECORD_BYTES,
  RESULT_SEQUENCE_FLOAT,
  RESULT_STATE_BYTE,
  RESULT_TIMESTAMP_FLOAT,
  RESULT_UUID_A_WORD,
  RESULT_UUID_B_WORD,
} from '../core/result-slot.ts';
import { formatUuid, idKey, parseUuidInto } from '../core/uuid.ts';
import { TapeBatch } from '../core/tape-view.ts';
import { BinaryCopy, copyOut } from './copy-binary.ts';
import type { StorageCommit } from './journal-writer.ts';
import { LatencyHistogram } from './latency-histogram.ts';
import { runScript } from './pg-script.ts';
import { auditOf } from './audit.ts';
import type { AuditRecord } from '../core/storage-protocol.ts';
import {
  cutTuple,
  isDataRefusal,
  QUARANTINE_COPY_SQL,
  QUARANTINE_ROWS_PER_GROUP_MAX,
  quarantineCopy,
  refusalMessage,
  refusedCopyRow,
  tupleField,
  tupleInteger,
  type QuarantinedRow,
} from './quarantine.ts';
import { openOrdersCheckpointPath, readOpenOrders, writeOpenOrders, type OpenOrdersNote } from './open-orders-snapshot.ts';
import { ownReadsPath, readOwnReads, writeOwnReads } from './own-reads-snapshot.ts';
import { RestingOrders, type FrozenOrders, type RestingOrder } from './resting-orders.ts';
import { OwnReads } from './own-reads.ts';

export const PROJECTION_NAME = 'runtime';
export const INTAKE_PROJECTION_NAME = 'runtime-intake';
/**
 * The most commands of the journal a start replays onto the open orders' checkpoint; past
 * it the COPY of the open orders (a checkpoint, a million open orders, and 242,000 commands
 * after it took 3.1 s on this machine where the COPY took 4.9 s).
 */
const OPEN_ORDERS_REPLAY_MAX = 1_000_000;
/** What load() says when the open orders came from the file a graceful stop saved. */
export const SAVED_AT_STOP = 'saved at the last stop';

/** OWN_READS_WINDOW's default: closed orders and fills kept per participant, twice the most a read asks for. */
export const OWN_READS_WINDOW_DEFAULT = 2000;

/** The time of the last command of a journal batch (µs). */
function lastCommandTimeUs(view: JournalView): number {
  let timeUs = 0;
  for (let at = 0; at < view.bytes.byteLength; ) {
    const headerAt = at + COMMAND_SLOT_BYTES;
    timeUs = Math.max(timeUs, view.floats[(headerAt >> 3) + RESULT_TIMESTAMP_FLOAT]!);
    at = headerAt + (1 + view.words[(headerAt >> 2) + RESULT_COUNT_WORD]!) * RESULT_RECORD_BYTES;
  }
  return timeUs;
}

/** The wall clock in µs, as the shards stamp commands (runtime/shard-thread.ts). */
function wallClockUs(): number {
  return Math.round((performance.timeOrigin + performance.now()) * 1000);
}

/** Words of the ids an order keeps, in OrderState.ids. */
const ORDER_ID = 0;
const INSTRUMENT_ID = 4;
const PARTICIPANT_ID = 8;
const ACCOUNT_ID = 12;

/** An order as the lifecycle projection sees it: what the compact store keeps, and more. */
interface OrderState extends RestingOrder {
  engineOrderId: string;
  createdAtUs: number;
  updatedAtUs: number;
  lastSequence: number;
  /** UTF-8 bytes, or null; only a new order's row writes it. */
  clientOrderId: Uint8Array | null;
  /** Created in the group being projected (its row is inserted, not updated). */
  fresh: boolean;
  /** Whether `clientOrderId` was known when the order came here (not for an order loaded at start or rebuilt). */
  clientOrderKnown: boolean;
}

/** An intake record waiting for its command's outcome. */
interface PendingIntake {
  commitNo: number;
  /** The gateway whose intake batch of that commit holds it, and its place there: where the audit trail finds its text. */
  gateway: number;
  index: number;
  /** The batch's records are `stride` bytes each; `bodies` their JSON texts (null: a batch stored before texts were kept). */
  stride: number;
  bodies: Uint8Array | null;
  bytes: Uint8Array;
  words: Int32Array;
  floats: Float64Array;
  at: number;
}

const keyOf = idKey;

/** Sets `order` to the order an accepted submit at `at` opens, as its slot and first event say (its fills aside); its ids are copied into `order.ids`. */
function openSubmitted(order: RestingOrder, view: JournalView, at: number, shard: number): void {
  const { words, floats, bytes } = view;
  const w = at >> 2;
  const f = at >> 3;
  const ids = order.ids;
  ids.set(words.subarray(w + COMMAND_ORDER_ID_WORD, w + COMMAND_ORDER_ID_WORD + 4), ORDER_ID);
  ids.set(words.subarray(w + COMMAND_INSTRUMENT_ID_WORD, w + COMMAND_INSTRUMENT_ID_WORD + 4), INSTRUMENT_ID);
  ids.set(words.subarray(w + COMMAND_PARTICIPANT_ID_WORD, w + COMMAND_PARTICIPANT_ID_WORD + 4), PARTICIPANT_ID);
  ids.set(words.subarray(w + COMMAND_ACCOUNT_ID_WORD, w + COMMAND_ACCOUNT_ID_WORD + 4), ACCOUNT_ID);
  const header = words[w + COMMAND_HEADER_WORD]!;
  order.runNo = words[w + COMMAND_RUN_WORD]!;
  order.sessionNo = words[w + COMMAND_SESSION_WORD]!;
  order.side = (header >>> 8) & 0xff;
  order.orderType = (header >>> 16) & 0xff;
  order.timeInForce = header >>> 24;
  order.state = bytes[at + COMMAND_SLOT_BYTES + RESULT_RECORD_BYTES + RESULT_STATE_BYTE]!;
  order.priceNanos = floats[f + COMMAND_PRICE_NANOS_FLOAT]!;
  order.quantity = floats[f + COMMAND_QUANTITY_UNITS_FLOAT]!;
  order.filled = 0;
  order.currency = words[w + COMMAND_CURRENCY_WORD]!;
  order.shard = shard;
}

/** What an accepted cancel or modify at `at` changes in its order (its fills aside). */
function acceptedChange(order: RestingOrder, view: JournalView, at: number, opcode: number): void {
  order.state = view.bytes[at + COMMAND_SLOT_BYTES + RESULT_RECORD_BYTES + RESULT_STATE_BYTE]!;
  if (opcode === OPCODE_MODIFY) {
    order.priceNanos = view.floats[(at >> 3) + COMMAND_PRICE_NANOS_FLOAT]!;
    order.quantity = view.floats[(at >> 3) + COMMAND_QUANTITY_UNITS_FLOAT]!;
  }
}

/** What the fill at `e` (taker execution, maker execution, trade) changes in its two orders. */
function fillChange(taker: RestingOrder, maker: RestingOrder, view: JournalView, e: number): void {
  const makerAt = e + RESULT_RECORD_BYTES;
  taker.filled += view.floats[(e >> 3) + RESULT_QUANTITY_FLOAT]!;
  maker.filled += view.floats[(makerAt >> 3) + RESULT_QUANTITY_FLOAT]!;
  maker.state = view.bytes[makerAt + RESULT_STATE_BYTE]!;
}

/** orderChanges's submitted order, copied by the store when it is added. */
const SUBMITTED: RestingOrder = { ids: new Int32Array(16), runNo: 0, sessionNo: 0, side: 0, orderType: 0, timeInForce: 0, state: 0, priceNanos: 0, quantity: 0, filled: 0, currency: 0, shard: 0 };

/**
 * The changes the journal's command at `at` makes to orders, as ingest() makes them
 * (the same helpers), without the rows: a start replays a checkpoint's tail with it.
 * `orderOf` finds an order by its id's words (`role`: 0 the command's own, 1 a fill's
 * maker); `opened` takes a submit's new order once its fills are applied.
 * Returns where the next command starts.
 */
function orderChanges(
  view: JournalView,
  at: number,
  shard: number,
  orderOf: (words: Int32Array, at: number, role: 0 | 1) => RestingOrder | undefined,
  opened: (order: RestingOrder) => void,
): number {
  const { words, bytes } = view;
  const headerAt = at + COMMAND_SLOT_BYTES;
  const next = headerAt + (1 + words[(headerAt >> 2) + RESULT_COUNT_WORD]!) * RESULT_RECORD_BYTES;
  const firstAt = headerAt + RESULT_RECORD_BYTES;
  if (bytes[firstAt + RESULT_KIND_BYTE] !== EVENT_ACCEPTED) return next;
  const opcode = words[(at >> 2) + COMMAND_HEADER_WORD]! & 0xff;
  if (opcode === OPCODE_EXPIRE) {
    forEachExpired(view, firstAt, next, (e) => {
      const order = orderOf(words, (e >> 2) + RESULT_UUID_A_WORD, 0);
      if (order === undefined) throw new Error(`the journal of shard ${shard} expires an order the checkpoint does not hold`);
      order.state = bytes[e + RESULT_STATE_BYTE]!;
    });
    return next;
  }
  let taker: RestingOrder | undefined;
  if (opcode === OPCODE_SUBMIT) {
    taker = SUBMITTED;
    openSubmitted(taker, view, at, shard);
  } else if (opcode === OPCODE_CANCEL || opcode === OPCODE_MODIFY) {
    taker = orderOf(words, (at >> 2) + COMMAND_ORDER_ID_WORD, 0); // unknown: ingest() logs it and skips the command
    if (taker !== undefined) acceptedChange(taker, view, at, opcode);
  }
  if (taker === undefined) return next;
  for (let e = firstAt + RESULT_RECORD_BYTES; e + 3 * RESULT_RECORD_BYTES <= next; e += 3 * RESULT_RECORD_BYTES) {
    const maker = orderOf(words, ((e + RESULT_RECORD_BYTES) >> 2) + RESULT_UUID_A_WORD, 1);
    if (maker === undefined) throw new Error(`the journal of shard ${shard} fills an order the checkpoint does not hold`);
    fillChange(taker, maker, view, e);
  }
  if (opcode === OPCODE_SUBMIT) opened(taker);
  return next;
}

/**
 * Calls `each` with the offset of every order an EXPIRE command (the session roll's,
 * core/expire-orders.ts) expired: the events after its leading one, `firstAt` to `next`.
 */
function forEachExpired(view: JournalView, firstAt: number, next: number, each: (e: number) => void): void {
  for (let e = firstAt + RESULT_RECORD_BYTES; e < next; e += RESULT_RECORD_BYTES) {
    if (view.bytes[e + RESULT_KIND_BYTE] !== EVENT_EXPIRED) throw new Error(`an EXPIRE command carries an event of kind ${view.bytes[e + RESULT_KIND_BYTE]}`);
    each(e);
  }
}

/** The four words of 16 big-endian bytes (an intake record's ids), for keyOf. */
function wordsOfBytes(bytes: Uint8Array, at: number, target: Int32Array): Int32Array {
  for (let k = 0; k < 4; k++) {
    const b = at + k * 4;
    target[k] = (bytes[b]! << 24) | (bytes[b + 1]! << 16) | (bytes[b + 2]! << 8) | bytes[b + 3]!;
  }
  return target;
}

/** The rows of the open group: the commits ingested since the last seal. */
class Rows {
  readonly commands = new BinaryCopy();
  readonly executions = new BinaryCopy();
  readonly trades = new BinaryCopy();
  /** The group's trades for the gateways' tape view, published once storage holds them. */
  readonly tape = new TapeBatch();
  /** Orders the group changed, by keyOf(orderId): their rows are written from their state at the seal. */
  readonly lifecycle = new Map<string, OrderState>();
  readonly watermarks = new Map<number, number>();
  /** Instruments first seen in this group: key -> [words, currency, shard, sequence]. */
  readonly instruments = new Map<string, [Int32Array, number, number, number]>();
  /** When each commit with journals was made durable (for the lag), and the group's size. */
  readonly journaledAtMs: number[] = [];
  commandCount = 0;
  openedAtMs = 0;
  lastCommit = 0;

  get bytes(): number {
    return this.commands.byteLength + this.executions.byteLength + this.trades.byteLength + this.lifecycle.size * 200;
  }
}

/** A sealed group: its transaction, sent (and resent after a failure) as built. */
interface Flush {
  sql: string;
  copies: Buffer[];
  /** Per COPY of `sql`, in order: its relation (as the server names it in an error) and columns. */
  copyTargets: CopyTarget[];
  /** The statement that moves the watermarks: all a group quarantined whole still runs. */
  watermarkSql: string;
  /** Rows storage refused, cut out of `copies`: written with the group (persistence/quarantine.ts). */
  quarantined: QuarantinedRow[];
  /** Whether the group's data is quarantined whole. */
  whole: boolean;
  tape: TapeBatch;
  watermarks: Map<number, number>;
  intakeWatermark: number;
  journaledAtMs: number[];
  rows: number;
  commands: number;
}

export type SessionNames = (runNo: number, sessionNo: number) => [string, string];

/**
 * What one commit changed in the displayed books (open LIMIT orders): per
 * (instrument, side, price) the change of open quantity and of order count, the
 * instruments first seen, and the journal positions reached. The read thread keeps
 * its in-memory depth from these.
 */
export interface BookUpdate {
  watermarks: [shard: number, sequence: number][];
  levels: [instrumentId: string, side: string, priceNanos: number, quantityDelta: number, countDelta: number][];
  instruments: [instrumentId: string, currency: string, shard: number][];
}

interface CopyTarget {
  relation: string;
  columns: string[];
}

/** What the projector did since it started. */
export class ProjectorStats {
  groups = 0;
  rows = 0;
  /** Rows storage refused, kept in runtime.quarantined_rows (a group quarantined whole counts its COPYs). */
  quarantinedRows = 0;
  quarantinedGroups = 0;
  /** Time spent ingesting commits and committing groups, µs. */
  busyUs = 0;
  /** Projection lag per journal batch: its journal commit to its projection commit (µs). */
  readonly lag = new LatencyHistogram();
}

/** Re-driving: per shard, the slots of commands taken but never sequenced, in the order taken. */
export interface RedriveShard {
  shard: number;
  count: number;
  slots: ArrayBuffer;
}

const SCRATCH = new Int32Array(4);
const EVENT_ID = new Int32Array(4);

/** An order's place in the displayed books: instrument, side, price, open quantity. */
type Level = [instrumentId: string, side: string, priceNanos: number, quantity: number];

function addLevel(levels: Map<string, BookUpdate['levels'][number]>, level: Level | null, sign: number): void {
  if (level === null) return;
  const [instrument, side, priceNanos, quantity] = level;
  const key = `${instrument}|${side}|${priceNanos}`;
  const entry = levels.get(key) ?? [instrument, side, priceNanos, 0, 0];
  entry[3] += sign * quantity;
  entry[4] += sign;
  levels.set(key, entry);
}

export class Projector {
  readonly stats = new ProjectorStats();
  /** Own orders and fills in memory (persistence/own-reads.ts), changed by every ingested commit. */
  readonly own: OwnReads;
  /** The latest command time ingested (µs): what a rebuild's model lacks reaches that far. */
  private lastTimestampUs = 0;
  /** Instruments already in runtime.instruments (or in a group on its way there). */
  private readonly instruments = new Set<string>();
  private readonly instrumentNames = new Map<string, string>();
  /** Open orders as ingested (ahead of storage by the unflushed groups), once touched since the start. */
  private readonly live = new Map<string, OrderState>();
  /** Open orders loaded at start and not touched since (compact; taken into `live` on first touch). */
  private resting = new RestingOrders();
  private loadedOrders: { frozen: FrozenOrders; watermarks: number[] } | null = null;
  private readonly pending = new Map<string, PendingIntake>();
  private readonly control: PersistenceControl;
  private readonly sessionNames: SessionNames;
  private readonly principals: Buffer[];
  /** Per shard: the last sequence storage holds (flushed), and the last ingested. */
  private readonly projected: number[];
  private readonly ingested: number[];
  /** The last commit whose intake records this projector has seen (added to pending, or found materialized). */
  private intakeSeen = 0;
  private intakeWatermark = 0;
  /**
   * The next trade's tape sequence. This thread assigns it (in ingestion order, which is
   * commit order, as the identity column did when it was the only writer), so that the
   * tape view can show each trade with the sequence storage holds without reading it back.
   */
  private nextTapeSequence = 1;
  private groupsSinceVacuum = 0;
  private open = new Rows();
  private readonly sealed: Flush[] = [];
  /**
   * Groups flushed, oldest first, with the script sent: committed without waiting for the
   * WAL flush, a crash of the server may take them back until a synchronous commit covers
   * them (durableThrough); resendLost sends those it took back again.
   */
  private readonly provisional: { flush: Flush; script: [string, Buffer[]]; ordinal: number; run: string }[] = [];
  private flushedGroups = 0;
  /** The run of the server (its start time) the groups are flushed on now. */
  private serverRun = '';
  private readonly onSealed: (groups: number) => void;
  private readonly onTapeStored: (trades: TapeBatch) => void;
  private readonly log: (level: 'info' | 'warn' | 'error', message: string, fields?: object) => void;
  private readonly sessionText = new Map<string, [Buffer, Buffer]>();

  constructor(options: {
    control: PersistenceControl;
    shardCount: number;
    sessionNames: SessionNames;
    /** Principal ids by their index in the principals file (intake records carry the index). */
    principalIds: readonly string[];
    log: (level: 'info' | 'warn' | 'error', message: string, fields?: object) => void;
    /** Hears the number of sealed, unflushed groups whenever it changes (the queue's high-water mark). */
    onSealed?: (groups: number) => void;
    /** Hears each group's trades once storage holds them, before the projection watermarks move. */
    onTapeStored?: (trades: TapeBatch) => void;
    /** OWN_READS_WINDOW: closed orders and fills kept in memory per participant. */
    ownReadsWindow?: number;
  }) {
    this.own = new OwnReads(options.ownReadsWindow ?? OWN_READS_WINDOW_DEFAULT, options.sessionNames);
    this.onSealed = options.onSealed ?? (() => undefined);
    this.onTapeStored = options.onTapeStored ?? (() => undefined);
    this.control = options.control;
    this.sessionNames = options.sessionNames;
    this.principals = options.principalIds.map((id) => Buffer.from(id, 'utf8'));
    this.projected = Array.from({ length: options.shardCount }, () => 0);
    this.ingested = Array.from({ length: options.shardCount }, () => 0);
    this.log = options.log;
  }

  /** Last sequence storage holds per shard. */
  watermark(shard: number): number {
    return this.projected[shard]!;
  }

  /** Last sequence ingested per shard (storage holds it once its group is flushed). */
  ingestedWatermark(shard: number): number {
    return this.ingested[shard]!;
  }

  /** Open orders held (the compact store and those touched since the start). */
  get openOrderCount(): number {
    let count = this.resting.size;
    for (const order of this.live.values()) if (order.state === STATE_OPEN || order.state === STATE_PARTIALLY_FILLED) count++;
    return count;
  }

  /** Commands taken and waiting for their outcome. */
  get pendingCount(): number {
    return this.pending.size;
  }

  /** The open group's commands, its approximate bytes and when its first commit came. */
  get openCommands(): number {
    return this.open.commandCount;
  }

  get openBytes(): number {
    return this.open.bytes;
  }

  get openSinceMs(): number {
    return this.open.openedAtMs;
  }

  /** Groups sealed and not yet in storage. */
  get sealedCount(): number {
    return this.sealed.length;
  }

  /**
   * Loads the watermarks and the open orders (at start, before the first commit): from
   * the file saved at the last graceful stop when the main thread names one and it is
   * true of storage (persistence/open-orders-snapshot.ts); else, after a crash, from the
   * checkpoint the database names (`checkpoint`: DATA_DIR and the note) with the journal
   * after it replayed onto it; else from the table. Says which.
   */
  async load(client: pg.ClientBase, saved: { file: string; token: string } | null = null, checkpoint: { dir: string; note: OpenOrdersNote | null } | null = null): Promise<string> {
    const marks = await client.query<{ projection: string; shard_id: number; sequence: string }>(
      'SELECT projection, shard_id, sequence FROM runtime.projection_watermarks WHERE projection = ANY($1)',
      [[PROJECTION_NAME, INTAKE_PROJECTION_NAME]],
    );
    for (const row of marks.rows) {
      if (row.projection === INTAKE_PROJECTION_NAME) {
        this.intakeWatermark = Number(row.sequence);
        this.intakeSeen = this.intakeWatermark;
      } else if (row.shard_id < this.projected.length) {
        this.projected[row.shard_id] = Number(row.sequence);
        this.ingested[row.shard_id] = Number(row.sequence);
        this.control.setProjected(row.shard_id, Number(row.sequence));
      }
    }
    // The identity's sequence, not max(tape_sequence) (no index serves that: migration
    // 010): each group's transaction sets it to the group's last tape sequence before
    // committing, and a sequence's change is logged at once, so it is at least the largest
    // one stored (after a crash as well; a group that failed may leave it higher, which
    // only skips numbers).
    const tape = await client.query<{ last: string; called: boolean }>(
      'SELECT last_value::text AS last, is_called AS called FROM runtime.trades_tape_sequence_seq',
    );
    this.nextTapeSequence = Number(tape.rows[0]!.last) + (tape.rows[0]!.called ? 1 : 0);
    this.instruments.clear();
    for (const row of (await client.query<{ id: string }>('SELECT instrument_id AS id FROM runtime.instruments')).rows) {
      this.instruments.add(keyOf(uuidWordsOf(row.id), 0));
    }
    this.live.clear();
    this.loadedOrders = null;
    await this.lackHistory(client);
    if (saved !== null) {
      let why: string;
      try {
        const read = readOpenOrders(saved.file, saved.token, this.projected);
        if (typeof read !== 'string') {
          this.resting = read;
          this.ownReadsLoaded = this.restoreOwnReads(saved);
          return SAVED_AT_STOP;
        }
        why = read;
      } catch (error) {
        why = `the file could not be loaded: ${(error as Error).message}`; // e.g. an order twice: the table decides
      }
      await this.loadOpenOrders(client); // a new store: nothing of the file stays
      return `read from storage (${why})`;
    }
    const note = checkpoint?.note ?? null;
    if (checkpoint !== null && note !== null) {
      let why: string;
      let at: readonly number[] = [];
      try {
        // Room for the orders the journal after the checkpoint may open, so that the replay's adds do not grow the store.
        let tail = 0;
        for (let shard = 0; shard < Math.min(note.watermarks.length, this.projected.length); shard++) {
          const counted = await client.query<{ n: string }>(
            'SELECT coalesce(sum(command_count), 0)::text AS n FROM runtime.journal_batches WHERE shard_id = $1 AND first_sequence > $2 AND first_sequence <= $3',
            [shard, note.watermarks[shard], this.projected[shard]],
          );
          tail += Number(counted.rows[0]!.n);
        }
        if (tail > OPEN_ORDERS_REPLAY_MAX) throw new Error(`the journal after it holds ${tail} commands, more than ${OPEN_ORDERS_REPLAY_MAX} (the COPY costs less)`);
        const read = readOpenOrders(
          openOrdersCheckpointPath(checkpoint.dir, note.slot),
          note.token,
          (held) => {
            at = held;
            if (held.length !== this.projected.length || held.some((mark, shard) => mark > this.projected[shard]!)) return `the file is true at projections ${held.join()}, storage holds ${this.projected.join()}`;
            return null;
          },
          tail,
        );
        if (typeof read === 'string') why = read;
        else {
          this.resting = read;
          const replayed = await this.replayAfterCheckpoint(client, at);
          if (replayed.commands > 0) this.keepLoaded();
          return `checkpoint at ${at.join()}, then ${replayed.commands} commands of the journal after it (${replayed.changed} changes of orders)`;
        }
      } catch (error) {
        why = `the checkpoint could not be loaded: ${(error as Error).message}`;
      }
      await this.loadOpenOrders(client); // a new store: nothing of the file stays
      this.keepLoaded();
      return `read from storage (${why})`;
    }
    await this.loadOpenOrders(client);
    if (checkpoint !== null) this.keepLoaded(); // without a DATA_DIR nothing takes them: their columns would stay held
    return 'read from storage';
  }

  /**
   * The own-reads model starts empty: what storage holds already (if anything) is
   * lacking, up to the latest command time on the journal or now, whichever is later
   * (a clock set back between runs cannot hide older rows above the floor).
   */
  private async lackHistory(client: pg.ClientBase): Promise<void> {
    const held = await client.query<{ orders: boolean; fills: boolean }>(
      'SELECT EXISTS (SELECT 1 FROM runtime.order_lifecycle_state) AS orders, EXISTS (SELECT 1 FROM runtime.executions) AS fills',
    );
    let throughUs = wallClockUs();
    const { orders, fills } = held.rows[0]!;
    if (orders || fills) {
      const last = await client.query<{ payload: Buffer }>(
        'SELECT (SELECT payload FROM runtime.journal_batches b WHERE b.shard_id = s.shard_id ORDER BY first_sequence DESC LIMIT 1) AS payload FROM generate_series(0, $1 - 1) AS s(shard_id)',
        [this.projected.length],
      );
      for (const row of last.rows) if (row.payload !== null) throughUs = Math.max(throughUs, lastCommandTimeUs(journalView(row.payload)));
    }
    this.own.lacksHistoryThrough(orders, fills, throughUs);
    this.lastTimestampUs = throughUs;
  }

  /** Where the own-reads model came from at start: the stop's file, or why not (its windows then start empty). */
  ownReadsLoaded = 'nothing saved';

  /** The own-reads model the stop saved beside the open orders, if it is whole and true where storage is. */
  private restoreOwnReads(saved: { file: string; token: string }): string {
    try {
      const image = readOwnReads(ownReadsPath(path.dirname(saved.file)), saved.token, this.projected, this.own.window);
      if (typeof image === 'string') return `empty windows (${image})`;
      this.own.restore(image);
      return `${SAVED_AT_STOP}: ${this.own.ordersHeld} orders and ${image.fillSmall.length / 3} fills`;
    } catch (error) {
      return `empty windows (${(error as Error).message})`;
    }
  }

  /** What load() read, kept for takeLoadedOrders(). */
  private keepLoaded(): void {
    this.loadedOrders = { frozen: this.resting.freeze(), watermarks: [...this.projected] };
  }

  /**
   * The open orders load() read, at the projections storage held then, unless they were
   * the file a graceful stop saved (that file becomes the checkpoint) or a checkpoint with
   * nothing of the journal after it: the persistence thread writes them as the next
   * checkpoint once the start is over, so that a crash after this start replays only the
   * journal since it, not since the last graceful stop. Given once.
   */
  takeLoadedOrders(): { frozen: FrozenOrders; watermarks: number[] } | null {
    const loaded = this.loadedOrders;
    this.loadedOrders = null;
    return loaded;
  }

  /**
   * After a checkpoint of the open orders true at `from` (per shard) was loaded: the
   * journal's batches between it and the projections storage holds, replayed onto the
   * store as ingest() would change the orders (orderChanges: the same code), without
   * the rows, which storage holds. Returns the commands replayed and the orders changed.
   */
  private async replayAfterCheckpoint(client: pg.ClientBase, from: readonly number[]): Promise<{ commands: number; changed: number }> {
    let commands = 0;
    let changed = 0;
    const store = this.resting;
    const orderOf = (words: Int32Array, at: number, role: 0 | 1): RestingOrder | undefined => {
      changed++;
      return store.stored(words, at, role);
    };
    const opened = (order: RestingOrder) => {
      changed++;
      if (order.state === STATE_OPEN || order.state === STATE_PARTIALLY_FILLED) store.add(order);
    };
    const scratch = new JournalScratch();
    for (let shard = 0; shard < this.projected.length; shard++) {
      const to = this.projected[shard]!;
      if (from[shard]! >= to) continue;
      let last = from[shard]!;
      await copyOut(
        client,
        `SELECT first_sequence, last_sequence, checksum, command_count, payload FROM runtime.journal_batches
          WHERE shard_id = ${Number(shard)} AND first_sequence > ${Number(last)} AND first_sequence <= ${Number(to)} ORDER BY first_sequence`,
        (row) => {
          if (row.int8(0) !== last + 1) throw new Error(`shard ${shard}'s journal has a gap after sequence ${last}`);
          const payload = row.bytes(4);
          if (crc32(payload) !== row.int8(2)) throw new Error(`shard ${shard}'s journal batch at sequence ${last + 1} fails its checksum`);
          const view = scratch.view(payload); // orderChanges keeps nothing of it
          for (let at = 0; at < view.bytes.byteLength; ) at = orderChanges(view, at, shard, orderOf, opened);
          last = row.int8(1);
          commands += row.int32(3);
        },
      );
      if (last !== to) throw new Error(`shard ${shard}'s journal ends at ${last}, storage's projections at ${to}`);
    }
    store.indexAdds();
    return { commands, changed };
  }

  /** Every open order of order_lifecycle_state into the compact store. */
  private async loadOpenOrders(client: pg.ClientBase): Promise<void> {
    const sessions = await client.query<{ run_no: number; session_no: number; run_id: string; venue_session_id: string }>('SELECT run_no, session_no, run_id, venue_session_id FROM runtime.venue_sessions');
    const numbers = new Map(sessions.rows.map((r) => [`${r.run_id}/${r.venue_session_id}`, [r.run_no, r.session_no] as const])); // '/' is in no id (migration 001)
    // Open orders, streamed binary: one object per order and nothing else (a million of them at start-up).
    // What only a new order's row needs (engine order id, creation time) is not loaded: these rows exist.
    const openCount = (await client.query<{ n: number }>("SELECT count(*)::int AS n FROM runtime.order_lifecycle_state WHERE state IN ('OPEN', 'PARTIALLY_FILLED')")).rows[0]!.n;
    this.resting = new RestingOrders(openCount);
    // Open orders, streamed binary into the compact store. What only a new order's row needs
    // (engine order id, creation time) is not loaded: these rows exist.
    let lastSession = Buffer.alloc(0);
    let lastNumbers: readonly [number, number] = [-1, -1];
    const order: RestingOrder = { ids: new Int32Array(16), runNo: 0, sessionNo: 0, side: 0, orderType: 0, timeInForce: 0, state: 0, priceNanos: 0, quantity: 0, filled: 0, currency: 0, shard: 0 };
    await copyOut(
      client,
      `SELECT order_id, instrument_id, participant_id, account_id, run_id || '/' || venue_session_id, side, order_type, time_in_force, state,
              limit_price_nanos, original_quantity_units, filled_quantity_units, currency, shard_id
         FROM runtime.order_lifecycle_state WHERE state IN ('OPEN', 'PARTIALLY_FILLED')`,
      (row) => {
        for (let k = 0; k < 4; k++) row.words(k, order.ids, k * 4);
        if (!row.equals(4, lastSession)) {
          lastSession = Buffer.from(row.bytes(4));
          lastNumbers = numbers.get(lastSession.toString('utf8')) ?? [-1, -1];
        }
        order.runNo = lastNumbers[0];
        order.sessionNo = lastNumbers[1];
        order.side = row.byte(5, 0) === 66 /* B */ ? 0 : 1;
        order.orderType = row.lengths[6] === 5 /* LIMIT */ ? 0 : 1;
        order.timeInForce = row.byte(7, 0) === 68 /* D */ ? 0 : 1;
        order.state = row.byte(8, 0) === 79 /* O */ ? STATE_OPEN : STATE_PARTIALLY_FILLED;
        order.priceNanos = row.int8(9);
        order.quantity = row.int8(10);
        order.filled = row.int8(11);
        order.currency = (row.byte(12, 0) << 16) | (row.byte(12, 1) << 8) | row.byte(12, 2);
        order.shard = row.int16(13);
        this.resting.add(order);
      },
    );
    this.resting.indexAdds();
  }

  /**
   * Writes the open orders for the next start (persistence/open-orders-snapshot.ts), at
   * a graceful stop: only when everything ingested is in storage, so that they are
   * exactly the table's open rows at the watermarks written with them.
   */
  saveOpenOrders(file: string, token: string): { count: number; bytes: number } {
    if (this.open.commandCount > 0 || this.sealed.length > 0 || this.projected.some((sequence, shard) => sequence !== this.ingested[shard])) {
      throw new Error(`projections are not all in storage (projected ${this.projected.join()}, ingested ${this.ingested.join()}, ${this.sealed.length} groups sealed)`);
    }
    const isOpen = (order: RestingOrder) => order.state === STATE_OPEN || order.state === STATE_PARTIALLY_FILLED;
    const count = this.openOrderCount;
    const bytes = writeOpenOrders(file, token, this.projected, count, (visit) => {
      this.resting.forEach(visit);
      for (const order of this.live.values()) if (isOpen(order)) visit(order);
    });
    // The own-order windows beside them, under the same token (persistence/own-reads-snapshot.ts).
    const ownBytes = writeOwnReads(ownReadsPath(path.dirname(file)), token, this.projected, this.own.image());
    return { count, bytes: bytes + ownBytes };
  }

  /** The open order with this id (words[at..]), taken into `live` from the compact store on first touch. */
  private liveOrder(words: Int32Array, at: number, key: string): OrderState | undefined {
    const known = this.live.get(key);
    if (known !== undefined) return known;
    const resting = this.resting.take(words, at);
    if (resting === null) return undefined;
    const order: OrderState = { ...resting, engineOrderId: '', createdAtUs: 0, updatedAtUs: 0, lastSequence: 0, clientOrderId: null, fresh: false, clientOrderKnown: false };
    this.live.set(key, order);
    return order;
  }

  /**
   * Start-up: the intake records beyond the intake watermark whose commands have no
   * command_log row yet become pending again (their outcomes are on the journal beyond
   * the journal watermarks, or nowhere: then they are re-driven). Returns how many.
   */
  async loadPending(client: pg.ClientBase): Promise<number> {
    this.pending.clear();
    let after = this.intakeWatermark;
    for (;;) {
      const page = await client.query<{ commit_no: string; gateway_id: number; checksum: string; record_count: number; payload: Buffer; bodies: Buffer | null; layout: number | null }>(
        'SELECT commit_no, gateway_id, checksum, record_count, payload, bodies, layout FROM runtime.intake_batches WHERE commit_no > $1 ORDER BY commit_no, gateway_id LIMIT 64',
        [after],
      );
      if (page.rows.length === 0) break;
      // A page ends on a whole commit: the next one starts after the last commit seen in full.
      const lastCommit = Number(page.rows[page.rows.length - 1]!.commit_no);
      const rows = page.rows.length === 64 ? page.rows.filter((row) => Number(row.commit_no) < lastCommit) : page.rows;
      if (rows.length === 0) throw new Error(`an intake commit has more than 63 gateway rows (commit ${lastCommit})`);
      const found: PendingIntake[] = [];
      for (const row of rows) {
        if (crc32(row.payload) !== Number(row.checksum)) throw new Error(`the intake batch of commit ${row.commit_no} fails its checksum`);
        const records = storedIntake(row.payload, row.record_count, row.layout);
        const bytes = new Uint8Array(records.bytes); // a copy, aligned for the word and float views
        const words = new Int32Array(bytes.buffer, 0, bytes.byteLength >> 2);
        const floats = new Float64Array(bytes.buffer, 0, bytes.byteLength >> 3);
        const stride = records.stride;
        for (let at = 0; at < bytes.byteLength; at += stride) {
          found.push({ commitNo: Number(row.commit_no), gateway: row.gateway_id, index: at / stride, stride, bodies: row.bodies, bytes, words, floats, at });
        }
      }
      const ids = found.map((entry) => formatUuid(wordsOfBytes(entry.bytes, entry.at + INTAKE_COMMAND_ID_BYTE, SCRATCH), 0));
      const done = new Set((await client.query<{ id: string }>('SELECT command_id AS id FROM runtime.command_log WHERE command_id = ANY($1::uuid[])', [ids])).rows.map((row) => row.id));
      found.forEach((entry, k) => {
        if (!done.has(ids[k]!)) this.pending.set(keyOf(wordsOfBytes(entry.bytes, entry.at + INTAKE_COMMAND_ID_BYTE, SCRATCH), 0), entry);
      });
      after = Number(rows[rows.length - 1]!.commit_no);
      this.intakeSeen = Math.max(this.intakeSeen, after);
    }
    return this.pending.size;
  }

  /**
   * The commandIds of the commands still pending (taken, not in the command log), and their
   * orderIds: what the start puts in storage after it read storage (the projections' catch-up,
   * then the re-drive), for the gateways' tables to learn by id.
   */
  pendingIds(): { commandIds: string[]; orderIds: string[] } {
    const commandIds: string[] = [];
    const orderIds: string[] = [];
    for (const entry of this.pending.values()) {
      commandIds.push(formatUuid(wordsOfBytes(entry.bytes, entry.at + INTAKE_COMMAND_ID_BYTE, SCRATCH), 0));
      if ((entry.words[(entry.at >> 2) + INTAKE_FLAGS_WORD]! & INTAKE_HAS_ORDER_ID) !== 0) orderIds.push(formatUuid(wordsOfBytes(entry.bytes, entry.at + INTAKE_ORDER_ID_BYTE, SCRATCH), 0));
    }
    return { commandIds, orderIds };
  }

  /** What is still pending, per shard in the order taken: to be re-driven (recovery). */
  redrivePlan(): RedriveShard[] {
    const byShard = new Map<number, PendingIntake[]>();
    for (const entry of this.pending.values()) {
      const shard = entry.words[(entry.at >> 2) + INTAKE_SHARD_WORD]!;
      const list = byShard.get(shard) ?? [];
      list.push(entry);
      byShard.set(shard, list);
    }
    return [...byShard].map(([shard, entries]) => {
      const slots = new Uint8Array(entries.length * COMMAND_SLOT_BYTES);
      entries.forEach((entry, k) => slots.set(entry.bytes.subarray(entry.at + INTAKE_SLOT_BYTE, entry.at + INTAKE_SLOT_BYTE + COMMAND_SLOT_BYTES), k * COMMAND_SLOT_BYTES));
      return { shard, count: entries.length, slots: slots.buffer };
    });
  }

  /**
   * Applies one commit (in commit order) to the in-memory lifecycle and appends its
   * rows to the open group. Returns what it changed in the displayed books, or null.
   */
  ingest(commit: StorageCommit): BookUpdate | null {
    const started = performance.now();
    for (const batch of commit.intake) this.addPending(commit.commitNo, batch.gateway, batch.payload, batch.bodies ?? null);
    this.intakeSeen = Math.max(this.intakeSeen, commit.commitNo);
    const group = this.open;
    group.lastCommit = Math.max(group.lastCommit, commit.commitNo);
    if (group.openedAtMs === 0) group.openedAtMs = started;
    const touched = new Map<string, Level | null>();
    const instruments: BookUpdate['instruments'] = [];
    const watermarks: BookUpdate['watermarks'] = [];
    for (const batch of commit.journals) {
      if (batch.lastSequence <= this.ingested[batch.shard]!) continue; // already materialized
      if (batch.firstSequence !== this.ingested[batch.shard]! + 1) throw new Error(`projection of shard ${batch.shard} out of step: batch ${batch.firstSequence}, watermark ${this.ingested[batch.shard]}`);
      const view = journalView(batch.payload);
      const before = group.instruments.size;
      for (let at = 0; at < view.bytes.byteLength; ) at = this.apply(group, touched, view, at, batch.shard, batch.firstSequence);
      for (const [ids, currency, shard] of [...group.instruments.values()].slice(before)) instruments.push([formatUuid(ids, 0), unpackCurrency(currency), shard]);
      this.ingested[batch.shard] = batch.lastSequence;
      group.watermarks.set(batch.shard, batch.lastSequence);
      watermarks.push([batch.shard, batch.lastSequence]);
      group.commandCount += batch.commandCount;
    }
    if (commit.journaledAtMs !== undefined && commit.journals.length > 0) group.journaledAtMs.push(commit.journaledAtMs);
    const levels = new Map<string, BookUpdate['levels'][number]>();
    for (const [key, before] of touched) {
      const order = this.live.get(key) ?? group.lifecycle.get(key)!;
      addLevel(levels, before, -1);
      addLevel(levels, this.levelOf(order), 1);
      this.own.changed(key, order, order.clientOrderKnown);
      if (order.state !== STATE_OPEN && order.state !== STATE_PARTIALLY_FILLED) this.live.delete(key);
    }
    this.stats.busyUs += (performance.now() - started) * 1000;
    if (watermarks.length === 0) return null;
    return { watermarks, levels: [...levels.values()].filter((entry) => entry[3] !== 0 || entry[4] !== 0), instruments };
  }

  /** Closes the open group into a transaction for flush(); nothing if it is empty. */
  seal(): void {
    const group = this.open;
    if (group.lastCommit === 0 && group.commandCount === 0) return;
    let intakeWatermark = Math.max(group.lastCommit, this.intakeWatermark);
    const oldest = this.pending.values().next();
    if (!oldest.done) intakeWatermark = oldest.value.commitNo - 1; // the oldest intake record still waiting for its outcome
    this.open = new Rows();
    if (group.watermarks.size === 0 && intakeWatermark === this.intakeWatermark) return;
    const { sql, copies, copyTargets, watermarkSql, rows } = this.script(group, intakeWatermark);
    this.intakeWatermark = intakeWatermark;
    this.sealed.push({
      sql, copies, copyTargets, watermarkSql, quarantined: [], whole: false,
      tape: group.tape, watermarks: group.watermarks, intakeWatermark, journaledAtMs: group.journaledAtMs, rows, commands: group.commandCount,
    });
    this.onSealed(this.sealed.length);
  }

  /**
   * Sends the oldest sealed group; storage then holds everything ingested up to it.
   * After a failure the same group is sent again: check storedAlready() first (a lost
   * acknowledgement). Returns false when nothing is sealed.
   */
  async flush(client: pg.ClientBase): Promise<boolean> {
    const flush = this.sealed[0];
    if (flush === undefined) return false;
    const started = performance.now();
    let script = scriptOf(flush);
    for (;;) {
      try {
        await runScript(client, ...script);
        break;
      } catch (error) {
        // Storage down or busy: the caller retries the group as it is. Storage refusing data: the refused row is set aside.
        if (!isDataRefusal(error) || flush.whole) throw error;
        this.quarantine(flush, error);
        script = scriptOf(flush);
      }
    }
    if (flush.quarantined.length > 0) this.reportQuarantine(flush);
    this.flushed(flush, started, script);
    // Kept for a resend until a synchronous commit covers them; past the bound, one is made here.
    if (this.provisional.length >= PROVISIONAL_GROUPS_MAX) {
      await client.query(DURABLE_POINT_SQL);
      this.provisional.length = 0;
    }
    if (++this.groupsSinceVacuum >= PROJECTOR_VACUUM_GROUPS) {
      this.groupsSinceVacuum = 0;
      await client.query(PROJECTOR_VACUUM_SQL);
    }
    return true;
  }

  /**
   * Sets aside what storage refused in a group: the COPY row its error names, or the
   * group's data whole when the error names none or the group has lost too many rows.
   */
  private quarantine(flush: Flush, error: Error & { code: string; where?: string }): void {
    const named = refusedCopyRow(error);
    const index = named === null ? -1 : flush.copyTargets.findIndex((target) => target.relation === named.relation);
    const cut = index < 0 || flush.quarantined.length >= QUARANTINE_ROWS_PER_GROUP_MAX ? null : cutTuple(flush.copies[index]!, named!.line);
    const ranges = [...flush.watermarks].map(([shard, last]) => `shard ${shard} sequences ${this.projected[shard]! + 1}-${last}`).join(', ');
    const message = refusalMessage(error);
    if (cut === null) {
      flush.whole = true;
      flush.quarantined.push(
        ...flush.copies.map((data, k) => ({
          target: `${flush.copyTargets[k]!.relation} (whole group)`, shard: null, sequence: null, key: null, journalPosition: ranges, sqlstate: error.code, message, data,
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
      target: relation, shard, sequence, key: key === null ? null : Buffer.from(key),
      journalPosition: shard !== null && sequence !== null ? `shard ${shard} sequence ${sequence}` : `in ${ranges}`, sqlstate: error.code, message, data: cut.tuple,
    });
  }

  private reportQuarantine(flush: Flush): void {
    this.stats.quarantinedRows += flush.quarantined.length;
    if (flush.whole) this.stats.quarantinedGroups++;
    for (const row of flush.quarantined) {
      this.log('error', flush.whole ? 'storage refused a projection group: its data is quarantined whole' : 'storage refused a projection row: it is quarantined', {
        target: row.target,
        journalPosition: row.journalPosition,
        key: row.key === null ? null : formatUuid(wordsOfBytes(row.key, 0, SCRATCH), 0),
        sqlstate: row.sqlstate,
        reason: row.message,
        table: 'runtime.quarantined_rows',
      });
    }
  }

  /** After a failed flush: whether storage holds the oldest sealed group after all (then it is done). */
  async storedAlready(client: pg.ClientBase): Promise<boolean> {
    const flush = this.sealed[0];
    if (flush === undefined) return false;
    const done = holds(await storedMarks(client), flush);
    if (done) this.flushed(flush, performance.now(), scriptOf(flush));
    return done;
  }

  /** Groups flushed since the start (a journal commit sent after this many covers them: durableThrough). */
  get flushedCount(): number {
    return this.flushedGroups;
  }

  /**
   * A commit that waited for the WAL flush was sent, on run `run` of the server, after
   * `count` groups were flushed: the WAL is flushed past the commits of those flushed on
   * that run, so no crash can take them back.
   */
  durableThrough(count: number, run: string): void {
    while (this.provisional.length > 0 && this.provisional[0]!.ordinal <= count && this.provisional[0]!.run === run) this.provisional.shift();
  }

  /**
   * On a new connection to run `run` of the server (its start time): the groups flushed on
   * an earlier run that it took back in a crash (storage keeps a prefix of the commits) are
   * sent again in order, reads held back to what storage holds until they are in; those it
   * holds are durable (a clean stop flushed them, or the crash recovery replayed them).
   * Returns how many were sent again.
   */
  async resendLost(client: pg.ClientBase, run: string): Promise<number> {
    this.serverRun = run;
    if (this.provisional.every((entry) => entry.run === run)) return 0;
    const marks = await storedMarks(client);
    for (let k = this.provisional.length - 1; k >= 0; k--) {
      const entry = this.provisional[k]!;
      if (entry.run !== run && holds(marks, entry.flush)) this.provisional.splice(k, 1);
    }
    // What is left of earlier runs is what storage lacks: the last groups, sent again in order (a try cut short goes on at the next connection).
    const lost = this.provisional.filter((entry) => entry.run !== run);
    if (lost.length === 0) return 0;
    for (const shard of new Set(lost.flatMap((entry) => [...entry.flush.watermarks.keys()]))) {
      this.projected[shard] = marks.projected(shard);
      this.control.setProjected(shard, this.projected[shard]!);
    }
    for (const entry of lost) {
      await runScript(client, ...entry.script);
      entry.run = run;
      for (const [shard, sequence] of entry.flush.watermarks) {
        this.projected[shard] = sequence;
        this.control.setProjected(shard, sequence);
      }
    }
    this.log('warn', 'storage lost projection groups in a crash of the server (committed without waiting for the WAL): sent again', { groups: lost.length });
    return lost.length;
  }

  private flushed(flush: Flush, started: number, script: [string, Buffer[]]): void {
    const committed = performance.now();
    this.provisional.push({ flush, script, ordinal: ++this.flushedGroups, run: this.serverRun });
    this.sealed.shift();
    this.onSealed(this.sealed.length);
    this.stats.busyUs += (committed - started) * 1000;
    for (const at of flush.journaledAtMs) this.stats.lag.record((committed - at) * 1000);
    this.stats.groups++;
    this.stats.rows += flush.rows;
    if (flush.tape.length > 0 && !flush.whole) this.onTapeStored(flush.tape);
    for (const [shard, sequence] of flush.watermarks) {
      this.projected[shard] = sequence;
      this.control.setProjected(shard, sequence);
    }
  }

  /** The audit record of a command taken but not yet on the journal, or null (none such pending). */
  pendingAudit(commandId: string): AuditRecord | null {
    const words = new Int32Array(4);
    if (!parseUuidInto(commandId, words, 0)) return null;
    const entry = this.pending.get(keyOf(words, 0));
    return entry === undefined ? null : auditOf(entry.bytes, entry.stride, entry.bodies, entry.index);
  }

  private addPending(commitNo: number, gateway: number, payload: Buffer, bodies: Uint8Array | null): void {
    const bytes = payload;
    const words = new Int32Array(bytes.buffer, bytes.byteOffset, bytes.byteLength >> 2);
    const floats = new Float64Array(bytes.buffer, bytes.byteOffset, bytes.byteLength >> 3);
    for (let at = 0, index = 0; at < bytes.byteLength; at += INTAKE_RECORD_BYTES, index++) {
      this.pending.set(keyOf(wordsOfBytes(bytes, at + INTAKE_COMMAND_ID_BYTE, SCRATCH), 0), {
        commitNo, gateway, index, stride: INTAKE_RECORD_BYTES, bodies, bytes, words, floats, at,
      });
    }
  }
  /** One command of a journal batch: its command_log row, its order changes, its executions and trades. Returns the next offset. */
  private apply(rows: Rows, touched: Map<string, Level | null>, view: JournalView, at: number, shard: number, batchFirst: number): number {
    const { words, floats, bytes } = view;
    const w = at >> 2;
    const headerAt = at + COMMAND_SLOT_BYTES;
    const hw = headerAt >> 2;
    const hf = headerAt >> 3;
    const eventCount = words[hw + RESULT_COUNT_WORD]!;
    const next = headerAt + (1 + eventCount) * RESULT_RECORD_BYTES;
    const firstAt = headerAt + RESULT_RECORD_BYTES;
    const accepted = bytes[firstAt + RESULT_KIND_BYTE] === EVENT_ACCEPTED;
    const timestampUs = floats[hf + RESULT_TIMESTAMP_FLOAT]!;
    if (timestampUs > this.lastTimestampUs) this.lastTimestampUs = timestampUs;
    const opcode = words[w + COMMAND_HEADER_WORD]! & 0xff;
    if (opcode === OPCODE_EXPIRE) {
      // The session roll's: no client command (no intake record, no command_log row), only orders that expired.
      if (accepted) this.applyExpiry(rows, touched, view, firstAt, next, timestampUs);
      return next;
    }
    const key = keyOf(words, w + COMMAND_ID_WORD);
    const intake = this.pending.get(key);
    if (intake === undefined) throw new Error(`command ${formatUuid(words, w + COMMAND_ID_WORD)} is on the journal of shard ${shard} without its intake record`);
    this.pending.delete(key);

    const i = intake.at;
    const iw = i >> 2;
    const flags = intake.words[iw + INTAKE_FLAGS_WORD]!;
    const principal = this.principals[intake.words[iw + INTAKE_PRINCIPAL_WORD]!];
    const clientOrderIdLength = intake.words[iw + INTAKE_CLIENT_ORDER_ID_LENGTH_WORD]!;
    const c = rows.commands.row(24).range(intake.bytes, i + INTAKE_COMMAND_ID_BYTE, 16).range(intake.bytes, i + INTAKE_SCOPE_BYTE, 16).range(intake.bytes, i + INTAKE_PAYLOAD_HASH_BYTE, 32);
    if (principal === undefined) c.text(`#${intake.words[iw + INTAKE_PRINCIPAL_WORD]}`);
    else c.range(principal, 0, principal.byteLength);
    c.range(intake.bytes, i + INTAKE_CLIENT_ID_BYTE, intake.words[iw + INTAKE_CLIENT_ID_LENGTH_WORD]!)
      .range(intake.bytes, i + INTAKE_KEY_BYTE, intake.words[iw + INTAKE_KEY_LENGTH_WORD]!)
      .smallint((flags >> 2) & 3)
      .smallint(flags & 3)
      .smallint(shard);
    if ((flags & INTAKE_HAS_ORDER_ID) !== 0) c.range(intake.bytes, i + INTAKE_ORDER_ID_BYTE, 16);
    else c.null();
    if ((flags & INTAKE_HAS_INSTRUMENT) !== 0) c.range(intake.bytes, i + INTAKE_INSTRUMENT_ID_BYTE, 16);
    else c.null();
    if (clientOrderIdLength > 0) c.range(intake.bytes, i + INTAKE_CLIENT_ORDER_ID_BYTE, clientOrderIdLength);
    else c.null();
    c.timestampUs(intake.floats[(i >> 3) + INTAKE_RECEIVED_AT_FLOAT]!)
      .bigint(floats[(firstAt >> 3) + RESULT_SEQUENCE_FLOAT]!)
      .bigint(batchFirst)
      .bigint(floats[hf + RESULT_BATCH_FLOAT]!)
      .smallint(accepted ? 1 : 2)
      .text(accepted ? null : rejectName(words[(firstAt >> 2) + RESULT_CODE_WORD]!))
      .timestampUs(timestampUs)
      .integer(at)
      .integer(next - at)
      .bigint(intake.commitNo)
      .smallint(intake.gateway)
      .integer(intake.index);

    if (!accepted) return next;
    if (opcode !== OPCODE_SUBMIT && opcode !== OPCODE_CANCEL && opcode !== OPCODE_MODIFY) return next;
    const taker = this.applyOrder(rows, touched, view, at, shard, opcode, eventCount, timestampUs, intake, clientOrderIdLength);
    if (taker === null) return next;
    for (let e = firstAt + RESULT_RECORD_BYTES; e + 3 * RESULT_RECORD_BYTES <= next; e += 3 * RESULT_RECORD_BYTES) {
      this.applyFill(rows, touched, view, e, shard, taker, w + COMMAND_ID_WORD, timestampUs);
    }
    return next;
  }

  /** The orders an EXPIRE command expired (events after its leading one, `firstAt` to `next`): state EXPIRED, nothing left open. */
  private applyExpiry(rows: Rows, touched: Map<string, Level | null>, view: JournalView, firstAt: number, next: number, timestampUs: number): void {
    forEachExpired(view, firstAt, next, (e) => {
      const order = this.touch(rows, touched, view.words, (e >> 2) + RESULT_UUID_A_WORD);
      if (order === undefined) {
        this.log('error', 'projection: the session roll expired an order it never saw', { orderId: formatUuid(view.words, (e >> 2) + RESULT_UUID_A_WORD) });
        return;
      }
      order.state = view.bytes[e + RESULT_STATE_BYTE]!;
      order.updatedAtUs = timestampUs;
      order.lastSequence = view.floats[(e >> 3) + RESULT_SEQUENCE_FLOAT]!;
    });
  }

  /** The taker's new state after a submit, cancel or modify (fills are added by applyFill). */
  private applyOrder(
    rows: Rows,
    touched: Map<string, Level | null>,
    view: JournalView,
    at: number,
    shard: number,
    opcode: number,
    eventCount: number,
    timestampUs: number,
    intake: PendingIntake,
    clientOrderIdLength: number,
  ): OrderState | null {
    const { words, floats } = view;
    const w = at >> 2;
    const firstAt = at + COMMAND_SLOT_BYTES + RESULT_RECORD_BYTES;
    const lastSequence = floats[((firstAt + (eventCount - 1) * RESULT_RECORD_BYTES) >> 3) + RESULT_SEQUENCE_FLOAT]!;
    const key = keyOf(words, w + COMMAND_ORDER_ID_WORD);
    if (opcode === OPCODE_SUBMIT) {
      const ids = new Int32Array(16);
      const order: OrderState = {
        ids,
        runNo: 0,
        sessionNo: 0,
        side: 0,
        orderType: 0,
        timeInForce: 0,
        state: 0,
        priceNanos: 0,
        quantity: 0,
        filled: 0,
        currency: 0,
        engineOrderId: engineOrderIdOf(shard, floats[((at + COMMAND_SLOT_BYTES) >> 3) + RESULT_ENGINE_ORDER_FLOAT]!),
        shard,
        createdAtUs: timestampUs,
        updatedAtUs: timestampUs,
        lastSequence,
        clientOrderId: clientOrderIdLength > 0 ? intake.bytes.slice(intake.at + INTAKE_CLIENT_ORDER_ID_BYTE, intake.at + INTAKE_CLIENT_ORDER_ID_BYTE + clientOrderIdLength) : null,
        fresh: true,
        clientOrderKnown: intake.bytes.byteLength > 0, // a rebuild's replay has no intake record
      };
      openSubmitted(order, view, at, shard);
      if (!touched.has(key)) touched.set(key, null);
      this.live.set(key, order);
      rows.lifecycle.set(key, order);
      const instrument = keyOf(ids, INSTRUMENT_ID);
      if (!this.instruments.has(instrument) && !rows.instruments.has(instrument)) {
        rows.instruments.set(instrument, [ids.subarray(INSTRUMENT_ID, INSTRUMENT_ID + 4), order.currency, shard, floats[(firstAt >> 3) + RESULT_SEQUENCE_FLOAT]!]);
      }
      return order;
    }
    const order = this.touch(rows, touched, words, w + COMMAND_ORDER_ID_WORD);
    if (order === undefined) {
      this.log('error', 'projection: an accepted command names an order it never saw', { orderId: formatUuid(words, w + COMMAND_ORDER_ID_WORD) });
      return null;
    }
    acceptedChange(order, view, at, opcode);
    order.updatedAtUs = timestampUs;
    order.lastSequence = lastSequence;
    return order;
  }

  /** One fill (taker execution, maker execution, trade at `e`): both orders, two executions, a trade. */
  private applyFill(rows: Rows, touched: Map<string, Level | null>, view: JournalView, e: number, shard: number, taker: OrderState, commandIdWord: number, timestampUs: number): void {
    const { words, floats, bytes } = view;
    const takerAt = e;
    const makerAt = e + RESULT_RECORD_BYTES;
    const tradeAt = e + 2 * RESULT_RECORD_BYTES;
    if (bytes[takerAt + RESULT_KIND_BYTE] !== EVENT_EXECUTION || bytes[makerAt + RESULT_KIND_BYTE] !== EVENT_EXECUTION || bytes[tradeAt + RESULT_KIND_BYTE] !== EVENT_TRADE) {
      throw new Error(`unexpected event layout in command ${formatUuid(words, commandIdWord)}`);
    }
    const makerSequence = floats[(makerAt >> 3) + RESULT_SEQUENCE_FLOAT]!;
    const maker = this.touch(rows, touched, words, (makerAt >> 2) + RESULT_UUID_A_WORD);
    if (maker === undefined) throw new Error(`projection lost an order of command ${formatUuid(words, commandIdWord)}`);
    fillChange(taker, maker, view, takerAt);
    maker.updatedAtUs = timestampUs;
    maker.lastSequence = makerSequence;

    const tradeSequence = floats[(tradeAt >> 3) + RESULT_SEQUENCE_FLOAT]!;
    const takerSequence = floats[(takerAt >> 3) + RESULT_SEQUENCE_FLOAT]!;
    for (const [executionAt, order, liquidity] of [[takerAt, taker, 'TAKER'], [makerAt, maker, 'MAKER']] as const) {
      const xw = executionAt >> 2;
      const xf = executionAt >> 3;
      this.own.filled(order.ids, order.side, shard, floats[xf + RESULT_SEQUENCE_FLOAT]!, tradeSequence, floats[xf + RESULT_QUANTITY_FLOAT]!, floats[xf + RESULT_PRICE_FLOAT]!, order.currency, timestampUs);
      eventIdWords(shard, floats[xf + RESULT_SEQUENCE_FLOAT]!, EVENT_ID, 0);
      rows.executions.row(16).uuidWords(EVENT_ID, 0).smallint(shard).bigint(floats[xf + RESULT_SEQUENCE_FLOAT]!).uuidWords(words, commandIdWord);
      eventIdWords(shard, tradeSequence, EVENT_ID, 0);
      rows.executions
        .uuidWords(EVENT_ID, 0)
        .uuidWords(order.ids, ORDER_ID)
        .uuidWords(words, xw + RESULT_UUID_B_WORD)
        .uuidWords(order.ids, INSTRUMENT_ID)
        .uuidWords(order.ids, PARTICIPANT_ID)
        .uuidWords(order.ids, ACCOUNT_ID)
        .text(SIDE_NAMES[order.side]!)
        .text(liquidity)
        .bigint(floats[xf + RESULT_QUANTITY_FLOAT]!)
        .bigint(floats[xf + RESULT_PRICE_FLOAT]!)
        .text(unpackCurrency(order.currency))
        .timestampUs(timestampUs);
    }
    const [buy, sell] = taker.side === 0 ? [taker, maker] : [maker, taker];
    const [runId, sessionId] = this.sessionOf(taker.runNo, taker.sessionNo);
    const tapeSequence = this.nextTapeSequence++;
    const tradeQuantity = floats[(tradeAt >> 3) + RESULT_QUANTITY_FLOAT]!;
    const tradePrice = floats[(tradeAt >> 3) + RESULT_PRICE_FLOAT]!;
    eventIdWords(shard, tradeSequence, EVENT_ID, 0);
    rows.tape.add(taker.ids, INSTRUMENT_ID, EVENT_ID, 0, tradePrice, tradeQuantity, timestampUs, tapeSequence, taker.currency);
    rows.trades.row(20).uuidWords(EVENT_ID, 0).smallint(shard).bigint(tradeSequence).uuidWords(words, commandIdWord);
    eventIdWords(shard, takerSequence, EVENT_ID, 0);
    rows.trades
      .uuidWords(EVENT_ID, 0)
      .range(runId, 0, runId.byteLength)
      .range(sessionId, 0, sessionId.byteLength)
      .uuidWords(taker.ids, INSTRUMENT_ID)
      .uuidWords(buy.ids, ORDER_ID)
      .uuidWords(sell.ids, ORDER_ID)
      .uuidWords(buy.ids, PARTICIPANT_ID)
      .uuidWords(buy.ids, ACCOUNT_ID)
      .uuidWords(sell.ids, PARTICIPANT_ID)
      .uuidWords(sell.ids, ACCOUNT_ID)
      .text(SIDE_NAMES[bytes[tradeAt + RESULT_AGGRESSOR_BYTE]!]!)
      .bigint(tradeQuantity)
      .bigint(tradePrice)
      .text(unpackCurrency(taker.currency))
      .timestampUs(timestampUs)
      .bigint(tapeSequence);
  }

  /**
   * An open order about to change: noted in the open group (its row follows its state
   * at the seal) and, for the book update, with what it showed in the books before.
   */
  private touch(rows: Rows, touched: Map<string, Level | null>, words: Int32Array, at: number): OrderState | undefined {
    const key = keyOf(words, at);
    const order = this.liveOrder(words, at, key);
    if (order === undefined) return undefined;
    if (!touched.has(key)) touched.set(key, this.levelOf(order));
    rows.lifecycle.set(key, order);
    return order;
  }

  /** What an order shows in the displayed books: open LIMIT quantity at its price, or null. */
  private levelOf(order: OrderState): Level | null {
    if (order.orderType !== ORDER_TYPE_LIMIT || (order.state !== STATE_OPEN && order.state !== STATE_PARTIALLY_FILLED)) return null;
    return [this.instrumentName(order.ids), SIDE_NAMES[order.side]!, order.priceNanos, order.quantity - order.filled];
  }

  private sessionOf(runNo: number, sessionNo: number): [Buffer, Buffer] {
    const key = `${runNo}:${sessionNo}`;
    let text = this.sessionText.get(key);
    if (text === undefined) {
      const [runId, sessionId] = this.sessionNames(runNo, sessionNo);
      text = [Buffer.from(runId, 'utf8'), Buffer.from(sessionId, 'utf8')];
      this.sessionText.set(key, text);
    }
    return text;
  }

  /** The group's transaction: every COPY and statement, one round trip. */
  private script(rows: Rows, intakeWatermark: number): { sql: string; copies: Buffer[]; copyTargets: CopyTarget[]; watermarkSql: string; rows: number } {
    const statements: string[] = [];
    const copies: Buffer[] = [];
    const copyTargets: CopyTarget[] = [];
    const copy = (target: string, data: BinaryCopy) => {
      if (data.rows === 0) return;
      statements.push(`COPY ${target} FROM STDIN (FORMAT binary)`);
      copies.push(data.finish());
      copyTargets.push(copyTargetOf(target));
    };
    copy(COMMANDS_TARGET, rows.commands);
    copy(EXECUTIONS_TARGET, rows.executions);
    copy(TRADES_TARGET, rows.trades);
    // COPY writes the identity column's values as given (like OVERRIDING SYSTEM VALUE); its
    // sequence is kept at the last one so that a row inserted without one (by hand) does not collide.
    if (rows.trades.rows > 0) statements.push(`SELECT setval(pg_get_serial_sequence('runtime.trades', 'tape_sequence'), ${this.nextTapeSequence - 1})`);
    const created = new BinaryCopy();
    const updated = new BinaryCopy();
    for (const order of rows.lifecycle.values()) {
      if (order.fresh) this.lifecycleRow(created, order, order.clientOrderId);
      else this.updateRow(updated, order);
      order.fresh = false; // later groups update its row
      order.clientOrderId = null;
    }
    for (const key of rows.instruments.keys()) this.instruments.add(key);
    copy(`runtime.order_lifecycle_state (${LIFECYCLE_COLUMNS}, client_order_id)`, created);
    if (updated.rows > 0) {
      copy(`lifecycle_update (${UPDATE_COLUMNS})`, updated);
      statements.push('EXECUTE apply_lifecycle_update', 'DELETE FROM lifecycle_update');
    }
    if (rows.instruments.size > 0) {
      const values = [...rows.instruments.values()].map(([ids, currency, shard, sequence]) => `('${formatUuid(ids, 0)}'::uuid, '${unpackCurrency(currency)}', ${shard}, ${sequence})`);
      statements.push(`INSERT INTO runtime.instruments (instrument_id, currency, shard_id, first_sequence) VALUES ${values.join(', ')} ON CONFLICT (instrument_id) DO NOTHING`);
    }
    // Every watermark in one prepared statement; numbers only, written by this thread.
    const marks = [...rows.watermarks];
    const watermarkSql = `EXECUTE set_watermarks('{${marks.map(([shard]) => shard).join(',')}}', '{${marks.map(([, sequence]) => sequence).join(',')}}', ${intakeWatermark})`;
    statements.push(watermarkSql);
    return { sql: statements.join(';\n'), copies, copyTargets, watermarkSql, rows: rows.commands.rows + rows.executions.rows + rows.trades.rows + rows.lifecycle.size };
  }

  /** A whole lifecycle row; `submitCommandId` adds that column (the rebuild's staging table). */
  private lifecycleRow(copy: BinaryCopy, order: OrderState, clientOrderId: Uint8Array | null, submitCommandId: Int32Array | null = null): void {
    const [runId, sessionId] = this.sessionOf(order.runNo, order.sessionNo);
    const open = order.state === STATE_OPEN || order.state === STATE_PARTIALLY_FILLED;
    copy
      .row(submitCommandId === null ? 21 : 22)
      .uuidWords(order.ids, ORDER_ID)
      .range(runId, 0, runId.byteLength)
      .range(sessionId, 0, sessionId.byteLength)
      .uuidWords(order.ids, INSTRUMENT_ID)
      .uuidWords(order.ids, PARTICIPANT_ID)
      .uuidWords(order.ids, ACCOUNT_ID)
      .text(SIDE_NAMES[order.side]!)
      .text(ORDER_TYPE_NAMES[order.orderType]!)
      .text(TIME_IN_FORCE_NAMES[order.timeInForce]!)
      .text(ORDER_STATE_NAMES[order.state]!)
      .bigint(order.priceNanos)
      .text(unpackCurrency(order.currency))
      .bigint(order.quantity)
      .bigint(open ? order.quantity - order.filled : 0)
      .bigint(order.filled)
      .text(order.engineOrderId)
      .smallint(order.shard)
      .bigint(order.lastSequence)
      .timestampUs(order.createdAtUs)
      .timestampUs(order.updatedAtUs);
    if (clientOrderId === null) copy.null();
    else copy.range(clientOrderId, 0, clientOrderId.byteLength);
    if (submitCommandId !== null) copy.uuidWords(submitCommandId, 0);
  }

  private updateRow(copy: BinaryCopy, order: OrderState): void {
    const open = order.state === STATE_OPEN || order.state === STATE_PARTIALLY_FILLED;
    copy
      .row(8)
      .uuidWords(order.ids, ORDER_ID)
      .text(ORDER_STATE_NAMES[order.state]!)
      .bigint(order.priceNanos)
      .bigint(order.quantity)
      .bigint(open ? order.quantity - order.filled : 0)
      .bigint(order.filled)
      .bigint(order.lastSequence)
      .timestampUs(order.updatedAtUs);
  }

  private instrumentName(ids: Int32Array): string {
    const key = keyOf(ids, INSTRUMENT_ID);
    let name = this.instrumentNames.get(key);
    if (name === undefined) {
      name = formatUuid(ids, INSTRUMENT_ID);
      this.instrumentNames.set(key, name);
    }
    return name;
  }

  /**
   * Rebuilds order_lifecycle_state from the whole journal, in one transaction, and
   * leaves the in-memory open orders as the rebuilt table has them. Returns the rows.
   * (The operator's rebuild route: the caller stops ingesting and flushes every group
   * first, so storage holds everything ingested.)
   */
  async rebuildLifecycle(client: pg.ClientBase): Promise<number> {
    if (this.sealed.length > 0 || this.open.commandCount > 0) throw new Error('the rebuild needs every ingested group flushed first');
    const rebuilt = new Rows();
    const saved = new Map(this.live);
    const savedResting = this.resting;
    this.live.clear();
    this.resting = new RestingOrders();
    const submits = new Map<string, Int32Array>(); // order -> the submit's command id, for its clientOrderId
    try {
      for (let shard = 0; shard < this.projected.length; shard++) {
        let after = 0;
        for (;;) {
          const page = await client.query<{ first_sequence: string; payload: Buffer }>(
            'SELECT first_sequence, payload FROM runtime.journal_batches WHERE shard_id = $1 AND first_sequence > $2 AND last_sequence <= $3 ORDER BY first_sequence LIMIT 200',
            [shard, after, this.projected[shard]],
          );
          if (page.rows.length === 0) break;
          for (const row of page.rows) {
            const view = journalView(row.payload);
            for (let at = 0; at < view.bytes.byteLength; ) at = this.replayLifecycle(rebuilt, new Map(), view, at, shard, submits);
            after = Number(row.first_sequence);
          }
        }
      }
      const copy = new BinaryCopy();
      for (const [key, order] of rebuilt.lifecycle) this.lifecycleRow(copy, order, null, submits.get(key)!);
      const sql = [
        'TRUNCATE runtime.order_lifecycle_state',
        `COPY lifecycle_rebuild (${LIFECYCLE_COLUMNS}, client_order_id, submit_command_id) FROM STDIN (FORMAT binary)`,
        `INSERT INTO runtime.order_lifecycle_state (${LIFECYCLE_COLUMNS}, client_order_id)
         SELECT ${LIFECYCLE_COLUMNS}, (SELECT cl.client_order_id FROM runtime.command_log cl WHERE cl.command_id = s.submit_command_id) FROM lifecycle_rebuild s`,
        'DELETE FROM lifecycle_rebuild',
      ].join(';\n');
      await runScript(client, sql, [copy.finish()]);
    } catch (error) {
      this.live.clear();
      for (const [id, order] of saved) this.live.set(id, order);
      this.resting = savedResting;
      throw error;
    }
    this.live.clear();
    // The rebuilt orders are new objects without their clientOrderIds: the model starts again, lacking all before now.
    this.own.forget(Math.max(this.lastTimestampUs, wallClockUs()));
    for (const [key, order] of rebuilt.lifecycle) {
      order.fresh = false;
      order.clientOrderId = null;
      if (order.state === STATE_OPEN || order.state === STATE_PARTIALLY_FILLED) this.live.set(key, order);
    }
    return rebuilt.lifecycle.size;
  }

  /** The order changes of one journaled command, alone (the rebuild). Returns the next offset. */
  private replayLifecycle(rows: Rows, touched: Map<string, Level | null>, view: JournalView, at: number, shard: number, submits: Map<string, Int32Array>): number {
    const { words, floats, bytes } = view;
    const headerAt = at + COMMAND_SLOT_BYTES;
    const eventCount = words[(headerAt >> 2) + RESULT_COUNT_WORD]!;
    const next = headerAt + (1 + eventCount) * RESULT_RECORD_BYTES;
    const firstAt = headerAt + RESULT_RECORD_BYTES;
    const opcode = words[(at >> 2) + COMMAND_HEADER_WORD]! & 0xff;
    const timestampUs = floats[(headerAt >> 3) + RESULT_TIMESTAMP_FLOAT]!;
    if (bytes[firstAt + RESULT_KIND_BYTE] === EVENT_ACCEPTED && opcode === OPCODE_EXPIRE) {
      this.applyExpiry(rows, touched, view, firstAt, next, timestampUs);
      return next;
    }
    if (bytes[firstAt + RESULT_KIND_BYTE] !== EVENT_ACCEPTED || (opcode !== OPCODE_SUBMIT && opcode !== OPCODE_CANCEL && opcode !== OPCODE_MODIFY)) return next;
    const noIntake: PendingIntake = { commitNo: 0, gateway: 0, index: 0, stride: INTAKE_RECORD_BYTES, bodies: null, bytes: new Uint8Array(0), words: new Int32Array(0), floats: new Float64Array(0), at: 0 };
    const taker = this.applyOrder(rows, touched, view, at, shard, opcode, eventCount, timestampUs, noIntake, 0);
    if (taker === null) return next;
    if (opcode === OPCODE_SUBMIT) submits.set(keyOf(taker.ids, ORDER_ID), words.slice((at >> 2) + COMMAND_ID_WORD, (at >> 2) + COMMAND_ID_WORD + 4));
    for (let e = firstAt + RESULT_RECORD_BYTES; e + 3 * RESULT_RECORD_BYTES <= next; e += 3 * RESULT_RECORD_BYTES) {
      taker.filled += floats[(e >> 3) + RESULT_QUANTITY_FLOAT]!;
      const makerAt = e + RESULT_RECORD_BYTES;
      const maker = this.live.get(keyOf(words, (makerAt >> 2) + RESULT_UUID_A_WORD));
      if (maker === undefined) throw new Error('the rebuild met a fill of an order it never saw');
      maker.filled += floats[(makerAt >> 3) + RESULT_QUANTITY_FLOAT]!;
      maker.state = bytes[makerAt + RESULT_STATE_BYTE]!;
      maker.updatedAtUs = timestampUs;
      maker.lastSequence = floats[(makerAt >> 3) + RESULT_SEQUENCE_FLOAT]!;
    }
    return next;
  }
}

function uuidWordsOf(text: string): Int32Array {
  const words = new Int32Array(4);
  parseUuidInto(text, words, 0);
  return words;
}

/**
 * Session set-up of the projector's connection. Staging tables for updates and
 * rebuilds that keep their rows until the script deletes them: an ON COMMIT DELETE
 * ROWS table is truncated at every commit, which rewrites catalog rows and rebuilds
 * cache entries (the perf profile of the projector's backend showed it among its top
 * costs); deleted rows of a temporary table cost no WAL, and `vacuumSql` reclaims them
 * now and then. The statements every group runs are prepared once, with generic plans,
 * and joins use indexes only (the staging table is never analyzed; a hash join would
 * scan the whole lifecycle table to update a few rows).
 */
export const PROJECTOR_SESSION_SQL = [
  'SET synchronous_commit = off',
  'SET enable_hashjoin = off',
  'SET enable_mergejoin = off',
  'SET plan_cache_mode = force_generic_plan',
  `CREATE TEMP TABLE IF NOT EXISTS lifecycle_update (
     order_id uuid, state text, limit_price_nanos bigint, original_quantity_units bigint, remaining_quantity_units bigint,
     filled_quantity_units bigint, last_sequence bigint, updated_at timestamptz)`,
  'CREATE TEMP TABLE IF NOT EXISTS lifecycle_rebuild (LIKE runtime.order_lifecycle_state INCLUDING DEFAULTS, submit_command_id uuid)',
  `PREPARE apply_lifecycle_update AS UPDATE runtime.order_lifecycle_state o
     SET state = u.state, limit_price_nanos = u.limit_price_nanos, original_quantity_units = u.original_quantity_units,
         remaining_quantity_units = u.remaining_quantity_units, filled_quantity_units = u.filled_quantity_units,
         last_sequence = u.last_sequence, updated_at = u.updated_at
    FROM lifecycle_update u
   WHERE o.order_id = u.order_id AND o.last_sequence < u.last_sequence`,
  `PREPARE set_watermarks (smallint[], bigint[], bigint) AS
   INSERT INTO runtime.projection_watermarks (projection, shard_id, sequence, updated_at)
   SELECT '${PROJECTION_NAME}', m.shard_id, m.sequence, now() FROM unnest($1, $2) AS m (shard_id, sequence)
   UNION ALL SELECT '${INTAKE_PROJECTION_NAME}', 0, $3, now()
   ON CONFLICT (projection, shard_id) DO UPDATE SET sequence = EXCLUDED.sequence, updated_at = EXCLUDED.updated_at`,
].join(';\n');

/** Reclaims the staging tables' deleted rows (not inside a script: VACUUM runs alone). */
export const PROJECTOR_VACUUM_SQL = 'VACUUM lifecycle_update';
/** Groups between two vacuums of the staging table. */
export const PROJECTOR_VACUUM_GROUPS = 256;

/** Flushed groups kept for a resend at most; past it a synchronous commit makes them durable. */
const PROVISIONAL_GROUPS_MAX = 64;
/** A transaction that waits for the WAL flush: every commit before it is durable once it returns. */
const DURABLE_POINT_SQL = 'BEGIN; SET LOCAL synchronous_commit = on; SELECT txid_current(); COMMIT';

/** The projection watermarks storage holds. */
async function storedMarks(client: pg.ClientBase): Promise<{ projected: (shard: number) => number; intake: number }> {
  const marks = await client.query<{ projection: string; shard_id: number; sequence: string }>(
    'SELECT projection, shard_id, sequence FROM runtime.projection_watermarks WHERE projection = ANY($1)',
    [[PROJECTION_NAME, INTAKE_PROJECTION_NAME]],
  );
  const stored = (projection: string, shard: number) => Number(marks.rows.find((row) => row.projection === projection && row.shard_id === shard)?.sequence ?? 0);
  return { projected: (shard) => stored(PROJECTION_NAME, shard), intake: stored(INTAKE_PROJECTION_NAME, 0) };
}

/** Whether storage holds a group: its watermarks, every one, are reached. */
function holds(marks: Awaited<ReturnType<typeof storedMarks>>, flush: Flush): boolean {
  return [...flush.watermarks].every(([shard, sequence]) => marks.projected(shard) >= sequence) && marks.intake >= flush.intakeWatermark;
}

/** `schema.table (a, b, ...)` as the relation an error names and the column list. */
function copyTargetOf(target: string): CopyTarget {
  const open = target.indexOf('(');
  const table = target.slice(0, open).trim();
  return { relation: table.slice(table.lastIndexOf('.') + 1), columns: target.slice(open + 1, target.lastIndexOf(')')).split(',').map((column) => column.trim()) };
}

/** A group's script as it is sent: as sealed, with its quarantined rows, or only its quarantine and watermarks when quarantined whole. */
function scriptOf(flush: Flush): [string, Buffer[]] {
  if (flush.quarantined.length === 0) return [flush.sql, flush.copies];
  const quarantine = quarantineCopy(flush.quarantined);
  if (flush.whole) return [`${QUARANTINE_COPY_SQL};\n${flush.watermarkSql}`, [quarantine]];
  return [`${flush.sql};\n${QUARANTINE_COPY_SQL}`, [...flush.copies, quarantine]];
}

const COMMANDS_TARGET =
  'runtime.command_log (command_id, scope_digest, payload_hash, principal_id, client_id, idempotency_key, route, processing_mode, shard_id, order_id, instrument_id, client_order_id, received_at, stream_sequence, batch_first_sequence, shard_batch, result_status, reject_code, occurred_at, journal_offset, journal_length, intake_commit_no, intake_gateway, intake_index)';
const EXECUTIONS_TARGET =
  'runtime.executions (execution_id, shard_id, stream_sequence, command_id, trade_id, order_id, counterparty_order_id, instrument_id, participant_id, account_id, side, liquidity, quantity_units, price_nanos, currency, occurred_at)';
const TRADES_TARGET =
  'runtime.trades (trade_id, shard_id, stream_sequence, command_id, execution_id, run_id, venue_session_id, instrument_id, buy_order_id, sell_order_id, buy_participant_id, buy_account_id, sell_participant_id, sell_account_id, aggressor_side, quantity_units, price_nanos, currency, occurred_at, tape_sequence)';
const LIFECYCLE_COLUMNS =
  'order_id, run_id, venue_session_id, instrument_id, participant_id, account_id, side, order_type, time_in_force, state, limit_price_nanos, currency, original_quantity_units, remaining_quantity_units, filled_quantity_units, engine_order_id, shard_id, last_sequence, created_at, updated_at';
const UPDATE_COLUMNS = 'order_id, state, limit_price_nanos, original_quantity_units, remaining_quantity_units, filled_quantity_units, last_sequence, updated_at';
