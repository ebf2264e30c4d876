// The one-round-trip transaction (persistence/pg-script.ts) on a real PostgreSQL:
// several COPYs and plain statements commit together; a failure anywhere stores
// nothing of the script and leaves the connection usable.

import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { BinaryCopy } from '../../persistence/copy-binary.ts';
import { runScript } from '../../persistence/pg-script.ts';
import { TestDatabase, withClient } from '../support/database.ts';

let database: TestDatabase;
let url: string;

before(async () => {
  database = await TestDatabase.start();
  url = await database.freshDatabase();
  await withClient(url, (client) => client.query('CREATE TABLE a (x integer PRIMARY KEY); CREATE TABLE b (y text NOT NULL)'));
});
after(async () => {
  await database.remove();
});

const ints = (...values: number[]) => {
  const copy = new BinaryCopy();
  for (const value of values) copy.row(1).integer(value);
  return copy.finish();
};
const texts = (...values: string[]) => {
  const copy = new BinaryCopy();
  for (const value of values) copy.row(1).text(value);
  return copy.finish();
};
const counts = async (client: import('pg').Client) => (await client.query<{ a: number; b: number }>('SELECT (SELECT count(*) FROM a)::int AS a, (SELECT count(*) FROM b)::int AS b')).rows[0];

test('two COPYs and a statement commit together, in one script', async () => {
  await withClient(url, async (client) => {
    await client.query('TRUNCATE a, b');
    const tags = await runScript(client, "COPY a FROM STDIN (FORMAT binary); COPY b FROM STDIN (FORMAT binary); INSERT INTO b VALUES ('z')", [ints(1, 2, 3), texts('x', 'y')]);
    assert.deepEqual(tags, ['COPY 3', 'COPY 2', 'INSERT 0 1']);
    assert.deepEqual(await counts(client), { a: 3, b: 3 });
  });
});

test('a failing COPY stores nothing of the script, and the connection goes on', async () => {
  await withClient(url, async (client) => {
    await client.query('TRUNCATE a, b');
    await client.query('INSERT INTO a VALUES (7)');
    await assert.rejects(
      runScript(client, 'COPY b FROM STDIN (FORMAT binary); COPY a FROM STDIN (FORMAT binary)', [texts('kept?'), ints(8, 7)]),
      /duplicate key value violates unique constraint "a_pkey"/,
    );
    assert.deepEqual(await counts(client), { a: 1, b: 0 }, 'the first COPY was rolled back with the second');
    // The server dropped the CopyData that followed the failure: the next script runs normally.
    await runScript(client, 'COPY a FROM STDIN (FORMAT binary)', [ints(8)]);
    assert.deepEqual(await counts(client), { a: 2, b: 0 });
  });
});

test('a failure before the first COPY drops that COPY data too', async () => {
  await withClient(url, async (client) => {
    await client.query('TRUNCATE a, b');
    await assert.rejects(runScript(client, 'SELECT 1/0; COPY a FROM STDIN (FORMAT binary)', [ints(1)]), /division by zero/);
    assert.deepEqual((await client.query('SELECT 41 + 1 AS n')).rows, [{ n: 42 }]);
    assert.deepEqual(await counts(client), { a: 0, b: 0 });
  });
});

test('COPY data larger than one protocol message goes through whole', async () => {
  await withClient(url, async (client) => {
    await client.query('CREATE TABLE IF NOT EXISTS big (v bytea NOT NULL)');
    const value = Buffer.alloc(40 << 20, 7); // 40 MiB: three CopyData messages
    const copy = new BinaryCopy(value.byteLength + 64);
    copy.row(1).bytea(value);
    await runScript(client, 'COPY big FROM STDIN (FORMAT binary)', [copy.finish()]);
    const row = (await client.query<{ n: number; s: number }>('SELECT length(v) AS n, get_byte(v, 12345678) AS s FROM big')).rows[0];
    assert.deepEqual(row, { n: 40 << 20, s: 7 });
  });
});

test('a script whose COPY statements and buffers do not match, or with its own transaction control, is refused before it is sent', async () => {
  await withClient(url, async (client) => {
    assert.throws(() => runScript(client, 'COPY a FROM STDIN (FORMAT binary)', []), /1 COPY statements and 0 data buffers/);
    assert.throws(() => runScript(client, 'BEGIN; COPY a FROM STDIN (FORMAT binary); COMMIT', [ints(1)]), /no BEGIN, COMMIT or ROLLBACK/);
    assert.deepEqual(await counts(client), { a: 0, b: 0 });
  });
});
