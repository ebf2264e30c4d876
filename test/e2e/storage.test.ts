// The venue on a PostgreSQL it does not own (DATABASE_URL), which the test stops and
// starts under it: commands answer 503 with Retry-After while it is away (never hang,
// never acknowledge what is not durable), and the venue resumes by itself. And the
// operator's lifecycle rebuild: the rebuilt table equals the incremental one, commands
// committed while it runs are answered and projected after it, the commits it holds
// are bounded, a second rebuild waits for the first, and a rebuild's wait for its lock
// is bounded.

import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import pg from 'pg';
import { percentileOfBuckets } from '../../persistence/latency-histogram.ts';
import { TestDatabase, withClient } from '../support/database.ts';
import { assertShape } from '../support/response-schemas.ts';
import { cancelBody, modifyBody, submitBody, TOKENS, TRADER_B, stopAfter, VenueProcess } from '../support/venue-process.ts';

const INSTRUMENT = '6b000000-0000-4000-8000-000000000001';
let database: TestDatabase;

before(async () => {
  database = await TestDatabase.start();
});
after(async () => {
  await database.remove();
});

test('PostgreSQL going away: 503 with Retry-After, then the venue resumes without a restart', async () => {
  const url = await database.freshDatabase();
  const venue = await VenueProcess.start({ DATABASE_URL: url, DURABLE_WAIT_MS: '1500' });
  await stopAfter(
    () => venue,
    async () => {
      assert.equal((await venue.order('/api/v1/orders/submit', submitBody({ instrumentId: INSTRUMENT }))).status, 200);
      await database.stopServer();

      const during = [submitBody({ instrumentId: INSTRUMENT, price: '90' }), submitBody({ instrumentId: INSTRUMENT, price: '91' })];
      const keys = during.map(() => crypto.randomUUID());
      for (let k = 0; k < during.length; k++) {
        const answer = await venue.order('/api/v1/orders/submit', during[k], { key: keys[k] });
        assert.equal(answer.status, 503, answer.text);
        assert.equal(answer.json.code, 'UNAVAILABLE');
        assert.equal(answer.headers.get('retry-after'), '1');
      }
      for (const mode of ['captured-ack', 'stream-ack', 'accepted-async']) {
        const answer = await venue.order('/api/v1/orders/submit', submitBody({ instrumentId: INSTRUMENT }), { mode });
        assert.equal(answer.status, 503, `${mode} acknowledges nothing it cannot make durable`);
      }
      const ready = await venue.get('/readyz');
      assert.equal(ready.status, 503);
      assert.equal(ready.headers.get('retry-after'), '1');

      await database.startServer();
      let resumed = null;
      for (let attempt = 0; attempt < 120 && resumed === null; attempt++) {
        const answer = await venue.order('/api/v1/orders/submit', submitBody({ instrumentId: INSTRUMENT, price: '92' }));
        if (answer.status === 200) resumed = answer;
        else await new Promise((resolve) => setTimeout(resolve, 250));
      }
      assert.ok(resumed !== null, 'the venue took orders again once PostgreSQL was back');
      assert.equal((await venue.get('/readyz')).status, 200);
      // The clients retry their 503s with the same key: each ends with one outcome, the same on every retry.
      for (let k = 0; k < during.length; k++) {
        const first = await venue.order('/api/v1/orders/submit', during[k], { key: keys[k] });
        assert.equal(first.status, 200, first.text);
        assert.equal(first.json.outcome.accepted.orderId, during[k]!.orderId);
        const again = await venue.order('/api/v1/orders/submit', during[k], { key: keys[k] });
        assert.equal(again.text, first.text);
      }
      await venue.untilProjected();
      await withClient(url, async (client) => {
        const rows = await client.query('SELECT count(*)::int AS n FROM runtime.command_log WHERE command_id = ANY($1::uuid[])', [during.map((body) => body.commandId)]);
        assert.equal(rows.rows[0].n, 2, 'both are in the command log, once each');
      });
    },
  );
});

async function projectionsCaughtUp(url: string): Promise<void> {
  for (let attempt = 0; attempt < 500; attempt++) {
    const behind = await withClient(
      url,
      async (client) =>
        (
          await client.query<{ n: number }>(
            `SELECT count(*)::int AS n FROM (SELECT shard_id, max(last_sequence) AS s FROM runtime.journal_batches GROUP BY shard_id) j
             LEFT JOIN runtime.projection_watermarks w ON w.shard_id = j.shard_id AND w.projection = 'runtime'
            WHERE w.sequence IS NULL OR w.sequence < j.s`,
          )
        ).rows[0]!.n,
    );
    if (behind === 0) return;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  throw new Error('the projections did not catch up with the journal');
}

const LIFECYCLE = 'SELECT * FROM runtime.order_lifecycle_state ORDER BY order_id';

test('the operator rebuild of order_lifecycle_state equals the incrementally maintained table', async () => {
  const url = await database.freshDatabase();
  const venue = await VenueProcess.start({ DATABASE_URL: url });
  await stopAfter(
    () => venue,
    async () => {
      const session = (await venue.get('/api/v1/venue/session', TOKENS.traderA)).json;
      const seller = { participantId: TRADER_B.participantId, accountId: TRADER_B.accountId };
      const a = submitBody({ instrumentId: INSTRUMENT, side: 'BUY', price: '10', quantity: '10', clientOrderId: 'rebuild-a' });
      const b = submitBody({ instrumentId: INSTRUMENT, side: 'BUY', price: '9', quantity: '5', orderType: 'LIMIT_HIDDEN' });
      const c = submitBody({ instrumentId: INSTRUMENT, side: 'BUY', price: '8', quantity: '5' });
      for (const body of [a, b, c]) assert.equal((await venue.order('/api/v1/orders/submit', body)).status, 200);
      // One sell fills a (10 at 10) and 2 of the hidden b (at 9); c is modified (price up: loses priority), then cancelled.
      const sell = submitBody({ instrumentId: INSTRUMENT, side: 'SELL', price: '9', quantity: '12', ...seller });
      assert.equal((await venue.order('/api/v1/orders/submit', sell, { token: TOKENS.traderB })).json.trades.length, 2);
      const target = { orderId: c.orderId as string, instrumentId: INSTRUMENT, runId: session.runId, venueSessionId: session.venueSessionId };
      assert.ok((await venue.order('/api/v1/orders/modify', modifyBody({ ...target, price: '8.5', quantity: '7' }))).json.outcome.accepted);
      assert.ok((await venue.order('/api/v1/orders/cancel', cancelBody(target))).json.outcome.accepted);
      // An IOC sell of 4 takes b's last 3; its remainder of 1 is cancelled. A sell rests at 12.
      const ioc = submitBody({ instrumentId: INSTRUMENT, side: 'SELL', price: '9', quantity: '4', timeInForce: 'IOC', ...seller });
      assert.equal((await venue.order('/api/v1/orders/submit', ioc, { token: TOKENS.traderB })).json.trades.length, 1);
      const ask = submitBody({ instrumentId: INSTRUMENT, side: 'SELL', price: '12', quantity: '4', ...seller });
      assert.equal((await venue.order('/api/v1/orders/submit', ask, { token: TOKENS.traderB })).status, 200);
      await projectionsCaughtUp(url);

      const incremental = await withClient(url, async (client) => (await client.query(LIFECYCLE)).rows);
      const states = new Map(incremental.map((row) => [row.order_id, [row.state, row.remaining_quantity_units, row.filled_quantity_units, row.client_order_id]]));
      assert.equal(incremental.length, 6);
      assert.deepEqual(states.get(a.orderId), ['FILLED', '0', '10', 'rebuild-a']);
      assert.deepEqual(states.get(b.orderId), ['FILLED', '0', '5', null]);
      assert.deepEqual(states.get(c.orderId), ['CANCELLED', '0', '0', null]);
      assert.deepEqual(states.get(sell.orderId), ['FILLED', '0', '12', null]);
      assert.deepEqual(states.get(ioc.orderId), ['CANCELLED', '0', '3', null]);
      assert.deepEqual(states.get(ask.orderId), ['OPEN', '4', '0', null]);
      const modified = incremental.find((row) => row.order_id === c.orderId);
      assert.deepEqual([modified.limit_price_nanos, modified.original_quantity_units], ['8500000000', '7'], 'the modify is applied');

      // Damage the table, then rebuild it from the journal.
      await withClient(url, async (client) => {
        await client.query('DELETE FROM runtime.order_lifecycle_state WHERE order_id = $1', [ask.orderId]);
        await client.query("UPDATE runtime.order_lifecycle_state SET state = 'OPEN', remaining_quantity_units = 99 WHERE order_id = $1", [b.orderId]);
      });
      const denied = [
        await venue.request('POST', '/admin/v1/projections/order-lifecycle/rebuild'),
        await venue.request('POST', '/admin/v1/projections/order-lifecycle/rebuild', { token: 'not-a-token' }),
        await venue.request('POST', '/admin/v1/projections/order-lifecycle/rebuild', { token: TOKENS.traderA }),
        await venue.request('POST', '/admin/v1/projections/order-lifecycle/rebuild', { token: TOKENS.viewer }),
      ];
      assert.deepEqual(
        denied.map((answer) => [answer.status, answer.json.code]),
        [
          [401, 'UNAUTHENTICATED'],
          [401, 'UNAUTHENTICATED'],
          [403, 'FORBIDDEN'],
          [403, 'FORBIDDEN'],
        ],
      );
      const rebuild = await venue.request('POST', '/admin/v1/projections/order-lifecycle/rebuild', { token: TOKENS.operator });
      assert.equal(rebuild.status, 200, rebuild.text);
      assert.deepEqual(Object.keys(rebuild.json).sort(), ['finishedAt', 'projection', 'rowsRebuilt', 'startedAt', 'status']);
      assert.equal(rebuild.json.projection, 'runtime.order_lifecycle_state');
      assert.equal(rebuild.json.status, 'COMPLETED');
      assert.equal(rebuild.json.rowsRebuilt, incremental.length);
      assert.ok(Date.parse(rebuild.json.startedAt) <= Date.parse(rebuild.json.finishedAt));
      assertShape('RebuildStatus', rebuild.json);
      const rebuilt = await withClient(url, async (client) => (await client.query(LIFECYCLE)).rows);
      assert.deepEqual(rebuilt, incremental, 'every column of every row, timestamps included');

      // The incremental projection goes on from the rebuilt table.
      const lift = submitBody({ instrumentId: INSTRUMENT, side: 'BUY', price: '12', quantity: '1' });
      assert.equal((await venue.order('/api/v1/orders/submit', lift)).json.trades.length, 1);
      await projectionsCaughtUp(url);
      const after = await withClient(url, async (client) => (await client.query('SELECT state, remaining_quantity_units FROM runtime.order_lifecycle_state WHERE order_id = $1', [ask.orderId])).rows);
      assert.deepEqual(after, [{ state: 'PARTIALLY_FILLED', remaining_quantity_units: '3' }]);
      // The read thread's in-memory books were reloaded from the rebuilt table and kept up since.
      const depth = (await venue.get(`/api/v1/market-data/depth/${INSTRUMENT}`, TOKENS.viewer)).json;
      assert.deepEqual([depth.bids, depth.asks], [[], [{ price: { nanos: '12000000000', currency: 'USD' }, quantity: { units: '3' }, orderCount: 1 }]]);

      // Both tiers are observable: watermarks, lag, what was written.
      for (const token of [undefined, TOKENS.traderA, TOKENS.viewer]) {
        const denied = await venue.request('GET', '/admin/v1/persistence/status', token === undefined ? {} : { token });
        assert.equal(denied.status, token === undefined ? 401 : 403);
      }
      const status = (await venue.get('/admin/v1/persistence/status', TOKENS.operator)).json;
      assertShape('PersistenceStatus', status);
      const journalEnds = await withClient(
        url,
        async (client) => (await client.query('SELECT shard_id, max(last_sequence)::int AS s, sum(command_count)::int AS commands FROM runtime.journal_batches GROUP BY shard_id')).rows,
      );
      assert.equal(status.database, 'up');
      for (const row of journalEnds) {
        const shard = status.shards.find((entry: any) => entry.shardId === row.shard_id);
        assert.deepEqual(shard, { shardId: row.shard_id, journalCommitted: row.s, projected: row.s, projectionLag: 0 });
      }
      assert.equal(
        status.journal.commands,
        journalEnds.reduce((sum: number, row: any) => sum + row.commands, 0),
      );
      assert.equal(status.journal.intakeRows, 9, 'nine commands were taken');
      assert.equal(status.journal.captureLatencyUs.count, 9);
      assert.ok(status.journal.captureLatencyUs.p50 > 0 && status.journal.captureLatencyUs.p50 <= status.journal.captureLatencyUs.max);
      assert.ok(status.projections.rows > 0);
      // The lag histogram's buckets hold every recorded lag, and its percentiles read off them.
      assert.ok(status.projections.lagUs.count > 0);
      assert.equal(
        status.projections.lagBuckets.reduce((sum: number, [, count]: [number, number]) => sum + count, 0),
        status.projections.lagUs.count,
      );
      // (The summary caps a percentile at the maximum recorded; a bucket's bound is at most 6.25% above it.)
      const p50 = percentileOfBuckets(status.projections.lagBuckets, 50);
      assert.ok(p50 >= status.projections.lagUs.p50 && p50 <= status.projections.lagUs.p50 * 1.0625 + 1, `${p50} against ${status.projections.lagUs.p50}`);
      // Every bounded queue reports its depth and high-water mark: 2 gateways × 2 shards here.
      const names = status.queues.map((queue: any) => queue.name);
      for (const kind of [
        'command ring',
        'result ring',
        'intake ring',
        'journal ring',
        'commands in flight',
        'requests waiting for the read thread',
        'operator requests',
        'tier 2 groups',
        'open connections',
      ]) {
        assert.ok(
          names.some((name: string) => name.startsWith(kind)),
          `the ${kind} queues are reported`,
        );
      }
      assert.equal(names.filter((name: string) => name.startsWith('command ring')).length, 4);
      for (const queue of status.queues) assert.ok(queue.now <= queue.highWater && queue.highWater <= queue.capacity, JSON.stringify(queue));
      const mark = (prefix: string) => status.queues.filter((queue: any) => queue.name.startsWith(prefix)).reduce((sum: number, queue: any) => sum + queue.highWater, 0);
      assert.ok(mark('command ring') >= 1 && mark('intake ring') >= 1 && mark('journal ring') >= 1 && mark('commands in flight') >= 1, 'the commands taken left marks');
      // The connection guard's count: this test's connection at least; the default limit (MAX_CONNECTIONS 10,000, or less under a low ulimit -n).
      const connections = status.queues.find((queue: any) => queue.name.startsWith('open connections'));
      assert.ok(connections.now >= 1 && connections.capacity > 0 && connections.capacity <= 10_000, JSON.stringify(connections));
      assert.ok(mark('tier 2 groups') >= 1, 'tier 2 sealed groups');

      // Each of the venue's connections says what it does (application_name): the journal's
      // commits and the projections are told apart in pg_stat_activity, and none is unnamed.
      const connectionNames = await withClient(url, async (client) =>
        (
          await client.query<{ name: string }>(
            "SELECT application_name AS name FROM pg_stat_activity WHERE datname = current_database() AND backend_type = 'client backend' AND pid <> pg_backend_pid()",
          )
        ).rows.map((row) => row.name),
      );
      assert.ok(connectionNames.includes('venue-journal') && connectionNames.includes('venue-projector'), JSON.stringify(connectionNames));
      assert.deepEqual(
        connectionNames.filter((name) => !name.startsWith('venue-')),
        [],
        JSON.stringify(connectionNames),
      );
    },
  );
});

/** Starts the operator's rebuild and holds it at its TRUNCATE, on a lock `lock` takes (the caller commits it to let the rebuild go on). */
async function rebuildHeldAtTruncate(venue: VenueProcess, url: string, lock: pg.Client) {
  await lock.query('BEGIN');
  await lock.query('LOCK TABLE runtime.order_lifecycle_state IN ACCESS SHARE MODE'); // enough to hold the rebuild's TRUNCATE, not its reads
  const rebuild = venue.request('POST', '/admin/v1/projections/order-lifecycle/rebuild', { token: TOKENS.operator });
  rebuild.catch(() => undefined); // a test that fails first stops the venue under it: report that failure, not this one
  for (let attempt = 0; ; attempt++) {
    const waiting = await withClient(
      url,
      async (client) =>
        (await client.query<{ n: number }>("SELECT count(*)::int AS n FROM pg_stat_activity WHERE query LIKE 'TRUNCATE runtime.order_lifecycle_state%' AND wait_event_type = 'Lock'")).rows[0]!.n,
    );
    if (waiting === 1) return { rebuild }; // wrapped: an async function would wait for a promise it returns
    assert.ok(attempt < 500, 'the rebuild reached its TRUNCATE');
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

// While a rebuild runs, the writer keeps committing (answers go out) but holds those
// commits' ingest; once the rebuild is done they are projected. The writer must not
// busy-loop on the held queue (its thread would stop, answers would time out as 503
// and the rebuild would never finish): the rebuild is held here, on a lock the test
// takes, while commands are sent, and for 11 s in all: past uWebSockets.js's 10 s idle
// timeout, which does not cut off an answer the venue still owes (the operator gets it).
// A second rebuild asked meanwhile waits for the first, then covers what the first held.
test('commands committed while a rebuild holds the ingest are answered, then projected after it; a second rebuild waits for the first', { timeout: 60_000 }, async () => {
  const url = await database.freshDatabase();
  const venue = await VenueProcess.start({ DATABASE_URL: url, DURABLE_WAIT_MS: '2000' });
  const lock = new pg.Client({ connectionString: url });
  await lock.connect();
  await stopAfter(
    () => venue,
    async () => {
      const first = submitBody({ instrumentId: INSTRUMENT, side: 'BUY', price: '10', quantity: '1' });
      assert.equal((await venue.order('/api/v1/orders/submit', first)).status, 200);
      await projectionsCaughtUp(url); // so the rebuild's own flush has nothing to write under the lock
      const began = Date.now();
      const { rebuild } = await rebuildHeldAtTruncate(venue, url, lock);
      const second = venue.request('POST', '/admin/v1/projections/order-lifecycle/rebuild', { token: TOKENS.operator });
      second.catch(() => undefined); // (reported below)
      const during = Array.from({ length: 6 }, (_, k) => submitBody({ instrumentId: INSTRUMENT, side: 'BUY', price: String(20 + k), quantity: '1' }));
      for (const body of during) {
        const answer = await venue.order('/api/v1/orders/submit', body); // one at a time: each its own commit
        assert.equal(answer.status, 200, answer.text);
      }
      await new Promise((resolve) => setTimeout(resolve, Math.max(0, 11_000 - (Date.now() - began))));
      await lock.query('COMMIT');
      const rebuilt = await rebuild;
      assert.equal(rebuilt.status, 200, rebuilt.text);
      assert.equal(rebuilt.json.rowsRebuilt, 1, 'the rebuild covers what was projected when it began');
      const again = await second;
      assert.equal(again.status, 200, again.text);
      assert.equal(again.json.rowsRebuilt, 7, 'the second rebuild began after the first, with what the first held');
      assert.ok(again.json.startedAt >= rebuilt.json.finishedAt, `${again.json.startedAt} after ${rebuilt.json.finishedAt}`);
      await projectionsCaughtUp(url);
      const rows = await withClient(url, async (client) => (await client.query('SELECT order_id, state FROM runtime.order_lifecycle_state ORDER BY order_id')).rows);
      assert.deepEqual(
        rows,
        [first, ...during].map((body) => ({ order_id: String(body.orderId), state: 'OPEN' })).sort((p, q) => (p.order_id < q.order_id ? -1 : 1)),
      );
      const depth = (await venue.get(`/api/v1/market-data/depth/${INSTRUMENT}?levels=10`, TOKENS.viewer)).json;
      assert.deepEqual(
        depth.bids.map((level: any) => level.price.nanos),
        ['25000000000', '24000000000', '23000000000', '22000000000', '21000000000', '20000000000', '10000000000'],
      );
    },
    { before: () => lock.end() },
  );
});

// The commits a rebuild holds are bounded (REBUILD_HELD_BYTES_MAX): once they reach it the
// writer takes no more, so a command is not made durable and answers 503 with
// Retry-After when its wait (DURABLE_WAIT_MS) ends. Nothing is lost: after the rebuild
// the writer goes on, and the retry with the same key gets the original's 200.
test('a rebuild holds a bounded number of commits: past REBUILD_HELD_BYTES_MAX commands wait, answer 503, and commit after it', { timeout: 60_000 }, async () => {
  const url = await database.freshDatabase();
  const heldMax = 4096; // a submit's commit is one intake record (640 B) and its journal (a few hundred bytes)
  const venue = await VenueProcess.start({ DATABASE_URL: url, DURABLE_WAIT_MS: '1500', REBUILD_HELD_BYTES_MAX: String(heldMax) });
  const lock = new pg.Client({ connectionString: url });
  await lock.connect();
  const heldRow = async () =>
    (await venue.get('/admin/v1/persistence/status', TOKENS.operator)).json.queues.find((queue: any) => queue.name.startsWith('bytes of commits whose ingest a running rebuild holds'));
  await stopAfter(
    () => venue,
    async () => {
      const first = submitBody({ instrumentId: INSTRUMENT, side: 'BUY', price: '10', quantity: '1' });
      assert.equal((await venue.order('/api/v1/orders/submit', first)).status, 200);
      await projectionsCaughtUp(url);
      const idle = await heldRow();
      assert.deepEqual({ capacity: idle.capacity, now: idle.now, highWater: idle.highWater }, { capacity: heldMax, now: 0, highWater: 0 });
      const { rebuild } = await rebuildHeldAtTruncate(venue, url, lock);
      const answered: Record<string, unknown>[] = [];
      let refused: { body: Record<string, unknown>; key: string } | null = null;
      for (let k = 0; k < 20 && refused === null; k++) {
        const body = submitBody({ instrumentId: INSTRUMENT, side: 'BUY', price: String(20 + k), quantity: '1' });
        const key = crypto.randomUUID();
        const answer = await venue.order('/api/v1/orders/submit', body, { key }); // one at a time: each its own commit
        if (answer.status === 200) answered.push(body);
        else {
          assert.equal(answer.status, 503, answer.text);
          assert.equal(answer.headers.get('retry-after'), '1');
          refused = { body, key };
        }
      }
      assert.ok(refused !== null, 'a command past the bound is not acknowledged');
      assert.ok(answered.length >= 1, 'commits are taken up to the bound');
      const held = await heldRow();
      assert.ok(held.now >= heldMax && held.now < heldMax + 640 + 1024, `the held bytes stop at the bound, passing it by one commit at most: ${JSON.stringify(held)}`);
      assert.equal(held.highWater, held.now);
      await lock.query('COMMIT');
      const rebuilt = await rebuild;
      assert.equal(rebuilt.status, 200, rebuilt.text);
      assert.equal(rebuilt.json.rowsRebuilt, 1, 'the rebuild covers what was projected when it began');
      const retried = await venue.order('/api/v1/orders/submit', refused.body, { key: refused.key });
      assert.equal(retried.status, 200, retried.text);
      assert.equal(retried.json.outcome.accepted.orderId, refused.body.orderId);
      await projectionsCaughtUp(url);
      const rows = await withClient(url, async (client) => (await client.query('SELECT order_id FROM runtime.order_lifecycle_state ORDER BY order_id')).rows);
      assert.deepEqual(
        rows.map((row) => row.order_id),
        [first, ...answered, refused.body].map((body) => String(body.orderId)).sort(),
      );
      assert.equal((await heldRow()).now, 0, 'the held commits were ingested');
    },
    { before: () => lock.end() },
  );
});

// A rebuild waits for its lock on the table at most REBUILD_LOCK_TIMEOUT_MS (readers of
// the table queue behind that wait), then fails with a clear 503 and changes nothing;
// ingestion resumes, and a rebuild once the lock is gone succeeds.
test('a rebuild that cannot lock order_lifecycle_state within REBUILD_LOCK_TIMEOUT_MS fails clearly, changes nothing, and ingestion goes on', { timeout: 60_000 }, async () => {
  const url = await database.freshDatabase();
  const venue = await VenueProcess.start({ DATABASE_URL: url, REBUILD_LOCK_TIMEOUT_MS: '1000' });
  const lock = new pg.Client({ connectionString: url });
  await lock.connect();
  const lifecycle = () => withClient(url, async (client) => (await client.query('SELECT order_id, state FROM runtime.order_lifecycle_state ORDER BY order_id')).rows);
  await stopAfter(
    () => venue,
    async () => {
      const first = submitBody({ instrumentId: INSTRUMENT, side: 'BUY', price: '10', quantity: '1' });
      assert.equal((await venue.order('/api/v1/orders/submit', first)).status, 200);
      await projectionsCaughtUp(url);
      const projected = await lifecycle();
      assert.equal(projected.length, 1);
      const { rebuild } = await rebuildHeldAtTruncate(venue, url, lock);
      const failed = await rebuild;
      assert.equal(failed.status, 503, failed.text);
      assert.equal(failed.headers.get('retry-after'), '1');
      assert.equal(failed.json.code, 'UNAVAILABLE');
      assert.match(
        failed.json.error,
        /could not lock runtime\.order_lifecycle_state \(or a table it reads\) within REBUILD_LOCK_TIMEOUT_MS \(1000 ms\): another session holds it; nothing was changed/,
      );
      assert.deepEqual(await lifecycle(), projected, 'the failed rebuild changed nothing');
      // Ingestion goes on (the test's lock does not stop the projector's writes).
      const next = submitBody({ instrumentId: INSTRUMENT, side: 'BUY', price: '11', quantity: '1' });
      assert.equal((await venue.order('/api/v1/orders/submit', next)).status, 200);
      await projectionsCaughtUp(url);
      assert.deepEqual(
        (await lifecycle()).map((row) => row.order_id),
        [first, next].map((body) => String(body.orderId)).sort(),
      );
      await lock.query('COMMIT');
      const rebuilt = await venue.request('POST', '/admin/v1/projections/order-lifecycle/rebuild', { token: TOKENS.operator });
      assert.equal(rebuilt.status, 200, rebuilt.text);
      assert.equal(rebuilt.json.rowsRebuilt, 2);
    },
    { before: () => lock.end() },
  );
});
