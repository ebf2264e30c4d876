// Worker entry of the persistence thread: the journal writer (tier 1) and, right
// behind it, the projector (tier 2), each on its own connection. It also answers the
// operator's lifecycle rebuild (pausing the projector while it runs).
//
// Start: load the projections' watermarks and open orders, materialize whatever the
// journal holds beyond them (a crash may have left the projections behind), then say
// ready and start taking the rings.

import { parentPort, workerData, type MessagePort } from 'node:worker_threads';
import pg from 'pg';
import pino from 'pino';
import { Doorbell } from '../core/doorbell.ts';
import { DB_DOWN, DB_UP, PersistenceControl } from '../core/persistence-control.ts';
import { JournalWriter, type JournalBatch, type WriterLimits } from './journal-writer.ts';
import type { AdminAnswer, AdminRequest, PersistenceStatus } from '../core/storage-protocol.ts';
import { Projector } from './projector.ts';

export interface PersistenceThreadData {
  databaseUrl: string;
  shardCount: number;
  intakeRings: SharedArrayBuffer[];
  journalRings: SharedArrayBuffer[];
  doorbell: SharedArrayBuffer;
  gatewayDoorbells: SharedArrayBuffer[];
  control: SharedArrayBuffer;
  principalIds: string[];
  limits: WriterLimits;
  /** Last durable sequence per shard (what recovery replayed). */
  journalDurable: number[];
  logLevel: string;
  /** One port per gateway thread, for operator requests. */
  adminPorts: MessagePort[];
  /** To the read thread: what each projection group changed in the displayed books. */
  bookPort: MessagePort;
}


const data = workerData as PersistenceThreadData;
const logger = pino({ level: data.logLevel, base: { thread: 'persistence' } });
const log = (level: 'info' | 'warn' | 'error', message: string, fields: object = {}) => logger[level](fields, message);
const control = new PersistenceControl(data.control);
const doorbell = new Doorbell(data.doorbell);
const gatewayBells = data.gatewayDoorbells.map((buffer) => new Doorbell(buffer));
const sessionCache = new Map<string, [string, string]>();
let stopping = false;

const connect = async (): Promise<pg.Client> => {
  const client = new pg.Client({ connectionString: data.databaseUrl });
  client.on('error', () => undefined); // a dropped connection surfaces on the next query
  await client.connect();
  return client;
};

/**
 * The projector's connection commits without waiting for the WAL flush: a projection
 * transaction writes its rows and its watermark together, so a crash loses whole
 * transactions only, and the start-up catch-up projects them again from the journal.
 * The journal's commits then do not queue behind the projections' larger flushes.
 */
const connectProjector = async (): Promise<pg.Client> => {
  const client = await connect();
  await client.query('SET synchronous_commit = off');
  return client;
};

const writer = new JournalWriter({
  intakeRings: data.intakeRings,
  journalRings: data.journalRings,
  control,
  principalIds: data.principalIds,
  limits: data.limits,
  journalDurable: data.journalDurable,
  log,
});
const projector = new Projector({
  control,
  shardCount: data.shardCount,
  // Sessions are loaded with each connection; a pair the venue never ran cannot reach the journal.
  onGroup: (update) => data.bookPort.postMessage({ type: 'update', update }),
  sessionNames: (runNo, sessionNo) => {
    const names = sessionCache.get(`${runNo}:${sessionNo}`);
    if (names === undefined) throw new Error(`unknown venue session ${runNo}:${sessionNo}`);
    return names;
  },
  log,
});

const intakeClient: { client: pg.Client | null } = { client: null };
const journalClient: { client: pg.Client | null } = { client: null };
let projectorClient: pg.Client | null = null;
const projectionQueue: JournalBatch[] = [];
let projectionWake: (() => void) | null = null;
let projectorIdle: Promise<void> = Promise.resolve();
let pauseProjector = false;

async function loadSessions(client: pg.ClientBase): Promise<void> {
  const rows = await client.query<{ run_no: number; session_no: number; run_id: string; venue_session_id: string }>('SELECT run_no, session_no, run_id, venue_session_id FROM runtime.venue_sessions');
  for (const row of rows.rows) sessionCache.set(`${row.run_no}:${row.session_no}`, [row.run_id, row.venue_session_id]);
}

/** Materializes the journal beyond the projection watermarks, from the database. */
async function catchUp(client: pg.Client): Promise<number> {
  let batches = 0;
  for (let shard = 0; shard < data.shardCount; shard++) {
    for (;;) {
      const page = await client.query<{ first_sequence: string; last_sequence: string; command_count: number; event_count: number; payload: Buffer }>(
        'SELECT first_sequence, last_sequence, command_count, event_count, payload FROM runtime.journal_batches WHERE shard_id = $1 AND first_sequence > $2 ORDER BY first_sequence LIMIT 100',
        [shard, projector.watermark(shard)],
      );
      if (page.rows.length === 0) break;
      await projector.project(
        client,
        page.rows.map((row) => ({
          shard,
          firstSequence: Number(row.first_sequence),
          lastSequence: Number(row.last_sequence),
          commandCount: row.command_count,
          eventCount: row.event_count,
          payload: row.payload,
          sequencedAtUs: [],
        })),
      );
      batches += page.rows.length;
    }
  }
  return batches;
}

const ringGateways = () => {
  for (const bell of gatewayBells) bell.ringAlways();
};

/**
 * Two stages per batch (journal-writer.ts): the command log COPY on one connection,
 * then the journal COPY on another, which overlaps the next batch's command log COPY.
 * At most one journal stage is outstanding.
 */
async function writerLoop(): Promise<void> {
  let journalStage: Promise<void> = Promise.resolve();
  for (;;) {
    const batch = writer.collect();
    if (batch.intake.length === 0 && batch.journals.length === 0) {
      if (stopping) {
        await journalStage;
        return;
      }
      const seen = doorbell.prepareSleep();
      if (writer.hasInput()) {
        doorbell.wake();
        continue;
      }
      await doorbell.sleepAsync(seen, 100);
      continue;
    }
    await writer.commitIntake(connect, intakeClient, batch, ringGateways);
    await journalStage;
    journalStage = writer.commitJournals(connect, journalClient, batch).then(() => {
      if (batch.journals.length === 0) return;
      ringGateways();
      projectionQueue.push(...batch.journals);
      projectionWake?.();
    });
  }
}

async function projectorLoop(): Promise<void> {
  for (;;) {
    if (projectionQueue.length === 0 || pauseProjector) {
      if (stopping && projectionQueue.length === 0) return;
      await new Promise<void>((resolve) => {
        projectionWake = resolve;
        setTimeout(resolve, 100);
      });
      projectionWake = null;
      continue;
    }
    const batches = projectionQueue.splice(0, 64);
    let done: () => void = () => undefined;
    projectorIdle = new Promise<void>((resolve) => (done = resolve));
    let delayMs = 50;
    for (;;) {
      try {
        if (projectorClient === null) {
          projectorClient = await connectProjector();
          await loadSessions(projectorClient);
        }
        await projector.project(projectorClient, batches);
        break;
      } catch (error) {
        log('error', 'projection failed; retrying', { err: (error as Error).message });
        Atomics.add(control.ints, 2, 1);
        await projectorClient?.end().catch(() => undefined);
        projectorClient = null;
        await new Promise((resolve) => setTimeout(resolve, delayMs));
        delayMs = Math.min(delayMs * 2, 1000);
        // The batches may have been committed before the failure: project() skips what the watermark covers,
        // but the watermark in memory is only moved after a commit, so reload it.
        if (projectorClient === null) {
          try {
            projectorClient = await connectProjector();
            await projector.load(projectorClient);
          } catch {
            await projectorClient?.end().catch(() => undefined);
            projectorClient = null;
          }
        }
      }
    }
    done();
  }
}

function status(): PersistenceStatus {
  const w = writer.stats;
  const p = projector.stats;
  const perSecond = (rows: number, busyUs: number) => (busyUs === 0 ? 0 : Math.round((rows / busyUs) * 1e6));
  return {
    database: control.databaseState === DB_UP ? 'up' : control.databaseState === DB_DOWN ? 'down' : 'starting',
    shards: Array.from({ length: data.shardCount }, (_, shardId) => {
      const journalCommitted = control.journalCommitted(shardId);
      const projected = control.projected(shardId);
      return { shardId, journalCommitted, projected, projectionLag: journalCommitted - projected };
    }),
    journal: {
      commits: w.commits,
      intakeRows: w.intakeRows,
      journalRows: w.journalRows,
      commands: w.journalCommands,
      events: w.journalEvents,
      bytes: w.journalBytes,
      busyMs: Math.round(w.busyUs / 1000),
      rowsPerBusySecond: perSecond(w.intakeRows + w.journalRows, w.busyUs),
      captureLatencyUs: w.captureLatency.summary(),
      journalLatencyUs: w.journalLatency.summary(),
    },
    projections: { groups: p.groups, rows: p.rows, busyMs: Math.round(p.busyUs / 1000), rowsPerBusySecond: perSecond(p.rows, p.busyUs), errors: Atomics.load(control.ints, 2), lagUs: p.lag.summary() },
  };
}

for (const port of data.adminPorts) {
  port.on('message', async (request: AdminRequest) => {
    if (request.type === 'status') {
      port.postMessage({ id: request.id, ok: true, type: 'status', payload: status() } satisfies AdminAnswer);
      return;
    }
    const startedAt = new Date().toISOString();
    pauseProjector = true;
    try {
      await projectorIdle;
      const client = await connect();
      try {
        await loadSessions(client);
        const rowsRebuilt = await projector.rebuildLifecycle(client);
        data.bookPort.postMessage({ type: 'reset' }); // the read thread reloads its books from the rebuilt table
        port.postMessage({
          id: request.id,
          ok: true,
          type: 'rebuild-lifecycle',
          payload: { projection: 'runtime.order_lifecycle_state', status: 'COMPLETED', rowsRebuilt, startedAt, finishedAt: new Date().toISOString() },
        } satisfies AdminAnswer);
      } finally {
        await client.end();
      }
    } catch (error) {
      port.postMessage({ id: request.id, ok: false, message: (error as Error).message } satisfies AdminAnswer);
    } finally {
      pauseProjector = false;
      projectionWake?.();
    }
  });
}

parentPort!.on('message', (message: { type: string }) => {
  if (message.type === 'stop') {
    stopping = true;
    doorbell.ringAlways();
    projectionWake?.();
  }
});

async function main(): Promise<void> {
  const client = await connect();
  await loadSessions(client);
  await projector.load(client);
  const caughtUp = await catchUp(client);
  await client.end();
  for (let shard = 0; shard < data.shardCount; shard++) control.setJournalCommitted(shard, data.journalDurable[shard]!);
  control.databaseState = DB_UP;
  log('info', 'persistence ready', { projectedBatches: caughtUp });
  parentPort!.postMessage({ type: 'ready' });
  await Promise.all([writerLoop(), projectorLoop()]);
  await intakeClient.client?.end().catch(() => undefined);
  await journalClient.client?.end().catch(() => undefined);
  await projectorClient?.end().catch(() => undefined);
  for (const port of data.adminPorts) port.close();
  data.bookPort.close();
  parentPort!.postMessage({ type: 'stopped' });
}

main().catch((error: unknown) => {
  logger.fatal({ err: error }, 'persistence thread failed');
  process.exit(1);
});
