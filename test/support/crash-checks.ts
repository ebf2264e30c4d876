// What a test that kills the venue (SIGKILL) checks once it restarted on the same data,
// shared by test/e2e/recovery.test.ts (one kill per mode) and
// test/0-endurance/crash-loop.test.ts (a kill per cycle, many cycles):
//  - a seeded mixed load (submits on instruments of both shards, crossing, hidden, IOC,
//    cancels and modifies of earlier orders, both traders), sent until the kill;
//  - every acknowledged command terminal with its original answer, replays byte for byte;
//  - the journal holds every captured command once, the trades exactly the journal's;
//  - the books (lifecycle projection, the depth view, matching itself) equal an
//    independent replay of the committed journal.

import assert from 'node:assert/strict';
import type pg from 'pg';
import type { SeededRandom } from '../../bench/lib/seeded-random.ts';
import { EVENT_TRADE } from '../../core/codes.ts';
import { shardOf } from '../../core/shard-map.ts';
import { uuidWords } from '../../core/uuid.ts';
import type { EngineDriver, RestingView } from './engine-driver.ts';
import { committedHistory, replayHistory, type CommittedCommand } from './journal.ts';
import { cancelBody, modifyBody, submitBody, TOKENS, TRADER_A, TRADER_B, type VenueProcess } from './venue-process.ts';

export const SHARDS = 2;
/** Four instruments, spread over both shards (recovery.test.ts checks it). */
export const INSTRUMENTS = ['5a000000-0000-4000-8000-000000000001', '5a000000-0000-4000-8000-000000000002', '5a000000-0000-4000-8000-000000000003', '5a000000-0000-4000-8000-000000000004'];
export const MODES = ['sync-result', 'captured-ack', 'stream-ack', 'accepted-async'] as const;
export const TERMINAL = new Set(['COMPLETED', 'REJECTED']);
/** Status reads and replays in flight at once after a restart: a freshly restarted venue answers 1,500 of them sooner at 32 than at 8. */
const CHECKS_IN_FLIGHT = 32;

const TRADERS = [
  { token: TOKENS.traderA, participantId: TRADER_A.participantId, accountId: TRADER_A.accountId },
  { token: TOKENS.traderB, participantId: TRADER_B.participantId, accountId: TRADER_B.accountId },
];

/** A command of a load and, once it came, the answer its client got. */
export interface Sent {
  path: string;
  body: Record<string, unknown>;
  key: string;
  token: string;
  /** X-Processing-Mode, or undefined for the venue's default. */
  mode: string | undefined;
  answer: { status: number; text: string } | null;
}

export interface Session {
  runId: string;
  venueSessionId: string;
}

export const isAcknowledged = (command: Sent): boolean => command.answer !== null && (command.answer.status === 200 || command.answer.status === 202);

/** Runs fn over items, at most `concurrency` at a time. */
export async function inParallel<T>(items: readonly T[], concurrency: number, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < items.length) await fn(items[next++]!);
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, items.length) }, worker));
}

/** The most recent submits of `earlier` (at most `count`), newest first. */
function recentSubmits(earlier: readonly Sent[], count: number): Sent[] {
  const found: Sent[] = [];
  for (let i = earlier.length - 1; i >= 0 && found.length < count; i--) if (earlier[i]!.path === '/api/v1/orders/submit') found.push(earlier[i]!);
  return found;
}

/**
 * The next command of a mixed load, drawn from `random`: mostly submits (buys at 99–103,
 * sells at 101–105, so about half cross; one in seven hidden, one in eleven IOC), one in
 * ten a cancel and one in twelve a modify (towards the other side, bigger: may cross) of
 * one of the last dozen submits in `earlier`, by its owner. Traders A and B alike.
 * `modes`, when given, draws each command's X-Processing-Mode.
 */
export function mixedCommand(random: SeededRandom, earlier: readonly Sent[], session: Session, modes?: readonly string[]): Sent {
  const key = `load-${crypto.randomUUID()}`;
  const mode = modes === undefined ? undefined : random.pick(modes);
  const roll = random.below(120);
  if (roll < 22) {
    const targets = recentSubmits(earlier, 12);
    if (targets.length > 0) {
      const target = random.pick(targets);
      const body = target.body;
      const trader = TRADERS.find((t) => t.participantId === body.participantId)!;
      const context = { orderId: body.orderId as string, instrumentId: body.instrumentId as string, ...session, participantId: trader.participantId, accountId: trader.accountId };
      if (roll < 12) return { path: '/api/v1/orders/cancel', key, token: trader.token, mode, answer: null, body: cancelBody(context) };
      const price = Number(body.limitPrice) + (body.side === 'BUY' ? 1 : -1);
      return { path: '/api/v1/orders/modify', key, token: trader.token, mode, answer: null, body: modifyBody({ ...context, price: String(price), quantity: String(Number(body.quantityUnits) + 2) }) };
    }
  }
  const trader = random.pick(TRADERS);
  const buy = random.chance(0.5);
  return {
    path: '/api/v1/orders/submit',
    key,
    token: trader.token,
    mode,
    answer: null,
    body: submitBody({
      instrumentId: random.pick(INSTRUMENTS),
      side: buy ? 'BUY' : 'SELL',
      price: String(buy ? random.between(99, 103) : random.between(101, 105)),
      quantity: String(random.between(1, 9)),
      orderType: random.below(7) === 0 ? 'LIMIT_HIDDEN' : 'LIMIT',
      timeInForce: random.below(11) === 0 ? 'IOC' : 'DAY',
      participantId: trader.participantId,
      accountId: trader.accountId,
    }),
  };
}

export interface BurstResult {
  /** Commands taken for sending (the first `sent` of the load; the rest never left). */
  sent: number;
  answered: number;
  /** Requests sent and not yet answered when the kill was issued (0 if the load had ended). */
  inFlightAtKill: number;
  /** False when the load ended before the kill trigger (the venue was killed idle). */
  killedMidLoad: boolean;
}

/**
 * Sends `commands` in order from `concurrency` connections, recording each answer on
 * its command, and SIGKILLs the venue (and with `database` its embedded PostgreSQL) after
 * `killAfterAnswers` answers or `killAfterMs`, whichever comes first (or at the end of the
 * load). Commands whose connection died with the venue keep answer null: not acknowledged.
 */
export async function sendUntilKilled(
  venue: VenueProcess,
  commands: readonly Sent[],
  options: { concurrency: number; killAfterAnswers?: number; killAfterMs?: number; database?: boolean },
): Promise<BurstResult> {
  let answered = 0;
  let inFlight = 0;
  let inFlightAtKill = 0;
  let next = 0;
  let killing: Promise<void> | null = null;
  const kill = (): Promise<void> => {
    if (killing === null) {
      inFlightAtKill = inFlight;
      killing = venue.kill({ database: options.database === true });
    }
    return killing;
  };
  // Awaited once, at the end, whichever call started it.
  const timer = options.killAfterMs === undefined ? undefined : setTimeout(() => void kill(), options.killAfterMs);
  const worker = async () => {
    while (next < commands.length && killing === null) {
      const command = commands[next++]!;
      inFlight++;
      try {
        const answer = await venue.order(command.path, command.body, { key: command.key, token: command.token, ...(command.mode === undefined ? {} : { mode: command.mode }) });
        command.answer = { status: answer.status, text: answer.text };
        if (++answered === options.killAfterAnswers) void kill();
      } catch {
        // the connection died with the venue: not acknowledged
      } finally {
        inFlight--;
      }
    }
  };
  await Promise.all(Array.from({ length: options.concurrency }, worker));
  clearTimeout(timer);
  const killedMidLoad = killing !== null;
  await kill();
  return { sent: next, answered, inFlightAtKill, killedMidLoad };
}

/** Every acknowledged command is terminal after the restart, with the answer its client got (the status view, as an operator reads it). */
export async function assertTerminalWithOriginalAnswer(venue: VenueProcess, acknowledged: readonly Sent[]): Promise<void> {
  await inParallel(acknowledged, CHECKS_IN_FLIGHT, async (command) => {
    const status = await venue.get(`/api/v1/commands/${command.body.commandId as string}`, TOKENS.operator);
    assert.equal(status.status, 200, `acknowledged command ${command.key} is known after the restart: ${status.text}`);
    assert.ok(TERMINAL.has(status.json.status), `acknowledged command ${command.key} (${command.mode ?? 'default'}) is terminal after the restart (${status.json.status})`);
    assert.equal(status.json.responsePayloadJson, command.answer!.text, `command ${command.key} keeps its original answer`);
  });
}

/** A retry with the same key (and token) repeats the original answer byte for byte. */
export async function assertReplaysRepeat(venue: VenueProcess, acknowledged: readonly Sent[]): Promise<void> {
  await inParallel(acknowledged, CHECKS_IN_FLIGHT, async (command) => {
    const replay = await venue.order(command.path, command.body, { key: command.key, token: command.token, ...(command.mode === undefined ? {} : { mode: command.mode }) });
    assert.equal(replay.status, command.answer!.status, `replay of ${command.key}: ${replay.text}`);
    assert.equal(replay.text, command.answer!.text, 'a replay repeats the original answer byte for byte');
  });
}

/** Commands whose answer was lost are either unknown (never captured) or terminal: never stuck. */
export async function assertUnansweredNeverStuck(venue: VenueProcess, unanswered: readonly Sent[]): Promise<{ unknown: number; terminal: number }> {
  let unknown = 0;
  let terminal = 0;
  await inParallel(unanswered, CHECKS_IN_FLIGHT, async (command) => {
    const status = await venue.get(`/api/v1/commands/${command.body.commandId as string}`, TOKENS.operator);
    if (status.status === 404) {
      unknown++;
      return;
    }
    assert.equal(status.status, 200, status.text);
    assert.ok(TERMINAL.has(status.json.status), `a captured command is terminal (${status.json.status})`);
    terminal++;
  });
  return { unknown, terminal };
}

/**
 * The committed journal against what the venue stored and answered: every command on it
 * once; the command log holds exactly the journal's commands (a captured command
 * re-driven if it had to be, nothing else); every acknowledged command on it;
 * runtime.trades holds exactly the journal's trade events (same shard, sequence, orders,
 * quantity and price: none lost, none duplicated), two executions each, and every trade
 * a 200 answer reported with the values it reported. Returns the history.
 */
export async function assertJournalAndTrades(client: pg.ClientBase, acknowledged: readonly Sent[]): Promise<{ history: CommittedCommand[][]; trades: number }> {
  const history = await committedHistory(client, SHARDS);
  const journaled = history.flat();
  const ids = journaled.map((command) => command.commandId);
  const idSet = new Set(ids);
  assert.equal(idSet.size, ids.length, 'every command is on the journal once');
  const logged = (await client.query<{ id: string }>('SELECT command_id AS id FROM runtime.command_log')).rows.map((row) => row.id);
  assert.deepEqual([...logged].sort(), [...ids].sort(), 'every captured command reached the journal (re-driven if it had to be), and nothing else did');
  for (const command of acknowledged) assert.ok(idSet.has(command.body.commandId as string), `acknowledged command ${command.key} is on the journal`);

  const expected = new Map<string, string>();
  for (const command of journaled) {
    for (const event of command.events) {
      if (event.kind !== EVENT_TRADE) continue;
      const where = `${command.shard}:${event.sequence}`;
      assert.ok(!expected.has(where), `one trade event at ${where}`);
      expected.set(where, [[event.orderA, event.orderB].sort().join(' '), event.quantity, event.price].join(' '));
    }
  }
  const rows = (
    await client.query<{ id: string; shard: number; seq: string; buy: string; sell: string; q: string; p: string }>(
      'SELECT trade_id AS id, shard_id AS shard, stream_sequence AS seq, buy_order_id AS buy, sell_order_id AS sell, quantity_units AS q, price_nanos AS p FROM runtime.trades',
    )
  ).rows;
  const stored = new Map<string, string>();
  for (const row of rows) {
    const where = `${row.shard}:${row.seq}`;
    assert.ok(!stored.has(where), `trade ${where} stored once`);
    stored.set(where, [[row.buy, row.sell].sort().join(' '), row.q, row.p].join(' '));
  }
  assert.equal(new Set(rows.map((row) => row.id)).size, rows.length, 'trade ids are unique');
  assert.deepEqual(stored, expected, 'runtime.trades holds exactly the journal trades: none lost, none duplicated');

  const byId = new Map(rows.map((row) => [row.id, row]));
  for (const command of acknowledged) {
    if (command.answer!.status !== 200) continue;
    for (const trade of JSON.parse(command.answer!.text).trades) {
      const row = byId.get(trade.tradeId);
      assert.ok(row !== undefined, `answered trade ${trade.tradeId} is stored`);
      assert.deepEqual([row.buy, row.sell, row.q, row.p], [trade.buyOrderId, trade.sellOrderId, trade.quantity.units, trade.price.nanos]);
    }
  }
  const executions = await client.query<{ n: string }>('SELECT count(*) AS n FROM runtime.executions');
  assert.equal(Number(executions.rows[0]!.n), rows.length * 2, 'two executions per trade');
  return { history, trades: rows.length };
}

/** The replay's resting orders of one instrument's side, in priority order. */
export function restingOf(engines: readonly EngineDriver[], instrument: string, side: 'BUY' | 'SELL'): RestingView[] {
  return engines[shardOf(uuidWords(instrument), 0, SHARDS)]!.book(side, instrument);
}

/** Depth levels (displayed LIMIT orders: quantity and count per price, best first) of resting orders. */
function depthLevels(resting: readonly RestingView[]): unknown[] {
  const levels = new Map<number, { quantity: number; count: number }>();
  for (const order of resting) {
    if (order.hidden) continue;
    const level = levels.get(order.priceNanos) ?? { quantity: 0, count: 0 };
    level.quantity += order.leaves;
    level.count++;
    levels.set(order.priceNanos, level);
  }
  // Priority order is best price first, so the map's insertion order is already best first.
  return [...levels].map(([priceNanos, level]) => ({ price: { nanos: String(priceNanos), currency: 'USD' }, quantity: { units: String(level.quantity) }, orderCount: level.count }));
}

/**
 * The books, rebuilt independently from the committed history, against what the venue
 * holds: runtime.order_lifecycle_state's open orders (id and remaining quantity) and the
 * depth every gateway serves (price levels of displayed orders). Returns the replay's
 * engines and how many orders rest.
 */
export async function assertBooksEqualReplay(client: pg.ClientBase, venue: VenueProcess, history: CommittedCommand[][]): Promise<{ engines: EngineDriver[]; resting: number }> {
  const engines = replayHistory(history);
  const open = new Map(
    (
      await client.query<{ id: string; remaining: string }>(
        "SELECT order_id AS id, remaining_quantity_units AS remaining FROM runtime.order_lifecycle_state WHERE state IN ('OPEN', 'PARTIALLY_FILLED')",
      )
    ).rows.map((row) => [row.id, Number(row.remaining)]),
  );
  const expectedOpen = new Map<string, number>();
  for (const instrument of INSTRUMENTS) {
    for (const side of ['BUY', 'SELL'] as const) for (const order of restingOf(engines, instrument, side)) expectedOpen.set(order.orderId, order.leaves);
  }
  assert.deepEqual(open, expectedOpen, 'order_lifecycle_state holds the replayed books');

  for (const instrument of INSTRUMENTS) {
    const depth = await venue.get(`/api/v1/market-data/depth/${instrument}?levels=50`, TOKENS.viewer);
    const bids = depthLevels(restingOf(engines, instrument, 'BUY'));
    const asks = depthLevels(restingOf(engines, instrument, 'SELL'));
    if (depth.status === 404) {
      assert.deepEqual([bids, asks], [[], []], `no depth for ${instrument}, so the replay has no displayed order for it`);
      continue;
    }
    assert.equal(depth.status, 200, depth.text);
    assert.ok(bids.length <= 50 && asks.length <= 50, 'the load stays within 50 price levels a side');
    assert.deepEqual([depth.json.bids, depth.json.asks], [bids, asks], `the depth of ${instrument} equals the replayed book`);
  }
  return { engines, resting: expectedOpen.size };
}

/**
 * Matching itself against the replay: for every side of every instrument, an IOC from
 * trader B sweeps it whole, and its trades must meet the replay's resting orders in the
 * replay's priority order with their quantities and prices. Empties the books. Returns
 * the sweeps sent (sync-result, answered) so a caller can keep checking them.
 */
export async function sweepAgainstReplay(venue: VenueProcess, engines: readonly EngineDriver[]): Promise<Sent[]> {
  const sweeps: Sent[] = [];
  for (const instrument of INSTRUMENTS) {
    for (const side of ['SELL', 'BUY'] as const) {
      const resting = restingOf(engines, instrument, side);
      if (resting.length === 0) continue;
      const prices = resting.map((order) => order.priceNanos / 1e9);
      const body = submitBody({
        instrumentId: instrument,
        side: side === 'SELL' ? 'BUY' : 'SELL',
        price: String(side === 'SELL' ? Math.max(...prices) : Math.min(...prices)),
        quantity: String(resting.reduce((sum, order) => sum + order.leaves, 0)),
        timeInForce: 'IOC',
        participantId: TRADER_B.participantId,
        accountId: TRADER_B.accountId,
      });
      const sweep: Sent = { path: '/api/v1/orders/submit', body, key: `sweep-${crypto.randomUUID()}`, token: TOKENS.traderB, mode: 'sync-result', answer: null };
      const swept = await venue.order(sweep.path, body, { key: sweep.key, token: sweep.token, mode: 'sync-result' });
      assert.equal(swept.status, 200, `trading goes on after the restart: ${swept.text}`);
      sweep.answer = { status: swept.status, text: swept.text };
      sweeps.push(sweep);
      assert.deepEqual(
        swept.json.trades.map((trade: any) => [side === 'SELL' ? trade.sellOrderId : trade.buyOrderId, Number(trade.quantity.units), Number(trade.price.nanos)]),
        resting.map((order) => [order.orderId, order.leaves, order.priceNanos]),
        `the ${side} book of ${instrument} matches in the replay's priority order`,
      );
    }
  }
  return sweeps;
}
