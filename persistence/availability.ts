// GET /api/v1/data/availability: one row per read route, saying where its data comes
// from and how fresh it is, so a report can tell durable facts from projections.
//   durable-facts  read from what acknowledgements waited for (command log, journal)
//                  or from the settlement fact trail
//   projection     materialized from the journal behind it (tier 2); lag and watermark
//   live           computed from the venue's memory at the time of the read

import type pg from 'pg';
import type { PersistenceControl } from '../core/persistence-control.ts';

type SourceType = 'durable-facts' | 'projection' | 'live';

interface ReadRow {
  name: string;
  endpoint: string;
  sourceType: SourceType;
  freshnessModel: string;
  visibilityScope: string;
  requiredFilters: string[];
  optionalFilters: string[];
  projectionLagMs: number | null;
  watermark: { shardId: number; sequence: number }[] | null;
}

type Lagged = 'journal' | 'snapshots' | 'none';

const LIFECYCLE_AT_ARRIVAL = 'read-your-writes: the order lifecycle (runtime.order_lifecycle_state) as of the journal position durable when the read arrived';
const OWN_IN_MEMORY =
  'read-your-writes from memory: as of the journal position durable when the read arrived; open orders and the last OWN_READS_WINDOW closed orders and fills per participant, older rows from PostgreSQL';
/** The settlement reads, in route order, and how fresh each is. */
const SETTLEMENT_FRESHNESS = {
  facts: 'the settlement fact trail as stored at the read, append-only, in sequence order',
  obligations: 'projected at the read from the settlement fact trail',
  ledger: 'replayed at the read from the settlement fact trail',
  exceptions: 'projected at the read from the settlement fact trail',
  proof: 'replayed at the read from the settlement fact trail; the checksum is identical for identical trails',
  score: 'computed at the read from the settlement fact trail, as of asOf (default: now); a fail open longer than agedFailAfterSeconds (default 3600) is aged',
} as const;

const READS: (Omit<ReadRow, 'projectionLagMs' | 'watermark'> & { lag: Lagged })[] = [
  {
    name: 'command-status',
    endpoint: 'GET /api/v1/commands/{commandId}',
    sourceType: 'durable-facts',
    lag: 'none',
    freshnessModel: 'read-your-writes: a command acknowledged before the read arrived is found, with its status as of the read, from the command log and the journal',
    visibilityScope: 'trader: own commands; operator: any',
    requiredFilters: ['commandId'],
    optionalFilters: [],
  },
  {
    name: 'market-data-snapshot',
    endpoint: 'GET /api/v1/market-data/snapshots/{instrumentId}',
    sourceType: 'projection',
    lag: 'snapshots',
    freshnessModel: 'as of its last refresh (POST /api/v1/market-data/snapshots, or continuously with MARKET_DATA_PROJECTOR_ENABLED); sourceWatermark says from which journal position',
    visibilityScope: 'public: displayed (LIMIT) quantity only',
    requiredFilters: ['instrumentId'],
    optionalFilters: ['projectionName'],
  },
  {
    name: 'market-data-snapshot-refresh',
    endpoint: 'POST /api/v1/market-data/snapshots',
    sourceType: 'projection',
    lag: 'journal',
    freshnessModel: 'read-your-writes: recomputed from the books in memory once they reached the journal position durable at arrival, and stored',
    visibilityScope: 'public',
    requiredFilters: [],
    optionalFilters: ['projectionName', 'sourceProjectionName', 'instrumentId'],
  },
  {
    name: 'market-data-depth',
    endpoint: 'GET /api/v1/market-data/depth/{instrumentId}',
    sourceType: 'projection',
    lag: 'journal',
    freshnessModel: LIFECYCLE_AT_ARRIVAL,
    visibilityScope: 'public: displayed (LIMIT) quantity and order count per price level',
    requiredFilters: ['instrumentId'],
    optionalFilters: ['levels', 'projectionName', 'sourceProjectionName'],
  },
  {
    name: 'market-data-trades',
    endpoint: 'GET /api/v1/market-data/trades/{instrumentId}',
    sourceType: 'projection',
    lag: 'journal',
    freshnessModel: 'read-your-writes over runtime.trades (materialized from the journal); sequence is the tape cursor',
    visibilityScope: 'public: no order, participant, account or counterparty identity',
    requiredFilters: ['instrumentId'],
    optionalFilters: ['limit', 'before'],
  },
  {
    name: 'market-data-bars',
    endpoint: 'GET /api/v1/market-data/bars/{instrumentId}',
    sourceType: 'projection',
    lag: 'journal',
    freshnessModel: 'read-your-writes, aggregated from runtime.trades at read time',
    visibilityScope: 'public',
    requiredFilters: ['instrumentId'],
    optionalFilters: ['interval', 'start', 'end'],
  },
  {
    name: 'own-orders-current',
    endpoint: 'GET /api/v1/orders/current',
    sourceType: 'projection',
    lag: 'journal',
    freshnessModel: OWN_IN_MEMORY,
    visibilityScope: "trader: the principal's participants",
    requiredFilters: [],
    optionalFilters: ['instrumentId', 'limit'],
  },
  {
    name: 'own-orders-history',
    endpoint: 'GET /api/v1/orders/history',
    sourceType: 'projection',
    lag: 'journal',
    freshnessModel: OWN_IN_MEMORY,
    visibilityScope: "trader: the principal's participants",
    requiredFilters: [],
    optionalFilters: ['instrumentId', 'limit'],
  },
  {
    name: 'own-orders-fills',
    endpoint: 'GET /api/v1/orders/fills',
    sourceType: 'projection',
    lag: 'journal',
    freshnessModel: OWN_IN_MEMORY,
    visibilityScope: "trader: the principal's participants",
    requiredFilters: [],
    optionalFilters: ['instrumentId', 'limit'],
  },
  {
    name: 'venue-session',
    endpoint: 'GET /api/v1/venue/session',
    sourceType: 'live',
    lag: 'none',
    freshnessModel: 'the active session',
    visibilityScope: 'any principal',
    requiredFilters: [],
    optionalFilters: [],
  },
  {
    name: 'data-availability',
    endpoint: 'GET /api/v1/data/availability',
    sourceType: 'live',
    lag: 'none',
    freshnessModel: 'computed at the read',
    visibilityScope: 'any principal',
    requiredFilters: [],
    optionalFilters: [],
  },
  ...(Object.keys(SETTLEMENT_FRESHNESS) as (keyof typeof SETTLEMENT_FRESHNESS)[]).map((read) => ({
    name: `settlement-${read}`,
    endpoint: `GET /api/v1/settlement/${read}/{scenarioRunId}`,
    sourceType: 'durable-facts' as const,
    lag: 'none' as const,
    freshnessModel: SETTLEMENT_FRESHNESS[read],
    visibilityScope: "operator: any; trader: rows of the principal's participants",
    requiredFilters: ['scenarioRunId'],
    optionalFilters: read === 'score' ? ['asOf', 'agedFailAfterSeconds'] : [],
  })),
];

const LEADERBOARD: (typeof READS)[number] = {
  name: 'settlement-leaderboard',
  endpoint: 'GET /api/v1/settlement/leaderboard/{scenarioRunId}',
  sourceType: 'durable-facts',
  lag: 'none',
  freshnessModel: 'ranked at the read from the score inputs of the settlement fact trail, as of asOf (default: now); listed while a competition profile is active',
  visibilityScope: 'public: participant ids and their fail and penalty figures',
  requiredFilters: ['scenarioRunId'],
  optionalFilters: ['asOf', 'agedFailAfterSeconds'],
};

export async function availability(
  db: pg.Pool,
  control: PersistenceControl,
  shardCount: number,
  snapshots: { watermark: number[]; behindSinceMs: number | null; enabled: boolean },
  competition: boolean,
): Promise<{ reads: ReadRow[] }> {
  const projected = Array.from({ length: shardCount }, (_, shardId) => ({ shardId, sequence: control.projected(shardId) }));
  // The journal lag in ms: the age of the oldest committed batch the projections have not reached.
  let journalLagMs = 0;
  for (const { shardId, sequence } of projected) {
    if (control.journalCommitted(shardId) <= sequence) continue;
    const oldest = await db.query<{ ms: string }>(
      `SELECT (extract(epoch FROM clock_timestamp() - committed_at) * 1000)::bigint::text AS ms
         FROM runtime.journal_batches WHERE shard_id = $1 AND first_sequence > $2 ORDER BY first_sequence LIMIT 1`,
      [shardId, sequence],
    );
    journalLagMs = Math.max(journalLagMs, Number(oldest.rows[0]?.ms ?? 0));
  }
  return {
    reads: [...READS, ...(competition ? [LEADERBOARD] : [])].map(({ lag, ...row }) => ({
      ...row,
      // Snapshots refreshed on demand carry their own sourceWatermark; the loop's lag only exists while it runs.
      projectionLagMs: lag === 'journal' ? journalLagMs : lag === 'snapshots' && snapshots.enabled ? (snapshots.behindSinceMs === null ? 0 : Date.now() - snapshots.behindSinceMs) : null,
      watermark: lag === 'journal' ? projected : lag === 'snapshots' && snapshots.enabled ? snapshots.watermark.map((sequence, shardId) => ({ shardId, sequence })) : null,
    })),
  };
}
