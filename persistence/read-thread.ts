// Worker entry of the read thread: answers, from PostgreSQL, what the gateways no
// longer hold in memory (after a restart, or once their in-memory window moved on):
// command status and idempotent replays. It never writes, and never calls a shard.
//
// Read your writes (API contract): a read waits until the projections have reached
// the journal position that was durable when the read arrived (bounded; 503 past it).

import { parentPort, workerData, type MessagePort } from 'node:worker_threads';
import pg from 'pg';
import pino from 'pino';
import { renderPointer, PROCESSING_MODE_NAMES } from '../core/outcome-format.ts';
import { PersistenceControl } from '../core/persistence-control.ts';

export interface ReadThreadData {
  databaseUrl: string;
  shardCount: number;
  control: SharedArrayBuffer;
  principalIds: string[];
  ports: MessagePort[];
  logLevel: string;
}

/** What a gateway needs to render a command status view from storage. */
export interface StoredCommand {
  commandId: string;
  clientId: string;
  idempotencyKey: string;
  route: number;
  processingMode: number;
  shard: number;
  principal: number;
  orderId: string | null;
  instrumentId: string | null;
  payloadHash: string;
  streamSequence: number;
  /** The shard's batch number (the status view's batchId). */
  shardBatch: number;
  resultStatus: number;
  rejectCode: string;
  resultPayloadJson: string | null;
  /** The answer the command was given (202 pointer, or 200 envelope once the outcome exists). */
  responseStatus: number;
  responseBody: string | null;
}

export type ReadRequest =
  | { id: number; type: 'command'; commandId: string }
  | { id: number; type: 'replay'; scopeDigest: string }
  /** Does storage hold this idempotency scope, or else this commandId? (for claims the shared tables may have forgotten) */
  | { id: number; type: 'claims'; scopeDigest: string; commandId: string };

export type ReadAnswer =
  | { id: number; ok: true; command: StoredCommand | null; match?: 'scope' | 'commandId' }
  | { id: number; ok: false; message: string };

const PROJECTION_WAIT_MS = 2_000;

const data = workerData as ReadThreadData;
const logger = pino({ level: data.logLevel, base: { thread: 'read' } });
const control = new PersistenceControl(data.control);
const pool = new pg.Pool({ connectionString: data.databaseUrl, max: 4 });
pool.on('error', () => undefined);
const principalIndex = new Map(data.principalIds.map((id, index) => [id, index]));

/** Waits until every shard's projection covers what the journal held at arrival. */
async function readYourWrites(): Promise<void> {
  const targets = Array.from({ length: data.shardCount }, (_, shard) => control.journalCommitted(shard));
  const deadline = Date.now() + PROJECTION_WAIT_MS;
  while (targets.some((target, shard) => control.projected(shard) < target)) {
    if (Date.now() > deadline) throw new Error('the projections are behind the journal; retry shortly');
    await new Promise((resolve) => setTimeout(resolve, 2));
  }
}

const SELECT = `
  SELECT cl.command_id, cl.client_id, cl.idempotency_key, cl.route, cl.processing_mode, cl.shard_id, cl.principal_id,
         cl.order_id, cl.instrument_id, encode(cl.payload_hash, 'hex') AS payload_hash,
         co.stream_sequence, co.shard_batch, co.result_status, co.reject_code, co.result_payload_json
    FROM runtime.command_log cl LEFT JOIN runtime.command_outcomes co ON co.command_id = cl.command_id`;

function toStored(row: Record<string, any>): StoredCommand {
  const mode = Number(row.processing_mode);
  const materialized = row.result_status !== null;
  const syncResult = PROCESSING_MODE_NAMES[mode] === 'sync-result';
  return {
    commandId: row.command_id,
    clientId: row.client_id,
    idempotencyKey: row.idempotency_key,
    route: Number(row.route),
    processingMode: mode,
    shard: Number(row.shard_id),
    principal: principalIndex.get(row.principal_id) ?? -1,
    orderId: row.order_id,
    instrumentId: row.instrument_id,
    payloadHash: row.payload_hash,
    streamSequence: materialized ? Number(row.stream_sequence) : 0,
    shardBatch: materialized ? Number(row.shard_batch) : 0,
    resultStatus: materialized ? Number(row.result_status) : 0,
    rejectCode: row.reject_code ?? '',
    resultPayloadJson: row.result_payload_json,
    // sync-result answered with the envelope; the other modes with the pointer.
    responseStatus: syncResult ? (materialized ? 200 : 0) : 202,
    responseBody: syncResult ? row.result_payload_json : renderPointer(row.command_id, PROCESSING_MODE_NAMES[mode]!),
  };
}

async function answer(request: ReadRequest): Promise<{ command: StoredCommand | null; match?: 'scope' | 'commandId' }> {
  await readYourWrites();
  const one = async (where: string, value: string) => {
    const result = await pool.query(`${SELECT} WHERE ${where}`, [value]);
    return result.rows.length === 0 ? null : toStored(result.rows[0]!);
  };
  if (request.type === 'command') return { command: await one('cl.command_id = $1', request.commandId) };
  const byScope = await one("cl.scope_digest = decode($1, 'hex')", request.scopeDigest);
  if (request.type === 'replay' || byScope !== null) return { command: byScope, match: 'scope' };
  const byId = await one('cl.command_id = $1', request.commandId);
  return byId === null ? { command: null } : { command: byId, match: 'commandId' };
}

for (const port of data.ports) {
  port.on('message', (request: ReadRequest) => {
    answer(request).then(
      (found) => port.postMessage({ id: request.id, ok: true, ...found } satisfies ReadAnswer),
      (error: Error) => port.postMessage({ id: request.id, ok: false, message: error.message } satisfies ReadAnswer),
    );
  });
}

parentPort!.on('message', (message: { type: string }) => {
  if (message.type !== 'stop') return;
  for (const port of data.ports) port.close();
  pool.end().then(
    () => parentPort!.postMessage({ type: 'stopped' }),
    () => parentPort!.postMessage({ type: 'stopped' }),
  );
});
logger.debug('read thread ready');
parentPort!.postMessage({ type: 'ready' });
