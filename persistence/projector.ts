// Tier 2 of storage: materializes the journal into relational projections, right
// behind the journal writer and in journal order per shard:
//   runtime.command_outcomes   one row per command, with the envelope it answers
//   runtime.executions         one row per execution (both sides of every fill)
//   runtime.trades             one row per trade, with both counterparties
//   runtime.order_lifecycle_state  the current state of every order (upserted)
// One transaction per group of journal batches, which also moves the per-shard
// watermark (runtime.projection_watermarks), so a crash never applies a batch twice.
// Open orders are held in memory (loaded from order_lifecycle_state at start) so a
// fill of a resting order knows whose it is.

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
  EVENT_TRADE,
  OPCODE_CANCEL,
  OPCODE_MODIFY,
  OPCODE_SUBMIT,
  ORDER_STATE_NAMES,
  ORDER_TYPE_NAMES,
  rejectName,
  SIDE_NAMES,
  STATE_OPEN,
  STATE_PARTIALLY_FILLED,
  TIME_IN_FORCE_NAMES,
} from '../core/codes.ts';
import { engineOrderIdOf, eventIdOf, renderEnvelope } from '../core/outcome-format.ts';
import { PersistenceControl } from '../core/persistence-control.ts';
import { readEvent, readHeader, RESULT_RECORD_BYTES, type ResultEvent, type ResultHeader } from '../core/result-slot.ts';
import { formatUuid } from '../core/uuid.ts';
import { BinaryCopy, copyInto } from './copy-binary.ts';
import { LatencyHistogram } from './latency-histogram.ts';
import type { JournalBatch } from './journal-writer.ts';

/** Connections that already hold the lifecycle staging table. */
const STAGED = new WeakSet<pg.ClientBase>();

export const PROJECTION_NAME = 'runtime';

/** An order as the lifecycle projection sees it. */
interface OrderState {
  orderId: string;
  runNo: number;
  sessionNo: number;
  instrumentId: string;
  participantId: string;
  accountId: string;
  side: string;
  orderType: string;
  timeInForce: string;
  state: number;
  priceNanos: number;
  quantity: number;
  filled: number;
  currency: string;
  engineOrderId: string;
  shard: number;
  submitCommandId: string;
  createdAtUs: number;
  updatedAtUs: number;
  lastSequence: number;
}

/** One command of a journal payload, decoded. */
interface JournalCommand {
  opcode: number;
  commandId: string;
  orderId: string;
  instrumentId: string;
  participantId: string;
  accountId: string;
  runNo: number;
  sessionNo: number;
  side: number;
  orderType: number;
  timeInForce: number;
  slotCurrency: number;
  priceNanos: number;
  quantity: number;
  header: ResultHeader;
  events: ResultEvent[];
}

export function decodeJournal(payload: Uint8Array): JournalCommand[] {
  const bytes = new Uint8Array(payload); // an aligned copy for the word views
  const views = { words: new Int32Array(bytes.buffer), floats: new Float64Array(bytes.buffer), bytes };
  const out: JournalCommand[] = [];
  let at = 0;
  while (at < bytes.byteLength) {
    const w = at >> 2;
    const f = at >> 3;
    const header = views.words[w + COMMAND_HEADER_WORD]!;
    const headerAt = at + COMMAND_SLOT_BYTES;
    const result = readHeader(views, headerAt);
    const events: ResultEvent[] = [];
    for (let i = 0, e = headerAt + RESULT_RECORD_BYTES; i < result.eventCount; i++, e += RESULT_RECORD_BYTES) events.push(readEvent(views, e));
    out.push({
      opcode: header & 0xff,
      side: (header >>> 8) & 0xff,
      orderType: (header >>> 16) & 0xff,
      timeInForce: header >>> 24,
      commandId: formatUuid(views.words, w + COMMAND_ID_WORD),
      orderId: formatUuid(views.words, w + COMMAND_ORDER_ID_WORD),
      instrumentId: formatUuid(views.words, w + COMMAND_INSTRUMENT_ID_WORD),
      participantId: formatUuid(views.words, w + COMMAND_PARTICIPANT_ID_WORD),
      accountId: formatUuid(views.words, w + COMMAND_ACCOUNT_ID_WORD),
      runNo: views.words[w + COMMAND_RUN_WORD]!,
      sessionNo: views.words[w + COMMAND_SESSION_WORD]!,
      slotCurrency: views.words[w + COMMAND_CURRENCY_WORD]!,
      priceNanos: views.floats[f + COMMAND_PRICE_NANOS_FLOAT]!,
      quantity: views.floats[f + COMMAND_QUANTITY_UNITS_FLOAT]!,
      header: result,
      events,
    });
    at = headerAt + (1 + result.eventCount) * RESULT_RECORD_BYTES;
  }
  return out;
}

/** The rows one group of journal batches becomes. */
class Rows {
  outcomes = new BinaryCopy();
  executions = new BinaryCopy();
  trades = new BinaryCopy();
  lifecycle = new Map<string, OrderState>();
  watermarks = new Map<number, number>();
  /** Instruments first seen in this group: id -> [currency, shard, sequence]. */
  instruments = new Map<string, [string, number, number]>();
}

export type SessionNames = (runNo: number, sessionNo: number) => [string, string];

/**
 * What one projection group changed in the displayed books (open LIMIT orders):
 * per (instrument, side, price) the change of open quantity and of order count, the
 * instruments first seen, and the watermarks reached. The read thread keeps its
 * in-memory depth from these.
 */
export interface BookUpdate {
  watermarks: [shard: number, sequence: number][];
  levels: [instrumentId: string, side: string, priceNanos: number, quantityDelta: number, countDelta: number][];
  instruments: [instrumentId: string, currency: string, shard: number][];
}

/** What the projector did since it started. */
export class ProjectorStats {
  groups = 0;
  rows = 0;
  /** Time spent in successful projection transactions, µs. */
  busyUs = 0;
  /** Projection lag per journal batch: its journal commit to its projection commit (µs). */
  readonly lag = new LatencyHistogram();
}

export class Projector {
  readonly stats = new ProjectorStats();
  /** Instruments already in runtime.instruments. */
  private readonly instruments = new Set<string>();
  private readonly live = new Map<string, OrderState>();
  private readonly control: PersistenceControl;
  private readonly sessionNames: SessionNames;
  private readonly projected: number[];
  private readonly log: (level: 'info' | 'warn' | 'error', message: string, fields?: object) => void;

  private readonly onGroup: (update: BookUpdate) => void;

  constructor(options: {
    control: PersistenceControl;
    shardCount: number;
    sessionNames: SessionNames;
    log: (level: 'info' | 'warn' | 'error', message: string, fields?: object) => void;
    /** Called after each committed group with what it changed in the displayed books. */
    onGroup?: (update: BookUpdate) => void;
  }) {
    this.onGroup = options.onGroup ?? (() => undefined);
    this.control = options.control;
    this.sessionNames = options.sessionNames;
    this.projected = Array.from({ length: options.shardCount }, () => 0);
    this.log = options.log;
  }

  /** Last sequence materialized per shard. */
  watermark(shard: number): number {
    return this.projected[shard]!;
  }

  /** Loads the watermarks and the open orders (before the first batch). */
  async load(client: pg.ClientBase): Promise<void> {
    const marks = await client.query<{ shard_id: number; sequence: string }>('SELECT shard_id, sequence FROM runtime.projection_watermarks WHERE projection = $1', [PROJECTION_NAME]);
    for (const row of marks.rows) {
      if (row.shard_id < this.projected.length) {
        this.projected[row.shard_id] = Number(row.sequence);
        this.control.setProjected(row.shard_id, Number(row.sequence));
      }
    }
    this.instruments.clear();
    for (const row of (await client.query<{ id: string }>('SELECT instrument_id AS id FROM runtime.instruments')).rows) this.instruments.add(row.id);
    this.live.clear();
    const open = await client.query(
      `SELECT order_id, run_id, venue_session_id, instrument_id, participant_id, account_id, side, order_type, time_in_force, state,
              limit_price_nanos, original_quantity_units, filled_quantity_units, currency, engine_order_id, shard_id, last_sequence,
              (extract(epoch FROM created_at) * 1000000)::bigint AS created_us, (extract(epoch FROM updated_at) * 1000000)::bigint AS updated_us
         FROM runtime.order_lifecycle_state WHERE state IN ('OPEN', 'PARTIALLY_FILLED')`,
    );
    const sessions = await client.query<{ run_no: number; session_no: number; run_id: string; venue_session_id: string }>('SELECT run_no, session_no, run_id, venue_session_id FROM runtime.venue_sessions');
    const numbers = new Map(sessions.rows.map((r) => [`${r.run_id}\u0000${r.venue_session_id}`, [r.run_no, r.session_no] as const]));
    for (const row of open.rows) {
      const [runNo, sessionNo] = numbers.get(`${row.run_id}\u0000${row.venue_session_id}`) ?? [-1, -1];
      this.live.set(row.order_id, {
        orderId: row.order_id,
        runNo,
        sessionNo,
        instrumentId: row.instrument_id,
        participantId: row.participant_id,
        accountId: row.account_id,
        side: row.side,
        orderType: row.order_type,
        timeInForce: row.time_in_force,
        state: ORDER_STATE_NAMES.indexOf(row.state),
        priceNanos: Number(row.limit_price_nanos),
        quantity: Number(row.original_quantity_units),
        filled: Number(row.filled_quantity_units),
        currency: row.currency,
        engineOrderId: row.engine_order_id,
        shard: row.shard_id,
        submitCommandId: '', // only a new order's row reads it (for its clientOrderId)
        createdAtUs: Number(row.created_us),
        updatedAtUs: Number(row.updated_us),
        lastSequence: Number(row.last_sequence),
      });
    }
  }

  /** Materializes journal batches (in journal order per shard) in one transaction. */
  async project(client: pg.ClientBase, batches: JournalBatch[]): Promise<void> {
    const rows = new Rows();
    for (const batch of batches) {
      if (batch.lastSequence <= this.projected[batch.shard]!) continue; // already materialized
      if (batch.firstSequence !== this.projected[batch.shard]! + 1 && !rows.watermarks.has(batch.shard)) {
        throw new Error(`projection of shard ${batch.shard} out of step: batch ${batch.firstSequence}, watermark ${this.projected[batch.shard]}`);
      }
      for (const command of decodeJournal(batch.payload)) this.apply(rows, batch, command);
      rows.watermarks.set(batch.shard, batch.lastSequence);
    }
    if (rows.watermarks.size === 0) return;
    const started = performance.now();
    await client.query('BEGIN');
    try {
      await copyInto(client, OUTCOMES_TARGET, rows.outcomes);
      await copyInto(client, EXECUTIONS_TARGET, rows.executions);
      await copyInto(client, TRADES_TARGET, rows.trades);
      await this.upsertLifecycle(client, rows.lifecycle.values());
      if (rows.instruments.size > 0) {
        const entries = [...rows.instruments];
        await client.query(
          `INSERT INTO runtime.instruments (instrument_id, currency, shard_id, first_sequence)
           SELECT * FROM unnest($1::uuid[], $2::char(3)[], $3::smallint[], $4::bigint[]) ON CONFLICT (instrument_id) DO NOTHING`,
          [entries.map(([id]) => id), entries.map(([, v]) => v[0]), entries.map(([, v]) => v[1]), entries.map(([, v]) => v[2])],
        );
      }
      // Every shard's watermark in one statement: each round trip to the server costs a wake-up of both sides.
      const marks = [...rows.watermarks];
      await client.query(
        `INSERT INTO runtime.projection_watermarks (projection, shard_id, sequence, updated_at)
         SELECT $1, shard_id, sequence, now() FROM unnest($2::smallint[], $3::bigint[]) AS m (shard_id, sequence)
         ON CONFLICT (projection, shard_id) DO UPDATE SET sequence = EXCLUDED.sequence, updated_at = now()`,
        [PROJECTION_NAME, marks.map(([shard]) => shard), marks.map(([, sequence]) => sequence)],
      );
      await client.query('COMMIT');
    } catch (error) {
      await client.query('ROLLBACK').catch(() => undefined);
      STAGED.delete(client); // a staging table created in the rolled-back transaction is gone
      throw error;
    }
    const committed = performance.now();
    this.stats.busyUs += (committed - started) * 1000;
    for (const batch of batches) if (batch.journaledAtMs !== undefined) this.stats.lag.record((committed - batch.journaledAtMs) * 1000);
    this.stats.groups++;
    this.stats.rows += rows.outcomes.rows + rows.executions.rows + rows.trades.rows + rows.lifecycle.size;
    for (const [shard, sequence] of rows.watermarks) {
      this.projected[shard] = sequence;
      this.control.setProjected(shard, sequence);
    }
    for (const id of rows.instruments.keys()) this.instruments.add(id);
    const update = this.bookUpdate(rows);
    for (const order of rows.lifecycle.values()) {
      if (order.state === STATE_OPEN || order.state === STATE_PARTIALLY_FILLED) this.live.set(order.orderId, order);
      else this.live.delete(order.orderId);
    }
    this.onGroup(update);
  }

  /** The group's changes to the displayed books: new states minus the states before the group (still in `live`). */
  private bookUpdate(rows: Rows): BookUpdate {
    const levels = new Map<string, [string, string, number, number, number]>();
    const add = (order: OrderState | undefined, sign: number) => {
      if (order === undefined || order.orderType !== 'LIMIT' || (order.state !== STATE_OPEN && order.state !== STATE_PARTIALLY_FILLED)) return;
      const key = `${order.instrumentId}|${order.side}|${order.priceNanos}`;
      const entry = levels.get(key) ?? [order.instrumentId, order.side, order.priceNanos, 0, 0];
      entry[3] += sign * (order.quantity - order.filled);
      entry[4] += sign;
      levels.set(key, entry);
    };
    for (const order of rows.lifecycle.values()) {
      add(this.live.get(order.orderId), -1);
      add(order, 1);
    }
    return {
      watermarks: [...rows.watermarks],
      levels: [...levels.values()].filter((entry) => entry[3] !== 0 || entry[4] !== 0),
      instruments: [...rows.instruments].map(([id, [currency, shard]]) => [id, currency, shard]),
    };
  }

  /**
   * Rebuilds order_lifecycle_state from the whole journal, in one transaction, and
   * leaves the in-memory open orders as the rebuilt table has them. Returns the rows.
   */
  async rebuildLifecycle(client: pg.ClientBase): Promise<number> {
    const rebuilt = new Map<string, OrderState>();
    const saved = new Map(this.live);
    this.live.clear();
    try {
      for (let shard = 0; shard < this.projected.length; shard++) {
        let after = 0;
        for (;;) {
          const page = await client.query<{ first_sequence: string; last_sequence: string; payload: Buffer }>(
            'SELECT first_sequence, last_sequence, payload FROM runtime.journal_batches WHERE shard_id = $1 AND first_sequence > $2 AND last_sequence <= $3 ORDER BY first_sequence LIMIT 200',
            [shard, after, this.projected[shard]],
          );
          if (page.rows.length === 0) break;
          for (const row of page.rows) {
            const batch = { shard, firstSequence: Number(row.first_sequence), lastSequence: Number(row.last_sequence), commandCount: 0, eventCount: 0, payload: row.payload, sequencedAtUs: [] };
            const rows = new Rows();
            rows.lifecycle = rebuilt;
            for (const command of decodeJournal(batch.payload)) this.applyLifecycle(rows, batch, command);
            after = batch.firstSequence;
          }
        }
      }
      await client.query('BEGIN');
      await client.query('TRUNCATE runtime.order_lifecycle_state');
      await this.upsertLifecycle(client, rebuilt.values());
      await client.query('COMMIT');
    } catch (error) {
      await client.query('ROLLBACK').catch(() => undefined);
      this.live.clear();
      for (const [id, order] of saved) this.live.set(id, order);
      throw error;
    }
    this.live.clear();
    for (const order of rebuilt.values()) if (order.state === STATE_OPEN || order.state === STATE_PARTIALLY_FILLED) this.live.set(order.orderId, order);
    return rebuilt.size;
  }

  private apply(rows: Rows, batch: JournalBatch, command: JournalCommand): void {
    const { header, events } = command;
    const first = events[0]!;
    const currency = header.currency !== 0 ? unpackCurrency(header.currency) : command.slotCurrency > 0 ? unpackCurrency(command.slotCurrency) : '';
    const accepted = first.kind === EVENT_ACCEPTED;
    rows.outcomes
      .row(10)
      .uuid(uuidBytes(command.commandId))
      .smallint(batch.shard)
      .bigint(first.sequence)
      .bigint(batch.firstSequence)
      .bigint(header.batch)
      .smallint(accepted ? 1 : 2)
      .text(accepted ? null : rejectName(first.code))
      .uuid(first.orderA === NO_ORDER ? null : uuidBytes(first.orderA))
      .timestampUs(header.timestampUs)
      .text(renderEnvelope({ shard: batch.shard, instrumentId: command.instrumentId, currency }, header, events).json);
    this.applyLifecycle(rows, batch, command);
    const taker = rows.lifecycle.get(command.orderId) ?? this.live.get(command.orderId);
    for (let i = 1; i + 2 < events.length; i += 3) {
      const takerExecution = events[i]!;
      const makerExecution = events[i + 1]!;
      const trade = events[i + 2]!;
      if (takerExecution.kind !== EVENT_EXECUTION || makerExecution.kind !== EVENT_EXECUTION || trade.kind !== EVENT_TRADE) {
        throw new Error(`unexpected event layout in command ${command.commandId}`);
      }
      const maker = rows.lifecycle.get(makerExecution.orderA) ?? this.live.get(makerExecution.orderA);
      if (taker === undefined || maker === undefined) throw new Error(`projection lost an order of command ${command.commandId}`);
      const tradeId = uuidBytes(eventIdOf(batch.shard, trade.sequence));
      for (const [execution, order, liquidity] of [[takerExecution, taker, 'TAKER'], [makerExecution, maker, 'MAKER']] as const) {
        rows.executions
          .row(16)
          .uuid(uuidBytes(eventIdOf(batch.shard, execution.sequence)))
          .smallint(batch.shard)
          .bigint(execution.sequence)
          .uuid(uuidBytes(command.commandId))
          .uuid(tradeId)
          .uuid(uuidBytes(order.orderId))
          .uuid(uuidBytes(execution.orderB))
          .uuid(uuidBytes(order.instrumentId))
          .uuid(uuidBytes(order.participantId))
          .uuid(uuidBytes(order.accountId))
          .text(order.side)
          .text(liquidity)
          .bigint(execution.quantity)
          .bigint(execution.price)
          .text(order.currency)
          .timestampUs(header.timestampUs);
      }
      const [buy, sell] = taker.side === 'BUY' ? [taker, maker] : [maker, taker];
      const [runId, sessionId] = this.sessionNames(taker.runNo, taker.sessionNo);
      rows.trades
        .row(19)
        .uuid(tradeId)
        .smallint(batch.shard)
        .bigint(trade.sequence)
        .uuid(uuidBytes(command.commandId))
        .uuid(uuidBytes(eventIdOf(batch.shard, takerExecution.sequence)))
        .text(runId)
        .text(sessionId)
        .uuid(uuidBytes(taker.instrumentId))
        .uuid(uuidBytes(buy.orderId))
        .uuid(uuidBytes(sell.orderId))
        .uuid(uuidBytes(buy.participantId))
        .uuid(uuidBytes(buy.accountId))
        .uuid(uuidBytes(sell.participantId))
        .uuid(uuidBytes(sell.accountId))
        .text(SIDE_NAMES[trade.aggressor]!)
        .bigint(trade.quantity)
        .bigint(trade.price)
        .text(taker.currency)
        .timestampUs(header.timestampUs);
    }
  }

  /** Order states after one command: the taker (submit, modify, cancel) and every maker it filled. */
  private applyLifecycle(rows: Rows, batch: JournalBatch, command: JournalCommand): void {
    const { header, events } = command;
    const first = events[0]!;
    if (first.kind !== EVENT_ACCEPTED) return;
    if (command.opcode !== OPCODE_SUBMIT && command.opcode !== OPCODE_CANCEL && command.opcode !== OPCODE_MODIFY) return;
    const lastSequence = events[events.length - 1]!.sequence;
    const get = (orderId: string) => rows.lifecycle.get(orderId) ?? this.live.get(orderId);
    let order: OrderState | undefined;
    if (command.opcode === OPCODE_SUBMIT) {
      order = {
        orderId: command.orderId,
        runNo: command.runNo,
        sessionNo: command.sessionNo,
        instrumentId: command.instrumentId,
        participantId: command.participantId,
        accountId: command.accountId,
        side: SIDE_NAMES[command.side]!,
        orderType: ORDER_TYPE_NAMES[command.orderType]!,
        timeInForce: TIME_IN_FORCE_NAMES[command.timeInForce]!,
        state: first.state,
        priceNanos: command.priceNanos,
        quantity: command.quantity,
        filled: 0,
        currency: unpackCurrency(command.slotCurrency),
        engineOrderId: engineOrderIdOf(batch.shard, header.engineOrderId),
        shard: batch.shard,
        submitCommandId: command.commandId,
        createdAtUs: header.timestampUs,
        updatedAtUs: header.timestampUs,
        lastSequence,
      };
    } else {
      const known = get(command.orderId);
      if (known === undefined) {
        this.log('error', 'projection: an accepted command names an order it never saw', { commandId: command.commandId, orderId: command.orderId });
        return;
      }
      order = { ...known, state: first.state, updatedAtUs: header.timestampUs, lastSequence };
      if (command.opcode === OPCODE_MODIFY) {
        order.priceNanos = command.priceNanos;
        order.quantity = command.quantity;
      }
    }
    rows.lifecycle.set(order.orderId, order);
    if (command.opcode === OPCODE_SUBMIT && !this.instruments.has(order.instrumentId) && !rows.instruments.has(order.instrumentId)) {
      rows.instruments.set(order.instrumentId, [order.currency, batch.shard, first.sequence]);
    }
    for (let i = 1; i + 2 < events.length; i += 3) {
      const takerExecution = events[i]!;
      const makerExecution = events[i + 1]!;
      order.filled += takerExecution.quantity;
      const maker = get(makerExecution.orderA);
      if (maker === undefined) {
        this.log('error', 'projection: a fill names an order it never saw', { orderId: makerExecution.orderA });
        continue;
      }
      rows.lifecycle.set(maker.orderId, { ...maker, filled: maker.filled + makerExecution.quantity, state: makerExecution.state, updatedAtUs: header.timestampUs, lastSequence: makerExecution.sequence });
    }
  }

  private async upsertLifecycle(client: pg.ClientBase, orders: Iterable<OrderState>): Promise<void> {
    const copy = new BinaryCopy();
    for (const order of orders) {
      const [runId, sessionId] = this.sessionNames(order.runNo, order.sessionNo);
      const open = order.state === STATE_OPEN || order.state === STATE_PARTIALLY_FILLED;
      copy
        .row(21)
        .uuid(uuidBytes(order.orderId))
        .text(runId)
        .text(sessionId)
        .uuid(uuidBytes(order.instrumentId))
        .uuid(uuidBytes(order.participantId))
        .uuid(uuidBytes(order.accountId))
        .text(order.side)
        .text(order.orderType)
        .text(order.timeInForce)
        .text(ORDER_STATE_NAMES[order.state]!)
        .bigint(order.priceNanos)
        .text(order.currency)
        .bigint(order.quantity)
        .bigint(open ? order.quantity - order.filled : 0)
        .bigint(order.filled)
        .text(order.engineOrderId)
        .smallint(order.shard)
        .bigint(order.lastSequence)
        .timestampUs(order.createdAtUs)
        .timestampUs(order.updatedAtUs)
        .uuid(order.submitCommandId === '' ? null : uuidBytes(order.submitCommandId));
    }
    if (copy.rows === 0) return;
    // The staging table lives as long as the connection: created once per connection, not per group.
    if (!STAGED.has(client)) {
      await client.query(
        'CREATE TEMP TABLE IF NOT EXISTS lifecycle_stage (LIKE runtime.order_lifecycle_state INCLUDING DEFAULTS, submit_command_id uuid) ON COMMIT DELETE ROWS',
      );
      STAGED.add(client);
    }
    await copyInto(client, `lifecycle_stage (${LIFECYCLE_COLUMNS}, submit_command_id)`, copy);
    // A new order takes its clientOrderId from the intake row of the submit that created it.
    await client.query(
      `INSERT INTO runtime.order_lifecycle_state (${LIFECYCLE_COLUMNS}, client_order_id)
       SELECT ${LIFECYCLE_COLUMNS.split(', ').map((c) => `s.${c}`).join(', ')},
              (SELECT cl.client_order_id FROM runtime.command_log cl WHERE cl.command_id = s.submit_command_id)
         FROM lifecycle_stage s
       ON CONFLICT (order_id) DO UPDATE SET
         state = EXCLUDED.state, limit_price_nanos = EXCLUDED.limit_price_nanos,
         original_quantity_units = EXCLUDED.original_quantity_units, remaining_quantity_units = EXCLUDED.remaining_quantity_units,
         filled_quantity_units = EXCLUDED.filled_quantity_units, last_sequence = EXCLUDED.last_sequence, updated_at = EXCLUDED.updated_at
       WHERE runtime.order_lifecycle_state.last_sequence < EXCLUDED.last_sequence`,
    );
  }
}

const NO_ORDER = '00000000-0000-0000-0000-000000000000';

function uuidBytes(text: string): Buffer {
  return Buffer.from(text.replace(/-/g, ''), 'hex');
}

const OUTCOMES_TARGET =
  'runtime.command_outcomes (command_id, shard_id, stream_sequence, batch_first_sequence, shard_batch, result_status, reject_code, order_id, occurred_at, result_payload_json)';
const EXECUTIONS_TARGET =
  'runtime.executions (execution_id, shard_id, stream_sequence, command_id, trade_id, order_id, counterparty_order_id, instrument_id, participant_id, account_id, side, liquidity, quantity_units, price_nanos, currency, occurred_at)';
const TRADES_TARGET =
  'runtime.trades (trade_id, shard_id, stream_sequence, command_id, execution_id, run_id, venue_session_id, instrument_id, buy_order_id, sell_order_id, buy_participant_id, buy_account_id, sell_participant_id, sell_account_id, aggressor_side, quantity_units, price_nanos, currency, occurred_at)';
const LIFECYCLE_COLUMNS =
  'order_id, run_id, venue_session_id, instrument_id, participant_id, account_id, side, order_type, time_in_force, state, limit_price_nanos, currency, original_quantity_units, remaining_quantity_units, filled_quantity_units, engine_order_id, shard_id, last_sequence, created_at, updated_at';
