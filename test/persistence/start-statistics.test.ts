import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type pg from 'pg';
import { analyzeStale } from '../../persistence/recovery.ts';
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
    assert.deepEqual(await analyzeStale(client, [TABLE]), [], 'fresh statistics');
    await changed(client, "UPDATE runtime.venue_settings SET value = 'w' WHERE name LIKE 'bulk-%' AND substr(name, 6)::int <= 200");
    assert.deepEqual(await analyzeStale(client, [TABLE]), [], '200 rows changed: below 1,000');
    await changed(client, "UPDATE runtime.venue_settings SET value = 'x' WHERE name LIKE 'bulk-%'");
    assert.deepEqual(await analyzeStale(client, [TABLE]), [TABLE], 'every row changed since');
  });
});
