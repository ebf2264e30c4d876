// Migrations on a real PostgreSQL: applied in order and recorded, a second run applies
// nothing, an edited migration stops the start, and the constraints protect the data.

import assert from 'node:assert/strict';
import { cpSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { migrate, MIGRATIONS_DIR } from '../../persistence/migrations.ts';
import type pg from 'pg';
import { TestDatabase, withClient } from '../support/database.ts';

let database: TestDatabase;

before(async () => {
  database = await TestDatabase.start();
});
after(async () => {
  await database.remove();
});

test('migrations apply once, in order, and are recorded', async () => {
  const url = await database.freshDatabase();
  await withClient(url, async (client) => {
    assert.deepEqual(await migrate(client), [
      '001_runtime.sql',
      '002_command_log_lean.sql',
      '003_instruments.sql',
      '004_settlement.sql',
      '005_intake_batches.sql',
      '006_own_orders_recent.sql',
      '007_trades_occurred_at.sql',
      '008_fills_recent.sql',
      '009_settlement_statement_sequence.sql',
      '010_trade_index_upkeep.sql',
      '011_executions_order_index.sql',
      '012_client_order_index.sql',
      '013_quarantine_and_snapshot_names.sql',
      '014_command_audit.sql',
      '015_snapshot_open_quantity.sql',
      '016_command_log_brin.sql',
      '017_own_reads_in_memory.sql',
      '018_lifecycle_updates_hot.sql',
      '019_intake_packed.sql',
    ]);
    assert.deepEqual(await migrate(client), [], 'a second start applies nothing');
    const recorded = await client.query('SELECT version, name FROM public.schema_migrations ORDER BY version');
    assert.deepEqual(recorded.rows, [
      { version: 1, name: '001_runtime.sql' },
      { version: 2, name: '002_command_log_lean.sql' },
      { version: 3, name: '003_instruments.sql' },
      { version: 4, name: '004_settlement.sql' },
      { version: 5, name: '005_intake_batches.sql' },
      { version: 6, name: '006_own_orders_recent.sql' },
      { version: 7, name: '007_trades_occurred_at.sql' },
      { version: 8, name: '008_fills_recent.sql' },
      { version: 9, name: '009_settlement_statement_sequence.sql' },
      { version: 10, name: '010_trade_index_upkeep.sql' },
      { version: 11, name: '011_executions_order_index.sql' },
      { version: 12, name: '012_client_order_index.sql' },
      { version: 13, name: '013_quarantine_and_snapshot_names.sql' },
      { version: 14, name: '014_command_audit.sql' },
      { version: 15, name: '015_snapshot_open_quantity.sql' },
      { version: 16, name: '016_command_log_brin.sql' },
      { version: 17, name: '017_own_reads_in_memory.sql' },
      { version: 18, name: '018_lifecycle_updates_hot.sql' },
      { version: 19, name: '019_intake_packed.sql' },
    ]);
    const tables = await client.query("SELECT table_name FROM information_schema.tables WHERE table_schema = 'runtime' ORDER BY table_name");
    assert.deepEqual(
      tables.rows.map((row) => row.table_name),
      [
        'command_log',
        'command_outcomes',
        'executions',
        'instruments',
        'intake_batches',
        'journal_batches',
        'market_data_snapshots',
        'order_lifecycle_state',
        'projection_watermarks',
        'quarantined_rows',
        'snapshot_projections',
        'trades',
        'venue_sessions',
        'venue_settings',
      ],
    );
    // Every index is upkeep on each projected row: own-order and fills reads are answered from memory (migration 017), snapshot refreshes
    // from the books in memory (018); what is left is what a constraint or a lookup by id uses, and no column an order's update changes.
    const indexes = await client.query(
      "SELECT tablename, indexname FROM pg_indexes WHERE schemaname = 'runtime' AND tablename IN ('executions', 'order_lifecycle_state') ORDER BY tablename, indexname",
    );
    assert.deepEqual(
      indexes.rows.map((row) => `${row.tablename}.${row.indexname}`),
      ['executions.executions_pkey', 'order_lifecycle_state.order_lifecycle_client_order', 'order_lifecycle_state.order_lifecycle_state_pkey'],
    );
    const options = await client.query("SELECT reloptions FROM pg_class WHERE oid = 'runtime.order_lifecycle_state'::regclass");
    assert.deepEqual(options.rows[0]?.reloptions, ['fillfactor=80'], 'room on each page for updates in place');
    // The lifecycle's clientOrderId index covers only the orders that have one (migration 012).
    const clientOrderIndex = await client.query("SELECT indexdef FROM pg_indexes WHERE schemaname = 'runtime' AND indexname = 'order_lifecycle_client_order'");
    assert.match(clientOrderIndex.rows[0]?.indexdef ?? '', /\(participant_id, client_order_id\) WHERE \(client_order_id IS NOT NULL\)$/);
    const settlement = await client.query("SELECT table_name FROM information_schema.tables WHERE table_schema = 'settlement' ORDER BY table_name");
    assert.deepEqual(
      settlement.rows.map((row) => row.table_name),
      ['facts', 'profile_overrides', 'scenario_runs'],
    );
  });
});

test('a migration edited after it was applied stops the start', async () => {
  const url = await database.freshDatabase();
  const dir = mkdtempSync(path.join(os.tmpdir(), 'migrations-'));
  try {
    cpSync(MIGRATIONS_DIR, dir, { recursive: true });
    await withClient(url, async (client) => {
      await migrate(client, dir);
      const file = path.join(dir, '001_runtime.sql');
      writeFileSync(file, `${readFileSync(file, 'utf8')}\n-- edited\n`);
      await assert.rejects(migrate(client, dir), /001_runtime\.sql changed after it was applied/);
    });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a failing migration leaves nothing behind and is not recorded', async () => {
  const url = await database.freshDatabase();
  const dir = mkdtempSync(path.join(os.tmpdir(), 'migrations-'));
  try {
    cpSync(MIGRATIONS_DIR, dir, { recursive: true });
    writeFileSync(path.join(dir, '099_broken.sql'), 'CREATE TABLE runtime.half_done (id int);\nSELECT no_such_function();\n');
    await withClient(url, async (client) => {
      await assert.rejects(migrate(client, dir), /099_broken\.sql failed/);
      const versions = await client.query('SELECT version FROM public.schema_migrations ORDER BY version');
      assert.deepEqual(versions.rows, [
        { version: 1 },
        { version: 2 },
        { version: 3 },
        { version: 4 },
        { version: 5 },
        { version: 6 },
        { version: 7 },
        { version: 8 },
        { version: 9 },
        { version: 10 },
        { version: 11 },
        { version: 12 },
        { version: 13 },
        { version: 14 },
        { version: 15 },
        { version: 16 },
        { version: 17 },
        { version: 18 },
        { version: 19 },
      ]);
      const half = await client.query("SELECT to_regclass('runtime.half_done') AS t");
      assert.equal(half.rows[0].t, null);
    });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

const TRADE_COLUMNS =
  'trade_id, shard_id, stream_sequence, command_id, execution_id, run_id, venue_session_id, instrument_id, buy_order_id, sell_order_id, buy_participant_id, buy_account_id, sell_participant_id, sell_account_id, aggressor_side, quantity_units, price_nanos, currency, occurred_at';

function trade(overrides: Record<string, unknown> = {}): unknown[] {
  const id = () => crypto.randomUUID();
  const row: Record<string, unknown> = {
    trade_id: id(),
    shard_id: 0,
    stream_sequence: Math.floor(Math.random() * 1e9) + 1,
    command_id: id(),
    execution_id: id(),
    run_id: 'run',
    venue_session_id: 's',
    instrument_id: id(),
    buy_order_id: id(),
    sell_order_id: id(),
    buy_participant_id: id(),
    buy_account_id: id(),
    sell_participant_id: id(),
    sell_account_id: id(),
    aggressor_side: 'BUY',
    quantity_units: 5,
    price_nanos: 100,
    currency: 'USD',
    occurred_at: new Date(),
    ...overrides,
  };
  return TRADE_COLUMNS.split(', ').map((column) => row[column]);
}

/**
 * Inserts a trade; returns its tape sequence. With `tape`, the sequence is given (as the
 * projector's COPY does) instead of drawn from the identity.
 */
async function insertTrade(client: pg.Client, values: unknown[], tape?: number): Promise<string> {
  const columns = tape === undefined ? TRADE_COLUMNS : `${TRADE_COLUMNS}, tape_sequence`;
  const params = tape === undefined ? values : [...values, tape];
  const result = await client.query<{ n: string }>(
    `INSERT INTO runtime.trades (${columns}) ${tape === undefined ? '' : 'OVERRIDING SYSTEM VALUE '}VALUES (${params.map((_, k) => `$${k + 1}`).join(', ')}) RETURNING tape_sequence::text AS n`,
    params,
  );
  return result.rows[0]!.n;
}

test('constraints refuse what would corrupt the data', async () => {
  const url = await database.freshDatabase();
  await withClient(url, async (client) => {
    await migrate(client);
    const insert = (values: unknown[]) => insertTrade(client, values);
    const good = trade();
    await insert(good);
    await assert.rejects(insert(trade({ trade_id: good[0] })), /trades_pkey/, 'a trade id is unique');
    await assert.rejects(insert(trade({ quantity_units: 0 })), /check constraint/, 'quantities are positive');
    await assert.rejects(insert(trade({ price_nanos: -1 })), /check constraint/, 'prices are positive');
    await assert.rejects(insert(trade({ aggressor_side: 'HOLD' })), /check constraint/, 'sides are BUY or SELL');
    await assert.rejects(insert(trade({ currency: null })), /null value/, 'NOT NULL');
    const same = crypto.randomUUID();
    await assert.rejects(insert(trade({ buy_order_id: same, sell_order_id: same })), /check constraint/, 'an order does not trade with itself');
    const instrument = crypto.randomUUID();
    await insertTrade(client, trade({ instrument_id: instrument }), 1000);
    await insertTrade(client, trade(), 1000); // another instrument's tape
    await assert.rejects(insertTrade(client, trade({ instrument_id: instrument }), 1000), /trades_instrument_tape/, 'a tape sequence names one trade of its instrument');

    const scope = Buffer.alloc(16, 7);
    const logRow = (commandId: string) =>
      client.query(
        `INSERT INTO runtime.command_log (command_id, scope_digest, payload_hash, principal_id, client_id, idempotency_key, route, processing_mode, shard_id, received_at,
           stream_sequence, batch_first_sequence, shard_batch, result_status, occurred_at, journal_offset, journal_length)
         VALUES ($1, $2, $3, 'p', 'c', 'k', 0, 0, 0, now(), 1, 1, 1, 1, now(), 0, 256)`,
        [commandId, scope, Buffer.alloc(32)],
      );
    await logRow(crypto.randomUUID());
    await assert.rejects(logRow(crypto.randomUUID()), /command_log_scope_digest_key/, 'an idempotency scope holds one command');

    const lifecycle = (state: string, remaining: number, filled: number) =>
      client.query(
        `INSERT INTO runtime.order_lifecycle_state (order_id, run_id, venue_session_id, instrument_id, participant_id, account_id, side, order_type, time_in_force, state,
           limit_price_nanos, currency, original_quantity_units, remaining_quantity_units, filled_quantity_units, engine_order_id, shard_id, last_sequence, created_at, updated_at)
         VALUES ($1, 'r', 's', $2, $2, $2, 'BUY', 'LIMIT', 'DAY', $3, 100, 'USD', 10, $4, $5, '0-1', 0, 1, now(), now())`,
        [crypto.randomUUID(), crypto.randomUUID(), state, remaining, filled],
      );
    await lifecycle('OPEN', 10, 0);
    await assert.rejects(lifecycle('HALF_OPEN', 10, 0), /check constraint/, 'states are the known ones');
    await assert.rejects(lifecycle('FILLED', 0, 11), /check constraint/, 'no order fills beyond its quantity');
    await assert.rejects(lifecycle('OPEN', -1, 0), /check constraint/, 'remaining quantities are not negative');
  });
});

test('migration 010 leaves the tape sequence past every stored trade, however it was written', async () => {
  const url = await database.freshDatabase();
  const dir = mkdtempSync(path.join(os.tmpdir(), 'migrations-'));
  try {
    cpSync(MIGRATIONS_DIR, dir, { recursive: true });
    rmSync(path.join(dir, '010_trade_index_upkeep.sql'));
    await withClient(url, async (client) => {
      await migrate(client, dir);
      // Rows with tape sequences given by hand: the identity's sequence never moved.
      for (const tape of [3, 41, 7]) await insertTrade(client, trade(), tape);
      assert.deepEqual(await migrate(client), ['010_trade_index_upkeep.sql']);
      assert.equal(await insertTrade(client, trade()), '42', 'the next tape sequence follows the largest stored');
    });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('settlement facts are append-only and gap-free, enforced by the database', async () => {
  const url = await database.freshDatabase();
  await withClient(url, async (client) => {
    await migrate(client);
    await client.query("INSERT INTO settlement.scenario_runs (scenario_run_id) VALUES ('run-1')");
    const fact = (sequence: number, factId = crypto.randomUUID()) =>
      client.query(
        `INSERT INTO settlement.facts (scenario_run_id, sequence, fact_id, fact_type, occurred_at_us, causation_id, origin, payload, content_sha256)
         VALUES ('run-1', $1, $2, 'SettlementObligationCreated', 1, NULL, 'service', '{"tradeId":"t"}', $3)`,
        [sequence, factId, Buffer.alloc(32, sequence)],
      );
    await fact(1);
    await fact(2);
    await assert.rejects(fact(4), /breaks the sequence/, 'a gap is refused');
    await assert.rejects(fact(2), /breaks the sequence/, 'a sequence is not reused');
    await assert.rejects(fact(1), /breaks the sequence/, 'nor goes back');
    await fact(3);
    const last = await client.query("SELECT last_sequence FROM settlement.scenario_runs WHERE scenario_run_id = 'run-1'");
    assert.equal(last.rows[0].last_sequence, '3');

    await assert.rejects(client.query("UPDATE settlement.facts SET payload = '{}' WHERE sequence = 1"), /append-only: UPDATE refused/);
    await assert.rejects(client.query('DELETE FROM settlement.facts WHERE sequence = 3'), /append-only: DELETE refused/);
    await assert.rejects(client.query('TRUNCATE settlement.facts'), /append-only: TRUNCATE refused/);
    await assert.rejects(client.query('TRUNCATE settlement.scenario_runs CASCADE'), /append-only: TRUNCATE refused/);
    await assert.rejects(client.query("UPDATE settlement.scenario_runs SET last_sequence = 1 WHERE scenario_run_id = 'run-1'"), /only advances: UPDATE refused/, 'nobody rewinds the counter');
    await assert.rejects(client.query("UPDATE settlement.scenario_runs SET last_sequence = 9 WHERE scenario_run_id = 'run-1'"), /only advances: UPDATE refused/, 'nor skips it');
    await assert.rejects(client.query("DELETE FROM settlement.scenario_runs WHERE scenario_run_id = 'run-1'"), /only advances: DELETE refused/);
    const rows = await client.query("SELECT sequence FROM settlement.facts WHERE scenario_run_id = 'run-1' ORDER BY sequence");
    assert.deepEqual(
      rows.rows.map((row) => Number(row.sequence)),
      [1, 2, 3],
      'every fact is still there, once',
    );
    await assert.rejects(
      client.query(
        `INSERT INTO settlement.facts (scenario_run_id, sequence, fact_id, fact_type, occurred_at_us, origin, payload, content_sha256)
         VALUES ('run-1', 4, $1, 'DropTable', 1, 'service', '{}', $2)`,
        [crypto.randomUUID(), Buffer.alloc(32)],
      ),
      /check constraint/,
      'fact types are settlement fact types',
    );
  });
});

test('settlement facts appended many per statement: gap-free per run, the counter moved once per statement (migration 009)', async () => {
  const url = await database.freshDatabase();
  await withClient(url, async (client) => {
    await migrate(client);
    await client.query("INSERT INTO settlement.scenario_runs (scenario_run_id) VALUES ('run-1'), ('run-2')");
    /** One INSERT of the given (run, sequence) facts. */
    const facts = (rows: Array<[string, number]>) =>
      client.query(
        `INSERT INTO settlement.facts (scenario_run_id, sequence, fact_id, fact_type, occurred_at_us, causation_id, origin, payload, content_sha256)
         SELECT run, sequence, gen_random_uuid(), 'SettlementObligationCreated', 1, NULL, 'service', '{"tradeId":"t"}', decode(repeat('ab', 32), 'hex')
           FROM unnest($1::text[], $2::bigint[]) AS f (run, sequence)`,
        [rows.map(([run]) => run), rows.map(([, sequence]) => sequence)],
      );
    const counters = async () =>
      Object.fromEntries((await client.query('SELECT scenario_run_id, last_sequence FROM settlement.scenario_runs ORDER BY 1')).rows.map((row) => [row.scenario_run_id, Number(row.last_sequence)]));

    // 20,000 facts of one run and 3 of another in one statement, in one transaction:
    // each run's counter is written once (the row trigger of 004 wrote it per fact).
    await client.query('BEGIN');
    await facts([...Array.from({ length: 20_000 }, (_, k): [string, number] => ['run-1', k + 1]), ['run-2', 1], ['run-2', 2], ['run-2', 3]]);
    const updated = await client.query("SELECT pg_stat_get_xact_tuples_updated('settlement.scenario_runs'::regclass)::int AS n");
    await client.query('COMMIT');
    assert.equal(updated.rows[0].n, 2, 'one counter update per run and statement');
    assert.deepEqual(await counters(), { 'run-1': 20_000, 'run-2': 3 });

    await assert.rejects(
      facts([
        ['run-2', 4],
        ['run-2', 6],
      ]),
      /breaks the sequence/,
      'a gap inside a statement is refused',
    );
    await assert.rejects(
      facts([
        ['run-2', 5],
        ['run-2', 6],
      ]),
      /breaks the sequence/,
      'a statement that does not continue the counter is refused',
    );
    await assert.rejects(
      facts([
        ['run-2', 3],
        ['run-2', 4],
      ]),
      /breaks the sequence/,
      'a sequence is not reused',
    );
    await assert.rejects(
      facts([
        ['run-2', 4],
        ['run-1', 20_002],
      ]),
      /breaks the sequence/,
      'each run is checked: run-1 skips 20,001',
    );
    assert.deepEqual(await counters(), { 'run-1': 20_000, 'run-2': 3 }, 'nothing of a refused statement stays');
    await facts([
      ['run-2', 5],
      ['run-2', 4],
      ['run-1', 20_001],
    ]); // any order within the statement
    assert.deepEqual(await counters(), { 'run-1': 20_001, 'run-2': 5 });
    const stored = await client.query("SELECT count(*)::int AS n, max(sequence)::int AS last FROM settlement.facts WHERE scenario_run_id = 'run-2'");
    assert.deepEqual(stored.rows[0], { n: 5, last: 5 });

    // The counter moves only over stored facts.
    await assert.rejects(client.query("UPDATE settlement.scenario_runs SET last_sequence = 7 WHERE scenario_run_id = 'run-2'"), /only advances: UPDATE refused/);
    await assert.rejects(client.query("UPDATE settlement.scenario_runs SET last_sequence = 5 WHERE scenario_run_id = 'run-2'"), /only advances: UPDATE refused/);
  });
});

/** A database migrated up to (not including) `version`, through a copy of the migrations folder. */
async function migratedUpTo(url: string, version: number, client: import('pg').Client): Promise<void> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'migrations-'));
  try {
    cpSync(MIGRATIONS_DIR, dir, { recursive: true });
    for (const name of readdirSync(dir)) if (Number(name.slice(0, 3)) >= version) rmSync(path.join(dir, name));
    await migrate(client, dir);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const OLD_LOG_ROW = `INSERT INTO runtime.command_log (command_id, scope_digest, payload_hash, principal_id, client_id, idempotency_key, route, processing_mode, shard_id, slot, received_at)
  VALUES ($1, $2, $3, 'p', 'c', 'k', 0, 0, 0, $4, now())`;

test('005 carries the outcomes of the earlier layout into the command log', async () => {
  const url = await database.freshDatabase();
  await withClient(url, async (client) => {
    await migratedUpTo(url, 5, client);
    const commandId = crypto.randomUUID();
    await client.query(OLD_LOG_ROW, [commandId, Buffer.alloc(16, 1), Buffer.alloc(32), Buffer.alloc(128)]);
    await client.query(
      `INSERT INTO runtime.command_outcomes (command_id, shard_id, stream_sequence, batch_first_sequence, shard_batch, result_status, reject_code, order_id, occurred_at, result_payload_json)
       VALUES ($1, 0, 7, 5, 3, 2, 'ORDER_NOT_FOUND', NULL, '2026-11-22T10:00:00Z', '{}')`,
      [commandId],
    );
    await client.query(`INSERT INTO runtime.journal_batches (shard_id, first_sequence, last_sequence, command_count, event_count, checksum, payload) VALUES (0, 5, 7, 1, 3, 0, '\\x00')`);
    await client.query("INSERT INTO runtime.projection_watermarks (projection, shard_id, sequence) VALUES ('runtime', 0, 7)");
    assert.deepEqual(await migrate(client), [
      '005_intake_batches.sql',
      '006_own_orders_recent.sql',
      '007_trades_occurred_at.sql',
      '008_fills_recent.sql',
      '009_settlement_statement_sequence.sql',
      '010_trade_index_upkeep.sql',
      '011_executions_order_index.sql',
      '012_client_order_index.sql',
      '013_quarantine_and_snapshot_names.sql',
      '014_command_audit.sql',
      '015_snapshot_open_quantity.sql',
      '016_command_log_brin.sql',
      '017_own_reads_in_memory.sql',
      '018_lifecycle_updates_hot.sql',
      '019_intake_packed.sql',
    ]);
    const row = (await client.query('SELECT stream_sequence, batch_first_sequence, shard_batch, result_status, reject_code, journal_offset FROM runtime.command_log')).rows[0];
    assert.deepEqual(row, { stream_sequence: '7', batch_first_sequence: '5', shard_batch: '3', result_status: 2, reject_code: 'ORDER_NOT_FOUND', journal_offset: null });
    const outcome = (await client.query('SELECT command_id, stream_sequence FROM runtime.command_outcomes')).rows;
    assert.deepEqual(outcome, [{ command_id: commandId, stream_sequence: '7' }], 'command_outcomes is now a view of the command log');
  });
});

test('005 refuses a database whose last run crashed without recovering its commands', async () => {
  const url = await database.freshDatabase();
  await withClient(url, async (client) => {
    await migratedUpTo(url, 5, client);
    await client.query(OLD_LOG_ROW, [crypto.randomUUID(), Buffer.alloc(16, 2), Buffer.alloc(32), Buffer.alloc(128)]); // captured, never an outcome
    await assert.rejects(migrate(client), /005_intake_batches\.sql failed: the command log holds commands without an outcome/);
    const versions = await client.query('SELECT max(version)::int AS v FROM public.schema_migrations');
    assert.equal(versions.rows[0].v, 4, 'nothing of 005 was applied');
  });
});

test('015 refreshes the stored snapshots with the open displayed quantity of each side, from the projection as it stands', async () => {
  const url = await database.freshDatabase();
  await withClient(url, async (client) => {
    await migratedUpTo(url, 15, client);
    const [x, y, away] = [crypto.randomUUID(), crypto.randomUUID(), crypto.randomUUID()];
    await client.query("INSERT INTO runtime.instruments (instrument_id, currency, shard_id, first_sequence) VALUES ($1, 'USD', 1, 1), ($2, 'EUR', 0, 1), ($3, 'USD', 0, 1)", [x, y, away]);
    await client.query("INSERT INTO runtime.projection_watermarks (projection, shard_id, sequence) VALUES ('runtime', 0, 40), ('runtime', 1, 77)");
    const order = (instrument: string, side: string, orderType: string, state: string, priceNanos: string, remaining: string) =>
      client.query(
        `INSERT INTO runtime.order_lifecycle_state (order_id, run_id, venue_session_id, instrument_id, participant_id, account_id, side, order_type, time_in_force, state,
           limit_price_nanos, currency, original_quantity_units, remaining_quantity_units, filled_quantity_units, engine_order_id, shard_id, last_sequence, created_at, updated_at)
         VALUES ($1, 'r', 's', $2, $1, $1, $3, $4, 'DAY', $5, $6, 'USD', $7, $7, 0, '0-1', 1, 1, now(), now())`,
        [crypto.randomUUID(), instrument, side, orderType, state, priceNanos, remaining],
      );
    await order(x, 'BUY', 'LIMIT', 'OPEN', '100000000000', '5');
    await order(x, 'BUY', 'LIMIT', 'PARTIALLY_FILLED', '100000000000', '3');
    await order(x, 'BUY', 'LIMIT', 'OPEN', '98000000000', '1000000000');
    await order(x, 'BUY', 'LIMIT_HIDDEN', 'OPEN', '101000000000', '7');
    await order(x, 'BUY', 'LIMIT', 'CANCELLED', '102000000000', '9');
    await order(x, 'SELL', 'LIMIT_HIDDEN', 'OPEN', '103000000000', '6');
    // Stored by a refresh before 015: a best bid the book no longer has, an old position.
    await client.query(
      `INSERT INTO runtime.market_data_snapshots (instrument_id, projection_name, best_bid_price_nanos, best_bid_quantity_units, currency, source_watermark, refreshed_at)
       VALUES ($1, 'market-data-top-of-book', 99000000000, 4, 'USD', 12, now() - interval '1 hour'), ($1, 'desk-view', 99000000000, 4, 'USD', 12, now()),
              ($2, 'market-data-top-of-book', NULL, NULL, 'EUR', 3, now())`,
      [x, y],
    );
    assert.deepEqual(await migrate(client), ['015_snapshot_open_quantity.sql', '016_command_log_brin.sql', '017_own_reads_in_memory.sql', '018_lifecycle_updates_hot.sql', '019_intake_packed.sql']);
    const rows = await client.query(
      `SELECT instrument_id, projection_name, best_bid_price_nanos::text AS bid_p, best_bid_quantity_units::text AS bid_q, best_ask_price_nanos::text AS ask_p,
              open_bid_quantity_units::text AS bid_open, open_ask_quantity_units::text AS ask_open, source_watermark::text AS mark, refreshed_at > now() - interval '1 minute' AS fresh
         FROM runtime.market_data_snapshots ORDER BY instrument_id = $1 DESC, projection_name`,
      [x],
    );
    const refreshedX = { instrument_id: x, bid_p: '100000000000', bid_q: '8', ask_p: null, bid_open: '1000000008', ask_open: '0', mark: '77', fresh: true };
    assert.deepEqual(rows.rows, [
      { ...refreshedX, projection_name: 'desk-view' },
      { ...refreshedX, projection_name: 'market-data-top-of-book' },
      { instrument_id: y, projection_name: 'market-data-top-of-book', bid_p: null, bid_q: null, ask_p: null, bid_open: '0', ask_open: '0', mark: '40', fresh: true },
    ]);
    await assert.rejects(client.query('UPDATE runtime.market_data_snapshots SET open_ask_quantity_units = -1'), /check constraint/, 'open quantities are not negative');
  });
});
