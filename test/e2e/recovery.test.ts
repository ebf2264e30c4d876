// Durability end to end, on the real venue and its embedded PostgreSQL:
//  - a graceful restart keeps the session, every command's status (the storage view
//    equals the in-memory one), byte-for-byte replays, idempotency, orderId and
//    clientOrderId claims, and the books in their priority order;
//  - kill -9 in the middle of a burst (a fixed seeded mixed load of both traders), in
//    each processing mode, then a restart on the same data: every acknowledged command
//    is found terminal with its original answer, no trade is lost or duplicated, every
//    captured command reached the journal once, the books (lifecycle projection, depth
//    view, matching itself) equal an independent replay of the committed history,
//    trading goes on. The checks live in test/support/crash-checks.ts, shared with the
//    crash loop (test/0-endurance/crash-loop.test.ts).

import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import path from 'node:path';
import { test } from 'node:test';
import { SeededRandom } from '../../bench/lib/seeded-random.ts';
import { renderPointer } from '../../core/outcome-format.ts';
import { shardOf } from '../../core/shard-map.ts';
import { uuidWords } from '../../core/uuid.ts';
import { writeOpenOrders } from '../../persistence/open-orders-snapshot.ts';
import type { RestingOrder } from '../../persistence/resting-orders.ts';
import { commitCaptured } from '../support/captured-intake.ts';
import { withClient } from '../support/database.ts';
import {
  assertBooksEqualReplay,
  assertJournalAndTrades,
  assertReplaysRepeat,
  assertTerminalWithOriginalAnswer,
  assertUnansweredNeverStuck,
  INSTRUMENTS,
  isAcknowledged,
  mixedCommand,
  MODES,
  sendUntilKilled,
  SHARDS,
  sweepAgainstReplay,
  TERMINAL,
  type Sent,
} from '../support/crash-checks.ts';
import { cancelBody, cancelByClientOrderBody, submitBody, TOKENS, TRADER_B, dataDirs, storageUrl, stopAfter, VenueProcess, type HttpAnswer } from '../support/venue-process.ts';

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const server = createServer().listen(0, '127.0.0.1', () => {
      const { port } = server.address() as AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

const dataDir = dataDirs();

/** Polls a command's status until it is terminal (bounded). */
async function terminalView(venue: VenueProcess, commandId: string): Promise<any> {
  for (let attempt = 0; attempt < 400; attempt++) {
    const answer = await venue.get(`/api/v1/commands/${commandId}`, TOKENS.operator);
    if (answer.status === 200 && TERMINAL.has(answer.json.status) && answer.json.canonicalMaterialized === true) return answer.json;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  throw new Error(`command ${commandId} did not become terminal`);
}

test('the test instruments spread over both shards', () => {
  const shards = new Set(INSTRUMENTS.map((id) => shardOf(uuidWords(id), 0, SHARDS)));
  assert.equal(shards.size, SHARDS);
});

test('a graceful restart keeps the session, statuses, replays, claims and books', async () => {
  const dir = dataDir();
  let venue = await VenueProcess.start({ DATA_DIR: dir });
  const [instrument] = INSTRUMENTS as [string];
  const sent: { body: Record<string, unknown>; key: string; mode: string; answer: HttpAnswer }[] = [];
  const send = async (path: string, body: Record<string, unknown>, mode: string) => {
    const key = crypto.randomUUID();
    const answer = await venue.order(path, body, { key, mode });
    sent.push({ body, key, mode, answer });
    return answer;
  };
  const session = (await venue.get('/api/v1/venue/session', TOKENS.traderA)).json;
  // Resting bids: 101 (two orders, time priority), 100 (one hidden, one with a clientOrderId).
  const first = submitBody({ instrumentId: instrument, side: 'BUY', price: '101', quantity: '5' });
  const second = submitBody({ instrumentId: instrument, side: 'BUY', price: '101', quantity: '7' });
  const hidden = submitBody({ instrumentId: instrument, side: 'BUY', price: '100', quantity: '3', orderType: 'LIMIT_HIDDEN' });
  const named = submitBody({ instrumentId: instrument, side: 'BUY', price: '100', quantity: '4', clientOrderId: 'restart-coid-1' });
  const doomed = submitBody({ instrumentId: instrument, side: 'BUY', price: '99', quantity: '1' });
  await send('/api/v1/orders/submit', first, 'sync-result');
  await send('/api/v1/orders/submit', second, 'captured-ack');
  await send('/api/v1/orders/submit', hidden, 'stream-ack');
  await send('/api/v1/orders/submit', named, 'accepted-async');
  await send('/api/v1/orders/submit', doomed, 'sync-result');
  for (const { body } of sent) await terminalView(venue, body.commandId as string);
  const cancel = cancelBody({ orderId: doomed.orderId as string, instrumentId: instrument, runId: session.runId, venueSessionId: session.venueSessionId });
  assert.equal((await send('/api/v1/orders/cancel', cancel, 'sync-result')).status, 200);
  // A partial fill of the first bid.
  const seller = submitBody({ instrumentId: instrument, side: 'SELL', price: '101', quantity: '2', participantId: TRADER_B.participantId, accountId: TRADER_B.accountId });
  const sold = await venue.order('/api/v1/orders/submit', seller, { token: TOKENS.traderB, mode: 'sync-result' });
  assert.equal(sold.json.trades.length, 1);

  const viewsBefore = new Map<string, any>();
  for (const { body } of sent) viewsBefore.set(body.commandId as string, await terminalView(venue, body.commandId as string));
  const depthBefore = (await venue.get(`/api/v1/market-data/depth/${instrument}`, TOKENS.viewer)).json;
  assert.equal(depthBefore.bids.length, 2);
  assert.equal(await venue.stop(), 0);

  venue = await VenueProcess.start({ DATA_DIR: dir });
  await stopAfter(
    () => venue,
    async () => {
      assert.equal((await venue.get('/readyz')).status, 200);
      // Both shards' engines came from the files saved at the stop (persistence/engine-snapshot.ts), not a replay:
      // everything below about priority, claims and matching is true of the restored engines.
      assert.match(venue.log, /"replayed":0,[^\n]*"books":\["saved at the last stop","saved at the last stop"\][^\n]*order books restored/);
      // And the projector's open orders from the file saved with them (persistence/open-orders-snapshot.ts).
      assert.match(venue.log, /"openOrders":"saved at the last stop"/);
      assert.deepEqual((await venue.get('/api/v1/venue/session', TOKENS.traderA)).json, session, 'a restart does not end the session');
      assert.deepEqual((await venue.get(`/api/v1/market-data/depth/${instrument}`, TOKENS.viewer)).json, depthBefore, 'the read thread loaded the same books');
      for (const { body, key, mode, answer } of sent) {
        const commandId = body.commandId as string;
        const view = (await venue.get(`/api/v1/commands/${commandId}`, TOKENS.traderA)).json;
        assert.deepEqual(view, viewsBefore.get(commandId), `the stored status of ${commandId} (${mode}) equals the in-memory one`);
        const replay = await venue.order(body.reason === undefined ? '/api/v1/orders/submit' : '/api/v1/orders/cancel', body, { key, mode });
        assert.equal(replay.status, answer.status, replay.text);
        assert.equal(replay.text, answer.text, 'a replay after the restart repeats the original answer byte for byte');
        const conflict = await venue.order('/api/v1/orders/submit', { ...submitBody({ instrumentId: instrument }) }, { key, mode });
        assert.equal(conflict.status, 409, 'the same key with another payload is a conflict, across restarts');
      }
      // The orderId and clientOrderId claims survived.
      const reused = await venue.order('/api/v1/orders/submit', submitBody({ instrumentId: instrument, orderId: first.orderId as string }));
      assert.equal(reused.json.outcome.rejected.code, 'DUPLICATE_ORDER_ID');
      const reusedName = await venue.order('/api/v1/orders/submit', submitBody({ instrumentId: instrument, clientOrderId: 'restart-coid-1' }));
      assert.equal(reusedName.json.outcome.rejected.code, 'DUPLICATE_CLIENT_ORDER_ID');
      // The book kept its priority: a sweeping sell meets 101 (first, then second), then 100 (displayed, then hidden).
      const sweep = submitBody({ instrumentId: instrument, side: 'SELL', price: '100', quantity: '20', timeInForce: 'IOC', participantId: TRADER_B.participantId, accountId: TRADER_B.accountId });
      const swept = await venue.order('/api/v1/orders/submit', sweep, { token: TOKENS.traderB, mode: 'sync-result' });
      assert.deepEqual(
        swept.json.trades.map((trade: any) => [trade.buyOrderId, trade.quantity.units, trade.price.nanos]),
        [
          [first.orderId, '3', '101000000000'],
          [second.orderId, '7', '101000000000'],
          [named.orderId, '4', '100000000000'],
          [hidden.orderId, '3', '100000000000'],
        ],
      );
      // The projector knew every restored order: their lifecycle rows took the fills.
      await venue.untilProjected();
      await withClient(await storageUrl(dir), async (client) => {
        const rows = await client.query<{ order_id: string; state: string; filled: string }>(
          'SELECT order_id, state, filled_quantity_units::text AS filled FROM runtime.order_lifecycle_state WHERE order_id = ANY($1) ORDER BY filled_quantity_units',
          [[first.orderId, second.orderId, named.orderId, hidden.orderId]],
        );
        assert.deepEqual(
          rows.rows.map((row) => [row.order_id, row.state, row.filled]),
          [
            [hidden.orderId, 'FILLED', '3'],
            [named.orderId, 'FILLED', '4'],
            [first.orderId, 'FILLED', '5'],
            [second.orderId, 'FILLED', '7'],
          ],
        );
      });
      // cancel-by-client-order still resolves a name taken before the restart (the order is filled now).
      const byName = await venue.order('/api/v1/orders/cancel-by-client-order', cancelByClientOrderBody('restart-coid-1'));
      assert.equal(byName.status, 200);
      assert.equal(byName.json.outcome.rejected.orderId, named.orderId);
    },
  );
});

test('a damaged saved book is rebuilt from its journal instead, that shard only; open orders that cannot be loaded are read from storage', async () => {
  const dir = dataDir();
  let venue = await VenueProcess.start({ DATA_DIR: dir });
  // One resting bid on an instrument of each shard.
  const bids = [0, 1].map((shard) => {
    const instrumentId = INSTRUMENTS.find((id) => shardOf(uuidWords(id), 0, SHARDS) === shard)!;
    return submitBody({ instrumentId, side: 'BUY', price: '50', quantity: '9' });
  });
  await stopAfter(
    () => venue,
    async () => {
      for (const bid of bids) assert.equal((await venue.order('/api/v1/orders/submit', bid, { mode: 'sync-result' })).status, 200);
    },
  );
  const shardFile = path.join(dir, 'shard-1.bin');
  const bytes = readFileSync(shardFile);
  bytes[bytes.length - 64]! ^= 0x01;
  writeFileSync(shardFile, bytes);
  // The open orders' file rewritten whole (its crc holds) under the same token, with one order twice.
  const ordersFile = path.join(dir, 'open-orders.bin');
  const saved = readFileSync(ordersFile);
  const header = JSON.parse(saved.toString('utf8', 8, 8 + saved.readUInt32LE(4))) as { token: string; watermarks: number[] };
  const twice: RestingOrder = {
    ids: new Int32Array(16).fill(7),
    runNo: 1,
    sessionNo: 1,
    side: 0,
    orderType: 0,
    timeInForce: 0,
    state: 1,
    priceNanos: 1e9,
    quantity: 1,
    filled: 0,
    currency: 0x555344,
    shard: 0,
  };
  writeOpenOrders(ordersFile, header.token, header.watermarks, 2, (visit) => [twice, twice].forEach(visit));

  venue = await VenueProcess.start({ DATA_DIR: dir });
  await stopAfter(
    () => venue,
    async () => {
      assert.match(venue.log, /"books":\["saved at the last stop","replayed \(a checksum mismatch\)"\][^\n]*order books restored/);
      assert.match(venue.log, /"openOrders":"read from storage \(the file could not be loaded: a resting order loaded twice\)"/);
      // Both books hold their bid: a crossing sell on each trades against it.
      for (const bid of bids) {
        const sell = submitBody({
          instrumentId: bid.instrumentId as string,
          side: 'SELL',
          price: '50',
          quantity: '4',
          timeInForce: 'IOC',
          participantId: TRADER_B.participantId,
          accountId: TRADER_B.accountId,
        });
        const sold = await venue.order('/api/v1/orders/submit', sell, { token: TOKENS.traderB, mode: 'sync-result' });
        assert.deepEqual(
          sold.json.trades.map((trade: any) => [trade.buyOrderId, trade.quantity.units]),
          [[bid.orderId, '4']],
        );
      }
      await venue.untilProjected();
      await withClient(await storageUrl(dir), async (client) => {
        const rows = await client.query<{ state: string; filled: string }>('SELECT state, filled_quantity_units::text AS filled FROM runtime.order_lifecycle_state WHERE order_id = ANY($1)', [
          bids.map((bid) => bid.orderId),
        ]);
        assert.deepEqual(
          rows.rows.map((row) => [row.state, row.filled]),
          [
            ['PARTIALLY_FILLED', '4'],
            ['PARTIALLY_FILLED', '4'],
          ],
        );
      });
    },
  );
});

const BURST = 800;
const KILL_AFTER = 250;
const CONCURRENCY = 24;

for (const [index, mode] of MODES.entries()) {
  // Every other mode kills the venue's PostgreSQL too: its start then recovers it from the WAL
  // as a standby and promotes it (persistence/postgres-recovery.ts, recoverAsStandby).
  const database = index % 2 === 1;
  test(`kill -9 in the middle of a burst (${mode}${database ? ', its PostgreSQL killed too' : ''}), then a restart on the same data`, async (t) => {
    const dir = dataDir();
    const env = { DATA_DIR: dir, PROCESSING_MODE: mode, ORDER_CAPACITY: '65536' };
    let venue = await VenueProcess.start(env);
    const session = (await venue.get('/api/v1/venue/session', TOKENS.traderA)).json;
    const random = new SeededRandom(1000 + index); // a fixed burst per mode
    const sent: Sent[] = [];
    for (let i = 0; i < BURST; i++) sent.push(mixedCommand(random, sent, session));
    const burst = await sendUntilKilled(venue, sent, { concurrency: CONCURRENCY, killAfterAnswers: KILL_AFTER, database });
    assert.ok(burst.killedMidLoad, 'the venue was killed during the burst');

    venue = await VenueProcess.start(env);
    await stopAfter(
      () => venue,
      async () => {
        assert.equal((await venue.get('/readyz')).status, 200);
        const recovered = (pattern: RegExp) => Number(pattern.exec(venue.log)?.[1] ?? 0);
        t.diagnostic(
          `answered ${sent.filter((c) => c.answer !== null).length} of ${BURST}; restart replayed ${recovered(/"replayed":(\d+)[^\n]*order books restored/)} commands, re-drove ${recovered(/"commands":(\d+)[^\n]*re-driven/)}`,
        );
        assert.match(
          venue.log,
          /"books":\["replayed \(no graceful stop noted in the database\)","replayed \(no graceful stop noted in the database\)"\]/,
          'after a crash the books come from the journal',
        );
        if (database) {
          assert.match(venue.log, /PostgreSQL promoted after its recovery/);
          await venue.untilLogged(/checkpoint after its promotion completed/, 30_000); // asked for once the venue was ready
        } else {
          assert.doesNotMatch(venue.log, /did not stop cleanly/, 'a server left running is stopped cleanly, not recovered');
        }
        const acknowledged = sent.filter(isAcknowledged);
        assert.ok(acknowledged.length >= KILL_AFTER - CONCURRENCY, `most answers were acknowledgements (${acknowledged.length})`);
        await assertTerminalWithOriginalAnswer(venue, acknowledged);
        await assertReplaysRepeat(venue, acknowledged);
        await assertUnansweredNeverStuck(venue, sent.filter((c) => c.answer === null).slice(0, 60));

        await venue.untilProjected();
        await withClient(await storageUrl(dir), async (client) => {
          const { history } = await assertJournalAndTrades(client, acknowledged);
          const { engines, resting } = await assertBooksEqualReplay(client, venue, history);
          assert.ok(resting > 0, 'the burst left resting orders');
          await sweepAgainstReplay(venue, engines);
        });
      },
    );
  });
}

test('a command captured but never journaled (the process died in between) is re-driven to a terminal status, once', async (t) => {
  const dir = dataDir();
  const [instrument] = INSTRUMENTS as [string];
  let venue = await VenueProcess.start({ DATA_DIR: dir });
  const resting = submitBody({ instrumentId: instrument, side: 'SELL', price: '50', quantity: '6', participantId: TRADER_B.participantId, accountId: TRADER_B.accountId });
  assert.equal((await venue.order('/api/v1/orders/submit', resting, { token: TOKENS.traderB })).status, 200);
  assert.equal(await venue.stop(), 0);

  // The intake records a gateway wrote for two captured-ack submits, committed (as tier 1 does,
  // in an intake batch of its own commit) while their journal batch never was: one crosses the
  // resting sell, the other rests with a clientOrderId.
  const clientId = 'crash-client';
  const body = submitBody({ instrumentId: instrument, side: 'BUY', price: '50', quantity: '4' });
  const key = `captured-${crypto.randomUUID()}`;
  const clientOrderId = `redriven-${crypto.randomUUID()}`;
  const restingBuy = submitBody({ instrumentId: instrument, side: 'BUY', price: '40', quantity: '3', clientOrderId });
  await commitCaptured(dir, [
    { submit: body, token: TOKENS.traderA, clientId, idempotencyKey: key, shards: SHARDS },
    { submit: restingBuy, token: TOKENS.traderA, clientId, idempotencyKey: `captured-${crypto.randomUUID()}`, shards: SHARDS },
  ]);

  // While it recovers, the venue listens but is not ready: /readyz and the order routes answer 503.
  const port = await freePort();
  const starting = VenueProcess.start({ DATA_DIR: dir, PORT: String(port) });
  const seen = new Set<string>();
  let ready = false;
  while (!ready) {
    try {
      const readyz = await fetch(`http://127.0.0.1:${port}/readyz`);
      const text = await readyz.text();
      if (readyz.status === 200) ready = true;
      else {
        seen.add(`${readyz.status} ${JSON.parse(text).error}`);
        const order = await fetch(`http://127.0.0.1:${port}/api/v1/orders/submit`, { method: 'POST', headers: { authorization: `Bearer ${TOKENS.traderA}` }, body: '{}' });
        seen.add(`order ${order.status} ${order.headers.get('retry-after')}`);
      }
    } catch {
      await new Promise((resolve) => setTimeout(resolve, 5)); // not listening yet
    }
  }
  venue = await starting;
  assert.ok(seen.has('503 the venue is starting'), [...seen].join('; '));
  assert.ok(seen.has('order 503 1'), [...seen].join('; '));
  await stopAfter(
    () => venue,
    async () => {
      assert.match(venue.log, /"commands":2,"msg":"captured commands re-driven to a terminal status"/);
      // Learned by id, not by another pass over storage: the graceful stop's key filters were loaded, nothing scanned.
      assert.match(venue.log, /"commands":2,"orders":2,"msg":"the commands the start put in storage, and their orders, learned by the shared tables"/);
      assert.equal(venue.log.match(/the key filters hold every stored one/g)?.length, 1);
      const view = (await venue.get(`/api/v1/commands/${body.commandId as string}`, TOKENS.traderA)).json;
      const pointer = renderPointer(body.commandId as string, 'captured-ack');
      assert.deepEqual([view.status, view.processingMode, view.responseStatus, view.responsePayloadJson], ['COMPLETED', 'captured-ack', 202, pointer]);
      const result = JSON.parse(view.resultPayloadJson);
      assert.deepEqual(
        result.trades.map((trade: any) => [trade.buyOrderId, trade.sellOrderId, trade.quantity.units, trade.price.nanos]),
        [[body.orderId, resting.orderId, '4', '50000000000']],
      );
      const replay = await venue.order('/api/v1/orders/submit', body, { key, clientId });
      assert.deepEqual([replay.status, replay.text], [202, pointer], 'the client retrying its lost answer gets the acknowledgement');
      // The resting re-driven order's clientOrderId resolves (the shared tables hold its claim).
      const cancelled = await venue.order('/api/v1/orders/cancel-by-client-order', cancelByClientOrderBody(clientOrderId), { mode: 'sync-result' });
      assert.equal(cancelled.json.outcome.accepted?.orderId, restingBuy.orderId, cancelled.text);
      // The resting sell has 2 left: a second buy of 5 fills 2 of it.
      const next = await venue.order('/api/v1/orders/submit', submitBody({ instrumentId: instrument, side: 'BUY', price: '50', quantity: '5' }), { mode: 'sync-result' });
      assert.deepEqual(
        next.json.trades.map((trade: any) => trade.quantity.units),
        ['2'],
      );
      assert.equal(await venue.stop(), 0);

      venue = await VenueProcess.start({ DATA_DIR: dir });
      assert.doesNotMatch(venue.log, /re-driven/, 'a second restart re-drives nothing');
      await withClient(await storageUrl(dir), async (client) => {
        const trades = await client.query('SELECT quantity_units FROM runtime.trades ORDER BY tape_sequence');
        assert.deepEqual(
          trades.rows.map((row) => row.quantity_units),
          ['4', '2'],
        );
      });
      t.diagnostic('re-driven once, answered by replay, not re-driven again');
    },
  );
});
