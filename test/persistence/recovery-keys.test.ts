// The start-up scan of every stored command's keys (persistence/recovery.ts
// storedCommandKeys) on a real PostgreSQL: every row once, whatever the chunking of
// the binary COPY stream; and the estimate of how many there are that sizes the key
// filters before it (storedKeyEstimate); the reads of given commands and orders by id
// (commandsById, ordersById) that teach the start the commands it re-drove.

import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type pg from 'pg';
import { formatUuid } from '../../core/uuid.ts';
import { migrate } from '../../persistence/migrations.ts';
import { commandsById, IDS_PER_QUERY_MAX, ordersById, recentCommands, storedCommandKeys, storedKeyEstimate } from '../../persistence/recovery.ts';
import { TestDatabase, withClient } from '../support/database.ts';

let database: TestDatabase;

before(async () => {
  database = await TestDatabase.start();
});
after(async () => {
  await database.remove();
});

const insertCommands = (client: pg.ClientBase, from: number, to: number) =>
  client.query(
    `INSERT INTO runtime.command_log (command_id, scope_digest, payload_hash, principal_id, client_id, idempotency_key, route, processing_mode, shard_id, received_at,
       stream_sequence, batch_first_sequence, shard_batch, result_status, occurred_at)
     SELECT gen_random_uuid(), substring(sha256(n::text::bytea) FROM 1 FOR 16), sha256(n::text::bytea), 'p', 'c', 'k' || n, 0, 0, 0, now(), n, n, 1, 1, now()
       FROM generate_series($1::int, $2::int) AS n`,
    [from, to],
  );

test("the key filters are sized on the stored keys: counted exactly up to a bound, then the statistics' live rows or the planner's estimate scaled to the table's pages now", async () => {
  const url = await database.freshDatabase();
  await withClient(url, async (client) => {
    await migrate(client);
    assert.equal(await storedKeyEstimate(client), 0);
    await insertCommands(client, 1, 5_000);
    assert.equal(await storedKeyEstimate(client), 5_000, 'counted');
    // Past the counted bound, on a table never analyzed: the planner guesses its rows per
    // page from the columns' types (about half the rows here), the statistics count them.
    await client.query('SELECT pg_stat_force_next_flush()');
    assert.equal(await storedKeyEstimate(client, 1_000), 5_000, 'the live rows the statistics counted');
    // Orders count too when there are more of them than commands.
    await client.query(
      `INSERT INTO runtime.order_lifecycle_state (order_id, run_id, venue_session_id, instrument_id, participant_id, account_id, side, order_type, time_in_force, state,
         limit_price_nanos, currency, original_quantity_units, remaining_quantity_units, filled_quantity_units, engine_order_id, shard_id, last_sequence, created_at, updated_at)
       SELECT gen_random_uuid(), 'r', 's', gen_random_uuid(), gen_random_uuid(), gen_random_uuid(), 'BUY', 'LIMIT', 'DAY', 'OPEN', 1, 'USD', 1, 1, 0, n::text, 0, n, now(), now()
         FROM generate_series(1, 7000) AS n`,
    );
    assert.equal(await storedKeyEstimate(client), 7_000, 'the larger of the two');
    // Without those counts (a crash resets them): the planner's estimate, which follows the
    // table's growth since its last ANALYZE.
    await client.query('TRUNCATE runtime.order_lifecycle_state');
    await client.query('ANALYZE runtime.command_log');
    await insertCommands(client, 5_001, 10_000);
    await client.query("SELECT pg_stat_reset_single_table_counters('runtime.command_log'::regclass)");
    const estimate = await storedKeyEstimate(client, 1_000);
    assert.ok(estimate >= 9_000 && estimate <= 11_000, `10,000 rows estimated at ${estimate}`);
  });
});

test('the key scan yields each stored command once, with its scope digest and commandId as words', async () => {
  const url = await database.freshDatabase();
  await withClient(url, async (client) => {
    await migrate(client);
    const rows = 5_000; // ~210 KB of COPY data: several stream chunks, rows cut across them
    await insertCommands(client, 1, rows);
    const expected = new Map(
      (await client.query<{ id: string; scope: string }>("SELECT command_id::text AS id, encode(scope_digest, 'hex') AS scope FROM runtime.command_log")).rows.map((row) => [row.id, row.scope]),
    );
    const seen = new Map<string, string>();
    const count = await storedCommandKeys(client, (scope, commandId) => {
      const scopeHex = Buffer.from(Uint32Array.from(scope, (word) => word >>> 0).buffer)
        .swap32()
        .toString('hex');
      seen.set(formatUuid(commandId, 0), scopeHex);
    });
    assert.equal(count, rows);
    assert.deepEqual(seen, expected);
  });
});

test('commands and orders read by id: each stored one once, in groups of a bounded size, none that is not stored, and only uuids reach the statement', async () => {
  const url = await database.freshDatabase();
  await withClient(url, async (client) => {
    await migrate(client);
    const stored = IDS_PER_QUERY_MAX + 2_000; // two groups
    await insertCommands(client, 1, stored);
    await client.query(
      `INSERT INTO runtime.order_lifecycle_state (order_id, client_order_id, run_id, venue_session_id, instrument_id, participant_id, account_id, side, order_type, time_in_force, state,
         limit_price_nanos, currency, original_quantity_units, remaining_quantity_units, filled_quantity_units, engine_order_id, shard_id, last_sequence, created_at, updated_at)
       SELECT gen_random_uuid(), CASE WHEN n % 2 = 0 THEN 'coid-' || n END, 'run-1', 'session-1', gen_random_uuid(), gen_random_uuid(), gen_random_uuid(), 'BUY', 'LIMIT', 'DAY', 'OPEN', 1, 'USD', 1, 1, 0, n::text, n % 3, n, now(), now()
         FROM generate_series(1, 10) AS n`,
    );
    const commands = (await client.query<{ id: string; scope: Buffer }>('SELECT command_id::text AS id, scope_digest AS scope FROM runtime.command_log')).rows;
    const unknown = ['00000000-0000-4000-8000-000000000001', '00000000-0000-4000-8000-000000000002'];
    const seen = new Map<string, string>();
    const found = await commandsById(client, [...unknown, ...commands.map((row) => row.id)], (scope, _payloadHead, commandId) => {
      const id = formatUuid(commandId, 0);
      assert.ok(!seen.has(id), `${id} once`);
      seen.set(id, formatUuid(scope, 0).replaceAll('-', '')); // the words read as the bytes' big-endian numbers
    });
    assert.equal(found, stored);
    for (const row of commands) assert.equal(seen.get(row.id), row.scope.toString('hex'), `${row.id} with its own scope`);

    const orders = (
      await client.query<{ id: string; coid: string | null; shard: number; participant: string }>(
        'SELECT order_id::text AS id, client_order_id AS coid, shard_id AS shard, participant_id::text AS participant FROM runtime.order_lifecycle_state ORDER BY last_sequence',
      )
    ).rows;
    const wanted = orders.slice(0, 4); // two with a clientOrderId, two without
    const read: [string, string | null, number, string][] = [];
    assert.equal(
      await ordersById(client, [...wanted.map((row) => row.id), ...unknown], (order) =>
        read.push([formatUuid(order.ids, 0), order.clientOrderId, order.shard, order.clientOrderId === null ? '' : order.participantId]),
      ),
      4,
    );
    assert.deepEqual(read.sort(), wanted.map((row) => [row.id, row.coid, row.shard, row.coid === null ? '' : row.participant]).sort());

    assert.equal(await commandsById(client, [], () => assert.fail('no rows for no ids')), 0);
    await assert.rejects(
      commandsById(client, ["00000000-0000-4000-8000-000000000001}'::uuid[]); DROP TABLE runtime.command_log; --"], () => undefined),
      /not a uuid/,
    );
    await assert.rejects(
      ordersById(client, ['not-a-uuid'], () => undefined),
      /not a uuid/,
    );
  });
});

test('the most recent commands are those of the intake commits holding the last N intake records, oldest first; rows from before intake positions are left out', async () => {
  const url = await database.freshDatabase();
  await withClient(url, async (client) => {
    await migrate(client);
    // Commits 1..40, two gateways each, 5 records per batch: 400 commands, named by their commit, gateway and index.
    await client.query(
      `INSERT INTO runtime.intake_batches (commit_no, gateway_id, record_count, checksum, payload)
       SELECT c, g, 5, 0, '\\x00' FROM generate_series(1, 40) AS c, generate_series(0, 1) AS g`,
    );
    await client.query(
      `INSERT INTO runtime.command_log (command_id, scope_digest, payload_hash, principal_id, client_id, idempotency_key, route, processing_mode, shard_id, received_at,
         stream_sequence, batch_first_sequence, shard_batch, result_status, occurred_at, intake_commit_no, intake_gateway, intake_index)
       SELECT gen_random_uuid(), substring(sha256((c * 100 + g * 10 + i)::text::bytea) FROM 1 FOR 16), sha256((c * 100 + g * 10 + i)::text::bytea), 'p', 'c', 'k' || (c * 100 + g * 10 + i),
              0, 0, 0, now(), c * 100 + g * 10 + i, 1, 1, 1, now(), c, g, i
         FROM generate_series(1, 40) AS c, generate_series(0, 1) AS g, generate_series(0, 4) AS i`,
    );
    // And a row written before intake positions: never among the recent.
    await client.query(
      `INSERT INTO runtime.command_log (command_id, scope_digest, payload_hash, principal_id, client_id, idempotency_key, route, processing_mode, shard_id, received_at,
         stream_sequence, batch_first_sequence, shard_batch, result_status, occurred_at)
       VALUES (gen_random_uuid(), '\\x00112233445566778899aabbccddeeff', sha256('old'), 'p', 'c', 'old', 0, 0, 0, now() + interval '1 day', 9999, 1, 1, 1, now())`,
    );
    const keys = async (limit: number) => {
      const sequences: string[] = [];
      await recentCommands(client, limit, (_scope, _payload, commandId) => sequences.push(formatUuid(commandId, 0)));
      const order = await client.query<{ id: string; n: string }>('SELECT command_id::text AS id, stream_sequence::text AS n FROM runtime.command_log');
      const byId = new Map(order.rows.map((row) => [row.id, Number(row.n)]));
      return sequences.map((id) => byId.get(id)!);
    };
    const last23 = await keys(23);
    assert.equal(last23.length, 23);
    assert.deepEqual(
      last23,
      [...last23].sort((a, b) => a - b),
      'oldest first',
    );
    assert.equal(last23[last23.length - 1], 4014, 'ends with the newest: commit 40, gateway 1, index 4');
    assert.equal(last23[0], 3812, 'the 23rd newest: commit 38, gateway 1, index 2');
    assert.equal((await keys(10_000)).length, 400, 'all with an intake position, none without');
  });
});
