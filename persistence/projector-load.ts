// What the projector reads at start (the watermarks, the next tape sequence, the stored
// instruments, the open orders, the own-reads model) and writes at a graceful stop. Open
// orders come from the stop's file, else a checkpoint with the journal after it, else the table.

import path from 'node:path';
import { crc32 } from 'node:zlib';
import type pg from 'pg';
import { COMMAND_SLOT_BYTES } from '../core/command-slot.ts';
import { STATE_OPEN, STATE_PARTIALLY_FILLED } from '../core/codes.ts';
import { JournalScratch, journalView, type JournalView } from '../core/journal-format.ts';
import type { PersistenceControl } from '../core/persistence-control.ts';
import { RESULT_COUNT_WORD, RESULT_RECORD_BYTES, RESULT_TIMESTAMP_FLOAT } from '../core/result-slot.ts';
import { idKey as keyOf, parseUuidInto } from '../core/uuid.ts';
import { copyOut } from './copy-binary.ts';
import { openOrdersCheckpointPath, readOpenOrders, writeOpenOrders, type OpenOrdersNote } from './open-orders-snapshot.ts';
import { orderChanges } from './order-changes.ts';
import type { OwnReads } from './own-reads.ts';
import { ownReadsPath, readOwnReads, writeOwnReads } from './own-reads-snapshot.ts';
import type { CommandApplier } from './projection-apply.ts';
import { INTAKE_PROJECTION_NAME, PROJECTION_NAME } from './projection-group.ts';
import { RestingOrders, type FrozenOrders, type RestingOrder } from './resting-orders.ts';

/**
 * The most commands of the journal a start replays onto the open orders' checkpoint; past
 * it, the COPY of the open orders from the table is the cheaper start.
 */
const OPEN_ORDERS_REPLAY_MAX = 1_000_000;
/** What loadOpenOrders() says when the open orders came from the file a graceful stop saved. */
export const SAVED_AT_STOP = 'saved at the last stop';

/** The time of the last command of a journal batch (µs). */
function lastCommandTimeUs(view: JournalView): number {
  let timeUs = 0;
  for (let at = 0; at < view.bytes.byteLength;) {
    const headerAt = at + COMMAND_SLOT_BYTES;
    timeUs = Math.max(timeUs, view.floats[(headerAt >> 3) + RESULT_TIMESTAMP_FLOAT]!);
    at = headerAt + (1 + view.words[(headerAt >> 2) + RESULT_COUNT_WORD]!) * RESULT_RECORD_BYTES;
  }
  return timeUs;
}

/** The wall clock in µs, as the shards stamp commands (runtime/shard-thread.ts). */
export function wallClockUs(): number {
  return Math.round((performance.timeOrigin + performance.now()) * 1000);
}

export class ProjectorLoad {
  /** Where the own-reads model came from at start: the stop's file, or why not (its windows then start empty). */
  ownReadsLoaded = 'nothing saved';
  private loadedOrders: { frozen: FrozenOrders; watermarks: number[] } | null = null;

  constructor(
    /** Per shard: the last sequence storage holds, and the last ingested (the projector's own arrays). */
    private readonly projected: number[],
    private readonly ingested: number[],
    private readonly control: PersistenceControl,
    private readonly applier: CommandApplier,
    private readonly own: OwnReads,
  ) {}

  /**
   * The projection watermarks storage holds (into the projector's arrays and the shared
   * control), the next tape sequence and the instruments stored. Returns the intake
   * watermark, or null when storage has none yet.
   */
  async loadWatermarks(client: pg.ClientBase): Promise<number | null> {
    let intakeWatermark: number | null = null;
    const marks = await client.query<{ projection: string; shard_id: number; sequence: string }>(
      'SELECT projection, shard_id, sequence FROM runtime.projection_watermarks WHERE projection = ANY($1)',
      [[PROJECTION_NAME, INTAKE_PROJECTION_NAME]],
    );
    for (const row of marks.rows) {
      if (row.projection === INTAKE_PROJECTION_NAME) {
        intakeWatermark = Number(row.sequence);
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
    const tape = await client.query<{ last: string; called: boolean }>('SELECT last_value::text AS last, is_called AS called FROM runtime.trades_tape_sequence_seq');
    this.applier.nextTapeSequence = Number(tape.rows[0]!.last) + (tape.rows[0]!.called ? 1 : 0);
    this.applier.instruments.clear();
    for (const row of (await client.query<{ id: string }>('SELECT instrument_id AS id FROM runtime.instruments')).rows) {
      this.applier.instruments.add(keyOf(uuidWordsOf(row.id), 0));
    }
    return intakeWatermark;
  }

  /**
   * Loads the open orders (at start, after the watermarks, before the first commit): from
   * the file saved at the last graceful stop when the main thread names one and it is
   * true of storage (persistence/open-orders-snapshot.ts); else, after a crash, from the
   * checkpoint the database names (`checkpoint`: DATA_DIR and the note) with the journal
   * after it replayed onto it; else from the table. Says which.
   */
  async loadOpenOrders(client: pg.ClientBase, saved: { file: string; token: string } | null, checkpoint: { dir: string; note: OpenOrdersNote | null } | null): Promise<string> {
    this.applier.live.clear();
    this.loadedOrders = null;
    await this.lackHistory(client);
    if (saved !== null) {
      let why: string;
      try {
        const read = readOpenOrders(saved.file, saved.token, this.projected);
        if (typeof read !== 'string') {
          this.applier.resting = read;
          this.ownReadsLoaded = this.restoreOwnReads(saved);
          return SAVED_AT_STOP;
        }
        why = read;
      } catch (error) {
        why = `the file could not be loaded: ${(error as Error).message}`; // e.g. an order twice: the table decides
      }
      await this.loadFromTable(client); // a new store: nothing of the file stays
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
            if (held.length !== this.projected.length || held.some((mark, shard) => mark > this.projected[shard]!))
              return `the file is true at projections ${held.join()}, storage holds ${this.projected.join()}`;
            return null;
          },
          tail,
        );
        if (typeof read === 'string') why = read;
        else {
          this.applier.resting = read;
          const replayed = await this.replayAfterCheckpoint(client, at);
          if (replayed.commands > 0) this.keepLoaded();
          return `checkpoint at ${at.join()}, then ${replayed.commands} commands of the journal after it (${replayed.changed} changes of orders)`;
        }
      } catch (error) {
        why = `the checkpoint could not be loaded: ${(error as Error).message}`;
      }
      await this.loadFromTable(client); // a new store: nothing of the file stays
      this.keepLoaded();
      return `read from storage (${why})`;
    }
    await this.loadFromTable(client);
    if (checkpoint !== null) this.keepLoaded(); // without a DATA_DIR nothing takes them: their columns would stay held
    return 'read from storage';
  }

  /**
   * The own-reads model starts empty: what storage holds already (if anything) is
   * lacking, up to the latest command time on the journal or now, whichever is later
   * (a clock set back between runs cannot hide older rows above the floor).
   */
  private async lackHistory(client: pg.ClientBase): Promise<void> {
    const held = await client.query<{ orders: boolean; fills: boolean }>('SELECT EXISTS (SELECT 1 FROM runtime.order_lifecycle_state) AS orders, EXISTS (SELECT 1 FROM runtime.executions) AS fills');
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
    this.applier.lastTimestampUs = throughUs;
  }

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

  /** What loadOpenOrders() read, kept for takeLoadedOrders(). */
  private keepLoaded(): void {
    this.loadedOrders = { frozen: this.applier.resting.freeze(), watermarks: [...this.projected] };
  }

  /**
   * The open orders loadOpenOrders() read, at the projections storage held then, unless they were
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
    const store = this.applier.resting;
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
          for (let at = 0; at < view.bytes.byteLength;) at = orderChanges(view, at, shard, orderOf, opened);
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
  private async loadFromTable(client: pg.ClientBase): Promise<void> {
    const sessions = await client.query<{ run_no: number; session_no: number; run_id: string; venue_session_id: string }>(
      'SELECT run_no, session_no, run_id, venue_session_id FROM runtime.venue_sessions',
    );
    const numbers = new Map(sessions.rows.map((r) => [`${r.run_id}/${r.venue_session_id}`, [r.run_no, r.session_no] as const])); // '/' is in no id (migration 001)
    const openCount = (await client.query<{ n: number }>("SELECT count(*)::int AS n FROM runtime.order_lifecycle_state WHERE state IN ('OPEN', 'PARTIALLY_FILLED')")).rows[0]!.n;
    const store = new RestingOrders(openCount);
    this.applier.resting = store;
    // Open orders, streamed binary into the compact store (a million of them at start-up). What
    // only a new order's row needs (engine order id, creation time) is not loaded: these rows exist.
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
        store.add(order);
      },
    );
    store.indexAdds();
  }

  /**
   * Writes the open orders for the next start (persistence/open-orders-snapshot.ts), at
   * a graceful stop: the caller checks that everything ingested is in storage, so that
   * they are exactly the table's open rows at the watermarks written with them.
   */
  save(file: string, token: string): { count: number; bytes: number } {
    const isOpen = (order: RestingOrder) => order.state === STATE_OPEN || order.state === STATE_PARTIALLY_FILLED;
    const count = this.applier.openOrderCount;
    const bytes = writeOpenOrders(file, token, this.projected, count, (visit) => {
      this.applier.resting.forEach(visit);
      for (const order of this.applier.live.values()) if (isOpen(order)) visit(order);
    });
    // The own-order windows beside them, under the same token (persistence/own-reads-snapshot.ts).
    const ownBytes = writeOwnReads(ownReadsPath(path.dirname(file)), token, this.projected, this.own.image());
    return { count, bytes: bytes + ownBytes };
  }
}

function uuidWordsOf(text: string): Int32Array {
  const words = new Int32Array(4);
  parseUuidInto(text, words, 0);
  return words;
}
