// Binary COPY read in place (persistence/copy-binary.ts copyOut) on a real PostgreSQL:
// every row once, fields exact, NULLs, and values far larger than one stream chunk.

import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
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
    await client.query(`INSERT INTO t SELECT n, (n % 100)::smallint, CASE WHEN n % 7 = 0 THEN NULL ELSE 'row ' || n END, decode(repeat(lpad(to_hex(n % 256), 2, '0'), 10 + n % 50), 'hex'), gen_random_uuid() FROM generate_series(1, 3000) n`);
    await client.query(`INSERT INTO t SELECT n, 1, 'big', decode(repeat(lpad(to_hex(n % 256), 2, '0'), (3 << 20) + n), 'hex'), NULL FROM generate_series(3001, 3003) n`);
    await client.query(`INSERT INTO t SELECT n, 2, 'after', '\\x01', NULL FROM generate_series(3004, 3100) n`);
    const seen: { n: number; s: number; name: string | null; length: number; first: number; last: number; id: boolean }[] = [];
    const count = await copyOut(client, 'SELECT n, s, name, blob, id FROM t ORDER BY n', (row) => {
      const blob = row.bytes(3);
      seen.push({ n: row.int8(0), s: row.int16(1), name: row.isNull(2) ? null : row.text(2), length: blob.byteLength, first: blob[0]!, last: blob[blob.byteLength - 1]!, id: !row.isNull(4) });
    });
    assert.equal(count, 3100);
    assert.deepEqual(seen.map((r) => r.n), Array.from({ length: 3100 }, (_, k) => k + 1));
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
