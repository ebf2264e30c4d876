// The read plane over real HTTP against the real venue and its PostgreSQL: snapshots
// (stored, refreshed, per projection name, hidden quantity never shown), depth, the
// public trade tape (paging under concurrent trading, no identity anywhere), bars
// checked against values computed here from the trades made, own orders and fills
// scoped to the caller, the availability inventory, every limit's 400, both 404
// bodies, every denial, and the snapshot loop off and on.

import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { assertShape } from '../support/response-schemas.ts';
import { submitBody, cancelBody, TOKENS, TRADER_A, TRADER_B, stopAfter, VenueProcess, type HttpAnswer } from '../support/venue-process.ts';

const X = '9e000000-0000-4000-8000-000000000001'; // the main book
const Y = '9e000000-0000-4000-8000-000000000002'; // only hidden sell orders
const T = '9e000000-0000-4000-8000-000000000003'; // the tape and the bars
const Z = '9e000000-0000-4000-8000-000000000004'; // open quantity beyond the best levels
const UNKNOWN = '9e000000-0000-4000-8000-0000000000ff';
const B = { participantId: TRADER_B.participantId, accountId: TRADER_B.accountId };
let venue: VenueProcess;

before(async () => {
  venue = await VenueProcess.start();
});
after(async () => {
  await venue.stop();
});

async function submit(body: Record<string, unknown>, token: string = TOKENS.traderA): Promise<HttpAnswer> {
  const answer = await venue.order('/api/v1/orders/submit', body, { token, mode: 'sync-result' });
  assert.equal(answer.status, 200, answer.text);
  assert.ok(answer.json.outcome.accepted, answer.text);
  return answer;
}

const get = (path: string, token: string = TOKENS.viewer) => venue.get(path, token);
const refresh = (query = '', token: string = TOKENS.viewer) => venue.request('POST', `/api/v1/market-data/snapshots${query}`, { token });
const px = (nanos: string) => ({ nanos, currency: 'USD' });

const state: { openA: string[] } = { openA: [] };

test('snapshots: 404 before any refresh, then the best displayed price and quantity; hidden never shows', async () => {
  const missing = await get(`/api/v1/market-data/snapshots/${X}`);
  assert.deepEqual([missing.status, missing.json.error], [404, 'market data snapshot not found']);
  const bids = [
    submitBody({ instrumentId: X, side: 'BUY', price: '100', quantity: '5' }),
    submitBody({ instrumentId: X, side: 'BUY', price: '100', quantity: '3' }),
    submitBody({ instrumentId: X, side: 'BUY', price: '100.5', quantity: '7', orderType: 'LIMIT_HIDDEN' }),
    submitBody({ instrumentId: X, side: 'BUY', price: '98', quantity: '2' }),
  ];
  for (const body of bids) await submit(body);
  state.openA = bids.map((body) => body.orderId as string);
  for (const body of [
    submitBody({ instrumentId: X, side: 'SELL', price: '101', quantity: '4', ...B }),
    submitBody({ instrumentId: X, side: 'SELL', price: '100.75', quantity: '6', orderType: 'LIMIT_HIDDEN', ...B }),
    submitBody({ instrumentId: X, side: 'SELL', price: '103', quantity: '1', ...B }),
    submitBody({ instrumentId: Y, side: 'SELL', price: '50', quantity: '9', orderType: 'LIMIT_HIDDEN', ...B }),
  ]) {
    await submit(body, TOKENS.traderB);
  }
  const refreshed = await refresh();
  assert.equal(refreshed.status, 200, refreshed.text);
  assertShape('SnapshotRefresh', refreshed.json);
  assert.ok(refreshed.json.instrumentsRefreshed >= 2);
  const snapshot = await get(`/api/v1/market-data/snapshots/${X}`, TOKENS.traderA);
  assert.equal(snapshot.status, 200);
  assertShape('Snapshot', snapshot.json);
  assert.deepEqual(
    { bestBid: snapshot.json.bestBid, bestAsk: snapshot.json.bestAsk, projectionName: snapshot.json.projectionName },
    {
      bestBid: { price: px('100000000000'), quantity: { units: '8' } },
      bestAsk: { price: px('101000000000'), quantity: { units: '4' } },
      projectionName: 'market-data-top-of-book',
    },
  );
  assert.ok(snapshot.json.sourceWatermark > 0);
  const hiddenOnly = (await get(`/api/v1/market-data/snapshots/${Y}`)).json;
  assert.deepEqual([hiddenOnly.bestBid, hiddenOnly.bestAsk], [null, null], 'a book of hidden orders shows nothing');
});

/** Z's book: displayed orders at several prices, a partial fill, a cancel, hidden orders on both sides. */
async function buildOpenQuantityBook(target: VenueProcess): Promise<void> {
  const order = async (body: Record<string, unknown>, token: string) => {
    const answer = await target.order('/api/v1/orders/submit', body, { token, mode: 'sync-result' });
    assert.ok(answer.json.outcome.accepted, answer.text);
    return answer;
  };
  for (const [price, quantity, orderType] of [
    ['100', '5', 'LIMIT'],
    ['99', '3', 'LIMIT'],
    ['98', '7', 'LIMIT_HIDDEN'],
  ] as const) {
    await order(submitBody({ instrumentId: Z, side: 'BUY', price, quantity, orderType }), TOKENS.traderA);
  }
  const cancelled = submitBody({ instrumentId: Z, side: 'BUY', price: '97', quantity: '1' });
  await order(cancelled, TOKENS.traderA);
  for (const [price, quantity, orderType] of [
    ['102', '4', 'LIMIT'],
    ['105', '20', 'LIMIT'],
    ['110', '9', 'LIMIT_HIDDEN'],
  ] as const) {
    await order(submitBody({ instrumentId: Z, side: 'SELL', price, quantity, orderType, ...B }), TOKENS.traderB);
  }
  const fill = await order(submitBody({ instrumentId: Z, side: 'SELL', price: '100', quantity: '2', ...B }), TOKENS.traderB);
  assert.equal(fill.json.trades.length, 1, 'the sell takes 2 of the 5 bid at 100');
  const session = (await target.get('/api/v1/venue/session', TOKENS.traderA)).json;
  const cancel = await target.order('/api/v1/orders/cancel', cancelBody({ orderId: cancelled.orderId as string, instrumentId: Z, runId: session.runId, venueSessionId: session.venueSessionId }), {
    mode: 'sync-result',
  });
  assert.ok(cancel.json.outcome.accepted, cancel.text);
}

/** Z's snapshot as the contract shapes it: the best levels, and the open displayed quantity of each whole side. */
const Z_SNAPSHOT = {
  instrumentId: Z,
  projectionName: 'market-data-top-of-book',
  bestBid: { price: px('100000000000'), quantity: { units: '3' } },
  bestAsk: { price: px('102000000000'), quantity: { units: '4' } },
  openQuantity: { bid: { units: '6' }, ask: { units: '24' } }, // bids 3 + 3 (hidden 7 and the cancelled 1 not counted); asks 4 + 20 (hidden 9 not counted)
};
const withoutTimes = (snapshot: any) => {
  const { sourceWatermark: _mark, refreshedAt: _at, ...rest } = snapshot;
  return rest;
};

test('a snapshot carries the remaining open displayed LIMIT quantity of each whole side: every price, after fills and cancels, hidden never counts', async () => {
  await buildOpenQuantityBook(venue);
  assert.equal((await refresh(`?instrumentId=${Z}`)).status, 200);
  const snapshot = await get(`/api/v1/market-data/snapshots/${Z}`);
  assert.equal(snapshot.status, 200, snapshot.text);
  assertShape('Snapshot', snapshot.json);
  assert.deepEqual(withoutTimes(snapshot.json), Z_SNAPSHOT);
  assert.deepEqual(Object.keys(snapshot.json), ['instrumentId', 'projectionName', 'bestBid', 'bestAsk', 'openQuantity', 'sourceWatermark', 'refreshedAt']);
  const hiddenOnly = (await get(`/api/v1/market-data/snapshots/${Y}`)).json;
  assert.deepEqual(hiddenOnly.openQuantity, { bid: { units: '0' }, ask: { units: '0' } }, 'an empty side is "0"; hidden orders are not open displayed quantity');
  const x = (await get(`/api/v1/market-data/snapshots/${X}`)).json;
  assert.deepEqual(x.openQuantity, { bid: { units: '10' }, ask: { units: '5' } }, 'X: bids 5 + 3 + 2 at two prices, asks 4 + 1 at two prices');
});

test('snapshots honour projectionName and sourceProjectionName; one instrument can be refreshed alone', async () => {
  const named = `/api/v1/market-data/snapshots/${X}?projectionName=desk-view.1`;
  assert.equal((await get(named)).status, 404, 'nothing was produced under that name yet');
  const one = await refresh(`?projectionName=desk-view.1&sourceProjectionName=runtime-normalized-venue-outcomes&instrumentId=${X}`);
  assert.deepEqual([one.status, one.json.instrumentsRefreshed, one.json.projectionName], [200, 1, 'desk-view.1']);
  const snapshot = (await get(named)).json;
  assert.equal(snapshot.projectionName, 'desk-view.1');
  assert.deepEqual(snapshot.bestBid.price, px('100000000000'));
  assert.equal((await get(`/api/v1/market-data/snapshots/${Y}?projectionName=desk-view.1`)).status, 404, 'only X was refreshed under that name');
  const unknownInstrument = await refresh(`?instrumentId=${UNKNOWN}`);
  assert.deepEqual([unknownInstrument.status, unknownInstrument.json.error], [404, 'market data snapshot not found']);
  for (const query of ['?sourceProjectionName=elsewhere', '?projectionName=Bad%20Name', '?instrumentId=nope', '?projectionName=a&projectionName=b', '?colour=red']) {
    const bad = await refresh(query);
    assert.equal(bad.status, 400, query);
    assert.equal(bad.json.code, 'VALIDATION_FAILED');
  }
  assert.equal((await get(`/api/v1/market-data/snapshots/not-a-uuid`)).status, 400);
});

test('depth: displayed quantity and order count per level, best first, bounded', async () => {
  const depth = await get(`/api/v1/market-data/depth/${X}`);
  assert.equal(depth.status, 200);
  assertShape('Depth', depth.json);
  assert.equal(depth.json.levels, 5);
  assert.deepEqual(depth.json.bids, [
    { price: px('100000000000'), quantity: { units: '8' }, orderCount: 2 },
    { price: px('98000000000'), quantity: { units: '2' }, orderCount: 1 },
  ]);
  assert.deepEqual(depth.json.asks, [
    { price: px('101000000000'), quantity: { units: '4' }, orderCount: 1 },
    { price: px('103000000000'), quantity: { units: '1' }, orderCount: 1 },
  ]);
  assert.ok(depth.json.watermark > 0);
  const one = (await get(`/api/v1/market-data/depth/${X}?levels=1&projectionName=market-data-depth&sourceProjectionName=runtime-normalized-venue-outcomes`)).json;
  assert.deepEqual([one.bids.length, one.asks.length, one.levels], [1, 1, 1]);
  assert.equal((await get(`/api/v1/market-data/depth/${X}?levels=50`)).status, 200);
  for (const query of ['?levels=51', '?levels=0', '?levels=abc', '?levels=-1', '?projectionName=other', '?depth=3']) {
    assert.equal((await get(`/api/v1/market-data/depth/${X}${query}`)).status, 400, query);
  }
  const unknown = await get(`/api/v1/market-data/depth/${UNKNOWN}`);
  assert.deepEqual([unknown.status, unknown.json.error], [404, 'market data depth not found']);
  const hiddenOnly = (await get(`/api/v1/market-data/depth/${Y}`)).json;
  assert.deepEqual([hiddenOnly.bids, hiddenOnly.asks], [[], []], 'a known instrument with only hidden orders has an empty depth');
});

test('with the snapshot loop off nothing refreshes by itself', async () => {
  const before = (await get(`/api/v1/market-data/snapshots/${X}`)).json;
  await submit(submitBody({ instrumentId: X, side: 'BUY', price: '100.25', quantity: '1' }));
  await new Promise((resolve) => setTimeout(resolve, 400));
  assert.deepEqual((await get(`/api/v1/market-data/snapshots/${X}`)).json, before);
  const status = await get('/internal/market-data/projector/status');
  assertShape('ProjectorStatus', status.json);
  assert.deepEqual([status.json.enabled, status.json.running, status.json.refreshes], [false, false, 0]);
  assert.equal((await refresh()).status, 200);
  assert.deepEqual((await get(`/api/v1/market-data/snapshots/${X}`)).json.bestBid, { price: px('100250000000'), quantity: { units: '1' } });
});

/** Trades on T at given prices: B rests a sell, A lifts it. Returns the trade records of the envelopes. */
async function trade(prices: string[], quantity = '2'): Promise<any[]> {
  const trades = [];
  for (const price of prices) {
    await submit(submitBody({ instrumentId: T, side: 'SELL', price, quantity, ...B }), TOKENS.traderB);
    const lift = await submit(submitBody({ instrumentId: T, side: 'BUY', price, quantity }));
    trades.push(...lift.json.trades);
  }
  return trades;
}

const made: any[] = [];
const TAPE_KEYS = ['currency', 'occurredAt', 'price', 'quantity', 'sequence', 'tradeId'];

test('the tape: most recent first, pages that neither repeat nor skip under concurrent trading, no identity', async () => {
  made.push(...(await trade(['10', '10.5', '11', '9.75', '10.25', '12', '11.5', '10', '10.125', '10.5', '11', '9.5'])));
  const identities = new Set<string>([TRADER_A.participantId, TRADER_A.accountId, TRADER_B.participantId, TRADER_B.accountId]);
  for (const trade of made) {
    identities.add(trade.buyOrderId);
    identities.add(trade.sellOrderId);
  }
  // Page with limit 5 while more trades happen beside it.
  const seen: any[] = [];
  let beforeCursor: number | null = null;
  const concurrent = trade(['13', '13.5', '14'], '1');
  for (;;) {
    const page: HttpAnswer = await get(`/api/v1/market-data/trades/${T}?limit=5${beforeCursor === null ? '' : `&before=${beforeCursor}`}`);
    assert.equal(page.status, 200);
    assertShape('Tape', page.json);
    seen.push(...page.json.rows);
    if (page.json.nextBefore === null) break;
    beforeCursor = page.json.nextBefore;
  }
  const late = await concurrent;
  const sequences = seen.map((row) => row.sequence);
  for (let k = 1; k < sequences.length; k++) assert.ok(sequences[k - 1] > sequences[k], 'strictly older on every step: no repeat');
  const ids = seen.map((row) => row.tradeId);
  for (const trade of made) assert.ok(ids.includes(trade.tradeId), `trade ${trade.tradeId} made before paging is on a page: no skip`);
  const all = (await get(`/api/v1/market-data/trades/${T}?limit=500`)).json.rows;
  assert.equal(all.length, made.length + late.length, 'every trade, once');
  assert.deepEqual(
    all.map((row: any) => row.tradeId),
    [...made, ...late].map((trade) => trade.tradeId).reverse(),
    'most recent first',
  );
  for (const row of all) {
    assert.deepEqual(Object.keys(row).sort(), TAPE_KEYS, 'only these keys');
    for (const value of JSON.stringify(row).match(/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g) ?? []) {
      assert.ok(!identities.has(value) || value === row.tradeId, `no order, participant or account identity (${value})`);
    }
  }
  const byId = new Map([...made, ...late].map((trade) => [trade.tradeId, trade]));
  for (const row of all) {
    const trade = byId.get(row.tradeId);
    assert.deepEqual([row.price, row.quantity, row.currency, row.occurredAt], [trade.price, trade.quantity, 'USD', trade.occurredAt]);
  }
  made.push(...late);
  for (const query of ['?limit=501', '?limit=0', '?limit=x', '?before=0', '?before=-3', '?before=1.5', '?cursor=3']) {
    assert.equal((await get(`/api/v1/market-data/trades/${T}${query}`)).status, 400, query);
  }
  assert.equal((await get(`/api/v1/market-data/trades/${T}?limit=500`)).status, 200);
  assert.deepEqual((await get(`/api/v1/market-data/trades/${UNKNOWN}`)).json.rows, []);
});

/** OHLCV computed here from the trades the test made. */
function expectedBars(trades: any[], seconds: number) {
  const buckets = new Map<number, any[]>();
  for (const trade of trades) {
    const micros = BigInt(Date.parse(trade.occurredAt.slice(0, 23) + 'Z')) * 1000n + BigInt(trade.occurredAt.slice(23, 26));
    const start = Number((micros / 1_000_000n / BigInt(seconds)) * BigInt(seconds));
    buckets.set(start, [...(buckets.get(start) ?? []), trade]);
  }
  return [...buckets.entries()]
    .sort(([a], [b]) => a - b)
    .map(([start, list]) => {
      const prices = list.map((trade) => BigInt(trade.price.nanos));
      const max = prices.reduce((a, b) => (b > a ? b : a));
      const min = prices.reduce((a, b) => (b < a ? b : a));
      return {
        start: new Date(start * 1000).toISOString().replace('.000Z', 'Z'),
        open: px(list[0].price.nanos),
        high: px(String(max)),
        low: px(String(min)),
        close: px(list[list.length - 1].price.nanos),
        volume: { units: String(list.reduce((sum, trade) => sum + BigInt(trade.quantity.units), 0n)) },
        tradeCount: list.length,
      };
    });
}

test('bars: OHLCV per interval equal to values computed from the trades made', async () => {
  const first = Date.parse(made[0].occurredAt.slice(0, 23) + 'Z');
  const start = new Date(Math.floor(first / 3_600_000) * 3_600_000).toISOString();
  const end = new Date(Math.ceil((Date.now() + 1000) / 3_600_000) * 3_600_000).toISOString();
  for (const [interval, seconds] of [
    ['1m', 60],
    ['5m', 300],
    ['15m', 900],
    ['1h', 3600],
  ] as const) {
    const bars = await get(`/api/v1/market-data/bars/${T}?interval=${interval}&start=${start}&end=${end}`);
    assert.equal(bars.status, 200, bars.text);
    assertShape('Bars', bars.json);
    assert.deepEqual(bars.json.bars, expectedBars(made, seconds), interval);
  }
  const byDefault = (await get(`/api/v1/market-data/bars/${T}`)).json;
  assert.equal(byDefault.interval, '1m');
  assert.deepEqual(byDefault.bars, expectedBars(made, 60), 'the default window holds the last hour of 1m bars');
  for (const query of ['?interval=2m', `?start=${end}&end=${start}`, '?start=yesterday', '?start=2026-01-01T00:00:00Z&end=2026-01-03T00:00:00Z', '?interval=1m&foo=1']) {
    assert.equal((await get(`/api/v1/market-data/bars/${T}${query}`)).status, 400, query);
  }
});

test("own orders and fills: only the caller's participants, filterable, bounded", async () => {
  const current = await get('/api/v1/orders/current', TOKENS.traderA);
  assert.equal(current.status, 200);
  assertShape('OwnOrders', current.json);
  for (const row of current.json.rows) {
    assert.equal(row.participantId, TRADER_A.participantId);
    assert.ok(['OPEN', 'PARTIALLY_FILLED'].includes(row.state));
  }
  for (const orderId of state.openA)
    assert.ok(
      current.json.rows.some((row: any) => row.orderId === orderId),
      "A's resting orders are current",
    );
  const first = current.json.rows.find((row: any) => row.orderId === state.openA[0]);
  assert.deepEqual(
    [first.limitPrice, first.originalQuantity, first.remainingQuantity, first.filledQuantity, first.instrumentId, first.side],
    [px('100000000000'), { units: '5' }, { units: '5' }, { units: '0' }, X, 'BUY'],
  );
  // Cancel one: it leaves current and shows CANCELLED in history.
  const session = (await venue.get('/api/v1/venue/session', TOKENS.traderA)).json;
  const cancelled = await venue.order('/api/v1/orders/cancel', cancelBody({ orderId: state.openA[3]!, instrumentId: X, runId: session.runId, venueSessionId: session.venueSessionId }), {
    mode: 'sync-result',
  });
  assert.ok(cancelled.json.outcome.accepted);
  assert.ok(!(await get('/api/v1/orders/current', TOKENS.traderA)).json.rows.some((row: any) => row.orderId === state.openA[3]));
  const history = await get(`/api/v1/orders/history?instrumentId=${X}&limit=1000`, TOKENS.traderA);
  assertShape('OwnOrders', history.json);
  assert.equal(history.json.rows.find((row: any) => row.orderId === state.openA[3]).state, 'CANCELLED');
  assert.ok(history.json.rows.every((row: any) => row.instrumentId === X && row.participantId === TRADER_A.participantId));
  const filledOnT = (await get(`/api/v1/orders/history?instrumentId=${T}`, TOKENS.traderA)).json.rows;
  assert.equal(filledOnT.length, made.length, 'each lifting order of A on T');
  assert.ok(filledOnT.every((row: any) => row.state === 'FILLED'));
  assert.equal((await get('/api/v1/orders/history?limit=2', TOKENS.traderA)).json.rows.length, 2);

  const fills = await get(`/api/v1/orders/fills?instrumentId=${T}&limit=1000`, TOKENS.traderA);
  assertShape('Fills', fills.json);
  assert.equal(fills.json.rows.length, made.length);
  const byTrade = new Map(made.map((trade) => [trade.tradeId, trade]));
  for (const fill of fills.json.rows) {
    const trade = byTrade.get(fill.tradeId);
    assert.ok(trade !== undefined);
    assert.deepEqual([fill.orderId, fill.side, fill.quantity, fill.executionPrice, fill.occurredAt], [trade.buyOrderId, 'BUY', trade.quantity, trade.price, trade.occurredAt]);
  }
  // B sees its own sells, never A's rows.
  for (const path of ['/api/v1/orders/current', '/api/v1/orders/history?limit=1000', '/api/v1/orders/fills?limit=1000']) {
    const rows = (await get(path, TOKENS.traderB)).json.rows;
    assert.ok(rows.length > 0, path);
    const own = path.includes('fills') ? rows.every((row: any) => !made.some((trade) => trade.buyOrderId === row.orderId)) : rows.every((row: any) => row.participantId === TRADER_B.participantId);
    assert.ok(own, `${path}: trader B sees only its own rows`);
  }
  for (const query of ['?limit=1001', '?limit=0', '?instrumentId=x', '?participantId=' + TRADER_B.participantId]) {
    assert.equal((await get(`/api/v1/orders/current${query}`, TOKENS.traderA)).status, 400, query);
  }
});

test('the availability inventory: one row per read route, with source, freshness, scope, filters, lag and watermark', async () => {
  const answer = await get('/api/v1/data/availability', TOKENS.viewer);
  assert.equal(answer.status, 200);
  assertShape('Availability', answer.json);
  const endpoints = answer.json.reads.map((row: any) => row.endpoint);
  for (const endpoint of [
    'GET /api/v1/commands/{commandId}',
    'GET /api/v1/market-data/snapshots/{instrumentId}',
    'POST /api/v1/market-data/snapshots',
    'GET /api/v1/market-data/depth/{instrumentId}',
    'GET /api/v1/market-data/trades/{instrumentId}',
    'GET /api/v1/market-data/bars/{instrumentId}',
    'GET /api/v1/orders/current',
    'GET /api/v1/orders/history',
    'GET /api/v1/orders/fills',
    'GET /api/v1/data/availability',
    'GET /api/v1/settlement/facts/{scenarioRunId}',
    'GET /api/v1/settlement/obligations/{scenarioRunId}',
    'GET /api/v1/settlement/ledger/{scenarioRunId}',
    'GET /api/v1/settlement/exceptions/{scenarioRunId}',
    'GET /api/v1/settlement/proof/{scenarioRunId}',
    'GET /api/v1/settlement/score/{scenarioRunId}',
  ]) {
    assert.ok(endpoints.includes(endpoint), endpoint);
  }
  assert.equal(new Set(endpoints).size, endpoints.length, 'one row per route');
  const tape = answer.json.reads.find((row: any) => row.name === 'market-data-trades');
  assert.equal(tape.sourceType, 'projection');
  assert.equal(tape.projectionLagMs, 0, 'the read waited for the projections: no lag at its position');
  assert.ok(tape.watermark.some((mark: any) => mark.sequence > 0));
  assert.equal(answer.json.reads.find((row: any) => row.name === 'settlement-facts').sourceType, 'durable-facts');
  assert.ok(!endpoints.includes('GET /api/v1/settlement/leaderboard/{scenarioRunId}'), 'no leaderboard without COMPETITION_PROFILE');
  const leaderboard = await get('/api/v1/settlement/leaderboard/run-local');
  assert.equal(leaderboard.status, 404, 'nor its route');
});

test('every read route: 401 without a token; own-order reads are for traders only', async () => {
  const routes = [
    ['GET', `/api/v1/market-data/snapshots/${X}`],
    ['POST', '/api/v1/market-data/snapshots'],
    ['GET', `/api/v1/market-data/depth/${X}`],
    ['GET', `/api/v1/market-data/trades/${X}`],
    ['GET', `/api/v1/market-data/bars/${X}`],
    ['GET', '/api/v1/orders/current'],
    ['GET', '/api/v1/orders/history'],
    ['GET', '/api/v1/orders/fills'],
    ['GET', '/api/v1/data/availability'],
    ['GET', '/internal/market-data/projector/status'],
  ] as const;
  for (const [method, path] of routes) {
    const answer = await venue.request(method, path);
    assert.deepEqual([answer.status, answer.json.code], [401, 'UNAUTHENTICATED'], path);
    assert.equal((await venue.request(method, path, { token: 'wrong' })).status, 401, path);
  }
  for (const path of ['/api/v1/orders/current', '/api/v1/orders/history', '/api/v1/orders/fills']) {
    for (const token of [TOKENS.viewer, TOKENS.operator]) assert.equal((await get(path, token)).status, 403, path);
  }
  for (const token of [TOKENS.traderA, TOKENS.viewer, TOKENS.operator]) assert.equal((await get(`/api/v1/market-data/trades/${X}`, token)).status, 200);
});

test('with the snapshot loop on, snapshots follow the book by themselves', async () => {
  const looped = await VenueProcess.start({ MARKET_DATA_PROJECTOR_ENABLED: 'true', MARKET_DATA_PROJECTOR_INTERVAL_MS: '50' });
  await stopAfter(
    () => looped,
    async () => {
      const order = submitBody({ instrumentId: X, side: 'SELL', price: '77', quantity: '3', ...B });
      assert.equal((await looped.order('/api/v1/orders/submit', order, { token: TOKENS.traderB })).status, 200);
      let snapshot: HttpAnswer | null = null;
      for (let attempt = 0; attempt < 200; attempt++) {
        snapshot = await looped.get(`/api/v1/market-data/snapshots/${X}`, TOKENS.viewer);
        if (snapshot.status === 200 && snapshot.json.bestAsk !== null) break;
        await new Promise((resolve) => setTimeout(resolve, 25));
      }
      assert.deepEqual(snapshot!.json.bestAsk, { price: px('77000000000'), quantity: { units: '3' } });
      const status = (await looped.get('/internal/market-data/projector/status', TOKENS.viewer)).json;
      assertShape('ProjectorStatus', status);
      assert.deepEqual([status.enabled, status.running, status.errors, status.intervalMs], [true, true, 0, 50]);
      assert.ok(status.refreshes >= 1 && status.lastRefreshAt !== null);
      assert.deepEqual(status.watermark, status.sourceWatermark);
      assert.equal(status.lagSequences, 0);
    },
  );
});

test('a snapshot the shared view has no room for is read from storage with the same open quantities', async () => {
  const small = await VenueProcess.start({ MARKET_DATA_SNAPSHOTS: '1' });
  await stopAfter(
    () => small,
    async () => {
      await buildOpenQuantityBook(small);
      const other = crypto.randomUUID();
      const resting = await small.order('/api/v1/orders/submit', submitBody({ instrumentId: other, side: 'SELL', price: '10', quantity: '3', ...B }), { token: TOKENS.traderB, mode: 'sync-result' });
      assert.ok(resting.json.outcome.accepted, resting.text);
      assert.equal((await small.request('POST', `/api/v1/market-data/snapshots?instrumentId=${other}`, { token: TOKENS.viewer })).status, 200, 'the one entry of the view');
      assert.equal((await small.request('POST', `/api/v1/market-data/snapshots?instrumentId=${Z}`, { token: TOKENS.viewer })).status, 200);
      await small.untilLogged(/more stored snapshots than MARKET_DATA_SNAPSHOTS/);
      const fromStorage = await small.get(`/api/v1/market-data/snapshots/${Z}`, TOKENS.viewer);
      assert.equal(fromStorage.status, 200, fromStorage.text);
      assertShape('Snapshot', fromStorage.json);
      assert.deepEqual(withoutTimes(fromStorage.json), Z_SNAPSHOT);
      const fromView = (await small.get(`/api/v1/market-data/snapshots/${other}`, TOKENS.viewer)).json;
      assert.deepEqual(
        [fromView.bestAsk, fromView.openQuantity],
        [
          { price: px('10000000000'), quantity: { units: '3' } },
          { bid: { units: '0' }, ask: { units: '3' } },
        ],
      );
    },
  );
});

test('depth and the tape view are bounded by MARKET_DATA_INSTRUMENTS: depth past it answers 503 with Retry-After, the tape comes from storage, the others keep theirs', async () => {
  const small = await VenueProcess.start({ MARKET_DATA_INSTRUMENTS: '1' });
  await stopAfter(
    () => small,
    async () => {
      const [first, second] = [crypto.randomUUID(), crypto.randomUUID()];
      for (const instrumentId of [first, second]) {
        assert.equal((await small.order('/api/v1/orders/submit', submitBody({ instrumentId, side: 'BUY', price: '10', quantity: '3' }))).status, 200);
      }
      const kept = await small.get(`/api/v1/market-data/depth/${first}`, TOKENS.viewer);
      assert.equal(kept.status, 200);
      assert.deepEqual(
        kept.json.bids.map((level: any) => [level.price.nanos, level.quantity.units, level.orderCount]),
        [['10000000000', '3', 1]],
      );
      const refused = await small.get(`/api/v1/market-data/depth/${second}`, TOKENS.viewer);
      assert.equal(refused.status, 503);
      assert.equal(refused.json.code, 'OVERLOADED');
      assert.match(refused.json.error, /MARKET_DATA_INSTRUMENTS/);
      assert.equal(refused.headers.get('retry-after'), '1');
      // A snapshot is refreshed from the same books: past the bound it is refused the same way, the one in the view refreshes.
      const refresh = (instrumentId: string) => small.request('POST', `/api/v1/market-data/snapshots?instrumentId=${instrumentId}`, { token: TOKENS.viewer });
      const unrefreshed = await refresh(second);
      assert.deepEqual([unrefreshed.status, unrefreshed.json.code], [503, 'OVERLOADED'], unrefreshed.text);
      assert.equal((await refresh(first)).status, 200);
      assert.deepEqual((await small.get(`/api/v1/market-data/snapshots/${first}`, TOKENS.viewer)).json.openQuantity, { bid: { units: '3' }, ask: { units: '0' } });
      // The tape view has the same bound: the first instrument to trade takes it, the other's tape is read from storage.
      for (const [instrumentId, quantity] of [
        [first, '1'],
        [second, '2'],
      ] as const) {
        const sell = await small.order('/api/v1/orders/submit', submitBody({ instrumentId, side: 'SELL', price: '10', quantity, ...B }), { token: TOKENS.traderB, mode: 'sync-result' });
        assert.equal(sell.json.trades.length, 1, sell.text);
        const tape = await small.get(`/api/v1/market-data/trades/${instrumentId}`, TOKENS.viewer);
        assert.equal(tape.status, 200, tape.text);
        assert.deepEqual(
          tape.json.rows.map((row: any) => [row.tradeId, row.price.nanos, row.quantity.units]),
          [[sell.json.trades[0].tradeId, '10000000000', quantity]],
          `the tape of ${instrumentId === first ? 'the instrument in the view' : 'the instrument past the bound'}`,
        );
      }
    },
  );
});
