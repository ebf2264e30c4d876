// After a load: what the load generator was told, checked against the venue's
// database once the projections caught up.
//  - every command answered 2xx has its outcome stored (nothing acknowledged is lost);
//  - every sync-result 200 body is byte for byte the stored answer, rendered from the
//    journal (MD5 compared);
//  - every trade an answer reported is stored, none twice, and (when every request was
//    answered) the database holds no trade that no answer reported;
//  - two executions per trade, and per instrument the bought and sold quantities are
//    equal in the executions and in the order lifecycle (the books balance).

import { createHash } from 'node:crypto';
import pg from 'pg';
import { JOURNAL_OF_COMMAND, storedEnvelope } from '../../persistence/stored-envelope.ts';
import type { LoadResult } from './load-generator.ts';

export interface Verification {
  commandsChecked: number;
  outcomesMissing: number;
  bodiesChecked: number;
  bodiesDifferent: number;
  tradesReported: number;
  tradesReportedTwice: number;
  tradesStored: number;
  tradesMissing: number;
  tradesUnreported: number;
  executionsPerTradeOk: boolean;
  unbalancedInstruments: number;
  ok: boolean;
}

const CHUNK = 20_000;

/** Until every shard's projection watermark is at the end of its journal. */
export async function waitForProjections(client: pg.Client): Promise<void> {
  const deadline = Date.now() + 120_000;
  for (;;) {
    const behind = (
      await client.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM (SELECT shard_id, max(last_sequence) AS s FROM runtime.journal_batches GROUP BY shard_id) j
           LEFT JOIN runtime.projection_watermarks w ON w.shard_id = j.shard_id AND w.projection = 'runtime'
          WHERE w.sequence IS NULL OR w.sequence < j.s`,
      )
    ).rows[0]!.n;
    if (behind === 0) return;
    if (Date.now() > deadline) throw new Error(`the projections did not catch up: ${behind} shard(s) behind`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

/**
 * What the runs were told: the commands answered 2xx with each one's body hash (null where
 * not kept), every trade an answer reported, and how many requests went unanswered (or
 * unrecorded). In loops, not push(...items): a 30 s run reported 150,000 trades and more,
 * and a spread that long overflows the stack (a full bench run ended there).
 */
export function collectAnswered(results: readonly Pick<LoadResult, 'recorded' | 'transportErrors' | 'recordedTruncated'>[]): {
  ids: string[];
  md5: (string | null)[];
  reported: string[];
  unanswered: number;
} {
  const ids: string[] = [];
  const md5: (string | null)[] = [];
  const reported: string[] = [];
  let unanswered = 0;
  for (const result of results) {
    unanswered += result.transportErrors + (result.recordedTruncated ? 1 : 0);
    const { commandIds, statuses, bodyMd5, tradeIds } = result.recorded;
    for (let k = 0; k < commandIds.length; k++) {
      const status = statuses[k]!;
      if (status < 200 || status > 299) continue;
      ids.push(commandIds[k]!);
      md5.push(bodyMd5[k] ?? null);
    }
    for (const trade of tradeIds) reported.push(trade);
  }
  return { ids, md5, reported, unanswered };
}

export async function verifyLoad(databaseUrl: string, results: LoadResult[]): Promise<Verification> {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    await waitForProjections(client);
    const { ids, md5, reported, unanswered } = collectAnswered(results);
    let outcomesMissing = 0;
    let bodiesChecked = 0;
    let bodiesDifferent = 0;
    for (let from = 0; from < ids.length; from += CHUNK) {
      const chunk = ids.slice(from, from + CHUNK);
      const rows = await client.query(
        `SELECT cl.command_id, cl.shard_id, cl.journal_offset, ${JOURNAL_OF_COMMAND.column} FROM runtime.command_log cl ${JOURNAL_OF_COMMAND.join} WHERE cl.command_id = ANY($1::uuid[])`,
        [chunk],
      );
      const stored = new Map(rows.rows.map((row) => [row.command_id as string, createHash('md5').update(storedEnvelope(row)).digest('hex')] as const));
      chunk.forEach((id, k) => {
        const hash = stored.get(id);
        if (hash === undefined) return void outcomesMissing++;
        const expected = md5[from + k];
        if (expected === null || expected === undefined) return;
        bodiesChecked++;
        if (hash !== expected) bodiesDifferent++;
      });
    }
    const unique = new Set(reported);
    let tradesMissing = 0;
    const list = [...unique];
    for (let from = 0; from < list.length; from += CHUNK) {
      const chunk = list.slice(from, from + CHUNK);
      const found = Number((await client.query('SELECT count(*) AS n FROM runtime.trades WHERE trade_id = ANY($1::uuid[])', [chunk])).rows[0].n);
      tradesMissing += chunk.length - found;
    }
    const tradesStored = Number((await client.query('SELECT count(*) AS n FROM runtime.trades')).rows[0].n);
    const executions = Number((await client.query('SELECT count(*) AS n FROM runtime.executions')).rows[0].n);
    const unbalanced = await client.query(
      `SELECT instrument_id FROM (
         SELECT instrument_id, sum(CASE WHEN side = 'BUY' THEN quantity_units ELSE -quantity_units END) AS net FROM runtime.executions GROUP BY instrument_id
         UNION ALL
         SELECT instrument_id, sum(CASE WHEN side = 'BUY' THEN filled_quantity_units ELSE -filled_quantity_units END) FROM runtime.order_lifecycle_state GROUP BY instrument_id
       ) nets WHERE net <> 0`,
    );
    const sync = results.every((r) => r.mode === 'sync-result' && r.recorded.commandIds.length > 0);
    const tradesUnreported = sync && unanswered === 0 ? tradesStored - (unique.size - tradesMissing) : 0;
    const verification: Verification = {
      commandsChecked: ids.length,
      outcomesMissing,
      bodiesChecked,
      bodiesDifferent,
      tradesReported: reported.length,
      tradesReportedTwice: reported.length - unique.size,
      tradesStored,
      tradesMissing,
      tradesUnreported,
      executionsPerTradeOk: executions === 2 * tradesStored,
      unbalancedInstruments: unbalanced.rows.length,
      ok: false,
    };
    verification.ok =
      outcomesMissing === 0 &&
      bodiesDifferent === 0 &&
      verification.tradesReportedTwice === 0 &&
      tradesMissing === 0 &&
      tradesUnreported === 0 &&
      verification.executionsPerTradeOk &&
      unbalanced.rows.length === 0;
    return verification;
  } finally {
    await client.end();
  }
}
