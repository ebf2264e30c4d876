// Own orders and fills answered from memory (persistence/own-reads.ts) over real HTTP:
// every answer equals storage's query (persistence/market-data.ts, the read thread's);
// with runtime.order_lifecycle_state and runtime.executions locked, an order and a fill
// just acknowledged are read at once (read your writes, no PostgreSQL); after a graceful
// stop and after a kill -9, a read that reaches back before the start waits for storage
// and equals it, one that does not is answered from memory, and an order loaded at
// start and changed since shows its clientOrderId (looked up by orderId).

import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import pg from 'pg';
import { readFills, readOwnOrders } from '../../persistence/market-data.ts';
import { TestDatabase } from '../support/database.ts';
import { cancelBody, submitBody, TOKENS, TRADER_A, TRADER_B, stopAfter, VenueProcess } from '../support/venue-process.ts';

const I1 = '6b000000-0000-4000-8000-000000000001';
const I2 = '6b000000-0000-4000-8000-000000000002';
const B = { participantId: TRADER_B.participantId, accountId: TRADER_B.accountId };
let database: TestDatabase;
let url: string;
let dataDir: string;

before(async () => {
  database = await TestDatabase.start();
  url = await database.freshDatabase();
  dataDir = VenueProcess.makeDataDir();
});
after(async () => {
  await database.remove();
  VenueProcess.removeDataDir(dataDir);
});

const start = () => VenueProcess.start({ DATABASE_URL: url, DATA_DIR: dataDir });

async function submit(venue: VenueProcess, body: Record<string, unknown>, token: string = TOKENS.traderA): Promise<{ trades: unknown[] }> {
  const answer = await venue.order('/api/v1/orders/submit', body, { token, mode: 'sync-result' });
  assert.equal(answer.status, 200, answer.text);
  assert.ok(answer.json.outcome.accepted, answer.text);
  return answer.json;
}

/** Resting orders of A on both instruments (with and without clientOrderIds), B's sells lifting some, cancels. */
async function trade(venue: VenueProcess, round: number): Promise<string[]> {
  const open: string[] = [];
  for (let k = 0; k < 6; k++) {
    const body = submitBody({ instrumentId: k % 3 === 0 ? I2 : I1, side: 'BUY', price: String(100 + k), quantity: '5', ...(k % 2 === 0 ? { clientOrderId: `r${round}-k${k}-\u{1F4C8}` } : {}) });
    await submit(venue, body);
    open.push(body.orderId as string);
  }
  // Fills k=5 and k=4 (5 each) and one unit of k=2 on I1.
  assert.equal((await submit(venue, submitBody({ instrumentId: I1, side: 'SELL', price: '100', quantity: '11', ...B }), TOKENS.traderB)).trades.length, 3);
  const cancel = await venue.order('/api/v1/orders/cancel', cancelBody({ orderId: open[1]!, instrumentId: I1 }), { mode: 'sync-result' });
  assert.equal(cancel.status, 200, cancel.text);
  return open;
}

const paths = (limit: number) =>
  [
    ['current', null, `/api/v1/orders/current?limit=${limit}`],
    ['history', null, `/api/v1/orders/history?limit=${limit}`],
    ['current', I2, `/api/v1/orders/current?limit=${limit}&instrumentId=${I2}`],
    ['history', I1, `/api/v1/orders/history?limit=${limit}&instrumentId=${I1}`],
    ['fills', null, `/api/v1/orders/fills?limit=${limit}`],
    ['fills', I1, `/api/v1/orders/fills?limit=${limit}&instrumentId=${I1}`],
  ] as const;

/** Every read of both traders, at several limits: the HTTP answer equals storage's query. */
async function assertEqualToStorage(venue: VenueProcess, client: pg.Client): Promise<void> {
  await venue.untilProjected();
  for (const [token, participant] of [
    [TOKENS.traderA, TRADER_A.participantId],
    [TOKENS.traderB, TRADER_B.participantId],
  ] as const) {
    for (const limit of [1, 2, 5, 100]) {
      for (const [view, instrument, path] of paths(limit)) {
        const answer = await venue.get(path, token);
        assert.equal(answer.status, 200, answer.text);
        const stored = view === 'fills' ? await readFills(client, [participant], instrument, limit) : await readOwnOrders(client, view, [participant], instrument, limit);
        assert.deepEqual(answer.json, JSON.parse(stored.body), `${path} of ${participant}`);
      }
    }
  }
}

/** Runs `body` with both tables the own-order reads would query locked against reads. */
async function locked<T>(locker: pg.Client, body: () => Promise<T>): Promise<T> {
  await locker.query('BEGIN');
  await locker.query('LOCK TABLE runtime.order_lifecycle_state, runtime.executions IN ACCESS EXCLUSIVE MODE');
  try {
    return await body();
  } finally {
    await locker.query('ROLLBACK');
  }
}

test("own orders and fills from memory equal storage's, are read at once while storage is locked, are kept across a graceful stop, and after a crash reach back into storage", async () => {
  const client = new pg.Client({ connectionString: url });
  const locker = new pg.Client({ connectionString: url });
  let venue = await start();
  await stopAfter(
    () => venue,
    async () => {
      await client.connect();
      await locker.connect();
      const first = await trade(venue, 1);
      await assertEqualToStorage(venue, client);

      // Acknowledged while the tables are locked (the journal is elsewhere): read at once from memory.
      await locked(locker, async () => {
        const body = submitBody({ instrumentId: I1, side: 'BUY', price: '110', quantity: '2', clientOrderId: 'while-locked' });
        await submit(venue, body);
        const current = await venue.get('/api/v1/orders/current?limit=1', TOKENS.traderA);
        assert.equal(current.status, 200, current.text);
        assert.deepEqual([current.json.rows[0].orderId, current.json.rows[0].clientOrderId, current.json.rows[0].state], [body.orderId, 'while-locked', 'OPEN']);
        assert.equal((await submit(venue, submitBody({ instrumentId: I1, side: 'SELL', price: '110', quantity: '1', ...B }), TOKENS.traderB)).trades.length, 1);
        const fills = await venue.get('/api/v1/orders/fills?limit=1', TOKENS.traderB);
        assert.equal(fills.status, 200, fills.text);
        assert.deepEqual([fills.json.rows[0].side, fills.json.rows[0].quantity], ['SELL', { units: '1' }]);
        const history = await venue.get('/api/v1/orders/history?limit=1', TOKENS.traderA);
        assert.deepEqual([history.json.rows[0].orderId, history.json.rows[0].state, history.json.rows[0].filledQuantity], [body.orderId, 'PARTIALLY_FILLED', { units: '1' }]);
      });
      await assertEqualToStorage(venue, client);

      for (const restart of ['graceful', 'kill -9'] as const) {
        if (restart === 'graceful') assert.equal(await venue.stop(), 0);
        else await venue.kill();
        venue = await start();
        // Nothing changed since the start: every read reaches back into storage, and equals it.
        await assertEqualToStorage(venue, client);
        // Two new orders: a read of two is answered from memory, even with storage locked; a read of three waits for storage
        // after a crash, but not after a graceful stop, which kept the windows (persistence/own-reads-snapshot.ts).
        const fresh = [submitBody({ instrumentId: I2, side: 'BUY', price: '90', quantity: '1' }), submitBody({ instrumentId: I2, side: 'BUY', price: '91', quantity: '1' })];
        if (restart === 'graceful') {
          assert.match(venue.log, /"ownReads":"saved at the last stop: \d+ orders and \d+ fills"/);
          const kept = await locked(locker, async () => {
            for (const body of fresh) await submit(venue, body);
            return Promise.all(['/api/v1/orders/current?limit=3', '/api/v1/orders/history?limit=100', '/api/v1/orders/fills?limit=100'].map((path) => venue.get(path, TOKENS.traderA)));
          });
          for (const answer of kept) assert.equal(answer.status, 200, answer.text);
          assert.equal(kept[0]!.json.rows.length, 3);
          assert.equal(kept[1]!.json.rows.length, first.length + 3, 'every order of trader A, from before the stop as well');
          assert.ok(kept[2]!.json.rows.length >= 3, 'the fills from before the stop');
        } else
          await locked(locker, async () => {
            for (const body of fresh) await submit(venue, body);
            const two = await venue.get('/api/v1/orders/current?limit=2', TOKENS.traderA);
            assert.equal(two.status, 200, two.text);
            assert.deepEqual(new Set(two.json.rows.map((row: { orderId: string }) => row.orderId)), new Set(fresh.map((body) => body.orderId)));
            let answered = false;
            const three = venue.get('/api/v1/orders/current?limit=3', TOKENS.traderA).then((answer) => {
              answered = true;
              return answer;
            });
            await new Promise((resolve) => setTimeout(resolve, 700));
            assert.equal(answered, false, 'a read reaching before the start waits for storage');
            return { three }; // not the promise itself: the lock is released when this returns
          }).then(async ({ three }) => {
            const answer = await three;
            assert.equal(answer.status, 200, answer.text);
            assert.equal(answer.json.rows.length, 3);
          });
        // An order from before the start, cancelled since: from memory, its clientOrderId looked up by orderId.
        const [k, instrument] = restart === 'graceful' ? [0, I2] : [2, I1];
        const cancel = await venue.order('/api/v1/orders/cancel', cancelBody({ orderId: first[k]!, instrumentId: instrument }), { mode: 'sync-result' });
        assert.equal(cancel.status, 200, cancel.text);
        const touched = await venue.get(`/api/v1/orders/history?limit=1&instrumentId=${instrument}`, TOKENS.traderA);
        assert.equal(touched.status, 200, touched.text);
        assert.deepEqual([touched.json.rows[0].orderId, touched.json.rows[0].state, touched.json.rows[0].clientOrderId], [first[k], 'CANCELLED', `r1-k${k}-\u{1F4C8}`]);
        await assertEqualToStorage(venue, client);
      }
    },
    {
      after: async () => {
        await client.end().catch(() => undefined);
        await locker.end().catch(() => undefined);
      },
    },
  );
});
