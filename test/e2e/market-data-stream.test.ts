// The market-data stream (GET /api/v1/market-data/stream) over real sockets with the `ws`
// client against the real venue: 401 before the upgrade, subscribe and unsubscribe
// answers, bad messages and the subscription limit answered with the socket kept open,
// each channel's messages (trades in tape order, top, depth snapshot then updates with
// consecutive seqs), the book a client keeps from the depth channel equal to the REST
// depth under an order load, hidden orders never shown, the slow-consumer close, and no
// trade streamed while its journal commit cannot become durable.

import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { StreamClient, type StreamMessage } from '../support/stream-client.ts';
import { withClient } from '../support/database.ts';
import { cancelBody, storageUrl, submitBody, TOKENS, TRADER_B, VenueProcess } from '../support/venue-process.ts';

const S1 = '5e000000-0000-4000-8000-000000000001'; // trades and top
const S2 = '5e000000-0000-4000-8000-000000000002'; // depth under load
const S3 = '5e000000-0000-4000-8000-000000000003'; // hidden orders only
const S4 = '5e000000-0000-4000-8000-000000000004'; // a wide book for the slow consumer
const S5 = '5e000000-0000-4000-8000-000000000005'; // a trade held back by storage
const B = { participantId: TRADER_B.participantId, accountId: TRADER_B.accountId };
const px = (nanos: string) => ({ nanos, currency: 'USD' });
let venue: VenueProcess;

before(async () => {
  venue = await VenueProcess.start();
});
after(async () => {
  await venue.stop();
});

async function submit(body: Record<string, unknown>, token: string = TOKENS.traderA): Promise<void> {
  const answer = await venue.order('/api/v1/orders/submit', body, { token, mode: 'sync-result' });
  assert.equal(answer.status, 200, answer.text);
  assert.ok(answer.json.outcome.accepted, answer.text);
}

const connect = (token: string | null = TOKENS.viewer) => StreamClient.connect(venue.baseUrl, token);

test('the upgrade without a valid Bearer token is refused with 401 before any socket opens', async () => {
  for (const token of [null, 'not-a-token']) {
    await assert.rejects(connect(token), (error: { status?: number }) => error.status === 401);
  }
  const plain = await venue.get('/api/v1/market-data/stream');
  assert.equal(plain.status, 401);
  assert.equal(plain.json.code, 'UNAUTHENTICATED');
  const client = await connect(TOKENS.traderA);
  assert.equal(client.closed, null);
  await client.close();
});

test('subscribe and unsubscribe are answered; a bad message gets VALIDATION_FAILED and the socket stays open', async () => {
  const client = await connect();
  for (const bad of [
    'not json',
    '[]',
    { op: 'watch', channel: 'trades', instrumentId: S1 },
    { op: 'subscribe', channel: 'bars', instrumentId: S1 },
    { op: 'subscribe', channel: 'top', instrumentId: 'x' },
    { op: 'subscribe', channel: 'top', instrumentId: S1, extra: 1 },
  ]) {
    client.send(bad);
    const answer = await client.next();
    assert.equal(answer.type, 'error', JSON.stringify(bad));
    assert.equal(answer.code, 'VALIDATION_FAILED');
    assert.equal(typeof answer.message, 'string');
  }
  client.send('x'.repeat(2000));
  assert.equal((await client.next()).code, 'VALIDATION_FAILED', 'a message over the size bound');
  client.subscribe('trades', S1);
  assert.deepEqual(await client.next(), { type: 'subscribed', channel: 'trades', instrumentId: S1 });
  client.send({ op: 'unsubscribe', channel: 'trades', instrumentId: S1 });
  assert.deepEqual(await client.next(), { type: 'unsubscribed', channel: 'trades', instrumentId: S1 });
  assert.equal(client.closed, null);
  await client.close();
});

test('a socket holds 256 subscriptions: the 257th is LIMIT_EXCEEDED and the socket stays open', async () => {
  const client = await connect();
  const id = (n: number) => `5e100000-0000-4000-8000-${String(n).padStart(12, '0')}`;
  for (let n = 0; n < 256; n++) client.subscribe('trades', id(n));
  for (let n = 0; n < 256; n++) assert.equal((await client.next((m) => m.type !== 'error' || assert.fail(JSON.stringify(m)))).type, 'subscribed');
  client.subscribe('trades', id(256));
  const refused = await client.next();
  assert.deepEqual([refused.type, refused.code], ['error', 'LIMIT_EXCEEDED']);
  client.subscribe('trades', id(3)); // one it holds: a resubscribe, not a new one
  assert.equal((await client.next()).type, 'subscribed');
  client.send({ op: 'unsubscribe', channel: 'trades', instrumentId: id(0) });
  assert.equal((await client.next()).type, 'unsubscribed');
  client.subscribe('trades', id(256));
  assert.deepEqual(await client.next(), { type: 'subscribed', channel: 'trades', instrumentId: id(256) });
  assert.equal(client.closed, null);
  await client.close();
});

/** The book a client keeps from its depth messages: the snapshot, then each update in seq order (quantity 0 removes). */
function keptBook(messages: StreamMessage[]): { seq: number; bids: StreamMessage[]; asks: StreamMessage[] } {
  const snapshot = messages.find((m) => m.type === 'depth-snapshot');
  assert.ok(snapshot !== undefined, 'a depth snapshot first');
  assert.equal(messages[0], snapshot, 'the snapshot comes before any update');
  const sides = { bid: new Map<string, StreamMessage>(), ask: new Map<string, StreamMessage>() };
  for (const level of snapshot.bids) sides.bid.set(level.price.nanos, level);
  for (const level of snapshot.asks) sides.ask.set(level.price.nanos, level);
  let seq = Number(snapshot.seq);
  for (const update of messages.slice(1)) {
    assert.equal(update.type, 'depth-update');
    assert.equal(Number(update.seq), seq + 1, `consecutive seqs: ${update.seq} after ${seq}`);
    seq = Number(update.seq);
    for (const change of update.changes) {
      const side = sides[change.side as 'bid' | 'ask'];
      if (change.quantity.units === '0') side.delete(change.price.nanos);
      else side.set(change.price.nanos, { price: change.price, quantity: change.quantity, orderCount: change.orderCount });
    }
  }
  const sorted = (side: Map<string, StreamMessage>, descending: boolean) => [...side.values()].sort((a, b) => (BigInt(a.price.nanos) < BigInt(b.price.nanos) ? 1 : -1) * (descending ? 1 : -1));
  return { seq, bids: sorted(sides.bid, true), asks: sorted(sides.ask, false) };
}

test('trades, top and depth: first messages, then each durable change with consecutive seqs; trades in tape order', async () => {
  const client = await connect();
  for (const channel of ['trades', 'top', 'depth']) {
    client.subscribe(channel, S1);
    assert.deepEqual(await client.next(), { type: 'subscribed', channel, instrumentId: S1 });
    if (channel === 'top') assert.deepEqual(await client.next(), { type: 'top', channel, instrumentId: S1, seq: '0', bid: null, ask: null });
    if (channel === 'depth') assert.deepEqual(await client.next(), { type: 'depth-snapshot', channel, instrumentId: S1, seq: '0', bids: [], asks: [] });
  }
  await submit(submitBody({ instrumentId: S1, side: 'BUY', price: '100', quantity: '5' }));
  assert.deepEqual(await client.next((m) => m.channel === 'top'), { type: 'top', channel: 'top', instrumentId: S1, seq: '1', bid: { price: px('100000000000'), quantity: { units: '5' } }, ask: null });
  assert.deepEqual(await client.next((m) => m.channel === 'depth'), {
    type: 'depth-update',
    channel: 'depth',
    instrumentId: S1,
    seq: '1',
    changes: [{ side: 'bid', price: px('100000000000'), quantity: { units: '5' }, orderCount: 1 }],
  });
  await submit(submitBody({ instrumentId: S1, side: 'SELL', price: '101', quantity: '4', ...B }), TOKENS.traderB);
  await submit(submitBody({ instrumentId: S1, side: 'SELL', price: '100', quantity: '2', ...B }), TOKENS.traderB);
  await submit(submitBody({ instrumentId: S1, side: 'SELL', price: '99', quantity: '3', ...B }), TOKENS.traderB);
  const trades = [await client.next((m) => m.channel === 'trades'), await client.next((m) => m.channel === 'trades')];
  assert.deepEqual(
    trades.map((t) => [t.type, t.seq, t.price.nanos, t.quantity.units]),
    [
      ['trade', '1', '100000000000', '2'],
      ['trade', '2', '100000000000', '3'],
    ],
  );
  for (const trade of trades) {
    assert.deepEqual(
      Object.keys(trade).sort(),
      ['channel', 'currency', 'instrumentId', 'occurredAt', 'price', 'quantity', 'seq', 'sequence', 'tradeId', 'type'],
      'the public tape fields, no identity',
    );
    assert.match(trade.tradeId, /^[0-9a-f-]{36}$/);
    assert.ok(!Number.isNaN(Date.parse(trade.occurredAt)));
  }
  await venue.untilProjected();
  const tape = await venue.get(`/api/v1/market-data/trades/${S1}`, TOKENS.viewer);
  assert.deepEqual(
    tape.json.rows.map((row: StreamMessage) => [row.tradeId, row.sequence, row.occurredAt]).reverse(),
    trades.map((t) => [t.tradeId, t.sequence, t.occurredAt]),
    'the tape, oldest first',
  );
  const top = await client.next((m) => m.channel === 'top' && m.bid === null);
  assert.deepEqual([top.ask, Number(top.seq) > 1], [{ price: px('101000000000'), quantity: { units: '4' } }, true]);
  const tops = client.of('top', S1).map((m) => Number(m.seq));
  assert.deepEqual(
    tops,
    tops.map((_, k) => k),
    'top seqs consecutive from the first message',
  );
  await client.close();
});

test('hidden orders never appear on the depth or top channels', async () => {
  const client = await connect(TOKENS.traderA);
  client.subscribe('depth', S3);
  client.subscribe('top', S3);
  await submit(submitBody({ instrumentId: S3, side: 'SELL', price: '50', quantity: '9', orderType: 'LIMIT_HIDDEN', ...B }), TOKENS.traderB);
  await submit(submitBody({ instrumentId: S3, side: 'BUY', price: '49', quantity: '7', orderType: 'LIMIT_HIDDEN' }));
  await submit(submitBody({ instrumentId: S3, side: 'BUY', price: '48', quantity: '1' }));
  const update = await client.next((m) => m.type === 'depth-update');
  assert.deepEqual(update.changes, [{ side: 'bid', price: px('48000000000'), quantity: { units: '1' }, orderCount: 1 }]);
  const top = await client.next((m) => m.type === 'top' && m.seq !== '0');
  assert.deepEqual([top.bid, top.ask], [{ price: px('48000000000'), quantity: { units: '1' } }, null]);
  const again = await connect();
  again.subscribe('depth', S3);
  const snapshot = await again.next((m) => m.type === 'depth-snapshot');
  assert.deepEqual([snapshot.bids, snapshot.asks], [[{ price: px('48000000000'), quantity: { units: '1' }, orderCount: 1 }], []]);
  assert.ok(!JSON.stringify(client.messages).includes('"units":"9"') && !JSON.stringify(client.messages).includes('"units":"7"'), 'hidden quantity nowhere');
  await Promise.all([client.close(), again.close()]);
});

test('under an order load, snapshot plus updates equal the REST depth (levels=50), for a subscriber from the start and one from the middle', async () => {
  const early = await connect();
  early.subscribe('depth', S2);
  await early.next((m) => m.type === 'depth-snapshot');
  let late: StreamClient | null = null;
  const live: string[] = [];
  let random = 12345;
  const next = (n: number) => {
    random = (Math.imul(random, 1103515245) + 12345) >>> 0;
    return (random >>> 16) % n; // the high bits: an LCG's low bits repeat with a short period
  };
  const orders = 600;
  let sent = 0;
  const worker = async () => {
    while (sent < orders) {
      const n = sent++;
      if (n === orders / 2) {
        late = await connect();
        late.subscribe('depth', S2);
      }
      const side = next(2) === 0 ? 'BUY' : 'SELL';
      // 70 prices a side: more than the 50 levels shown, so levels enter and leave the window; buys and sells overlap to trade.
      const price = String(side === 'BUY' ? 1000 + next(70) : 1060 + next(70));
      const hidden = next(10) === 0;
      if (live.length > 20 && next(4) === 0) {
        const orderId = live.splice(next(live.length), 1)[0]!;
        const [owner, id] = orderId.split('|') as [string, string];
        await venue.order('/api/v1/orders/cancel', cancelBody({ orderId: id, instrumentId: S2, ...(owner === 'b' ? B : {}) }), {
          token: owner === 'b' ? TOKENS.traderB : TOKENS.traderA,
          mode: 'sync-result',
        });
        continue;
      }
      const body = submitBody({ instrumentId: S2, side, price, quantity: String(1 + next(20)), orderType: hidden ? 'LIMIT_HIDDEN' : 'LIMIT', ...(side === 'SELL' ? B : {}) });
      await submit(body, side === 'SELL' ? TOKENS.traderB : TOKENS.traderA);
      live.push(`${side === 'SELL' ? 'b' : 'a'}|${body.orderId as string}`);
    }
  };
  await Promise.all(Array.from({ length: 6 }, worker));
  const rest = await venue.get(`/api/v1/market-data/depth/${S2}?levels=50`, TOKENS.viewer);
  assert.equal(rest.status, 200, rest.text);
  assert.ok(rest.json.bids.length === 50 || rest.json.asks.length === 50, `a side as wide as the window: ${rest.json.bids.length} bids, ${rest.json.asks.length} asks`);
  for (const client of [early, late!]) {
    const deadline = Date.now() + 10_000;
    for (;;) {
      const book = keptBook(client.of('depth', S2));
      if (JSON.stringify([book.bids, book.asks]) === JSON.stringify([rest.json.bids, rest.json.asks])) break;
      if (Date.now() > deadline) assert.deepEqual([book.bids, book.asks], [rest.json.bids, rest.json.asks]);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }
  const lateSnapshot = (late as unknown as StreamClient).of('depth', S2)[0]!;
  assert.ok(Number(lateSnapshot.seq) > 1, `the late snapshot continues the channel's seq (${lateSnapshot.seq})`);
  await Promise.all([early.close(), late!.close()]);
});

test('a subscriber that stops reading is closed with 1013 slow consumer past 4 MiB unsent; the others stay open', async () => {
  const wide = [];
  for (let k = 0; k < 50; k++) {
    wide.push(submit(submitBody({ instrumentId: S4, side: 'BUY', price: String(500 + k), quantity: String(1000 + k) })));
    wide.push(submit(submitBody({ instrumentId: S4, side: 'SELL', price: String(600 + k), quantity: String(1000 + k), ...B }), TOKENS.traderB));
  }
  await Promise.all(wide);
  const steady = await connect();
  steady.subscribe('depth', S4);
  const first = await steady.next((m) => m.type === 'depth-snapshot' && m.bids.length === 50 && m.asks.length === 50);
  const snapshotBytes = JSON.stringify(first).length;
  const slow = await connect();
  (slow.socket as unknown as { _socket: { pause(): void; resume(): void } })._socket.pause();
  // Each subscribe is answered with a fresh snapshot: enough of them to pass 4 MiB beyond what the kernel's buffers take.
  const subscribes = Math.ceil((64 << 20) / snapshotBytes);
  for (let k = 0; k < subscribes; k++) slow.subscribe('depth', S4);
  await new Promise((resolve) => setTimeout(resolve, 1500));
  (slow.socket as unknown as { _socket: { pause(): void; resume(): void } })._socket.resume();
  const deadline = Date.now() + 20_000;
  while (slow.closed === null && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
  assert.deepEqual(slow.closed, { code: 1013, reason: 'slow consumer' });
  assert.ok(slow.messages.length < subscribes * 2, `closed before every snapshot was sent (${slow.messages.length} messages)`);
  await submit(submitBody({ instrumentId: S4, side: 'BUY', price: '549.5', quantity: '1' }));
  const update = await steady.next((m) => m.type === 'depth-update');
  assert.equal(update.seq, String(Number(first.seq) + 1));
  assert.equal(steady.closed, null);
  await steady.close();
});

test('a trade is streamed only once its journal commit is durable: none while the journal table is locked, then it comes', async () => {
  await submit(submitBody({ instrumentId: S5, side: 'BUY', price: '70', quantity: '5' }));
  const client = await connect();
  client.subscribe('trades', S5);
  client.subscribe('top', S5);
  await client.next((m) => m.type === 'top');
  await withClient(await storageUrl(venue.dataDir), async (db) => {
    await db.query('BEGIN');
    await db.query('LOCK TABLE runtime.journal_batches IN ACCESS EXCLUSIVE MODE');
    // Matched by its shard at once, but no commit can become durable while the lock is held.
    const answer = venue.order('/api/v1/orders/submit', submitBody({ instrumentId: S5, side: 'SELL', price: '70', quantity: '2', ...B }), { token: TOKENS.traderB, mode: 'sync-result' });
    await new Promise((resolve) => setTimeout(resolve, 1500));
    assert.deepEqual(client.of('trades', S5), [], 'no trade before the commit');
    assert.deepEqual(
      client.of('top', S5).map((m) => m.seq),
      ['1'],
      'nor a book change',
    );
    assert.equal((await answer).status, 503, 'the order itself is not acknowledged either');
    await db.query('COMMIT');
  });
  const trade = await client.next((m) => m.type === 'trade');
  assert.deepEqual([trade.seq, trade.price.nanos, trade.quantity.units], ['1', '70000000000', '2']);
  assert.deepEqual((await client.next((m) => m.type === 'top' && m.seq === '2')).bid, { price: px('70000000000'), quantity: { units: '3' } });
  await client.close();
});
