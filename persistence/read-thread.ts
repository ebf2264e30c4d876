// Worker entry of the read thread: answers, from PostgreSQL, what the gateways no
// longer hold in memory (after a restart, or once their in-memory window moved on):
// command status and idempotent replays; and the whole read plane: market data,
// own orders and fills, the availability inventory (market-data.ts); settlement's
// requests it hands to the settlement pool it owns (settlement-pool.ts). It writes only
// the market-data snapshots it refreshes, and never calls a shard.
//
// With MARKET_DATA_PROJECTOR_ENABLED it also runs the snapshot loop: whenever a
// shard's projection moved, the default snapshots are refreshed (bounded rate).
//
// Read your writes (API contract): a read waits until the projections have reached
// the journal position that was durable when the read arrived (bounded; 503 past it).

import { parentPort, workerData, type MessagePort } from 'node:worker_threads';
import pg from 'pg';
import pino from 'pino';
import { loggerOptions } from '../core/log-format.ts';
import { crc32 } from 'node:zlib';
import { storedIntake } from '../core/intake-record.ts';
import { packCurrency } from '../core/command-slot.ts';
import { DepthView, SnapshotView } from '../core/market-view.ts';
import { renderPointer, PROCESSING_MODE_NAMES } from '../core/outcome-format.ts';
import { uuidWords } from '../core/uuid.ts';
import { PersistenceControl } from '../core/persistence-control.ts';
import {
  answered,
  failureOf,
  refused,
  SNAPSHOT_NOT_FOUND,
  SNAPSHOT_PROJECTION,
  StatedFailure,
  SOURCE_PROJECTION,
  type AuditRecord,
  type PlaneRead,
  type ReadAnswer,
  type ReadPlaneAnswer,
  type ReadRequest,
  type StoredClientOrder,
  type StoredCommand,
} from '../core/storage-protocol.ts';
import { readBars, readFills, readOwnOrders, readSnapshot, readTape, refreshSnapshots, storedSnapshots, type SnapshotRow } from './market-data.ts';
import { availability } from './availability.ts';
import { auditOf } from './audit.ts';
import { keepAnalyzed } from './planner-statistics.ts';
import { SettlementPool, type SettlementPoolOptions } from './settlement-pool.ts';
import { JOURNAL_OF_COMMAND, storedEnvelope } from './stored-envelope.ts';
import { READS_APPLICATION_NAME } from './connection-names.ts';

export interface ReadThreadData {
  databaseUrl: string;
  shardCount: number;
  control: SharedArrayBuffer;
  principalIds: string[];
  ports: MessagePort[];
  logLevel: string;
  marketDataProjector: { enabled: boolean; intervalMs: number };
  /** The gateways' view of the stored snapshots (core/market-view.ts): this thread writes it. */
  snapshotView: SharedArrayBuffer;
  /** The persistence thread's books (core/market-view.ts): snapshot refreshes are computed from them. */
  depthView: SharedArrayBuffer;
  /** COMPETITION_PROFILE, or '' (the leaderboard is listed in the inventory only when set). */
  competitionProfile: string;
  /** MARKET_DATA_PROJECTION_NAMES_PER_PRINCIPAL: snapshot projection names one principal may create. */
  projectionNamesPerPrincipal: number;
  /** PLANNER_STATISTICS_INTERVAL_MS: how often READ_TABLES are checked for stale statistics; 0: never. */
  plannerStatisticsIntervalMs: number;
  /** Where settlement's work runs (persistence/settlement-pool.ts): SETTLEMENT_THREADS and SETTLEMENT_QUEUE. */
  settlementPool: Omit<SettlementPoolOptions, 'databaseUrl'>;
}

/** The tables the read plane's queries plan on (the tape, bars, fills, own orders), kept analyzed as they grow. */
const READ_TABLES = ['runtime.trades', 'runtime.executions', 'runtime.order_lifecycle_state'];

const PROJECTION_WAIT_MS = 2_000;

const data = workerData as ReadThreadData;
const logger = pino(loggerOptions('read', data.logLevel));
const control = new PersistenceControl(data.control);
const pool = new pg.Pool({ connectionString: data.databaseUrl, max: 4, application_name: READS_APPLICATION_NAME });
pool.on('error', () => undefined);
const depthView = new DepthView(data.depthView);
const settlement = new SettlementPool({ databaseUrl: data.databaseUrl, ...data.settlementPool });
/** How far each shard's books in memory have reached (read before the books themselves). */
const booksReached = () => Array.from({ length: data.shardCount }, (_, shard) => depthView.watermark(shard));
const principalIndex = new Map(data.principalIds.map((id, index) => [id, index]));

/**
 * Waits until every shard's projection covers what the journal held at arrival;
 * `reached` says how far a shard is (the tables, or the in-memory books).
 */
async function readYourWrites(reached: ((shard: number) => number) | null = null): Promise<void> {
  const tables = reached === null;
  const reach = reached ?? ((shard: number) => control.projected(shard));
  const targets = Array.from({ length: data.shardCount }, (_, shard) => control.journalCommitted(shard));
  const deadline = Date.now() + PROJECTION_WAIT_MS;
  while (targets.some((target, shard) => reach(shard) < target)) {
    if (Date.now() > deadline) throw new StatedFailure('the projections are behind the journal; retry shortly');
    if (tables) control.requestSeal();
    await new Promise((resolve) => setTimeout(resolve, 2));
  }
}

const SELECT = `
  SELECT cl.command_id, cl.client_id, cl.idempotency_key, cl.route, cl.processing_mode, cl.shard_id, cl.principal_id,
         cl.order_id, cl.instrument_id, encode(cl.payload_hash, 'hex') AS payload_hash,
         cl.stream_sequence, cl.shard_batch, cl.result_status, cl.reject_code, cl.journal_offset, ${JOURNAL_OF_COMMAND.column}
    FROM runtime.command_log cl ${JOURNAL_OF_COMMAND.join}`;

/** A row of SELECT as node-postgres returns it: smallints as numbers, bigints as text. */
interface CommandLogRow {
  command_id: string;
  client_id: string;
  idempotency_key: string;
  route: number;
  processing_mode: number;
  shard_id: number;
  principal_id: string;
  order_id: string | null;
  instrument_id: string | null;
  payload_hash: string;
  stream_sequence: string;
  shard_batch: string;
  result_status: number;
  reject_code: string | null;
  journal_offset: number | null;
  journal: Buffer;
}

function toStored(row: CommandLogRow): StoredCommand {
  const mode = Number(row.processing_mode);
  const shard = Number(row.shard_id);
  const envelope = storedEnvelope(row);
  const syncResult = PROCESSING_MODE_NAMES[mode] === 'sync-result';
  return {
    commandId: row.command_id,
    clientId: row.client_id,
    idempotencyKey: row.idempotency_key,
    route: Number(row.route),
    processingMode: mode,
    shard,
    principal: principalIndex.get(row.principal_id) ?? -1,
    orderId: row.order_id,
    instrumentId: row.instrument_id,
    payloadHash: row.payload_hash,
    streamSequence: Number(row.stream_sequence),
    shardBatch: Number(row.shard_batch),
    resultStatus: Number(row.result_status),
    rejectCode: row.reject_code ?? '',
    resultPayloadJson: envelope,
    // sync-result answered with the envelope; the other modes with the pointer.
    responseStatus: syncResult ? 200 : 202,
    responseBody: syncResult ? envelope : renderPointer(row.command_id, PROCESSING_MODE_NAMES[mode]!),
  };
}

/** The snapshot loop's state, reported by /internal/market-data/projector/status. */
const projectorState = {
  enabled: data.marketDataProjector.enabled,
  running: false,
  projectionName: SNAPSHOT_PROJECTION,
  sourceProjectionName: SOURCE_PROJECTION,
  intervalMs: data.marketDataProjector.intervalMs,
  refreshes: 0,
  lastRefreshAt: null as string | null,
  lastRefreshInstruments: 0,
  /** The projection position the snapshots were last refreshed from, per shard. */
  watermark: Array.from({ length: data.shardCount }, () => 0),
  /** Since when the snapshots have been behind the projection (ms since the epoch), or null. */
  behindSinceMs: null as number | null,
  errors: 0,
  lastError: null as string | null,
};

async function plane(read: PlaneRead): Promise<ReadPlaneAnswer> {
  switch (read.kind) {
    case 'snapshot':
      return readSnapshot(pool, read.instrumentId, read.projectionName);
    case 'refresh': {
      if (!(await claimProjectionName(read.projectionName, read.principalId))) {
        const limit = data.projectionNamesPerPrincipal;
        return refused(
          'LIMIT_EXCEEDED',
          `you have created ${limit} snapshot projection names, the most one principal may (MARKET_DATA_PROJECTION_NAMES_PER_PRINCIPAL); refresh one of yours or the default`,
        );
      }
      const watermarks = booksReached();
      const refreshed = await refreshSnapshots(pool, read.projectionName, depthView, watermarks, read.instrumentId);
      if (refreshed === null) return refused('OVERLOADED', 'more instruments than MARKET_DATA_INSTRUMENTS: this one has no book view');
      publishSnapshots(read.projectionName, refreshed);
      if (read.instrumentId !== null && refreshed.length === 0) return refused('NOT_FOUND', SNAPSHOT_NOT_FOUND);
      return answered(
        JSON.stringify({
          projectionName: read.projectionName,
          sourceProjectionName: read.sourceProjectionName,
          instrumentsRefreshed: refreshed.length,
          sourceWatermark: watermarks.map((sequence, shardId) => ({ shardId, sequence })),
          refreshedAt: new Date().toISOString(),
        }),
      );
    }
    case 'depth':
      throw new Error('depth is answered by the gateways (core/market-view.ts)');
    case 'tape':
      return readTape(pool, read.instrumentId, read.limit, read.before);
    case 'bars':
      return readBars(pool, read.instrumentId, read.interval, read.start, read.end);
    case 'orders':
      return scanning(() => readOwnOrders(pool, read.view, read.participants, read.instrumentId, read.limit));
    case 'fills':
      return scanning(() => readFills(pool, read.participants, read.instrumentId, read.limit));
    case 'availability':
      return answered(JSON.stringify(await availability(pool, control, data.shardCount, projectorState, data.competitionProfile !== '')));
    case 'projector-status':
      return answered(JSON.stringify(projectorStatus()));
    case 'settlement-read':
      return settlement.read(read.read, data.competitionProfile);
    case 'settlement-admin':
      return settlement.admin(read.admin);
  }
}

/**
 * Own-order and fills reads that reach here are the ones the in-memory model could not
 * answer: older than what it keeps. No index serves them (migration 017), so they scan;
 * one at a time, so that they cannot take every connection from the other reads.
 */
let scan: Promise<unknown> = Promise.resolve();
function scanning<T>(read: () => Promise<T>): Promise<T> {
  const next = scan.then(read, read);
  scan = next.catch(() => undefined);
  return next;
}

/** Snapshot projection names and who created each (runtime.snapshot_projections); loaded at start, written only here. */
const projectionNames = new Map<string, string>();

/**
 * Whether a refresh may use this projection name: the default, a name that exists, or a
 * new one while its principal has created fewer than its bound. A new name is reserved
 * before the insert is awaited, so two refreshes at once cannot both pass the bound.
 */
async function claimProjectionName(name: string, principalId: string): Promise<boolean> {
  if (name === SNAPSHOT_PROJECTION || projectionNames.has(name)) return true;
  let owned = 0;
  for (const owner of projectionNames.values()) if (owner === principalId) owned++;
  if (owned >= data.projectionNamesPerPrincipal) return false;
  projectionNames.set(name, principalId);
  try {
    await pool.query('INSERT INTO runtime.snapshot_projections (projection_name, principal_id) VALUES ($1, $2) ON CONFLICT (projection_name) DO NOTHING', [name, principalId]);
  } catch (error) {
    projectionNames.delete(name);
    throw error;
  }
  return true;
}

function projectorStatus(): object {
  const { behindSinceMs, ...state } = projectorState;
  const current = booksReached();
  return {
    ...state,
    sourceWatermark: current,
    lagSequences: current.reduce((sum, sequence, shard) => sum + (sequence - state.watermark[shard]!), 0),
    lagMs: behindSinceMs === null ? 0 : Date.now() - behindSinceMs,
  };
}

async function projectorLoop(): Promise<void> {
  projectorState.running = true;
  while (projectorState.running) {
    const current = booksReached();
    const moved = current.some((sequence, shard) => sequence !== projectorState.watermark[shard]);
    if (moved) {
      projectorState.behindSinceMs ??= Date.now();
      try {
        const refreshed = (await refreshSnapshots(pool, SNAPSHOT_PROJECTION, depthView, current, null))!; // null only for an instrument named
        publishSnapshots(SNAPSHOT_PROJECTION, refreshed);
        projectorState.lastRefreshInstruments = refreshed.length;
        projectorState.refreshes++;
        projectorState.lastRefreshAt = new Date().toISOString();
        projectorState.watermark = current;
        projectorState.behindSinceMs = booksReached().some((sequence, shard) => sequence !== current[shard]) ? Date.now() : null;
      } catch (error) {
        projectorState.errors++;
        projectorState.lastError = (error as Error).message;
      }
    }
    await new Promise((resolve) => setTimeout(resolve, projectorState.intervalMs));
  }
}

/** The audit record of a command its command_log row names the intake position of, or null. */
async function storedAudit(commandId: string): Promise<AuditRecord | null> {
  const found = await pool.query<{ record_count: number; intake_index: number; checksum: string; payload: Buffer; bodies: Buffer | null; bodies_checksum: string | null; layout: number | null }>(
    `SELECT ib.record_count, cl.intake_index, ib.checksum, ib.payload, ib.bodies, ib.bodies_checksum, ib.layout
       FROM runtime.command_log cl JOIN runtime.intake_batches ib ON ib.commit_no = cl.intake_commit_no AND ib.gateway_id = cl.intake_gateway
      WHERE cl.command_id = $1`,
    [commandId],
  );
  const row = found.rows[0];
  if (row === undefined) return null;
  if (crc32(row.payload) !== Number(row.checksum) || (row.bodies !== null && crc32(row.bodies) !== Number(row.bodies_checksum))) {
    throw new Error(`the intake batch of command ${commandId} fails its checksum`);
  }
  const records = storedIntake(row.payload, row.record_count, row.layout);
  return auditOf(Buffer.from(records.bytes.buffer, records.bytes.byteOffset, records.bytes.byteLength), records.stride, row.bodies, row.intake_index);
}

async function answer(request: ReadRequest): Promise<Omit<Extract<ReadAnswer, { ok: true }>, 'id' | 'ok'>> {
  // A stored snapshot is "as of its refresh" (its sourceWatermark says which); the loop's status is live; settlement
  // reads replay facts that the admin routes committed before answering: none of them waits for the projections.
  if (request.type === 'plane' && (request.read.kind === 'projector-status' || request.read.kind === 'snapshot' || request.read.kind === 'settlement-read')) {
    return { command: null, answer: await plane(request.read) };
  }
  if (request.type === 'plane' && request.read.kind === 'refresh') {
    // Computed from the books in memory: it waits for them, not for the tables.
    await readYourWrites((shard) => depthView.watermark(shard));
    return { command: null, answer: await plane(request.read) };
  }
  await readYourWrites();
  if (request.type === 'plane') return { command: null, answer: await plane(request.read) };
  const one = async (where: string, value: string) => {
    const result = await pool.query<CommandLogRow>(`${SELECT} WHERE ${where}`, [value]);
    return result.rows.length === 0 ? null : toStored(result.rows[0]!);
  };
  if (request.type === 'command') return { command: await one('cl.command_id = $1', request.commandId) };
  if (request.type === 'order-shard') {
    const found = await pool.query<{ shard_id: number }>('SELECT shard_id FROM runtime.order_lifecycle_state WHERE order_id = $1', [request.orderId]);
    return { command: null, shard: found.rows[0]?.shard_id ?? null };
  }
  if (request.type === 'client-order') {
    // The newest holder (the resolver's rule); an index on (participant, clientOrderId) serves it (migration 012).
    const found = await pool.query<StoredClientOrder>(
      `SELECT order_id AS "orderId", instrument_id AS "instrumentId", account_id AS "accountId", run_id AS "runId", venue_session_id AS "venueSessionId"
         FROM runtime.order_lifecycle_state WHERE participant_id = $1 AND client_order_id = $2 ORDER BY created_at DESC, last_sequence DESC LIMIT 1`,
      [request.participantId, request.clientOrderId],
    );
    return { command: null, clientOrder: found.rows[0] ?? null };
  }
  if (request.type === 'audit') return { command: null, audit: await storedAudit(request.commandId) };
  if (request.type === 'client-order-ids') {
    // Orders loaded at start, which storage held then: their rows exist, and a clientOrderId never changes.
    const found = await pool.query<{ order_id: string; client_order_id: string | null }>('SELECT order_id, client_order_id FROM runtime.order_lifecycle_state WHERE order_id = ANY($1::uuid[])', [
      request.orderIds,
    ]);
    return { command: null, clientOrderIds: Object.fromEntries(found.rows.map((row) => [row.order_id, row.client_order_id])) };
  }
  const byScope = await one("cl.scope_digest = decode($1, 'hex')", request.scopeDigest);
  if (request.type === 'replay' || byScope !== null) return { command: byScope, match: 'scope' };
  const byId = await one('cl.command_id = $1', request.commandId);
  return byId === null ? { command: null } : { command: byId, match: 'commandId' };
}

for (const port of data.ports) {
  port.on('message', (request: ReadRequest) => {
    answer(request).then(
      (found) => {
        // A settlement read's bytes move on to the gateway (core/storage-protocol.ts AnsweredBytes).
        const body = found.answer?.body;
        port.postMessage({ id: request.id, ok: true, ...found } satisfies ReadAnswer, body instanceof Uint8Array ? [body.buffer] : []);
      },
      (error: unknown) => port.postMessage({ id: request.id, ok: false, ...failureOf(error, 'storage did not answer; retry shortly') } satisfies ReadAnswer),
    );
  });
}

if (projectorState.enabled) void projectorLoop();

const statistics =
  data.plannerStatisticsIntervalMs > 0
    ? keepAnalyzed(
        pool,
        READ_TABLES,
        data.plannerStatisticsIntervalMs,
        (tables, ms) => logger.debug({ tables, ms }, 'planner statistics refreshed'),
        (error) => logger.warn({ err: error }, 'planner statistics not refreshed'),
      )
    : null;

parentPort!.on('message', (message: { type: string }) => {
  if (message.type !== 'stop') return;
  projectorState.running = false;
  for (const port of data.ports) port.close();
  Promise.resolve(statistics?.stop())
    .then(() => settlement.destroy())
    .then(() => pool.end())
    .then(
      () => parentPort!.postMessage({ type: 'stopped' }),
      () => parentPort!.postMessage({ type: 'stopped' }),
    );
});
// ---- the gateways' view of the stored snapshots ----

const snapshotView = new SnapshotView(data.snapshotView);
let snapshotViewFull = false;

/** Writes refreshed (or loaded) snapshot rows to the view; past its room, the gateways ask storage for the others. */
function publishSnapshots(projectionName: string, rows: readonly SnapshotRow[]): void {
  for (const row of rows) {
    const fits = snapshotView.write(uuidWords(row.instrument_id), projectionName, {
      currency: row.currency === null ? 0 : packCurrency(row.currency),
      bid: row.bid_p === null || row.bid_q === null ? null : { priceNanos: Number(row.bid_p), quantity: BigInt(row.bid_q) },
      ask: row.ask_p === null || row.ask_q === null ? null : { priceNanos: Number(row.ask_p), quantity: BigInt(row.ask_q) },
      openQuantity: { bid: BigInt(row.bid_open), ask: BigInt(row.ask_open) },
      sourceWatermark: Number(row.source_watermark),
      refreshedAtUs: Number(row.refreshed_us),
    });
    if (!fits && !snapshotViewFull) {
      snapshotViewFull = true;
      logger.warn('more stored snapshots than MARKET_DATA_SNAPSHOTS: the others are read from storage');
    }
  }
}

Promise.all([storedSnapshots(pool), pool.query<{ projection_name: string; principal_id: string }>('SELECT projection_name, principal_id FROM runtime.snapshot_projections')]).then(
  ([rows, names]) => {
    for (const row of names.rows) projectionNames.set(row.projection_name, row.principal_id);
    for (const row of rows) publishSnapshots(row.projection_name, [row]);
    logger.debug({ snapshots: rows.length }, 'read thread ready');
    parentPort!.postMessage({ type: 'ready' });
  },
  (error: Error) => {
    logger.fatal({ err: error }, 'the read thread could not load the snapshots');
    process.exit(1);
  },
);
