import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import pg from 'pg';
import { ANALYZE_LOCK_TIMEOUT_MS, ANALYZE_STATISTICS_TARGET, analyzeStale, keepAnalyzed } from '../../persistence/planner-statistics.ts';
import { migratedDatabase, withClient, type TestDatabase } from '../support/database.ts';

let database: TestDatabase;
let url: string;
before(async () => ({ database, url } = await migratedDatabase()));
after(async () => database.remove());

const TABLE = 'runtime.venue_settings';

/** Runs `sql` and makes its row counts visible in pg_stat_user_tables at once. */
async function changed(client: pg.ClientBase, sql: string): Promise<void> {
  await client.query(sql);
  await client.query('SELECT pg_stat_force_next_flush()');
  await client.query('SELECT 1'); // the flush happens at the end of a transaction
}

test('a table is analyzed at start when it never was or changed by more than a tenth since, else not', async () => {
  await withClient(url, async (client) => {
    const lastAnalyze = async () => (await client.query<{ at: Date | null }>("SELECT last_analyze AS at FROM pg_stat_user_tables WHERE relid = 'runtime.venue_settings'::regclass")).rows[0]!.at;
    await changed(client, "INSERT INTO runtime.venue_settings (name, value) SELECT 'bulk-' || n, 'v' FROM generate_series(1, 3000) n");
    assert.equal(await lastAnalyze(), null);
    assert.deepEqual(await analyzeStale(client, [TABLE, 'runtime.no_such_table']), [TABLE], 'never analyzed, 3,000 rows changed');
    assert.notEqual(await lastAnalyze(), null);
    // Analyzed at ANALYZE_STATISTICS_TARGET, not the server's default of 100: 3,000 distinct names
    // give a histogram of target + 1 bounds (101 at the default).
    const bounds = await client.query<{ n: number }>(
      "SELECT cardinality(histogram_bounds::text::text[]) AS n FROM pg_stats WHERE schemaname = 'runtime' AND tablename = 'venue_settings' AND attname = 'name'",
    );
    assert.equal(bounds.rows[0]!.n, ANALYZE_STATISTICS_TARGET + 1);
    assert.equal((await client.query<{ s: string }>("SELECT current_setting('default_statistics_target') AS s")).rows[0]!.s, '100', 'the session keeps its own target');
    assert.deepEqual(await analyzeStale(client, [TABLE]), [], 'fresh statistics');
    await changed(client, "UPDATE runtime.venue_settings SET value = 'w' WHERE name LIKE 'bulk-%' AND substr(name, 6)::int <= 200");
    assert.deepEqual(await analyzeStale(client, [TABLE]), [], '200 rows changed: below 1,000');
    await changed(client, "UPDATE runtime.venue_settings SET value = 'x' WHERE name LIKE 'bulk-%'");
    assert.deepEqual(await analyzeStale(client, [TABLE]), [TABLE], 'every row changed since');
  });
});

test('the keeper analyzes a table that went stale while running, reports failures, and stops at once', async () => {
  const pool = new pg.Pool({ connectionString: url, max: 2 });
  try {
    await withClient(url, async (client) => {
      await client.query('ANALYZE runtime.venue_settings');
      await changed(client, "INSERT INTO runtime.venue_settings (name, value) SELECT 'keeper-' || n, 'v' FROM generate_series(1, 2000) n");
    });
    const rounds: string[][] = [];
    const errors: Error[] = [];
    const keeper = keepAnalyzed(
      pool,
      [TABLE],
      50,
      (tables) => rounds.push(tables),
      (error) => errors.push(error),
    );
    for (let waited = 0; rounds.length === 0 && waited < 10_000; waited += 50) await new Promise((resolve) => setTimeout(resolve, 50));
    await new Promise((resolve) => setTimeout(resolve, 500)); // about ten more rounds
    await keeper.stop();
    assert.deepEqual(rounds, [[TABLE]], 'analyzed once: fresh statistics after that');
    assert.deepEqual(errors, []);
    const stale = await withClient(
      url,
      async (client) => (await client.query<{ n: string }>("SELECT n_mod_since_analyze::text AS n FROM pg_stat_user_tables WHERE relid = 'runtime.venue_settings'::regclass")).rows[0]!.n,
    );
    assert.equal(stale, '0');

    // An hour's interval: stop() does not wait for the timer.
    const idle = keepAnalyzed(
      pool,
      [TABLE],
      3_600_000,
      () => undefined,
      () => undefined,
    );
    const stopping = performance.now();
    await idle.stop();
    assert.ok(performance.now() - stopping < 1_000);
  } finally {
    await pool.end();
  }
  // A round that fails is reported, and the loop goes on to the next.
  const closed = new pg.Pool({ connectionString: url, max: 1 });
  await closed.end();
  const errors: Error[] = [];
  const failing = keepAnalyzed(
    closed,
    [TABLE],
    20,
    () => undefined,
    (error) => errors.push(error),
  );
  for (let waited = 0; errors.length < 2 && waited < 5_000; waited += 20) await new Promise((resolve) => setTimeout(resolve, 20));
  await failing.stop();
  assert.ok(errors.length >= 2, `${errors.length} failures reported`);
});

test('an ANALYZE behind a table lock gives up after ANALYZE_LOCK_TIMEOUT_MS instead of holding up a start or a stop', { timeout: 20_000 }, async () => {
  await withClient(url, async (locker) => {
    await withClient(url, async (client) => {
      await changed(client, "INSERT INTO runtime.venue_settings (name, value) SELECT 'locked-' || n, 'v' FROM generate_series(1, 20000) n");
      await locker.query('BEGIN');
      await locker.query('LOCK TABLE runtime.venue_settings IN ACCESS EXCLUSIVE MODE');
      const started = performance.now();
      await assert.rejects(analyzeStale(client, [TABLE]), /lock timeout/);
      const waited = performance.now() - started;
      assert.ok(waited >= ANALYZE_LOCK_TIMEOUT_MS * 0.9 && waited < ANALYZE_LOCK_TIMEOUT_MS + 3_000, `gave up after ${Math.round(waited)} ms`);
      await locker.query('ROLLBACK');
      // The connection is left outside any transaction, and the next try analyzes.
      assert.equal((await client.query<{ s: string }>("SELECT current_setting('lock_timeout') AS s")).rows[0]!.s, '0');
      assert.deepEqual(await analyzeStale(client, [TABLE]), [TABLE]);
    });
  });
});
