// Settlement storage and workflows on PostgreSQL (run by the settlement pool's threads:
// persistence/settlement-worker.ts): every operation on a scenario run takes the run's
// row lock, replays its facts, lets the pure workflow (core/settlement) decide, and
// appends the new facts in the same transaction, so concurrent operators serialize and
// sequences stay gap-free (the database checks that too). Reads replay the trail and
// render a view.

import { createHash } from 'node:crypto';
import type pg from 'pg';
import { refusal, type Outcome } from '../core/error-codes.ts';
import { answered, refusedWith, type Answered, type PlaneAnswer, type SettlementAdmin, type SettlementRead } from '../core/storage-protocol.ts';
import { factContent, PROFILE_OPS, PROFILES, type Fact, type FactInput } from '../core/settlement/facts.ts';
import { applyFact, emptyState, replay, type SettlementState } from '../core/settlement/state.ts';
import { exceptionsView, factsView, leaderboardView, ledgerView, obligationsView, proofView, scoreView } from '../core/settlement/views.ts';
import { forceSettle, materialize, repairCash, repairSecurity, reverseLedgerEntry, type ResolvedProfile, type TradeForSettlement } from '../core/settlement/workflow.ts';

const ok = (value: unknown): Answered => answered(JSON.stringify(value));
/** An operation's answer: its result, or its refusal's code and message as they are. */
const answer = (outcome: Outcome<unknown>): PlaneAnswer => (outcome.ok ? ok(outcome.value) : refusedWith(outcome.error));

function contentHash(scenarioRunId: string, fact: FactInput): Buffer {
  return createHash('sha256').update(scenarioRunId).update('\u0000').update(factContent(fact)).digest();
}

/** A run's facts in sequence order, those after `after` (the reads replay them; tests check stored trails with it). */
export async function loadFacts(client: pg.ClientBase, scenarioRunId: string, after = 0): Promise<Fact[]> {
  const rows = await client.query<{
    sequence: string;
    fact_id: string;
    fact_type: string;
    occurred_at_us: string;
    causation_id: string | null;
    origin: 'service' | 'operator';
    payload: Record<string, unknown>;
  }>('SELECT sequence, fact_id, fact_type, occurred_at_us, causation_id, origin, payload FROM settlement.facts WHERE scenario_run_id = $1 AND sequence > $2 ORDER BY sequence', [scenarioRunId, after]);
  return rows.rows.map((row) => ({
    scenarioRunId,
    sequence: Number(row.sequence),
    factId: row.fact_id,
    factType: row.fact_type,
    occurredAtUs: Number(row.occurred_at_us),
    causationId: row.causation_id,
    origin: row.origin,
    payload: row.payload,
  }));
}

async function appendFacts(client: pg.ClientBase, facts: readonly Fact[]): Promise<void> {
  if (facts.length === 0) return;
  await client.query(
    `INSERT INTO settlement.facts (scenario_run_id, sequence, fact_id, fact_type, occurred_at_us, causation_id, origin, payload, content_sha256)
     SELECT * FROM unnest($1::text[], $2::bigint[], $3::uuid[], $4::text[], $5::bigint[], $6::uuid[], $7::text[], $8::jsonb[], $9::bytea[])`,
    [
      facts.map((f) => f.scenarioRunId),
      facts.map((f) => f.sequence),
      facts.map((f) => f.factId),
      facts.map((f) => f.factType),
      facts.map((f) => f.occurredAtUs),
      facts.map((f) => f.causationId),
      facts.map((f) => f.origin),
      facts.map((f) => JSON.stringify(f.payload)),
      facts.map((f) => contentHash(f.scenarioRunId, f)),
    ],
  );
}

/** What an operation on a run appends, and what it answers. */
type Appending<T> = Outcome<{ facts: Fact[]; result: T }>;

/** Runs `work` on the locked, replayed run and appends what it returns, in one transaction; a refusal stores nothing. */
async function withRun<T>(pool: pg.Pool, scenarioRunId: string, work: (client: pg.ClientBase, state: SettlementState) => Promise<Appending<T>>): Promise<Outcome<T>> {
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    await client.query('INSERT INTO settlement.scenario_runs (scenario_run_id) VALUES ($1) ON CONFLICT DO NOTHING', [scenarioRunId]);
    await client.query('SELECT 1 FROM settlement.scenario_runs WHERE scenario_run_id = $1 FOR UPDATE', [scenarioRunId]);
    const state = replay(scenarioRunId, await loadFacts(client, scenarioRunId));
    const done = await work(client, state);
    if (!done.ok) {
      await client.query('ROLLBACK');
      return done;
    }
    await appendFacts(client, done.value.facts);
    await client.query('COMMIT');
    return { ok: true, value: done.value.result };
  } catch (error) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw error;
  } finally {
    client.release();
  }
}

async function resolver(client: pg.ClientBase, scenarioRunId: string, requested: string | null): Promise<{ resolve: (trade: TradeForSettlement) => ResolvedProfile; scenarioLevel: ResolvedProfile }> {
  const rows = await client.query<{ scope: string; scope_id: string; profile: string }>('SELECT scope, scope_id, profile FROM settlement.profile_overrides');
  const override = (scope: string, id: string) => rows.rows.find((row) => row.scope === scope && row.scope_id === id)?.profile;
  const scenario = override('scenarioRun', scenarioRunId);
  const platform = override('platform', '');
  // The specification's order: scenario/run override, venue/session override, platform default or admin profile, then ops-realistic-v1.
  const below: ResolvedProfile =
    requested !== null ? { profile: requested, source: 'request' } : platform !== undefined ? { profile: platform, source: 'platform' } : { profile: PROFILE_OPS, source: 'default' };
  const scenarioLevel: ResolvedProfile = scenario !== undefined ? { profile: scenario, source: 'scenarioRun' } : below;
  return {
    scenarioLevel,
    resolve: (trade) => {
      if (scenario !== undefined) return scenarioLevel;
      const session = override('venueSession', trade.venueSessionId);
      return session !== undefined ? { profile: session, source: 'venueSession' } : below;
    },
  };
}

async function runTrades(client: pg.ClientBase, scenarioRunId: string): Promise<TradeForSettlement[]> {
  const rows = await client.query(
    `SELECT trade_id, instrument_id, buy_participant_id, buy_account_id, sell_participant_id, sell_account_id,
            quantity_units::text AS q, price_nanos::text AS p, currency, venue_session_id
       FROM runtime.trades WHERE run_id = $1 ORDER BY occurred_at, shard_id, stream_sequence`,
    [scenarioRunId],
  );
  return rows.rows.map((row) => ({
    tradeId: row.trade_id,
    instrumentId: row.instrument_id,
    buyParticipantId: row.buy_participant_id,
    buyAccountId: row.buy_account_id,
    sellParticipantId: row.sell_participant_id,
    sellAccountId: row.sell_account_id,
    quantityUnits: row.q,
    priceNanos: row.p,
    currency: row.currency.trim(),
    venueSessionId: row.venue_session_id,
  }));
}

const nowUs = () => Math.round((performance.timeOrigin + performance.now()) * 1000);

/** An operator request (`/admin/v1/settlement/...`). */
export async function settlementAdmin(pool: pg.Pool, request: SettlementAdmin): Promise<PlaneAnswer> {
  switch (request.action) {
    case 'facts':
      return answer(await appendBundle(pool, request.scenarioRunId, request.facts));
    case 'materialize':
      return answer(
        await withRun(pool, request.scenarioRunId, async (client, state) => {
          const profiles = await resolver(client, request.scenarioRunId, request.profile);
          const made = materialize(state, await runTrades(client, request.scenarioRunId), profiles.resolve, nowUs());
          if (!made.ok) return made;
          const facts = made.value;
          return {
            ok: true,
            value: { facts, result: { scenarioRunId: request.scenarioRunId, profile: profiles.scenarioLevel.profile, obligations: state.obligations.size, factsAppended: facts.length } },
          };
        }),
      );
    case 'repair-cash':
    case 'repair-security':
    case 'force-settle':
    case 'reverse-ledger-entry':
      return answer(
        await withRun(pool, request.scenarioRunId, async (_client, state) => {
          const at = nowUs();
          const decided =
            request.action === 'repair-cash'
              ? repairCash(state, { obligationId: request.obligationId, amountNanos: BigInt(request.amountNanos), currency: request.currency }, at)
              : request.action === 'repair-security'
                ? repairSecurity(state, { obligationId: request.obligationId, quantityUnits: BigInt(request.quantityUnits) }, at)
                : request.action === 'force-settle'
                  ? forceSettle(state, { obligationId: request.obligationId, reason: request.reason }, at)
                  : reverseLedgerEntry(state, { ledgerEntryId: request.ledgerEntryId, reason: request.reason }, at);
          if (!decided.ok) return decided;
          const facts = decided.value;
          const obligationId = String(facts[0]?.payload.obligationId ?? '');
          return {
            ok: true,
            value: {
              facts,
              result: {
                scenarioRunId: request.scenarioRunId,
                obligationId,
                state: state.obligations.get(obligationId)?.state ?? null,
                factsAppended: facts.length,
                facts: facts.map((f) => ({ factId: f.factId, factType: f.factType, sequence: f.sequence })),
              },
            },
          };
        }),
      );
    case 'profiles':
      await pool.query(
        `INSERT INTO settlement.profile_overrides (scope, scope_id, profile, updated_at) VALUES ($1, $2, $3, now())
         ON CONFLICT (scope, scope_id) DO UPDATE SET profile = EXCLUDED.profile, updated_at = now()`,
        [request.scope, request.scopeId ?? '', request.profile],
      );
      return ok({ scope: request.scope, scopeId: request.scopeId ?? null, profile: request.profile, profiles: PROFILES });
  }
}

/**
 * An operator's bundle: all or nothing. A fact id already stored (in any run) with the
 * same content is a duplicate and skipped; with different content the whole bundle is
 * refused (409) and nothing is stored.
 */
async function appendBundle(pool: pg.Pool, scenarioRunId: string, inputs: FactInput[]): Promise<Outcome<{ appended: number; duplicates: number }>> {
  return withRun(pool, scenarioRunId, async (client, state) => {
    const hashes = inputs.map((input) => contentHash(scenarioRunId, input));
    const stored = new Map(
      (await client.query<{ fact_id: string; content_sha256: Buffer }>('SELECT fact_id, content_sha256 FROM settlement.facts WHERE fact_id = ANY($1::uuid[])', [inputs.map((f) => f.factId)])).rows.map(
        (row) => [row.fact_id, row.content_sha256] as const,
      ),
    );
    const inBundle = new Map<string, Buffer>();
    const facts: Fact[] = [];
    let duplicates = 0;
    for (let k = 0; k < inputs.length; k++) {
      const input = inputs[k]!;
      const known = stored.get(input.factId) ?? inBundle.get(input.factId);
      if (known !== undefined) {
        if (!known.equals(hashes[k]!)) return refusal('FACT_CONFLICT', `fact ${input.factId} already exists with different content: nothing of the bundle was stored`);
        duplicates++;
        continue;
      }
      inBundle.set(input.factId, hashes[k]!);
      facts.push({ ...input, scenarioRunId, origin: 'operator', sequence: state.lastSequence + facts.length + 1 });
    }
    return { ok: true, value: { facts, result: { appended: facts.length, duplicates } } };
  });
}

/**
 * Replayed runs kept for the reads, least recently read first, at most READ_CACHE_RUNS
 * runs and READ_CACHE_FACTS facts in all; only runs with facts (reads of made-up run names
 * never evict real runs). A run's state is a function of its fact trail,
 * which only grows, without gaps (the database sees to it), so a kept state brought up to
 * date with the facts after its last sequence is the state a full replay gives: a read
 * loads only what was appended since the last read of the run (a full replay took
 * 0.4-0.7 s for a run of 20,000 trades, at every read). Each thread of the pool keeps its own.
 */
const READ_CACHE_RUNS = 8;
const READ_CACHE_FACTS = 100_000; // about 1.9 KB of heap per fact kept (20,000 facts: 38 MiB): 190 MiB at most
const readCache = new Map<string, SettlementState>();

/** The run's state as of its facts stored now (see readCache). */
export async function runState(db: pg.ClientBase, scenarioRunId: string): Promise<SettlementState> {
  const kept = readCache.get(scenarioRunId);
  const state = kept ?? emptyState(scenarioRunId);
  // Taken out while it is brought up to date, so that no other read changes it meanwhile (a
  // read of the same run then replays from the start); put back once it is, if it fits. A
  // throw while applying leaves it out. The caller renders it before any other read resumes.
  readCache.delete(scenarioRunId);
  const facts = await loadFacts(db, scenarioRunId, state.lastSequence);
  for (const fact of facts) applyFact(state, fact);
  if (state.lastSequence > READ_CACHE_FACTS) return state; // too big to keep: replayed at each read
  if (state.lastSequence === 0) return state; // no facts (a run not materialized, or a made-up name): nothing worth a real run's place
  readCache.set(scenarioRunId, state);
  let held = readCacheSize().facts;
  for (const [run, kept] of readCache) {
    if (readCache.size <= READ_CACHE_RUNS && held <= READ_CACHE_FACTS) break;
    if (run === scenarioRunId) continue;
    readCache.delete(run);
    held -= kept.lastSequence;
  }
  return state;
}

/** Runs the reads keep replayed, and their facts (tests check the bounds). */
export function readCacheSize(): { runs: number; facts: number; names: string[] } {
  let facts = 0;
  for (const kept of readCache.values()) facts += kept.lastSequence;
  return { runs: readCache.size, facts, names: [...readCache.keys()] };
}

/** A settlement read (`/api/v1/settlement/...`); `participants` null for operators. */
export async function settlementRead(pool: pg.Pool, request: SettlementRead, competitionProfile: string): Promise<Answered> {
  const state = await runState(pool as unknown as pg.ClientBase, request.scenarioRunId);
  const visible = request.participants === null ? null : new Set(request.participants);
  switch (request.view) {
    case 'facts':
      return ok(factsView(state, visible));
    case 'obligations':
      return ok(obligationsView(state, visible));
    case 'ledger':
      return ok(ledgerView(state, visible));
    case 'exceptions':
      return ok(exceptionsView(state, visible));
    case 'proof':
      return ok(proofView(state, visible));
    case 'score':
      return ok(scoreView(state, visible, request.asOfUs ?? nowUs(), request.agedFailAfterSeconds));
    case 'leaderboard':
      return ok(leaderboardView(state, competitionProfile, request.asOfUs ?? nowUs(), request.agedFailAfterSeconds));
  }
}
