// Durability end to end, on the real venue and its embedded PostgreSQL:
//  - a graceful restart keeps the session, every command's status (the storage view
//    equals the in-memory one), byte-for-byte replays, idempotency, orderId and
//    clientOrderId claims, and the books in their priority order;
//  - kill -9 in the middle of a burst, in each processing mode, then a restart on the
//    same data: every acknowledged command is found terminal with its original answer,
//    no trade is lost or duplicated, every captured command reached the journal once,
//    the books equal an independent replay of the committed history, trading goes on.

import assert from 'node:assert/strict';
import { createServer, type AddressInfo } from 'node:net';
import { crc32 } from 'node:zlib';
import { after, test } from 'node:test';
import { EVENT_TRADE, Opcode, OrderType, Side, TimeInForce } from '../../core/codes.ts';
import { COMMAND_SLOT_BYTES, encodeCommand, slotViews } from '../../core/command-slot.ts';
import { INTAKE_RECORD_BYTES, writeIntake } from '../../core/intake-record.ts';
import { renderPointer } from '../../core/outcome-format.ts';
import { shardOf } from '../../core/shard-map.ts';
import { uuidWords } from '../../core/uuid.ts';
import { DEFAULT_PRINCIPALS_FILE } from '../../gateway/config.ts';
import { payloadDigest, scopeDigest } from '../../gateway/keys.ts';
import { Principals } from '../../gateway/principals.ts';
import { ROUTE_SUBMIT } from '../../gateway/status-view.ts';
import { embeddedUrl, startEmbeddedPostgres } from '../../persistence/embedded-postgres.ts';
import { withClient } from '../support/database.ts';
import { committedHistory, replayHistory } from '../support/journal.ts';
import {
  cancelBody,
  cancelByClientOrderBody,
  modifyBody,
  submitBody,
  TOKENS,
  TRADER_A,
  TRADER_B,
  VenueProcess,
  type HttpAnswer,
} from '../support/venue-process.ts';

const SHARDS = 2;
const INSTRUMENTS = [
  '5a000000-0000-4000-8000-000000000001',
  '5a000000-0000-4000-8000-000000000002',
  '5a000000-0000-4000-8000-000000000003',
  '5a000000-0000-4000-8000-000000000004',
];
const TERMINAL = new Set(['COMPLETED', 'REJECTED']);
const dataDirs: string[] = [];

after(() => {
  if (process.env.KEEP_TEST_DATA === undefined) for (const dir of dataDirs) VenueProcess.removeDataDir(dir);
});

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const server = createServer().listen(0, '127.0.0.1', () => {
      const { port } = server.address() as AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

function dataDir(): string {
  const dir = VenueProcess.makeDataDir();
  dataDirs.push(dir);
  return dir;
}

async function storageUrl(dir: string): Promise<string> {
  const url = await embeddedUrl(dir);
  assert.ok(url !== null, 'the venue runs its embedded database');
  return url;
}

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
  try {
    assert.equal((await venue.get('/readyz')).status, 200);
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
    // cancel-by-client-order still resolves a name taken before the restart (the order is filled now).
    const byName = await venue.order('/api/v1/orders/cancel-by-client-order', cancelByClientOrderBody('restart-coid-1'));
    assert.equal(byName.status, 200);
    assert.equal(byName.json.outcome.rejected.orderId, named.orderId);
  } finally {
    assert.equal(await venue.stop(), 0);
  }
});

interface Sent {
  path: string;
  body: Record<string, unknown>;
  key: string;
  answer: { status: number; text: string } | null;
}

/** The i-th command of the burst: resting and crossing orders on four instruments, some hidden, IOC, cancels. */
function burstCommand(i: number, sent: Sent[], session: { runId: string; venueSessionId: string }): Sent {
  const instrumentId = INSTRUMENTS[i % INSTRUMENTS.length]!;
  const key = `burst-${i}-${crypto.randomUUID()}`;
  if (i % 10 === 9) {
    const target = sent[i - 4]!;
    if (target.path === '/api/v1/orders/submit') {
      return {
        path: '/api/v1/orders/cancel',
        key,
        answer: null,
        body: cancelBody({ orderId: target.body.orderId as string, instrumentId: target.body.instrumentId as string, ...session }),
      };
    }
  }
  if (i % 13 === 12) {
    const target = sent[i - 6]!;
    if (target.path === '/api/v1/orders/submit') {
      const body = target.body;
      const price = Number(body.limitPrice) + (body.side === 'BUY' ? 1 : -1); // towards the other side: may cross
      return {
        path: '/api/v1/orders/modify',
        key,
        answer: null,
        body: modifyBody({ orderId: body.orderId as string, instrumentId: body.instrumentId as string, ...session, price: String(price), quantity: String(Number(body.quantityUnits) + 2) }),
      };
    }
  }
  const buy = i % 2 === 0;
  return {
    path: '/api/v1/orders/submit',
    key,
    answer: null,
    body: submitBody({
      instrumentId,
      side: buy ? 'BUY' : 'SELL',
      price: String(buy ? 99 + ((i * 7) % 5) : 101 + ((i * 3) % 5)),
      quantity: String(1 + (i % 9)),
      orderType: i % 7 === 3 ? 'LIMIT_HIDDEN' : 'LIMIT',
      timeInForce: i % 11 === 5 ? 'IOC' : 'DAY',
    }),
  };
}

const BURST = 800;
const KILL_AFTER = 250;
const CONCURRENCY = 24;

for (const mode of ['sync-result', 'captured-ack', 'stream-ack', 'accepted-async']) {
  test(`kill -9 in the middle of a burst (${mode}), then a restart on the same data`, async (t) => {
    const dir = dataDir();
    const env = { DATA_DIR: dir, PROCESSING_MODE: mode, ORDER_CAPACITY: '65536' };
    let venue = await VenueProcess.start(env);
    const session = (await venue.get('/api/v1/venue/session', TOKENS.traderA)).json;
    const sent: Sent[] = [];
    for (let i = 0; i < BURST; i++) sent.push(burstCommand(i, sent, session));
    let answered = 0;
    let killing: Promise<void> | null = null;
    let next = 0;
    const worker = async () => {
      while (next < sent.length && killing === null) {
        const command = sent[next++]!;
        try {
          const answer = await venue.order(command.path, command.body, { key: command.key });
          command.answer = { status: answer.status, text: answer.text };
          if (++answered === KILL_AFTER) killing = venue.kill();
        } catch {
          // the connection died with the venue: not acknowledged
        }
      }
    };
    await Promise.all(Array.from({ length: CONCURRENCY }, worker));
    await killing;
    assert.ok(killing !== null, 'the venue was killed during the burst');

    venue = await VenueProcess.start(env);
    try {
      assert.equal((await venue.get('/readyz')).status, 200);
      const recovered = (pattern: RegExp) => Number(pattern.exec(venue.log)?.[1] ?? 0);
      t.diagnostic(
        `answered ${sent.filter((c) => c.answer !== null).length} of ${BURST}; restart replayed ${recovered(/"commands":(\d+)[^\n]*order books rebuilt/)} commands, re-drove ${recovered(/"commands":(\d+)[^\n]*re-driven/)}`,
      );
      const acknowledged = sent.filter((command) => command.answer !== null && (command.answer.status === 200 || command.answer.status === 202));
      assert.ok(acknowledged.length >= KILL_AFTER - CONCURRENCY, `most answers were acknowledgements (${acknowledged.length})`);
      for (const command of acknowledged) {
        const view = (await venue.get(`/api/v1/commands/${command.body.commandId as string}`, TOKENS.traderA)).json;
        assert.ok(TERMINAL.has(view.status), `acknowledged command ${command.key} is terminal after the restart (${view.status})`);
        assert.equal(view.responsePayloadJson, command.answer!.text, 'with its original answer');
        const replay = await venue.order(command.path, command.body, { key: command.key });
        assert.equal(replay.status, command.answer!.status);
        assert.equal(replay.text, command.answer!.text, 'a replay repeats the original answer byte for byte');
      }
      // Commands whose answer was lost are either unknown (never captured) or terminal: never stuck.
      for (const command of sent.filter((c) => c.answer === null).slice(0, 60)) {
        const status = await venue.get(`/api/v1/commands/${command.body.commandId as string}`, TOKENS.traderA);
        if (status.status === 404) continue;
        assert.ok(TERMINAL.has(status.json.status), `a captured command is terminal (${status.json.status})`);
      }

      const url = await storageUrl(dir);
      await withClient(url, async (client) => {
        const history = await committedHistory(client, SHARDS);
        const journaled = history.flat();
        const ids = journaled.map((command) => command.commandId);
        assert.equal(new Set(ids).size, ids.length, 'every command is on the journal once');
        const logged = (await client.query<{ id: string }>('SELECT command_id AS id FROM runtime.command_log')).rows.map((row) => row.id);
        assert.deepEqual([...logged].sort(), [...ids].sort(), 'every captured command reached the journal (re-driven if it had to be), and nothing else did');
        for (const command of acknowledged) assert.ok(ids.includes(command.body.commandId as string), 'acknowledged commands are on the journal');

        // Trades: the projection holds exactly the journal's trades, and every trade an answer reported.
        const journalTrades = journaled.flatMap((command) => command.events.filter((event) => event.kind === EVENT_TRADE));
        const stored = await client.query<{ n: string; distinct: string }>('SELECT count(*) AS n, count(DISTINCT trade_id) AS distinct FROM runtime.trades');
        assert.equal(Number(stored.rows[0]!.n), journalTrades.length, 'no trade lost or duplicated in runtime.trades');
        assert.equal(stored.rows[0]!.distinct, stored.rows[0]!.n);
        const tradeRows = new Map(
          (await client.query<{ id: string; buy: string; sell: string; q: string; p: string }>(
            'SELECT trade_id AS id, buy_order_id AS buy, sell_order_id AS sell, quantity_units AS q, price_nanos AS p FROM runtime.trades',
          )).rows.map((row) => [row.id, row]),
        );
        for (const command of acknowledged) {
          if (command.answer!.status !== 200) continue;
          for (const trade of JSON.parse(command.answer!.text).trades) {
            const row = tradeRows.get(trade.tradeId);
            assert.ok(row !== undefined, `answered trade ${trade.tradeId} is stored`);
            assert.deepEqual([row.buy, row.sell, row.q, row.p], [trade.buyOrderId, trade.sellOrderId, trade.quantity.units, trade.price.nanos]);
          }
        }
        const executions = await client.query<{ n: string }>('SELECT count(*) AS n FROM runtime.executions');
        assert.equal(Number(executions.rows[0]!.n), journalTrades.length * 2, 'two executions per trade');

        // The books: an independent replay of the committed history, against the lifecycle projection and the venue itself.
        const engines = replayHistory(history);
        const open = new Map(
          (await client.query<{ id: string; remaining: string }>(
            "SELECT order_id AS id, remaining_quantity_units AS remaining FROM runtime.order_lifecycle_state WHERE state IN ('OPEN', 'PARTIALLY_FILLED')",
          )).rows.map((row) => [row.id, Number(row.remaining)]),
        );
        const expectedOpen = new Map<string, number>();
        for (const instrument of INSTRUMENTS) {
          const engine = engines[shardOf(uuidWords(instrument), 0, SHARDS)]!;
          for (const side of ['BUY', 'SELL'] as const) for (const order of engine.book(side, instrument)) expectedOpen.set(order.orderId, order.leaves);
        }
        assert.ok(expectedOpen.size > 0, 'the burst left resting orders');
        if (process.env.DEBUG_RECOVERY) {
          const extra = [...open.keys()].filter((id) => !expectedOpen.has(id) || expectedOpen.get(id) !== open.get(id));
          for (const id of extra.slice(0, 3)) {
            console.log('EXTRA', id, open.get(id), expectedOpen.get(id), JSON.stringify((await client.query('SELECT * FROM runtime.order_lifecycle_state WHERE order_id = $1', [id])).rows));
            for (const command of journaled) for (const event of command.events) if (event.orderA === id || (event as any).orderB === id) console.log('  EVENT', command.shard, JSON.stringify(event));
          }
        }
        assert.deepEqual(open, expectedOpen, 'order_lifecycle_state holds the replayed books');

        for (const instrument of INSTRUMENTS) {
          const engine = engines[shardOf(uuidWords(instrument), 0, SHARDS)]!;
          for (const side of ['SELL', 'BUY'] as const) {
            const resting = engine.book(side, instrument);
            if (resting.length === 0) continue;
            const prices = resting.map((order) => order.priceNanos / 1e9);
            const sweep = submitBody({
              instrumentId: instrument,
              side: side === 'SELL' ? 'BUY' : 'SELL',
              price: String(side === 'SELL' ? Math.max(...prices) : Math.min(...prices)),
              quantity: String(resting.reduce((sum, order) => sum + order.leaves, 0)),
              timeInForce: 'IOC',
              participantId: TRADER_B.participantId,
              accountId: TRADER_B.accountId,
            });
            const swept = await venue.order('/api/v1/orders/submit', sweep, { token: TOKENS.traderB, mode: 'sync-result' });
            assert.equal(swept.status, 200, 'trading goes on after the restart');
            assert.deepEqual(
              swept.json.trades.map((trade: any) => [side === 'SELL' ? trade.sellOrderId : trade.buyOrderId, Number(trade.quantity.units), Number(trade.price.nanos)]),
              resting.map((order) => [order.orderId, order.leaves, order.priceNanos]),
              `the ${side} book of ${instrument} matches in the replay's priority order`,
            );
          }
        }
      });
    } finally {
      assert.equal(await venue.stop(), 0);
    }
  });
}

test('a command captured but never journaled (the process died in between) is re-driven to a terminal status, once', async (t) => {
  const dir = dataDir();
  const [instrument] = INSTRUMENTS as [string];
  let venue = await VenueProcess.start({ DATA_DIR: dir });
  const session = (await venue.get('/api/v1/venue/session', TOKENS.traderA)).json;
  const resting = submitBody({ instrumentId: instrument, side: 'SELL', price: '50', quantity: '6', participantId: TRADER_B.participantId, accountId: TRADER_B.accountId });
  assert.equal((await venue.order('/api/v1/orders/submit', resting, { token: TOKENS.traderB })).status, 200);
  assert.equal(await venue.stop(), 0);

  // The intake record a gateway wrote for a captured-ack submit that crosses the resting sell,
  // committed (as tier 1 does, in an intake batch of its own commit) while its journal batch never was.
  const body = submitBody({ instrumentId: instrument, side: 'BUY', price: '50', quantity: '4' });
  const key = `captured-${crypto.randomUUID()}`;
  const clientId = 'crash-client';
  const principal = Principals.load(DEFAULT_PRINCIPALS_FILE).authenticate(`Bearer ${TOKENS.traderA}`)!;
  const slot = new ArrayBuffer(COMMAND_SLOT_BYTES);
  encodeCommand(
    {
      opcode: Opcode.SUBMIT, side: Side.BUY, orderType: OrderType.LIMIT, timeInForce: TimeInForce.DAY, runNo: 1, sessionNo: 1,
      commandId: body.commandId as string, orderId: body.orderId as string, instrumentId: instrument, participantId: TRADER_A.participantId,
      accountId: TRADER_A.accountId, currency: 'USD', priceNanos: 50_000_000_000, quantityUnits: 4, timestampUs: 0,
    },
    slotViews(slot),
    0,
  );
  const record = new ArrayBuffer(INTAKE_RECORD_BYTES);
  const uuidBytes = (text: string) => Buffer.from(text.replace(/-/g, ''), 'hex');
  writeIntake({ words: new Int32Array(record), floats: new Float64Array(record), bytes: new Uint8Array(record) }, 0, {
    processingMode: 1, route: ROUTE_SUBMIT, shard: shardOf(uuidWords(instrument), 0, SHARDS), principal: principal.index, receivedAtUs: Date.now() * 1000,
    commandId: uuidBytes(body.commandId as string), scopeDigest: scopeDigest(principal.principalId, clientId, key), payloadHash: payloadDigest(ROUTE_SUBMIT, body),
    orderId: uuidBytes(body.orderId as string), instrumentId: uuidBytes(instrument), slot: new Uint8Array(slot), clientId, idempotencyKey: key, clientOrderId: null,
  });
  const database = await startEmbeddedPostgres(dir, () => undefined);
  await withClient(database.url, (client) =>
    client.query(
      `INSERT INTO runtime.intake_batches (commit_no, gateway_id, record_count, checksum, payload)
       SELECT greatest((SELECT max(commit_no) FROM runtime.intake_batches), (SELECT max(commit_no) FROM runtime.journal_batches)) + 1, 0, 1, $1, $2`,
      [crc32(new Uint8Array(record)), Buffer.from(record)],
    ),
  );
  await database.stop();

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
  try {
    assert.match(venue.log, /"commands":1,"msg":"captured commands re-driven to a terminal status"/);
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
    // The resting sell has 2 left: a second buy of 5 fills 2 of it.
    const next = await venue.order('/api/v1/orders/submit', submitBody({ instrumentId: instrument, side: 'BUY', price: '50', quantity: '5' }), { mode: 'sync-result' });
    assert.deepEqual(next.json.trades.map((trade: any) => trade.quantity.units), ['2']);
    assert.equal(await venue.stop(), 0);

    venue = await VenueProcess.start({ DATA_DIR: dir });
    assert.doesNotMatch(venue.log, /re-driven/, 'a second restart re-drives nothing');
    await withClient(await storageUrl(dir), async (client) => {
      const trades = await client.query('SELECT quantity_units FROM runtime.trades ORDER BY tape_sequence');
      assert.deepEqual(trades.rows.map((row) => row.quantity_units), ['4', '2']);
    });
    t.diagnostic('re-driven once, answered by replay, not re-driven again');
  } finally {
    assert.equal(await venue.stop(), 0);
  }
});
