// After a load: what the load generator was told, checked against the venue's
// database once the projections caught up.
//  - every command answered 2xx has its outcome stored (nothing acknowledged is lost);
//  - every sync-result 200 body is byte for byte the stored answer (MD5 compared);
//  - every trade an answer reported is stored, none twice, and (when every request was
//    answered) the database holds no trade that no answer reported;
//  - two executions per trade, and per instrument the bought and sold quantities are
//    equal in the executions and in the order lifecycle (the books balance).

import pg from 'pg';
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

async function waitForProjections(client: pg.Client): Promise<void> {
  const deadline = Date.now() + 120_000;
  let last = -1;
  for (;;) {
    const row = (await client.query('SELECT (SELECT count(*) FROM runtime.command_log)::bigint AS logged, (SELECT count(*) FROM runtime.command_outcomes)::bigint AS projected')).rows[0]!;
    if (row.logged === row.projected && row.projected === last) return;
    if (Date.now() > deadline) throw new Error(`the projections did not catch up: ${row.projected} of ${row.logged} outcomes`);
    last = row.projected;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

export async function verifyLoad(databaseUrl: string, results: LoadResult[]): Promise<Verification> {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    await waitForProjections(client);
    const ids: string[] = [];
    const md5: (string | null)[] = [];
    const reported: string[] = [];
    let unanswered = 0;
    for (const result of results) {
      unanswered += result.transportErrors + (result.recordedTruncated ? 1 : 0);
      result.recorded.commandIds.forEach((id, k) => {
        const status = result.recorded.statuses[k]!;
        if (status < 200 || status > 299) return;
        ids.push(id);
        md5.push(result.recorded.bodyMd5[k] ?? null);
      });
      reported.push(...result.recorded.tradeIds);
    }
    let outcomesMissing = 0;
    let bodiesChecked = 0;
    let bodiesDifferent = 0;
    for (let from = 0; from < ids.length; from += CHUNK) {
      const chunk = ids.slice(from, from + CHUNK);
      const stored = new Map(
        (await client.query<{ id: string; md5: string }>('SELECT command_id::text AS id, md5(result_payload_json) AS md5 FROM runtime.command_outcomes WHERE command_id = ANY($1::uuid[])', [chunk])).rows.map(
          (row) => [row.id, row.md5] as const,
        ),
      );
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
      outcomesMissing === 0 && bodiesDifferent === 0 && verification.tradesReportedTwice === 0 && tradesMissing === 0 && tradesUnreported === 0 && verification.executionsPerTradeOk && unbalanced.rows.length === 0;
    return verification;
  } finally {
    await client.end();
  }
}
