// What the main thread reads from storage at start-up, before the venue is ready:
// the settings a restart must keep, the open venue session, each shard's journal (to
// rebuild its book), and what the gateways' shared tables should remember. (The
// captured commands that never reached the journal are found by the persistence
// thread, which holds the intake records still waiting for an outcome.)
//
// Everything here runs once, on one connection, in pages of bounded size.

import { crc32 } from 'node:zlib';
import type pg from 'pg';
import { formatUuid } from '../core/uuid.ts';
import { COMMAND_PARTICIPANT_ID_WORD } from '../core/command-slot.ts';
import {
  INTAKE_CLIENT_ORDER_ID_BYTE,
  INTAKE_CLIENT_ORDER_ID_LENGTH_WORD,
  INTAKE_COMMAND_ID_BYTE,
  INTAKE_FLAGS_WORD,
  INTAKE_HAS_ORDER_ID,
  INTAKE_ORDER_ID_BYTE,
  storedIntake,
  INTAKE_SCOPE_BYTE,
  INTAKE_SLOT_BYTE,
} from '../core/intake-record.ts';
import { copyOut } from './copy-binary.ts';

/** Settings fixed by the first start: they decide where instruments live. */
export async function checkSettings(client: pg.ClientBase, settings: Record<string, string>): Promise<void> {
  for (const [name, value] of Object.entries(settings)) {
    await client.query('INSERT INTO runtime.venue_settings (name, value) VALUES ($1, $2) ON CONFLICT (name) DO NOTHING', [name, value]);
    const stored = (await client.query<{ value: string }>('SELECT value FROM runtime.venue_settings WHERE name = $1', [name])).rows[0]!.value;
    if (stored !== value) {
      throw new Error(`the data was written with ${name}=${stored}; this start asks for ${value} (instruments would move to other shards). Start with ${name}=${stored} or a fresh DATA_DIR/database.`);
    }
  }
}

/** Journal bytes handed to a shard at a time during the replay. */
const REPLAY_PAGE_BYTES = 8 << 20;
/**
 * Pages handed on whose onPage has not settled, at most: the next page is read from the
 * COPY while the shard applies the last one (with one at a time, the COPY's socket was
 * paused during each page's replay, and the shard waited for each page's reading).
 */
const REPLAY_PAGES_IN_FLIGHT = 2;

/**
 * What onPage gives back once the page was applied: its buffer, to be filled again (the
 * pages' buffers are reused, so that only the first few take the page faults of fresh
 * memory: a new buffer per page cost the main thread about 5 ms a MiB of journal here);
 * or nothing, and the next page takes a new buffer.
 */
export type ReplayedPage = ArrayBuffer | void;

/**
 * A shard's journal in sequence order, streamed (binary COPY), in pages of whole
 * batches joined in one buffer (whole commands, 8-byte aligned). Checks each batch's
 * checksum and that the stream has no gap. Up to REPLAY_PAGES_IN_FLIGHT pages are
 * handed on before the oldest one's onPage is awaited; all have settled when this
 * settles. A page is `bytes` bytes at the start of `buffer` (about `pageBytes`: what fills
 * `pageBytes` or more, or what fits in twice that; a bigger batch alone), which onPage may
 * transfer to another thread and give back (ReplayedPage): then at most
 * REPLAY_PAGES_IN_FLIGHT + 1 buffers are used, each written from its start. Returns the
 * last sequence read (0 for an empty journal).
 */
export async function readJournal(
  client: pg.ClientBase,
  shard: number,
  after: number,
  onPage: (buffer: ArrayBuffer, bytes: number, lastSequence: number) => Promise<ReplayedPage>,
  pageBytes = REPLAY_PAGE_BYTES,
): Promise<number> {
  let last = after;
  let first = true;
  const spare: ArrayBuffer[] = [];
  const fresh = (bytes: number) => {
    const reused = spare.pop();
    return reused !== undefined && reused.byteLength >= bytes ? new Uint8Array(reused) : new Uint8Array(Math.max(bytes, pageBytes * 2));
  };
  let page = new Uint8Array(0);
  let filled = 0;
  const inFlight: Promise<void>[] = [];
  const flush = async () => {
    if (filled === 0) return;
    const handed = onPage(page.buffer as ArrayBuffer, filled, last).then((back) => {
      if (back instanceof ArrayBuffer && back.byteLength > 0 && spare.length < REPLAY_PAGES_IN_FLIGHT + 1) spare.push(back);
    });
    handed.catch(() => undefined); // awaited below, in order; a failure rejects there
    inFlight.push(handed);
    filled = 0;
    page = new Uint8Array(0); // taken (its buffer may be transferred): the next row takes a buffer
    if (inFlight.length >= REPLAY_PAGES_IN_FLIGHT) await inFlight.shift();
  };
  await copyOut(
    client,
    // From the batch that holds sequence after+1 (by the primary key: its first sequence
    // is the greatest at or below after+1), in order.
    `SELECT first_sequence, last_sequence, checksum, payload FROM runtime.journal_batches
      WHERE shard_id = ${Number(shard)} AND last_sequence > ${Number(after)}
        AND first_sequence >= coalesce((SELECT max(first_sequence) FROM runtime.journal_batches WHERE shard_id = ${Number(shard)} AND first_sequence <= ${Number(after) + 1}), 1)
      ORDER BY first_sequence`,
    async (row) => {
      const firstSequence = row.int8(0);
      const payload = row.bytes(3);
      if (first ? firstSequence > last + 1 : firstSequence !== last + 1) throw new Error(`shard ${shard} journal has a gap: the batch after sequence ${last} starts at ${firstSequence}`);
      first = false;
      if (crc32(payload) !== row.int8(2)) throw new Error(`shard ${shard} journal batch at sequence ${firstSequence} fails its checksum`);
      if (filled + payload.byteLength > page.byteLength) {
        await flush();
        page = fresh(payload.byteLength);
      }
      page.set(payload, filled);
      filled += payload.byteLength;
      last = row.int8(1);
      if (filled >= pageBytes) await flush();
    },
  );
  try {
    await flush();
  } finally {
    await Promise.allSettled(inFlight);
  }
  for (const handed of inFlight) await handed;
  return last;
}

/**
 * The most recent commands (what idempotency and status lookups should find first):
 * those of the intake commits that hold the last `limit` intake records, oldest first,
 * streamed binary: the scope digest, the first 16 bytes of the payload hash and the
 * commandId, as four words each. The commits come from the intake batches' primary key
 * read backwards; the command log's rows of them from its BRIN on intake_commit_no
 * (migration 016). Returns how many.
 */
export async function recentCommands(client: pg.ClientBase, limit: number, onCommand: OnStoredCommand): Promise<number> {
  const wanted = Math.floor(limit);
  if (wanted <= 0) return 0;
  const first = await client.query<{ commit_no: string }>(
    `SELECT commit_no FROM (
       SELECT commit_no, sum(record_count) OVER (ORDER BY commit_no DESC, gateway_id DESC ROWS UNBOUNDED PRECEDING) AS running
         FROM runtime.intake_batches ORDER BY commit_no DESC, gateway_id DESC) newest
      WHERE running >= $1 LIMIT 1`,
    [wanted],
  );
  const from = Number(first.rows[0]?.commit_no ?? 0);
  return readCommands(
    client,
    `SELECT scope_digest, payload_hash, command_id FROM (
       SELECT scope_digest, payload_hash, command_id, intake_commit_no, intake_gateway, intake_index FROM runtime.command_log
        WHERE intake_commit_no >= ${from} ORDER BY intake_commit_no DESC, intake_gateway DESC, intake_index DESC LIMIT ${wanted}) recent
      ORDER BY intake_commit_no, intake_gateway, intake_index`,
    onCommand,
  );
}

/** Ids given to one query by the reads of commands and orders by id: a bounded statement. */
export const IDS_PER_QUERY_MAX = 10_000;

/**
 * The stored commands among `commandIds` (RFC 4122 text, as formatUuid writes it), as
 * recentCommands gives them, oldest first within each group of IDS_PER_QUERY_MAX.
 * Returns how many were found.
 */
export async function commandsById(client: pg.ClientBase, commandIds: readonly string[], onCommand: OnStoredCommand): Promise<number> {
  let found = 0;
  for (let at = 0; at < commandIds.length; at += IDS_PER_QUERY_MAX) {
    const ids = uuidArrayLiteral(commandIds.slice(at, at + IDS_PER_QUERY_MAX));
    found += await readCommands(
      client,
      `SELECT scope_digest, payload_hash, command_id FROM runtime.command_log WHERE command_id = ANY(${ids}) ORDER BY intake_commit_no NULLS FIRST, intake_gateway, intake_index`,
      onCommand,
    );
  }
  return found;
}

export type OnStoredCommand = (scope: Int32Array, payloadHead: Int32Array, commandId: Int32Array) => void;

/** Rows of (scope_digest, payload_hash, command_id), streamed binary. */
function readCommands(client: pg.ClientBase, query: string, onCommand: OnStoredCommand): Promise<number> {
  const scope = new Int32Array(4);
  const payload = new Int32Array(4);
  const commandId = new Int32Array(4);
  return copyOut(client, query, (row) => {
    row.words(0, scope, 0);
    row.words(1, payload, 0);
    row.words(2, commandId, 0);
    onCommand(scope, payload, commandId);
  });
}

/**
 * A uuid[] literal of ids in RFC 4122 text (a COPY takes no parameters). Each id is
 * checked against the uuid text form, so nothing else can reach the statement.
 */
function uuidArrayLiteral(ids: readonly string[]): string {
  for (const id of ids) if (!UUID_TEXT.test(id)) throw new Error(`not a uuid: ${JSON.stringify(id)}`);
  return `'{${ids.join(',')}}'::uuid[]`;
}

const UUID_TEXT = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** Rows of each table counted exactly before the estimates are used instead. */
export const STORED_KEYS_COUNTED_MAX = 100_000;

/**
 * About how many keys the key filters must hold for storage: the stored commands (a
 * scope and a commandId each) or the stored orders, whichever is more. Up to
 * STORED_KEYS_COUNTED_MAX rows of each table are counted exactly; past that the larger
 * of two estimates is taken, so the answer costs no scan of a table of millions: the
 * planner's (the last ANALYZE's rows per page times the pages the table has now; on a
 * table never analyzed, rows per page guessed from the columns' types, which on the
 * command log came out 25% low) and the statistics' live rows (counted as rows are
 * written, and exact after a graceful stop; a crash resets them to 0).
 */
export async function storedKeyEstimate(client: pg.ClientBase, countedMax: number = STORED_KEYS_COUNTED_MAX): Promise<number> {
  let most = 0;
  for (const table of ['runtime.command_log', 'runtime.order_lifecycle_state']) {
    const counted = await client.query<{ n: number }>(`SELECT count(*)::int AS n FROM (SELECT 1 FROM ${table} LIMIT ${Math.floor(countedMax)}) head`);
    let rows = counted.rows[0]!.n;
    if (rows === countedMax) {
      const plan = await client.query<{ 'QUERY PLAN': [{ Plan: { 'Plan Rows': number } }] }>(`EXPLAIN (FORMAT JSON) SELECT 1 FROM ${table}`);
      const live = await client.query<{ n: string | null }>('SELECT n_live_tup::text AS n FROM pg_stat_user_tables WHERE relid = $1::regclass', [table]);
      rows = Math.max(rows, Math.round(plan.rows[0]!['QUERY PLAN'][0].Plan['Plan Rows']), Number(live.rows[0]?.n ?? 0));
    }
    most = Math.max(most, rows);
  }
  return most;
}

/**
 * Every stored command's idempotency scope digest and commandId, as four words each,
 * streamed with a binary COPY (no text decoding of millions of rows). Returns how many.
 */
export async function storedCommandKeys(client: pg.ClientBase, onKey: (scope: Int32Array, commandId: Int32Array) => void): Promise<number> {
  const scope = new Int32Array(4);
  const commandId = new Int32Array(4);
  return copyOut(client, 'SELECT scope_digest, command_id FROM runtime.command_log', (row) => {
    row.words(0, scope, 0);
    row.words(1, commandId, 0);
    onKey(scope, commandId);
  });
}

/** The keys of one intake record (intakeKeysSince): views valid during the call only. */
export interface IntakeKeys {
  scope: Int32Array;
  commandId: Int32Array;
  /** A submit's orderId, or the order a cancel or modify names; null for none. */
  orderId: Int32Array | null;
  /** The participant and clientOrderId of a command naming one (a submit's, or the order a cancel names); else null. */
  clientOrder: { participantId: string; clientOrderId: string } | null;
}

/**
 * The keys of every command taken in a commit after `commitNo` (its intake record:
 * core/intake-record.ts), streamed binary, each batch's checksum checked: what the key
 * filters saved at a storage mark lack (persistence/key-filter-snapshot.ts). A record
 * whose command never reached storage (a crash before its journal) gives its keys too:
 * a filter holding a key storage lacks costs a storage check, never a wrong answer.
 * Returns how many records.
 */
export async function intakeKeysSince(client: pg.ClientBase, commitNo: number, onKeys: (keys: IntakeKeys) => void): Promise<number> {
  if (!Number.isSafeInteger(commitNo) || commitNo < 0) throw new Error(`not a commit number: ${commitNo}`);
  const keys: IntakeKeys = { scope: new Int32Array(4), commandId: new Int32Array(4), orderId: null, clientOrder: null };
  const orderId = new Int32Array(4);
  const participant = new Int32Array(4);
  const idsAt = (payload: Buffer, at: number, target: Int32Array) => {
    for (let k = 0; k < 4; k++) target[k] = payload.readInt32BE(at + k * 4); // stored most significant first
  };
  let records = 0;
  await copyOut(client, `SELECT commit_no, checksum, payload, record_count, layout FROM runtime.intake_batches WHERE commit_no > ${commitNo}`, (row) => {
    const stored = row.bytes(2);
    if (crc32(stored) !== row.int8(1)) throw new Error(`the intake batch of commit ${row.int8(0)} fails its checksum`);
    const whole = storedIntake(stored, row.int32(3), row.isNull(4) ? null : row.int16(4));
    const payload = Buffer.from(whole.bytes.buffer, whole.bytes.byteOffset, whole.bytes.byteLength);
    const stride = whole.stride;
    for (let at = 0; at < payload.byteLength; at += stride) {
      const flags = payload.readInt32LE(at + INTAKE_FLAGS_WORD * 4); // the record's words are the writer's (little-endian) Int32Array
      idsAt(payload, at + INTAKE_SCOPE_BYTE, keys.scope);
      idsAt(payload, at + INTAKE_COMMAND_ID_BYTE, keys.commandId);
      keys.orderId = (flags & INTAKE_HAS_ORDER_ID) === 0 ? null : (idsAt(payload, at + INTAKE_ORDER_ID_BYTE, orderId), orderId);
      const clientOrderIdLength = payload.readInt32LE(at + INTAKE_CLIENT_ORDER_ID_LENGTH_WORD * 4);
      if (clientOrderIdLength === 0) {
        keys.clientOrder = null;
      } else {
        const slotWords = at + INTAKE_SLOT_BYTE + COMMAND_PARTICIPANT_ID_WORD * 4; // the slot's words, as the shard reads them
        for (let k = 0; k < 4; k++) participant[k] = payload.readInt32LE(slotWords + k * 4);
        const text = at + INTAKE_CLIENT_ORDER_ID_BYTE;
        keys.clientOrder = { participantId: formatUuid(participant, 0), clientOrderId: payload.toString('utf8', text, text + clientOrderIdLength) };
      }
      onKeys(keys);
      records++;
    }
  });
  return records;
}

export interface KnownOrder {
  /** orderId, instrumentId, accountId: four words each. */
  ids: Int32Array;
  shard: number;
  participantId: string;
  clientOrderId: string | null;
  runId: string;
  venueSessionId: string;
}

/**
 * Orders the gateways should know, up to `limit`: open ones (any of them: which do not
 * matter, and no sort of a million rows), then the most recently closed if room is
 * left, the least important first, streamed binary. Text is decoded only for orders
 * with a clientOrderId (their claim is keyed by participant and clientOrderId).
 * Returns how many.
 */
export async function knownOrders(client: pg.ClientBase, limit: number, onOrder: (order: KnownOrder) => void): Promise<number> {
  const limited = Math.floor(limit);
  const closed = await client.query<{ n: number }>(
    `SELECT greatest(0, $1 - (SELECT count(*) FROM (SELECT 1 FROM runtime.order_lifecycle_state WHERE state IN ('OPEN', 'PARTIALLY_FILLED') LIMIT $1) open))::int AS n`,
    [limited],
  );
  const room = closed.rows[0]!.n;
  let count = room === 0 ? 0 : await readOrders(client, `WHERE state NOT IN ('OPEN', 'PARTIALLY_FILLED') ORDER BY last_sequence DESC LIMIT ${room}`, onOrder);
  count += await readOrders(client, `WHERE state IN ('OPEN', 'PARTIALLY_FILLED') LIMIT ${limited}`, onOrder);
  return count;
}

/** The stored orders among `orderIds` (RFC 4122 text), as knownOrders gives them. Returns how many were found. */
export async function ordersById(client: pg.ClientBase, orderIds: readonly string[], onOrder: (order: KnownOrder) => void): Promise<number> {
  let found = 0;
  for (let at = 0; at < orderIds.length; at += IDS_PER_QUERY_MAX) {
    found += await readOrders(client, `WHERE order_id = ANY(${uuidArrayLiteral(orderIds.slice(at, at + IDS_PER_QUERY_MAX))})`, onOrder);
  }
  return found;
}

/** Orders of order_lifecycle_state (`where`: the rest of the statement), streamed binary; text decoded only for those with a clientOrderId. */
function readOrders(client: pg.ClientBase, where: string, onOrder: (order: KnownOrder) => void): Promise<number> {
  const order: KnownOrder = { ids: new Int32Array(12), shard: 0, participantId: '', clientOrderId: null, runId: '', venueSessionId: '' };
  const participant = new Int32Array(4);
  return copyOut(client, `SELECT order_id, instrument_id, account_id, shard_id, participant_id, client_order_id, run_id, venue_session_id FROM runtime.order_lifecycle_state ${where}`, (row) => {
    for (let k = 0; k < 3; k++) row.words(k, order.ids, k * 4);
    order.shard = row.int16(3);
    if (row.isNull(5)) {
      order.clientOrderId = null;
    } else {
      order.clientOrderId = row.text(5);
      row.words(4, participant, 0);
      order.participantId = formatUuid(participant, 0);
      order.runId = row.text(6);
      order.venueSessionId = row.text(7);
    }
    onOrder(order);
  });
}

/**
 * Every stored order's id, as four words (the filter of order ids the directory does not
 * hold), and for each order with a clientOrderId, its participant and clientOrderId (the
 * filter of claims the clientOrderId table does not hold; text decoded for those rows
 * only). Returns how many orders.
 */
export async function storedOrderIds(
  client: pg.ClientBase,
  onOrder: (orderId: Int32Array) => void,
  onClientOrder: (participantId: string, clientOrderId: string) => void = () => undefined,
): Promise<number> {
  const orderId = new Int32Array(4);
  const participant = new Int32Array(4);
  return copyOut(client, 'SELECT order_id, participant_id, client_order_id FROM runtime.order_lifecycle_state', (row) => {
    row.words(0, orderId, 0);
    onOrder(orderId);
    if (row.isNull(2)) return;
    row.words(1, participant, 0);
    onClientOrder(formatUuid(participant, 0), row.text(2));
  });
}
