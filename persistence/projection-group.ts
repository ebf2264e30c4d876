// The projection groups: the open group's rows (the commits ingested since the last seal),
// a sealed group's transaction (binary COPYs, each changed order's lifecycle row written
// once from its state at the seal, the watermarks), and the projector's session set-up.

import { unpackCurrency } from '../core/command-slot.ts';
import { ORDER_STATE_NAMES, ORDER_TYPE_NAMES, SIDE_NAMES, STATE_OPEN, STATE_PARTIALLY_FILLED, TIME_IN_FORCE_NAMES } from '../core/codes.ts';
import { TapeBatch } from '../core/tape-view.ts';
import { formatUuid } from '../core/uuid.ts';
import { BinaryCopy } from './copy-binary.ts';
import { ACCOUNT_ID, INSTRUMENT_ID, ORDER_ID, PARTICIPANT_ID, type OrderState } from './order-changes.ts';
import { QUARANTINE_COPY_SQL, quarantineCopy, type QuarantinedRow } from './quarantine.ts';

export const PROJECTION_NAME = 'runtime';
export const INTAKE_PROJECTION_NAME = 'runtime-intake';

export type SessionNames = (runNo: number, sessionNo: number) => [string, string];

/** The rows of the open group: the commits ingested since the last seal. */
export class Rows {
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
export interface Flush {
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

export interface CopyTarget {
  relation: string;
  columns: string[];
}

/** The run and session ids of each (runNo, sessionNo), as the UTF-8 bytes the rows carry; encoded once per session. */
export class SessionBytes {
  private readonly text = new Map<string, [Buffer, Buffer]>();

  constructor(private readonly names: SessionNames) {}

  of(runNo: number, sessionNo: number): [Buffer, Buffer] {
    const key = `${runNo}:${sessionNo}`;
    let text = this.text.get(key);
    if (text === undefined) {
      const [runId, sessionId] = this.names(runNo, sessionNo);
      text = [Buffer.from(runId, 'utf8'), Buffer.from(sessionId, 'utf8')];
      this.text.set(key, text);
    }
    return text;
  }
}

/**
 * Seals the open group into its transaction: every COPY and statement, one round trip.
 * `lastTapeSequence`: the last trade's tape sequence assigned; `storedInstruments` learns
 * the group's new instruments.
 */
export function sealedGroup(rows: Rows, intakeWatermark: number, lastTapeSequence: number, storedInstruments: Set<string>, sessions: SessionBytes): Flush {
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
  if (rows.trades.rows > 0) statements.push(`SELECT setval(pg_get_serial_sequence('runtime.trades', 'tape_sequence'), ${lastTapeSequence})`);
  const created = new BinaryCopy();
  const updated = new BinaryCopy();
  for (const order of rows.lifecycle.values()) {
    if (order.fresh) lifecycleRow(created, sessions, order, order.clientOrderId);
    else updateRow(updated, order);
    order.fresh = false; // later groups update its row
    order.clientOrderId = null;
  }
  for (const key of rows.instruments.keys()) storedInstruments.add(key);
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
  return {
    sql: statements.join(';\n'),
    copies,
    copyTargets,
    watermarkSql,
    quarantined: [],
    whole: false,
    tape: rows.tape,
    watermarks: rows.watermarks,
    intakeWatermark,
    journaledAtMs: rows.journaledAtMs,
    rows: rows.commands.rows + rows.executions.rows + rows.trades.rows + rows.lifecycle.size,
    commands: rows.commandCount,
  };
}

/** A whole lifecycle row; `submitCommandId` adds that column (the rebuild's staging table). */
export function lifecycleRow(copy: BinaryCopy, sessions: SessionBytes, order: OrderState, clientOrderId: Uint8Array | null, submitCommandId: Int32Array | null = null): void {
  const [runId, sessionId] = sessions.of(order.runNo, order.sessionNo);
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

/** An order's changed columns, for the staging table the group's prepared UPDATE reads. */
function updateRow(copy: BinaryCopy, order: OrderState): void {
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

/** `schema.table (a, b, ...)` as the relation an error names and the column list. */
function copyTargetOf(target: string): CopyTarget {
  const open = target.indexOf('(');
  const table = target.slice(0, open).trim();
  return {
    relation: table.slice(table.lastIndexOf('.') + 1),
    columns: target
      .slice(open + 1, target.lastIndexOf(')'))
      .split(',')
      .map((column) => column.trim()),
  };
}

/** A group's script as it is sent: as sealed, with its quarantined rows, or only its quarantine and watermarks when quarantined whole. */
export function scriptOf(flush: Flush): [string, Buffer[]] {
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
export const LIFECYCLE_COLUMNS =
  'order_id, run_id, venue_session_id, instrument_id, participant_id, account_id, side, order_type, time_in_force, state, limit_price_nanos, currency, original_quantity_units, remaining_quantity_units, filled_quantity_units, engine_order_id, shard_id, last_sequence, created_at, updated_at';
const UPDATE_COLUMNS = 'order_id, state, limit_price_nanos, original_quantity_units, remaining_quantity_units, filled_quantity_units, last_sequence, updated_at';

/**
 * Session set-up of the projector's connection. Staging tables for updates and
 * rebuilds that keep their rows until the script deletes them: an ON COMMIT DELETE
 * ROWS table is truncated at every commit, which rewrites catalog rows and rebuilds
 * cache entries (a profile of the projector's backend showed it among its top costs);
 * deleted rows of a temporary table cost no WAL, and PROJECTOR_VACUUM_SQL reclaims them
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
