// The operator's rebuild of runtime.order_lifecycle_state from the whole journal, in one
// transaction, its rows streamed in bounded pieces; the in-memory open orders become the
// rebuilt table's.

import type pg from 'pg';
import { COMMAND_HEADER_WORD, COMMAND_ID_WORD, COMMAND_SLOT_BYTES } from '../core/command-slot.ts';
import { EVENT_ACCEPTED, OPCODE_CANCEL, OPCODE_EXPIRE, OPCODE_MODIFY, OPCODE_SUBMIT, STATE_OPEN, STATE_PARTIALLY_FILLED } from '../core/codes.ts';
import { INTAKE_RECORD_BYTES } from '../core/intake-record.ts';
import { journalView, type JournalView } from '../core/journal-format.ts';
import {
  RESULT_COUNT_WORD,
  RESULT_KIND_BYTE,
  RESULT_QUANTITY_FLOAT,
  RESULT_RECORD_BYTES,
  RESULT_SEQUENCE_FLOAT,
  RESULT_STATE_BYTE,
  RESULT_TIMESTAMP_FLOAT,
  RESULT_UUID_A_WORD,
} from '../core/result-slot.ts';
import { idKey as keyOf } from '../core/uuid.ts';
import { copyIn, COPY_PIECE_BYTES, streamedTransaction, type CopyCount } from './copy-stream.ts';
import { ORDER_ID, type OrderState } from './order-changes.ts';
import type { OwnReads } from './own-reads.ts';
import type { PendingIntake } from './pending-intake.ts';
import type { CommandApplier, Level } from './projection-apply.ts';
import { LIFECYCLE_COLUMNS, lifecycleRow, Rows, type SessionBytes } from './projection-group.ts';
import { wallClockUs } from './projector-load.ts';
import { RestingOrders } from './resting-orders.ts';

/**
 * Rebuilds order_lifecycle_state from the whole journal, in one transaction, and
 * leaves the in-memory open orders as the rebuilt table has them. Returns the rows.
 * (The operator's rebuild route: the caller stops ingesting and flushes every group
 * first, so storage holds everything ingested.)
 */
export async function rebuildLifecycle(client: pg.ClientBase, applier: CommandApplier, own: OwnReads, projected: readonly number[], sessions: SessionBytes): Promise<number> {
  const rebuilt = new Rows();
  const saved = new Map(applier.live);
  const savedResting = applier.resting;
  applier.live.clear();
  applier.resting = new RestingOrders();
  const submits = new Map<string, Int32Array>(); // order -> the submit's command id, for its clientOrderId
  try {
    for (let shard = 0; shard < projected.length; shard++) {
      let after = 0;
      for (;;) {
        const page = await client.query<{ first_sequence: string; payload: Buffer }>(
          'SELECT first_sequence, payload FROM runtime.journal_batches WHERE shard_id = $1 AND first_sequence > $2 AND last_sequence <= $3 ORDER BY first_sequence LIMIT 200',
          [shard, after, projected[shard]],
        );
        if (page.rows.length === 0) break;
        for (const row of page.rows) {
          const view = journalView(row.payload);
          for (let at = 0; at < view.bytes.byteLength;) at = replayLifecycle(applier, rebuilt, new Map(), view, at, shard, submits);
          after = Number(row.first_sequence);
        }
      }
    }
    await writeRebuilt(client, rebuilt.lifecycle, submits, sessions);
  } catch (error) {
    applier.live.clear();
    for (const [id, order] of saved) applier.live.set(id, order);
    applier.resting = savedResting;
    throw error;
  }
  applier.live.clear();
  // The rebuilt orders are new objects without their clientOrderIds: the model starts again, lacking all before now.
  own.forget(Math.max(applier.lastTimestampUs, wallClockUs()));
  for (const [key, order] of rebuilt.lifecycle) {
    order.fresh = false;
    order.clientOrderId = null;
    if (order.state === STATE_OPEN || order.state === STATE_PARTIALLY_FILLED) applier.live.set(key, order);
  }
  return rebuilt.lifecycle.size;
}

/**
 * Replaces order_lifecycle_state with `orders` in one transaction, on a connection with
 * the projector's session (its staging table). The rows stream into the staging table in
 * bounded pieces (persistence/copy-stream.ts) before the table is locked; the TRUNCATE,
 * the INSERT (each order's clientOrderId from its submit's command_log row) and COMMIT go
 * in one query after. Any failure rolls all of it back: the table stays as it was.
 */
export async function writeRebuilt(
  client: pg.ClientBase,
  orders: ReadonlyMap<string, OrderState>,
  submits: ReadonlyMap<string, Int32Array>,
  sessions: SessionBytes,
  pieceBytes = COPY_PIECE_BYTES,
): Promise<CopyCount> {
  return streamedTransaction(
    client,
    () =>
      copyIn(
        client,
        `lifecycle_rebuild (${LIFECYCLE_COLUMNS}, client_order_id, submit_command_id)`,
        orders,
        (copy, [key, order]) => lifecycleRow(copy, sessions, order, null, submits.get(key)!),
        pieceBytes,
      ),
    [
      'TRUNCATE runtime.order_lifecycle_state',
      `INSERT INTO runtime.order_lifecycle_state (${LIFECYCLE_COLUMNS}, client_order_id)
       SELECT ${LIFECYCLE_COLUMNS}, (SELECT cl.client_order_id FROM runtime.command_log cl WHERE cl.command_id = s.submit_command_id) FROM lifecycle_rebuild s`,
      'DELETE FROM lifecycle_rebuild',
    ].join(';\n'),
  );
}

/** The order changes of one journaled command, alone (the rebuild). Returns the next offset. */
function replayLifecycle(applier: CommandApplier, rows: Rows, touched: Map<string, Level | null>, view: JournalView, at: number, shard: number, submits: Map<string, Int32Array>): number {
  const { words, floats, bytes } = view;
  const headerAt = at + COMMAND_SLOT_BYTES;
  const eventCount = words[(headerAt >> 2) + RESULT_COUNT_WORD]!;
  const next = headerAt + (1 + eventCount) * RESULT_RECORD_BYTES;
  const firstAt = headerAt + RESULT_RECORD_BYTES;
  const opcode = words[(at >> 2) + COMMAND_HEADER_WORD]! & 0xff;
  const timestampUs = floats[(headerAt >> 3) + RESULT_TIMESTAMP_FLOAT]!;
  if (bytes[firstAt + RESULT_KIND_BYTE] === EVENT_ACCEPTED && opcode === OPCODE_EXPIRE) {
    applier.applyExpiry(rows, touched, view, firstAt, next, timestampUs);
    return next;
  }
  if (bytes[firstAt + RESULT_KIND_BYTE] !== EVENT_ACCEPTED || (opcode !== OPCODE_SUBMIT && opcode !== OPCODE_CANCEL && opcode !== OPCODE_MODIFY)) return next;
  const noIntake: PendingIntake = {
    commitNo: 0,
    gateway: 0,
    index: 0,
    stride: INTAKE_RECORD_BYTES,
    bodies: null,
    bytes: new Uint8Array(0),
    words: new Int32Array(0),
    floats: new Float64Array(0),
    at: 0,
  };
  const taker = applier.applyOrder(rows, touched, view, at, shard, opcode, eventCount, timestampUs, noIntake, 0);
  if (taker === null) return next;
  if (opcode === OPCODE_SUBMIT) submits.set(keyOf(taker.ids, ORDER_ID), words.slice((at >> 2) + COMMAND_ID_WORD, (at >> 2) + COMMAND_ID_WORD + 4));
  for (let e = firstAt + RESULT_RECORD_BYTES; e + 3 * RESULT_RECORD_BYTES <= next; e += 3 * RESULT_RECORD_BYTES) {
    taker.filled += floats[(e >> 3) + RESULT_QUANTITY_FLOAT]!;
    const makerAt = e + RESULT_RECORD_BYTES;
    const maker = applier.live.get(keyOf(words, (makerAt >> 2) + RESULT_UUID_A_WORD));
    if (maker === undefined) throw new Error('the rebuild met a fill of an order it never saw');
    maker.filled += floats[(makerAt >> 3) + RESULT_QUANTITY_FLOAT]!;
    maker.state = bytes[makerAt + RESULT_STATE_BYTE]!;
    maker.updatedAtUs = timestampUs;
    maker.lastSequence = floats[(makerAt >> 3) + RESULT_SEQUENCE_FLOAT]!;
  }
  return next;
}
