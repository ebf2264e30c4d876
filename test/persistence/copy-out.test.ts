// Binary COPY read in place (persistence/copy-binary.ts copyOut) on a real PostgreSQL:
// every row once, fields exact, NULLs, and values far larger than one stream chunk.

import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import pg from 'pg';
import { copyOut } from '../../persistence/copy-binary.ts';
import { TestDatabase, withClient } from '../support/database.ts';

let database: TestDatabase;
let url: string;

before(async () => {
  database = await TestDatabase.start();
  url = await database.freshDatabase();
});
after(async () => {
  await database.remove();
});

test('rows of every size come whole, in order, with their NULLs and exact numbers', async () => {
  await withClient(url, async (client) => {
    await client.query('CREATE TABLE t (n bigint NOT NULL, s smallint, name text, blob bytea, id uuid)');
    // Small rows, then a few of several MiB (each spans many stream chunks), then small again.
    await client.query(
      `INSERT INTO t SELECT n, (n % 100)::smallint, CASE WHEN n % 7 = 0 THEN NULL ELSE 'row ' || n END, decode(repeat(lpad(to_hex(n % 256), 2, '0'), 10 + n % 50), 'hex'), gen_random_uuid() FROM generate_series(1, 3000) n`,
    );
    await client.query(`INSERT INTO t SELECT n, 1, 'big', decode(repeat(lpad(to_hex(n % 256), 2, '0'), (3 << 20) + n), 'hex'), NULL FROM generate_series(3001, 3003) n`);
    await client.query(`INSERT INTO t SELECT n, 2, 'after', '\\x01', NULL FROM generate_series(3004, 3100) n`);
    const seen: { n: number; s: number; name: string | null; length: number; first: number; last: number; id: boolean }[] = [];
    const count = await copyOut(client, 'SELECT n, s, name, blob, id FROM t ORDER BY n', (row) => {
      const blob = row.bytes(3);
      seen.push({ n: row.int8(0), s: row.int16(1), name: row.isNull(2) ? null : row.text(2), length: blob.byteLength, first: blob[0]!, last: blob[blob.byteLength - 1]!, id: !row.isNull(4) });
    });
    assert.equal(count, 3100);
    assert.deepEqual(
      seen.map((r) => r.n),
      Array.from({ length: 3100 }, (_, k) => k + 1),
    );
    for (const r of seen) {
      if (r.n <= 3000) {
        assert.deepEqual([r.s, r.name, r.length, r.first, r.last, r.id], [r.n % 100, r.n % 7 === 0 ? null : `row ${r.n}`, 10 + (r.n % 50), r.n % 256, r.n % 256, true]);
      } else if (r.n <= 3003) {
        assert.deepEqual([r.name, r.length, r.first, r.last, r.id], ['big', (3 << 20) + r.n, r.n % 256, r.n % 256, false]);
      } else {
        assert.deepEqual([r.s, r.name, r.length, r.first], [2, 'after', 1, 1]);
      }
    }
  });
});

test('an int8 beyond 2^32 and a negative one read exactly; an empty result is zero rows', async () => {
  await withClient(url, async (client) => {
    const values: number[] = [];
    await copyOut(client, 'SELECT v FROM (VALUES (4294967296::bigint), (9007199254740991::bigint), (-5::bigint), (0::bigint)) t(v)', (row) => void values.push(row.int8(0)));
    assert.deepEqual(values, [4294967296, 9007199254740991, -5, 0]);
    assert.equal(await copyOut(client, 'SELECT 1 WHERE false', () => assert.fail('no row')), 0);
  });
});

test('two hundred thousand small rows of uneven sizes: every row once, in order, exact (message headers fall across socket reads)', async () => {
  await withClient(url, async (client) => {
    let expected = 1;
    let bytes = 0;
    const count = await copyOut(client, "SELECT n::int8, repeat('x', (n * 7919) % 61) FROM generate_series(1, 200000) n", (row) => {
      assert.equal(row.int8(0), expected);
      assert.equal(row.lengths[1], (expected * 7919) % 61);
      bytes += row.lengths[1]!;
      expected++;
    });
    assert.equal(count, 200_000);
    assert.equal(expected, 200_001);
    assert.equal(bytes, Number((await client.query('SELECT sum((n * 7919) % 61)::int8::text AS s FROM generate_series(1, 200000) n')).rows[0].s));
  });
});

test('an onRow that returns a promise holds the stream until it settles: rows stay in order, none lost', async () => {
  await withClient(url, async (client) => {
    const seen: number[] = [];
    let inside = 0;
    const count = await copyOut(client, 'SELECT n::int8 FROM generate_series(1, 20000) n', async (row) => {
      inside++;
      assert.equal(inside, 1, 'one onRow at a time');
      const n = row.int8(0);
      if (n % 1000 === 0) await new Promise((resolve) => setTimeout(resolve, 2));
      else await Promise.resolve();
      seen.push(n);
      inside--;
    });
    assert.equal(count, 20_000);
    assert.deepEqual(
      seen,
      Array.from({ length: 20_000 }, (_, k) => k + 1),
    );
  });
});

test('a failing onRow, a server error in the middle of the COPY and a bad query each reject, and the client stays usable', async () => {
  await withClient(url, async (client) => {
    const usable = async () => assert.deepEqual((await client.query('SELECT 41 + 1 AS n')).rows, [{ n: 42 }]);
    let delivered = 0;
    await assert.rejects(
      copyOut(client, 'SELECT n::int8 FROM generate_series(1, 100000) n', (row) => {
        delivered++;
        if (row.int8(0) === 500) throw new Error('row 500 refused');
      }),
      /row 500 refused/,
    );
    assert.equal(delivered, 500, 'no row after the failing one');
    await usable();
    delivered = 0;
    await assert.rejects(
      copyOut(client, 'SELECT n::int8 FROM generate_series(1, 100000) n', async (row) => {
        delivered++;
        if (row.int8(0) === 700) throw new Error('row 700 refused later');
      }),
      /row 700 refused later/,
    );
    assert.equal(delivered, 700);
    await usable();
    // Division by zero at row 50,000: the rows before it were already streamed.
    let before = 0;
    await assert.rejects(
      copyOut(client, 'SELECT 1 / (50000 - n) FROM generate_series(1, 100000) n', () => void before++),
      /division by zero/,
    );
    assert.ok(before < 50_000, `${before} rows before the error`);
    await usable();
    await assert.rejects(
      copyOut(client, 'SELECT FROM WHERE', () => assert.fail('no row')),
      /syntax error/,
    );
    await usable();
  });
});

test('notices sent in the middle of the COPY are skipped, the rows around them intact', async () => {
  await withClient(url, async (client) => {
    await client.query("CREATE FUNCTION noisy(n int) RETURNS int LANGUAGE plpgsql AS $$ BEGIN IF n % 10 = 0 THEN RAISE NOTICE 'row %', n; END IF; RETURN n; END $$");
    const values: number[] = [];
    const count = await copyOut(client, 'SELECT noisy(n) FROM generate_series(1, 300) n', (row) => void values.push(row.int32(0)));
    assert.equal(count, 300);
    assert.deepEqual(
      values,
      Array.from({ length: 300 }, (_, k) => k + 1),
    );
  });
});

test('a backend terminated in the middle of the COPY rejects it, with the rows before it delivered (no hang)', async () => {
  await withClient(url, async (killer) => {
    const victim = new pg.Client({ connectionString: url });
    await victim.connect();
    victim.on('error', () => undefined); // the terminated connection's own event
    try {
      const pid = (await victim.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid;
      let rows = 0;
      const copying = copyOut(victim, 'SELECT n::int8 FROM generate_series(1, 20000000) n', async (row) => {
        rows++;
        assert.equal(row.int8(0), rows);
        if (rows === 1000) await killer.query('SELECT pg_terminate_backend($1)', [pid]);
      });
      await assert.rejects(copying, /terminat|Connection terminated|ECONNRESET/);
      assert.ok(rows >= 1000 && rows < 20_000_000, `${rows} rows before the end`);
    } finally {
      await victim.end().catch(() => undefined);
    }
  });
});
