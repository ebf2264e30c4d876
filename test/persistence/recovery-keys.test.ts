// The start-up scan of every stored command's keys (persistence/recovery.ts
// storedCommandKeys) on a real PostgreSQL: every row once, whatever the chunking of
// the binary COPY stream.

import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { formatUuid } from '../../core/uuid.ts';
import { migrate } from '../../persistence/migrations.ts';
import { storedCommandKeys } from '../../persistence/recovery.ts';
import { TestDatabase, withClient } from '../support/database.ts';

let database: TestDatabase;

before(async () => {
  database = await TestDatabase.start();
});
after(async () => {
  await database.remove();
});

test('the key scan yields each stored command once, with its scope digest and commandId as words', async () => {
  const url = await database.freshDatabase();
  await withClient(url, async (client) => {
    await migrate(client);
    const rows = 5_000; // ~210 KB of COPY data: several stream chunks, rows cut across them
    await client.query(
      `INSERT INTO runtime.command_log (command_id, scope_digest, payload_hash, principal_id, client_id, idempotency_key, route, processing_mode, shard_id, received_at,
         stream_sequence, batch_first_sequence, shard_batch, result_status, occurred_at)
       SELECT gen_random_uuid(), substring(sha256(n::text::bytea) FROM 1 FOR 16), sha256(n::text::bytea), 'p', 'c', 'k' || n, 0, 0, 0, now(), n, n, 1, 1, now()
         FROM generate_series(1, $1) AS n`,
      [rows],
    );
    const expected = new Map(
      (await client.query<{ id: string; scope: string }>("SELECT command_id::text AS id, encode(scope_digest, 'hex') AS scope FROM runtime.command_log")).rows.map((row) => [row.id, row.scope]),
    );
    const seen = new Map<string, string>();
    const count = await storedCommandKeys(client, (scope, commandId) => {
      const scopeHex = Buffer.from(Uint32Array.from(scope, (word) => word >>> 0).buffer).swap32().toString('hex');
      seen.set(formatUuid(commandId, 0), scopeHex);
    });
    assert.equal(count, rows);
    assert.deepEqual(seen, expected);
  });
});
