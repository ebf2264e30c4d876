// Worker entry of the persistence thread: the journal writer (tier 1) and, right
// behind it, the projector (tier 2), each on its own connection. It also answers the
// operator's lifecycle rebuild (pausing the projector while it runs).
//
// Start: load the projections' watermarks, open orders and the intake records still
// waiting for an outcome, materialize whatever the journal holds beyond the
// watermarks (a crash may have left the projections behind), then say ready, with
// the commands that were taken but never sequenced (the main thread re-drives them),
// and start taking the rings.

import { parentPort, workerData, type MessagePort } from 'node:worker_threads';
import pg from 'pg';
import pino from 'pino';
import { Doorbell } from '../core/doorbell.ts';
import { DB_DOWN, DB_UP, PersistenceControl } from '../core/persistence-control.ts';
import { JournalWriter, type StorageCommit, type WriterLimits } from './journal-writer.ts';
import type { AdminAnswer, AdminRequest, PersistenceStatus } from '../core/storage-protocol.ts';
import { Projector, PROJECTOR_SESSION_SQL, type RedriveShard } from './projector.ts';

/** The first message of the thread: ready, and what recovery must re-drive. */
export interface PersistenceReady {
  type: 'ready';
  redrive: RedriveShard[];
}

/** A projection group holds at most this many commits and this many journal bytes (its JS work runs between the writer's turns). */
const GROUP_COMMITS_MAX = 64;
const GROUP_JOURNAL_BYTES_MAX = 4 << 20;

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
 * transaction writes its rows and its watermarks together, so a crash loses whole
 * transactions only, and the start-up catch-up projects them again from the journal.
 * The journal's commits then do not queue behind the projections' larger flushes.
 */
const connectProjector = async (): Promise<pg.Client> => {
  const client = await connect();
  await client.query(PROJECTOR_SESSION_SQL);
  await loadSessions(client);
  return client;
};

let writer: JournalWriter;
const projector = new Projector({
  control,
  shardCount: data.shardCount,
  principalIds: data.principalIds,
  // Sessions are loaded with each connection; a pair the venue never ran cannot reach the journal.
  onGroup: (update) => data.bookPort.postMessage({ type: 'update', update }),
  sessionNames: (runNo, sessionNo) => {
    const names = sessionCache.get(`${runNo}:${sessionNo}`);
    if (names === undefined) throw new Error(`unknown venue session ${runNo}:${sessionNo}`);
    return names;
  },
  log,
});

const writerClient: { client: pg.Client | null } = { client: null };
let projectorClient: pg.Client | null = null;
const projectionQueue: StorageCommit[] = [];
let projectionWake: (() => void) | null = null;
let projectorIdle: Promise<void> = Promise.resolve();
let pauseProjector = false;

async function loadSessions(client: pg.ClientBase): Promise<void> {
  const rows = await client.query<{ run_no: number; session_no: number; run_id: string; venue_session_id: string }>('SELECT run_no, session_no, run_id, venue_session_id FROM runtime.venue_sessions');
  for (const row of rows.rows) sessionCache.set(`${row.run_no}:${row.session_no}`, [row.run_id, row.venue_session_id]);
}

/** Materializes the journal beyond the projection watermarks, from the database (intake is pending already). */
async function catchUp(client: pg.Client): Promise<number> {
  let batches = 0;
  for (let shard = 0; shard < data.shardCount; shard++) {
    for (;;) {
      const page = await client.query<{ commit_no: string | null; first_sequence: string; last_sequence: string; command_count: number; event_count: number; payload: Buffer }>(
        'SELECT commit_no, first_sequence, last_sequence, command_count, event_count, payload FROM runtime.journal_batches WHERE shard_id = $1 AND first_sequence > $2 ORDER BY first_sequence LIMIT 100',
        [shard, projector.watermark(shard)],
      );
      if (page.rows.length === 0) break;
      await projector.project(
        client,
        page.rows.map((row) => ({
          commitNo: Number(row.commit_no ?? 0),
          intake: [],
          journals: [
            {
              shard,
              firstSequence: Number(row.first_sequence),
              lastSequence: Number(row.last_sequence),
              commandCount: row.command_count,
              eventCount: row.event_count,
              payload: row.payload,
            },
          ],
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

/** One commit at a time on one connection; whatever arrives meanwhile goes into the next (group commit). */
async function writerLoop(): Promise<void> {
  for (;;) {
    const commit = writer.collect();
    if (commit === null) {
      if (stopping) return;
      const seen = doorbell.prepareSleep();
      if (writer.hasInput()) {
        doorbell.wake();
        continue;
      }
      await doorbell.sleepAsync(seen, 100);
      continue;
    }
    await writer.commit(connect, writerClient, commit);
    ringGateways();
    projectionQueue.push(commit);
    projectionWake?.();
  }
}

/** The next projection group: whole commits, bounded by count and journal bytes. */
function nextGroup(): StorageCommit[] {
  let bytes = 0;
  let count = 0;
  while (count < projectionQueue.length && count < GROUP_COMMITS_MAX) {
    bytes += projectionQueue[count]!.journals.reduce((sum, journal) => sum + journal.payload.byteLength, 0);
    count++;
    if (bytes >= GROUP_JOURNAL_BYTES_MAX) break;
  }
  return projectionQueue.splice(0, count);
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
    const group = nextGroup();
    let done: () => void = () => undefined;
    projectorIdle = new Promise<void>((resolve) => (done = resolve));
    let delayMs = 50;
    for (;;) {
      try {
        if (projectorClient === null) projectorClient = await connectProjector();
        await projector.project(projectorClient, group);
        break;
      } catch (error) {
        log('error', 'projection failed; retrying', { err: (error as Error).message });
        Atomics.add(control.ints, 2, 1);
        await projectorClient?.end().catch(() => undefined);
        projectorClient = null;
        await new Promise((resolve) => setTimeout(resolve, delayMs));
        delayMs = Math.min(delayMs * 2, 1000);
        // The group may have been committed before the failure (a lost acknowledgement): reload what
        // storage holds (watermarks, open orders, the intake still waiting) so the retry skips it.
        try {
          projectorClient = await connectProjector();
          await projector.load(projectorClient);
          await projector.loadPending(projectorClient);
        } catch {
          await projectorClient?.end().catch(() => undefined);
          projectorClient = null;
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
      const client = await connectProjector();
      try {
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
  const client = await connectProjector();
  const lastCommit = await client.query<{ n: string | null }>(
    'SELECT greatest((SELECT max(commit_no) FROM runtime.intake_batches), (SELECT max(commit_no) FROM runtime.journal_batches)) AS n',
  );
  writer = new JournalWriter({
    intakeRings: data.intakeRings,
    journalRings: data.journalRings,
    control,
    limits: data.limits,
    journalDurable: data.journalDurable,
    lastCommitNo: Number(lastCommit.rows[0]!.n ?? 0),
    log,
  });
  await projector.load(client);
  const pending = await projector.loadPending(client);
  const caughtUp = await catchUp(client);
  await client.end();
  for (let shard = 0; shard < data.shardCount; shard++) control.setJournalCommitted(shard, data.journalDurable[shard]!);
  control.databaseState = DB_UP;
  const redrive = projector.redrivePlan();
  log('info', 'persistence ready', { projectedBatches: caughtUp, pendingIntake: pending, toRedrive: projector.pendingCount });
  parentPort!.postMessage({ type: 'ready', redrive } satisfies PersistenceReady, redrive.map((shard) => shard.slots));
  await Promise.all([writerLoop(), projectorLoop()]);
  await writerClient.client?.end().catch(() => undefined);
  await projectorClient?.end().catch(() => undefined);
  for (const port of data.adminPorts) port.close();
  data.bookPort.close();
  parentPort!.postMessage({ type: 'stopped' });
}

main().catch((error: unknown) => {
  logger.fatal({ err: error }, 'persistence thread failed');
  process.exit(1);
});
