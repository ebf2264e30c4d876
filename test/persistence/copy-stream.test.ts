// Bulk COPY through pg-copy-streams (persistence/copy-stream.ts) on a real PostgreSQL:
// the lifecycle rebuild's write streams its rows in many bounded pieces and stores
// them exactly; a row refused late, or the connection killed mid-COPY, rolls the whole
// transaction back (the TRUNCATE included) and the table keeps its rows.

import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import pg from 'pg';
import { pgClient } from '../../persistence/pg-client.ts';
import { packCurrency } from '../../core/command-slot.ts';
import { ORDER_STATE_NAMES, ORDER_TYPE_NAMES, SIDE_NAMES, STATE_CANCELLED, STATE_FILLED, STATE_OPEN, STATE_PARTIALLY_FILLED, TIME_IN_FORCE_NAMES } from '../../core/codes.ts';
import { formatUuid, parseUuidInto } from '../../core/uuid.ts';
import { BinaryCopy } from '../../persistence/copy-binary.ts';
import { copyIn, copyInPieces, streamedTransaction } from '../../persistence/copy-stream.ts';
import { writeRebuilt } from '../../persistence/lifecycle-rebuild.ts';
import { migrate } from '../../persistence/migrations.ts';
import { ACCOUNT_ID, INSTRUMENT_ID, ORDER_ID, PARTICIPANT_ID, type OrderState } from '../../persistence/order-changes.ts';
import { LIFECYCLE_COLUMNS, lifecycleRow, PROJECTOR_SESSION_SQL, SessionBytes } from '../../persistence/projection-group.ts';
import { TestDatabase, withClient } from '../support/database.ts';

let database: TestDatabase;
let url: string;
const sessions = new SessionBytes(() => ['run-1', 'session-1']);
const ORDERS = 20_000;
/** Small pieces: 20,000 rows (about 5 MB) go in well over a hundred of them. */
const PIECE_BYTES = 32 * 1024;

before(async () => {
  database = await TestDatabase.start();
  url = await database.freshDatabase();
  await withClient(url, (client) => migrate(client));
  // Every 10th order's submit has a command_log row carrying its clientOrderId, which the rebuild's INSERT joins in.
  await withClient(url, (client) =>
    client.query(`INSERT INTO runtime.command_log (command_id, scope_digest, payload_hash, principal_id, client_id, idempotency_key, route, processing_mode, shard_id,
                   client_order_id, received_at, stream_sequence, batch_first_sequence, shard_batch, result_status, occurred_at)
                  SELECT ('00000005-0000-4000-8000-' || lpad(to_hex(n), 12, '0'))::uuid, decode(lpad(to_hex(n), 32, '0'), 'hex'), decode(repeat('ab', 32), 'hex'), 'p', 'c', 'k' || n, 0, 0, 0,
                   'c-' || n, now(), n, n, 1, 1, now()
                  FROM generate_series(10, ${ORDERS}, 10) AS n`),
  );
});
after(async () => {
  await database.remove();
});

const uuid = (kind: number, n: number) => `${kind.toString(16).padStart(8, '0')}-0000-4000-8000-${n.toString(16).padStart(12, '0')}`;

/** Order n, in one of four states; `quantity` 0 makes a row the table's CHECK refuses (the staging table has no CHECKs). */
function order(n: number, quantity = 10 + (n % 7)): OrderState {
  const ids = new Int32Array(16);
  parseUuidInto(uuid(1, n), ids, ORDER_ID);
  parseUuidInto(uuid(2, n % 8), ids, INSTRUMENT_ID);
  parseUuidInto(uuid(3, n % 5), ids, PARTICIPANT_ID);
  parseUuidInto(uuid(4, n % 5), ids, ACCOUNT_ID);
  const state = [STATE_OPEN, STATE_PARTIALLY_FILLED, STATE_FILLED, STATE_CANCELLED][n % 4]!;
  const filled = state === STATE_FILLED ? quantity : state === STATE_PARTIALLY_FILLED ? 3 : 0;
  return {
    ids,
    runNo: 1,
    sessionNo: 1,
    side: n % 2,
    orderType: n % 3 === 0 ? 1 : 0,
    timeInForce: 0,
    state,
    priceNanos: 1_000_000_000 + n * 1000,
    quantity,
    filled,
    currency: packCurrency('USD'),
    shard: n % 2,
    engineOrderId: `e-${n}`,
    createdAtUs: 1_800_000_000_000_000 + n,
    updatedAtUs: 1_800_000_000_000_000 + 2 * n,
    lastSequence: n + 1,
    clientOrderId: null,
    fresh: false,
    clientOrderKnown: false,
  };
}

/** The rebuild's inputs for orders 1..count: every 10th order's submit is in command_log with a clientOrderId. */
function rebuildOf(count: number, refused = -1) {
  const orders = new Map<string, OrderState>();
  const submits = new Map<string, Int32Array>();
  for (let n = 1; n <= count; n++) {
    orders.set(`o${n}`, order(n, n === refused ? 0 : undefined));
    const command = new Int32Array(4);
    parseUuidInto(uuid(5, n), command, 0);
    submits.set(`o${n}`, command);
  }
  return { orders, submits };
}

async function projectorClient(): Promise<pg.Client> {
  const client = pgClient(url); // a killed connection's 'error' event has a listener
  await client.connect();
  await client.query(PROJECTOR_SESSION_SQL);
  return client;
}

const COLUMNS = [
  'order_id',
  'client_order_id',
  'run_id',
  'venue_session_id',
  'instrument_id',
  'participant_id',
  'account_id',
  'side',
  'order_type',
  'time_in_force',
  'state',
  'limit_price_nanos',
  'currency',
  'original_quantity_units',
  'remaining_quantity_units',
  'filled_quantity_units',
  'engine_order_id',
  'shard_id',
  'last_sequence',
  '(extract(epoch FROM created_at) * 1000000)::bigint',
  '(extract(epoch FROM updated_at) * 1000000)::bigint',
];

/** The table's rows as text, fields joined by '|' (NULL empty), by order id. */
async function tableRows(client: pg.ClientBase): Promise<string[]> {
  const rows = await client.query<{ r: string }>(`SELECT concat(${COLUMNS.map((column) => `${column}::text`).join(", '|', ")}) AS r FROM runtime.order_lifecycle_state ORDER BY order_id`);
  return rows.rows.map((row) => row.r);
}

/** What the rebuilt table must hold for `orders`, written independently of BinaryCopy. */
function expectedRows(orders: Map<string, OrderState>): string[] {
  const rows: [string, string][] = [];
  for (const o of orders.values()) {
    const id = formatUuid(o.ids, ORDER_ID);
    const n = Number.parseInt(id.slice(-12), 16);
    const open = o.state === STATE_OPEN || o.state === STATE_PARTIALLY_FILLED;
    const fields = [
      id,
      n % 10 === 0 ? `c-${n}` : '',
      'run-1',
      'session-1',
      formatUuid(o.ids, INSTRUMENT_ID),
      formatUuid(o.ids, PARTICIPANT_ID),
      formatUuid(o.ids, ACCOUNT_ID),
      SIDE_NAMES[o.side],
      ORDER_TYPE_NAMES[o.orderType],
      TIME_IN_FORCE_NAMES[o.timeInForce],
      ORDER_STATE_NAMES[o.state],
      o.priceNanos,
      'USD',
      o.quantity,
      open ? o.quantity - o.filled : 0,
      o.filled,
      o.engineOrderId,
      o.shard,
      o.lastSequence,
      o.createdAtUs,
      o.updatedAtUs,
    ];
    rows.push([id, fields.join('|')]);
  }
  return rows.sort(([a], [b]) => (a < b ? -1 : 1)).map(([, row]) => row);
}

test(`a rebuild of ${ORDERS} orders streams in many bounded pieces and stores them row for row`, async () => {
  const client = await projectorClient();
  try {
    const { orders, submits } = rebuildOf(ORDERS);
    const count = await writeRebuilt(client, orders, submits, sessions, PIECE_BYTES);
    assert.equal(count.rows, ORDERS);
    // About 240 bytes a row: a piece holds about 136 rows, so the data went in about 147 pieces, never one buffer.
    assert.ok(count.pieces > 100 && count.pieces < 200, `${count.pieces} pieces`);
    assert.deepEqual(await tableRows(client), expectedRows(orders));
    assert.equal((await client.query('SELECT count(*)::int AS n FROM lifecycle_rebuild')).rows[0].n, 0, 'the staging table is emptied');
    // A second rebuild with fewer orders replaces the table: nothing of the first is left.
    const smaller = rebuildOf(1000);
    assert.equal((await writeRebuilt(client, smaller.orders, smaller.submits, sessions, PIECE_BYTES)).rows, 1000);
    assert.deepEqual(await tableRows(client), expectedRows(smaller.orders));
  } finally {
    await client.end();
  }
});

test('a row the table refuses, after the TRUNCATE, rolls the whole rebuild back', async () => {
  const client = await projectorClient();
  try {
    const { orders, submits } = rebuildOf(ORDERS);
    await writeRebuilt(client, orders, submits, sessions, PIECE_BYTES);
    const before = await tableRows(client);
    assert.equal(before.length, ORDERS);
    const bad = rebuildOf(ORDERS + 5000, ORDERS + 4000); // a zero quantity near the end: the INSERT after the TRUNCATE fails
    await assert.rejects(writeRebuilt(client, bad.orders, bad.submits, sessions, PIECE_BYTES), /order_lifecycle_state_original_quantity_units_check/);
    assert.deepEqual(await tableRows(client), before, 'the table as it was: the TRUNCATE rolled back');
    assert.equal((await client.query('SELECT count(*)::int AS n FROM lifecycle_rebuild')).rows[0].n, 0, 'no streamed row kept');
    assert.equal((await client.query('SELECT 1 AS one')).rows[0].one, 1, 'the connection goes on');
  } finally {
    await client.end();
  }
});

test('a row refused mid-COPY rolls back the statements before it in the transaction', async () => {
  const client = await projectorClient();
  try {
    await client.query('CREATE TABLE IF NOT EXISTS streamed (n integer PRIMARY KEY CHECK (n <> 7777), t text NOT NULL); TRUNCATE streamed');
    const rows = Array.from({ length: 10_000 }, (_, k) => k + 1);
    const write = (copy: BinaryCopy, n: number) => copy.row(2).integer(n).text(`row ${n}`);
    await assert.rejects(
      streamedTransaction(client, async () => {
        await client.query("INSERT INTO streamed VALUES (-1, 'before')");
        return copyIn(client, 'streamed (n, t)', rows, write, 4096);
      }),
      (error: Error & { where?: string }) => /streamed_n_check/.test(error.message) && /line 7777/.test(error.where ?? ''),
    );
    assert.equal((await client.query('SELECT count(*)::int AS n FROM streamed')).rows[0].n, 0);
    // The same rows without the refused one commit, with the statement after them.
    const count = await streamedTransaction(
      client,
      () =>
        copyIn(
          client,
          'streamed (n, t)',
          rows.filter((n) => n !== 7777),
          write,
          4096,
        ),
      "INSERT INTO streamed VALUES (-1, 'after')",
    );
    assert.equal(count.rows, 9999);
    assert.ok(count.pieces > 20, `${count.pieces} pieces`);
    const stored = await client.query<{ n: number; total: string }>('SELECT count(*)::int AS n, sum(n)::text AS total FROM streamed');
    assert.deepEqual(stored.rows[0], { n: 10_000, total: String((10_000 * 10_001) / 2 - 7777 - 1) });
  } finally {
    await client.end();
  }
});

test('a connection killed mid-COPY leaves nothing of the transaction, its TRUNCATE included', async () => {
  const client = await projectorClient();
  const other = await projectorClient();
  try {
    const { orders, submits } = rebuildOf(ORDERS);
    await writeRebuilt(other, orders, submits, sessions, PIECE_BYTES);
    const before = await tableRows(other);
    assert.equal(before.length, ORDERS);
    const pid = (await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid;
    let sent = 0;
    // Pieces of the rows; after the tenth the backend is terminated, and more pieces follow.
    async function* pieces(): AsyncGenerator<Buffer> {
      const copy = new BinaryCopy(PIECE_BYTES + 4096);
      for (const [key, value] of orders) {
        lifecycleRow(copy, sessions, value, null, submits.get(key)!);
        if (copy.byteLength < PIECE_BYTES) continue;
        yield copy.take();
        if (++sent === 10) await other.query('SELECT pg_terminate_backend($1)', [pid]);
      }
      yield copy.finish();
    }
    await assert.rejects(
      streamedTransaction(client, async () => {
        await client.query('TRUNCATE runtime.order_lifecycle_state');
        return copyInPieces(client, `lifecycle_rebuild (${LIFECYCLE_COLUMNS}, client_order_id, submit_command_id)`, pieces());
      }),
      /terminat/i,
    );
    assert.ok(sent >= 10, `${sent} pieces sent before the kill`);
    assert.deepEqual(await tableRows(other), before, 'the table as it was');
  } finally {
    await client.end().catch(() => undefined);
    await other.end();
  }
});
