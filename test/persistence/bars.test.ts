// Bars (persistence/market-data.ts readBars) on a real PostgreSQL: every bar equal to one
// computed here from the instrument's trades (bucket by whole interval since the epoch,
// open and close by tape order even when trades share a timestamp, high, low, volume,
// count), for each interval and windows with edges inside and on bucket boundaries; and
// the work bounded by the window, not by the instrument's history (migration 007's BRIN
// index on occurred_at): from EXPLAIN ANALYZE, a 10-minute window examines a few
// thousand trades where the instrument holds 60,000.

import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type pg from 'pg';
import { BARS_SQL, readBars } from '../../persistence/market-data.ts';
import { BAR_INTERVALS, type BarInterval } from '../../core/storage-protocol.ts';
import { migratedDatabase, rowsRead, type TestDatabase, withClient } from '../support/database.ts';

const A = '10000000-0000-4000-8000-00000000000a';
const B = '10000000-0000-4000-8000-00000000000b';
/** 2026-11-23 06:00:00 UTC: the first trade. */
const T0 = 1_795_413_600;
const TRADES = 90_000; // A two thirds, B one third, interleaved
/** 6 hours: three trades share each timestamp, 0.72 s apart. */
const SPAN_SECONDS = 6 * 3600;

let database: TestDatabase;
let url: string;

before(async () => {
  ({ database, url } = await migratedDatabase());
  await withClient(url, async (client) => {
    // In time order, as the projector appends them. Trades g, g+1, g+2 share occurred_at,
    // and their tape order (stream_sequence) is not their price order.
    await client.query(
      `INSERT INTO runtime.trades (trade_id, shard_id, stream_sequence, command_id, execution_id, run_id, venue_session_id, instrument_id,
         buy_order_id, sell_order_id, buy_participant_id, buy_account_id, sell_participant_id, sell_account_id, aggressor_side,
         quantity_units, price_nanos, currency, occurred_at)
       SELECT md5('t' || g)::uuid, 0, g, md5('c' || g)::uuid, md5('e' || g)::uuid, 'r', 's', CASE WHEN g % 3 = 2 THEN $2::uuid ELSE $1::uuid END,
              md5('b' || g)::uuid, md5('s' || g)::uuid, md5('p')::uuid, md5('p')::uuid, md5('q')::uuid, md5('q')::uuid, 'BUY',
              1 + g % 7, 100000000000 + ((g::bigint * 7919) % 1000) * 1000000, 'USD',
              to_timestamp($3) + ((g - 1) / 3) * ($4::float8 / ($5 / 3)) * interval '1 second'
         FROM generate_series(1, $5::int) g`,
      [A, B, T0, SPAN_SECONDS, TRADES],
    );
    // What autosummarize has autovacuum do as ranges fill (not timely enough for a test).
    await client.query("SELECT brin_summarize_new_values('runtime.trades_occurred_at')");
    await client.query('ANALYZE runtime.trades');
  });
});

after(async () => {
  await database.remove();
});

interface Trade {
  sequence: number;
  priceNanos: bigint;
  quantity: bigint;
  micros: bigint;
}

const tradesOf = new Map<string, Trade[]>();

/** Every trade of the instrument (read once). */
async function allTrades(client: pg.ClientBase, instrumentId: string): Promise<Trade[]> {
  let trades = tradesOf.get(instrumentId);
  if (trades === undefined) {
    const rows = await client.query<{ s: string; p: string; q: string; us: string }>(
      `SELECT stream_sequence::text AS s, price_nanos::text AS p, quantity_units::text AS q, ((extract(epoch FROM occurred_at) * 1000000)::bigint)::text AS us
         FROM runtime.trades WHERE instrument_id = $1`,
      [instrumentId],
    );
    trades = rows.rows.map((row) => ({ sequence: Number(row.s), priceNanos: BigInt(row.p), quantity: BigInt(row.q), micros: BigInt(row.us) }));
    tradesOf.set(instrumentId, trades);
  }
  return trades;
}

/** The oracle: the instrument's trades in the window, grouped here. */
async function expectedBars(client: pg.ClientBase, instrumentId: string, interval: BarInterval, start: number, end: number) {
  const seconds = BigInt(BAR_INTERVALS[interval]);
  const buckets = new Map<bigint, Trade[]>();
  for (const trade of await allTrades(client, instrumentId)) {
    if (trade.micros < BigInt(start) * 1_000_000n || trade.micros >= BigInt(end) * 1_000_000n) continue;
    const bucket = (trade.micros / 1_000_000n / seconds) * seconds;
    const list = buckets.get(bucket) ?? [];
    list.push(trade);
    buckets.set(bucket, list);
  }
  const iso = (epochSeconds: bigint) => new Date(Number(epochSeconds) * 1000).toISOString().replace('.000Z', 'Z');
  return [...buckets.keys()]
    .sort((a, b) => (a < b ? -1 : 1))
    .map((bucket) => {
      const trades = buckets.get(bucket)!.sort((a, b) => a.sequence - b.sequence);
      const prices = trades.map((trade) => trade.priceNanos);
      const money = (nanos: bigint) => ({ nanos: String(nanos), currency: 'USD' });
      return {
        start: iso(bucket),
        open: money(prices[0]!),
        high: money(prices.reduce((a, b) => (b > a ? b : a))),
        low: money(prices.reduce((a, b) => (b < a ? b : a))),
        close: money(prices.at(-1)!),
        volume: { units: String(trades.reduce((sum, trade) => sum + trade.quantity, 0n)) },
        tradeCount: trades.length,
      };
    });
}

test('bars equal the trades grouped by interval: open and close in tape order, every interval, windows cut inside and on bucket edges', async () => {
  await withClient(url, async (client) => {
    const cases: Array<[BarInterval, number, number]> = [
      ['1m', T0, T0 + 3600], // the first hour
      ['1m', T0 + 7 * 60, T0 + 9 * 60 + 30], // an end inside a bucket: its bar holds only the trades before the end
      ['5m', T0 + 3600, T0 + 3 * 3600],
      ['15m', T0 - 900, T0 + 2 * 3600], // starts before the first trade
      ['1h', T0, T0 + 7 * 3600], // the whole history and past it
    ];
    for (const [interval, start, end] of cases) {
      const answer = await readBars(client, A, interval, start, end);
      assert.equal(answer.ok, true);
      const body = JSON.parse(answer.body) as { bars: unknown[]; start: string; end: string };
      const expected = await expectedBars(client, A, interval, start, end);
      assert.ok(expected.length > 0, `${interval} ${start}-${end}: the case has trades`);
      assert.deepEqual(body.bars, expected, `${interval} ${start}-${end}`);
    }
    const first = JSON.parse((await readBars(client, A, '1m', T0, T0 + 60)).body) as { bars: Array<{ tradeCount: number; open: { nanos: string } }> };
    // 84 timestamps in the first minute (0.72 s apart), three trades each, two of every three A's.
    assert.equal(first.bars[0]!.tradeCount, 168);
    const empty = JSON.parse((await readBars(client, B, '1m', T0 + SPAN_SECONDS + 60, T0 + SPAN_SECONDS + 3600)).body) as { bars: unknown[] };
    assert.deepEqual(empty.bars, [], 'a window with no trades has no bars');
  });
});

test("a bars read examines the trades of its window, not the instrument's whole history", async () => {
  await withClient(url, async (client) => {
    const start = T0 + 3 * 3600;
    const end = start + 600;
    const inWindow = Number((await client.query('SELECT count(*) AS n FROM runtime.trades WHERE occurred_at >= to_timestamp($1) AND occurred_at < to_timestamp($2)', [start, end])).rows[0].n);
    const ofInstrument = Number((await client.query('SELECT count(*) AS n FROM runtime.trades WHERE instrument_id = $1', [A])).rows[0].n);
    assert.ok(inWindow > 2_400 && inWindow < 2_600, `${inWindow} trades of every instrument in those 10 minutes`);
    assert.equal(ofInstrument, 60_000);
    const examined = (await rowsRead(client, BARS_SQL, [A, start, end, 60])).get('trades') ?? 0;
    // The window's own trades plus at most the BRIN ranges at its two edges (128 pages of
    // about 30 trades each): far below the instrument's 60,000 (all of them without the index).
    assert.ok(examined >= inWindow * (2 / 3), `examined ${examined}`);
    assert.ok(examined <= inWindow + 2 * 128 * 40, `a 10-minute bars read examined ${examined} trades (the instrument has ${ofInstrument})`);
  });
});
