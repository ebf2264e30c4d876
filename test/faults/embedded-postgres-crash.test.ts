// The embedded PostgreSQL comes back by itself (persistence/postgres-supervisor.ts): its
// processes are killed (kill -9 of the server's process group, every backend at once)
// under an order load on a real venue. While it is down, orders are 503 with
// Retry-After and /readyz says why; it is ready again within 30 s with no outside help;
// every acknowledged command is found and terminal, nothing is duplicated, the books and
// own orders are as before. A server that cannot be started again is given up on, loudly.

import assert from 'node:assert/strict';
import { renameSync } from 'node:fs';
import path from 'node:path';
import { test, type TestContext } from 'node:test';
import { postmasterIn } from '../../bench/lib/leftovers.ts';
import { clusterRootOf } from '../../persistence/postgres-placement.ts';
import { withClient } from '../support/database.ts';
import { dataDirs, stopAfter, storageUrl, submitBody, TOKENS, TRADER_B, VenueProcess, type HttpAnswer } from '../support/venue-process.ts';

const dataDir = dataDirs();
const RESTING = 'ca000000-0000-4000-8000-000000000001'; // orders placed before the kill, none crossing
const TRADED = 'ca000000-0000-4000-8000-000000000002'; // the load during the kill: around the mid, some crossing
const READY_WITHIN_MS = 30_000;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function ready(venue: VenueProcess): Promise<void> {
  for (let k = 0; (await venue.get('/readyz')).status !== 200; k++) {
    assert.ok(k < 1200, 'the venue never became ready');
    await sleep(50);
  }
}

/** kill -9 of the embedded server's process group (the postmaster and every backend). */
function killPostgres(dir: string): number {
  const pid = postmasterIn(dir);
  assert.ok(pid > 0, 'an embedded PostgreSQL runs');
  process.kill(-pid, 'SIGKILL');
  return Date.now();
}

interface Acknowledged {
  commandId: string;
  orderId: string;
  instrumentId: string;
}

/**
 * Order lanes until `until` resolves: each command is sent until it is acknowledged (a 503
 * is retried with the same Idempotency-Key after its Retry-After). Every answer is checked:
 * a 200 with the command's own accepted outcome (a retry never meets DUPLICATE_ORDER_ID),
 * or a 503 with Retry-After and a request id.
 */
async function orderLoad(venue: VenueProcess, until: Promise<unknown>, lanes = 4): Promise<{ acknowledged: Acknowledged[]; unavailable: number; problems: string[] }> {
  let done = false;
  void until.then(() => (done = true));
  const acknowledged: Acknowledged[] = [];
  const problems: string[] = [];
  let unavailable = 0;
  let n = 0;
  await Promise.all(
    Array.from({ length: lanes }, async (_, lane) => {
      while (!done) {
        const k = n++;
        const traderB = k % 2 === 1;
        const body = submitBody({
          instrumentId: TRADED,
          side: traderB ? 'SELL' : 'BUY',
          price: String(100 + ((k * 7) % 5) - 2),
          quantity: String(1 + (k % 4)),
          ...(traderB ? { participantId: TRADER_B.participantId, accountId: TRADER_B.accountId } : {}),
        });
        const key = `lane-${lane}-${k}`;
        for (let attempt = 0; ; attempt++) {
          let answer;
          try {
            answer = await venue.order('/api/v1/orders/submit', body, { key, ...(traderB ? { token: TOKENS.traderB } : {}) });
          } catch (error) {
            problems.push(`${key}: ${(error as Error).message}`); // the venue never drops a connection for an outage
            break;
          }
          if (answer.status === 200) {
            if (answer.json.outcome.accepted?.orderId !== body.orderId) problems.push(`${key}: ${answer.text.slice(0, 200)}`);
            acknowledged.push({ commandId: body.commandId as string, orderId: body.orderId as string, instrumentId: TRADED });
            break;
          }
          if (answer.status !== 503 || !/^[1-9]\d*$/.test(answer.headers.get('retry-after') ?? '') || answer.json?.requestId === undefined) {
            problems.push(`${key}: ${answer.status} ${answer.headers.get('retry-after')} ${answer.text.slice(0, 200)}`);
            break;
          }
          unavailable++;
          if (attempt > 200) {
            problems.push(`${key}: still 503 after 200 tries`);
            break;
          }
          await sleep(100);
        }
      }
    }),
  );
  return { acknowledged, unavailable, problems };
}

/** Every acknowledged command is found and terminal; every acknowledged order is in its trader's history once. */
async function checkAcknowledged(venue: VenueProcess, acknowledged: Acknowledged[]): Promise<void> {
  for (const command of acknowledged) {
    const status = await venue.get(`/api/v1/commands/${command.commandId}`, TOKENS.operator);
    assert.equal(status.status, 200, status.text);
    assert.ok(['COMPLETED', 'REJECTED'].includes(status.json.status), status.text);
  }
  const history = [
    ...(await venue.get(`/api/v1/orders/history?instrumentId=${TRADED}&limit=1000`, TOKENS.traderA)).json.rows,
    ...(await venue.get(`/api/v1/orders/history?instrumentId=${TRADED}&limit=1000`, TOKENS.traderB)).json.rows,
  ] as { orderId: string }[];
  const seen = new Map<string, number>();
  for (const row of history) seen.set(row.orderId, (seen.get(row.orderId) ?? 0) + 1);
  for (const command of acknowledged) assert.equal(seen.get(command.orderId), 1, `acknowledged order ${command.orderId} is in its trader's history once`);
}

/** The displayed book equals both traders' open orders, level by level. */
async function checkBook(venue: VenueProcess, instrumentId: string): Promise<void> {
  const depth = await venue.get(`/api/v1/market-data/depth/${instrumentId}?levels=50`, TOKENS.viewer);
  const fromDepth =
    depth.status === 404 ? [] : [...depth.json.bids.map((l: any) => `BUY ${l.price.nanos} ${l.quantity.units}`), ...depth.json.asks.map((l: any) => `SELL ${l.price.nanos} ${l.quantity.units}`)];
  const open = new Map<string, bigint>();
  for (const token of [TOKENS.traderA, TOKENS.traderB]) {
    const current = await venue.get(`/api/v1/orders/current?instrumentId=${instrumentId}&limit=1000`, token);
    for (const row of current.json.rows as any[]) {
      const level = `${row.side} ${row.limitPrice.nanos}`;
      open.set(level, (open.get(level) ?? 0n) + BigInt(row.remainingQuantity.units));
    }
  }
  assert.deepEqual(fromDepth.sort(), [...open].map(([level, units]) => `${level} ${units}`).sort(), 'the book is the open orders');
}

async function restingBook(venue: VenueProcess): Promise<{ own: unknown; depth: unknown }> {
  const own = (await venue.get(`/api/v1/orders/current?instrumentId=${RESTING}&limit=1000`, TOKENS.traderA)).json.rows;
  const depth = (await venue.get(`/api/v1/market-data/depth/${RESTING}?levels=50`, TOKENS.viewer)).json;
  return { own, depth: { bids: depth.bids, asks: depth.asks } };
}

/** Kills the server `kills` times in a row (the next as soon as it is up again) under load; checks the outage and the recovery. */
async function killUnderLoad(t: TestContext, kills: number): Promise<void> {
  const dir = dataDir();
  const venue = await VenueProcess.start({ DATA_DIR: dir });
  await stopAfter(
    () => venue,
    async () => {
      await ready(venue);
      for (let k = 0; k < 20; k++) {
        const answer = await venue.order('/api/v1/orders/submit', submitBody({ instrumentId: RESTING, side: k % 2 === 0 ? 'BUY' : 'SELL', price: String(k % 2 === 0 ? 90 - k : 110 + k) }));
        assert.equal(answer.status, 200, answer.text);
      }
      await venue.untilProjected();
      const before = await restingBook(venue);

      let stopLoad: () => void = () => undefined;
      const loadStopped = new Promise<void>((resolve) => (stopLoad = resolve));
      const load = orderLoad(venue, loadStopped);
      await sleep(1_000);
      let killedAt = 0;
      const probes: Promise<HttpAnswer>[] = [];
      const notReady: string[] = [];
      for (let kill = 1; kill <= kills; kill++) {
        killedAt = killPostgres(dir);
        // /readyz says why until the server is back, and the supervisor has counted the restart.
        for (;;) {
          assert.ok(Date.now() - killedAt < READY_WITHIN_MS, `not ready ${READY_WITHIN_MS} ms after kill ${kill}`);
          const probe = await venue.get('/readyz');
          if (probe.status === 200) {
            const status = await venue.get('/admin/v1/persistence/status', TOKENS.operator);
            if (status.json?.embeddedPostgres?.restarts === kill) {
              assert.equal(status.json.embeddedPostgres.state, 'up');
              break;
            }
          } else {
            notReady.push(probe.json?.error ?? probe.text);
            // A new order meanwhile is refused at once with Retry-After (one taken just before waits for its durability instead).
            probes.push(venue.order('/api/v1/orders/submit', submitBody({ instrumentId: RESTING, price: '1', quantity: '1', timeInForce: 'IOC' })));
          }
          await sleep(25);
        }
      }
      t.diagnostic(`ready ${Date.now() - killedAt} ms after the last kill; projection groups sent again: ${(venue.log.match(/projection groups in a crash of the server/g) ?? []).length} times`);
      assert.ok(
        notReady.some((message) => /embedded PostgreSQL exited and is being started again \(try 1 of 10\)/.test(message)),
        `readyz said why: ${notReady.slice(0, 3).join(' | ')}`,
      );
      await sleep(1_000);
      stopLoad();
      const { acknowledged, unavailable, problems } = await load;
      assert.deepEqual(problems.slice(0, 10), []);
      const probed = await Promise.all(probes);
      for (const order of probed) if (order.status !== 503) assert.equal(order.status, 200, order.text);
      const refused = probed.filter((order) => order.status === 503 && /^[1-9]\d*$/.test(order.headers.get('retry-after') ?? '')).length;
      assert.ok(refused > 0, `new orders were answered 503 with Retry-After while the server was down (${notReady.length} readyz 503s, ${probed.length} order probes)`);
      t.diagnostic(`while down: ${notReady.length} readyz 503s; ${refused} of ${probed.length} order probes and ${unavailable} of the lanes' tries answered 503`);
      assert.ok(acknowledged.length > 50, `${acknowledged.length} orders acknowledged`);
      assert.match(venue.log, /the embedded PostgreSQL exited without being asked: starting it again/);

      await venue.untilProjected(20_000);
      await checkAcknowledged(venue, acknowledged);
      assert.deepEqual(await restingBook(venue), before, 'the resting orders and their book are as before');
      await checkBook(venue, TRADED);
      await checkBook(venue, RESTING);
    },
  );
}

test('the embedded PostgreSQL killed under order load comes back by itself: 503 while down, ready within 30 s, nothing acknowledged lost or duplicated', async (t) => {
  await killUnderLoad(t, 1);
});

test('the embedded PostgreSQL killed twice in a row comes back both times', async (t) => {
  await killUnderLoad(t, 2);
});

test('an embedded PostgreSQL that cannot be started again is given up on after EMBEDDED_POSTGRES_RESTARTS tries: said loudly, orders 503; a restart of the venue recovers', async () => {
  const dir = dataDir();
  let venue = await VenueProcess.start({ DATA_DIR: dir, EMBEDDED_POSTGRES_RESTARTS: '2' });
  await ready(venue);
  const placed = submitBody({ instrumentId: RESTING, price: '50' });
  assert.equal((await venue.order('/api/v1/orders/submit', placed)).status, 200);
  // The server cannot start without its control file.
  const control = path.join(clusterRootOf(dir), 'postgres', 'global', 'pg_control');
  renameSync(control, `${control}.away`);
  killPostgres(dir);
  await venue.untilLogged(/could not be started again after 2 tries/, 20_000);
  const probe = await venue.get('/readyz');
  assert.equal(probe.status, 503);
  assert.match(probe.json.error, /could not be started again after 2 tries; an operator must restart the venue/);
  const order = await venue.order('/api/v1/orders/submit', submitBody({ instrumentId: RESTING, price: '51' }));
  assert.equal(order.status, 503, order.text);
  assert.match(order.headers.get('retry-after') ?? '', /^[1-9]\d*$/);
  const status = await venue.get('/admin/v1/persistence/status', TOKENS.operator);
  assert.deepEqual(status.json.embeddedPostgres, { state: 'failed', attempt: 2, maxTries: 2, restarts: 0 });
  assert.match(venue.log, /"level":60[^\n]*could not be started again after 2 tries/);

  // The operator mends the cause and restarts the venue: what was acknowledged is there.
  renameSync(`${control}.away`, control);
  await venue.kill();
  venue = await VenueProcess.start({ DATA_DIR: dir });
  await stopAfter(
    () => venue,
    async () => {
      await ready(venue);
      const current = await venue.get(`/api/v1/orders/current?instrumentId=${RESTING}&limit=10`, TOKENS.traderA);
      assert.deepEqual(
        (current.json.rows as { orderId: string }[]).map((row) => row.orderId),
        [placed.orderId],
      );
    },
  );
});

test('a projection group the crash took back (committed without waiting for the WAL) is sent again when the server returns', async () => {
  const dir = dataDir();
  const venue = await VenueProcess.start({ DATA_DIR: dir });
  await stopAfter(
    () => venue,
    async () => {
      await ready(venue);
      assert.equal((await venue.order('/api/v1/orders/submit', submitBody({ instrumentId: RESTING, price: '40' }))).status, 200);
      await venue.untilProjected();
      const url = await storageUrl(dir);
      const marks = await withClient(url, async (client) => (await client.query('SELECT projection, shard_id, sequence FROM runtime.projection_watermarks ORDER BY 1, 2')).rows);
      const lost = submitBody({ instrumentId: RESTING, price: '41' });
      assert.equal((await venue.order('/api/v1/orders/submit', lost)).status, 200);
      await venue.untilProjected();
      // What a crash takes back from an asynchronous commit: the group's rows and its watermarks, as before it.
      await withClient(url, async (client) => {
        await client.query('DELETE FROM runtime.command_log WHERE command_id = $1', [lost.commandId]);
        await client.query('DELETE FROM runtime.order_lifecycle_state WHERE order_id = $1', [lost.orderId]);
        for (const mark of marks) await client.query('UPDATE runtime.projection_watermarks SET sequence = $3 WHERE projection = $1 AND shard_id = $2', [mark.projection, mark.shard_id, mark.sequence]);
      });
      const killedAt = killPostgres(dir);
      await venue.untilLogged(/"groups":1[^\n]*projection groups in a crash of the server \(committed without waiting for the WAL\): sent again/, READY_WITHIN_MS);
      await ready(venue);
      assert.ok(Date.now() - killedAt < READY_WITHIN_MS);
      await venue.untilProjected();
      const current = await venue.get(`/api/v1/orders/current?instrumentId=${RESTING}&limit=10`, TOKENS.traderA);
      assert.ok(
        (current.json.rows as { orderId: string }[]).some((row) => row.orderId === lost.orderId),
        'the order of the group sent again is in storage',
      );
      const stored = await withClient(await storageUrl(dir), (client) => client.query('SELECT 1 FROM runtime.command_log WHERE command_id = $1', [lost.commandId]));
      assert.equal(stored.rowCount, 1);
    },
  );
});
