// Worker entry of the persistence thread: the journal writer (tier 1) and, right
// behind it, the projector (tier 2), each on its own connection. It also answers the
// operator's lifecycle rebuild (pausing the projector while it runs).
//
// Start: load the projections' watermarks, open orders and the intake records still
// waiting for an outcome, materialize whatever the journal holds beyond the
// watermarks (a crash may have left the projections behind), then say ready, with
// the commands that were taken but never sequenced (the main thread re-drives them),
// and start taking the rings.

import { randomUUID } from 'node:crypto';
import { rename } from 'node:fs/promises';
import { parentPort, workerData, type MessagePort } from 'node:worker_threads';
import pg from 'pg';
import { pgClient } from './pg-client.ts';
import pino from 'pino';
import { Doorbell } from '../core/doorbell.ts';
import { DB_DOWN, DB_UP, PersistenceControl } from '../core/persistence-control.ts';
import { JournalWriter, type StorageCommit, type WriterLimits } from './journal-writer.ts';
import { failureOf, SEALED_GROUPS_MAX, type AdminAnswer, type AdminRequest, type OwnReadAnswer, type OwnReadRequest, type PersistenceStatus } from '../core/storage-protocol.ts';
import { QueueMarks, QUEUE_SLOTS } from '../core/queue-marks.ts';
import { JOURNAL_APPLICATION_NAME, PROJECTOR_APPLICATION_NAME, REBUILD_APPLICATION_NAME, SESSION_ROLL_APPLICATION_NAME, START_APPLICATION_NAME } from './connection-names.ts';
import { rollSession } from './venue-sessions.ts';
import { Projector, PROJECTOR_SESSION_SQL, SAVED_AT_STOP, type BookUpdate, type RedriveShard } from './projector.ts';
import { noteOpenOrders, openOrdersCheckpointPath, readOpenOrdersNote, writeOpenOrdersInBackground, type OpenOrdersNote } from './open-orders-snapshot.ts';
import { BookModel } from './book-model.ts';
import { loadTapeView } from './market-data.ts';
import { analyzeStale } from './planner-statistics.ts';
import { DepthView } from '../core/market-view.ts';
import { TapeView } from '../core/tape-view.ts';

/**
 * The thread's first message: storage loaded and the projections caught up, with what
 * recovery must re-drive. It then waits for { type: 'journal', journalDurable } (the
 * last sequence per shard the replay reached), starts writing and says { type: 'ready' }.
 */
export interface PersistenceLoaded {
  type: 'loaded';
  redrive: RedriveShard[];
  /** Journal batches the projections lacked and now hold. */
  projectedBatches: number;
  /** The commands taken but not in the command log at start (the catch-up projected them, the re-drive will): ids for the tables. */
  pendingIds: { commandIds: string[]; orderIds: string[] };
}

/**
 * Tier 2 seals its open group at PROJECTION_GROUP_MS of age, at once when a read waits
 * for the tables (PersistenceControl.requestSeal), or when it holds this many commands or
 * bytes: every transaction costs the server about the same fixed amount whatever it
 * holds (prepared plans, commit), so groups are made large on purpose (docs/decisions/0042).
 */
const GROUP_COMMANDS_MAX = 4096;
const GROUP_BYTES_MAX = 8 << 20;

export interface PersistenceThreadData {
  databaseUrl: string;
  shardCount: number;
  intakeRings: SharedArrayBuffer[];
  bodyRings: SharedArrayBuffer[];
  journalRings: SharedArrayBuffer[];
  doorbell: SharedArrayBuffer;
  gatewayDoorbells: SharedArrayBuffer[];
  control: SharedArrayBuffer;
  principalIds: string[];
  limits: WriterLimits;
  /** REBUILD_HELD_BYTES_MAX: while a rebuild holds the ingest, the writer takes no commit once the held ones reach it. */
  heldBytesMax: number;
  /** REBUILD_LOCK_TIMEOUT_MS: the rebuild's lock_timeout. */
  rebuildLockTimeoutMs: number;
  /** PROJECTION_GROUP_MS: the open group is sealed at this age. */
  projectionGroupMs: number;
  logLevel: string;
  /** One port per gateway thread, for operator requests. */
  adminPorts: MessagePort[];
  /** One port per gateway thread, for own-order and fills reads (the in-memory model). */
  ownReadPorts: MessagePort[];
  /** OWN_READS_WINDOW: closed orders and fills kept in memory per participant. */
  ownReadsWindow: number;
  /** The gateways' view of the books (core/market-view.ts): this thread writes it. */
  depthView: SharedArrayBuffer;
  /** The gateways' view of the trade tape (core/tape-view.ts): this thread writes it. */
  tapeView: SharedArrayBuffer;
  /** The queues' marks (core/queue-marks.ts): this thread notes its sealed groups. */
  queueMarks: SharedArrayBuffer;
  /** The open orders saved at the last graceful stop, if the database still names them (persistence/open-orders-snapshot.ts). */
  openOrders: { file: string; token: string } | null;
  /** DATA_DIR, where the open orders a graceful stop saved are kept as the checkpoint a start after a crash replays the journal onto (persistence/open-orders-snapshot.ts); null: none. */
  openOrdersDir: string | null;
}

/** Asked of a stopped persistence thread: the projector's open orders written to `file` for the next start. */
export interface PersistenceSave {
  type: 'save';
  file: string;
  token: string;
}

export type PersistenceSaved = { type: 'saved'; count: number; bytes: number } | { type: 'save-failed'; message: string };


const data = workerData as PersistenceThreadData;
const logger = pino({ level: data.logLevel, base: { thread: 'persistence' } });
const log = (level: 'info' | 'warn' | 'error', message: string, fields: object = {}) => logger[level](fields, message);
const control = new PersistenceControl(data.control);
const doorbell = new Doorbell(data.doorbell);
const gatewayBells = data.gatewayDoorbells.map((buffer) => new Doorbell(buffer));
const sessionCache = new Map<string, [string, string]>();
let stopping = false;

/**
 * A connection named for what it does (`application_name`, shown by pg_stat_activity): an
 * operator, and the benchmarks, can tell the journal's commits from the projections.
 */
const connect = async (name: string): Promise<pg.Client> => {
  const client = pgClient({ connectionString: data.databaseUrl, application_name: name });
  await client.connect();
  return client;
};

/**
 * The projector's connection commits without waiting for the WAL flush: a projection
 * transaction writes its rows and its watermarks together, so a crash loses whole
 * transactions only, and the start-up catch-up projects them again from the journal.
 * The journal's commits then do not queue behind the projections' larger flushes.
 */
const connectProjector = async (name = PROJECTOR_APPLICATION_NAME): Promise<pg.Client> => {
  const client = await connect(name);
  await client.query(PROJECTOR_SESSION_SQL);
  await loadSessions(client);
  return client;
};

/** Which run of the server a connection talks to (its start time): a crash and restart in between changes it. */
async function serverRun(client: pg.ClientBase): Promise<string> {
  return (await client.query<{ run: string }>('SELECT pg_postmaster_start_time()::text AS run')).rows[0]!.run;
}

/** The run of the server the journal's connection talks to. */
let journalRun = '';
const connectJournal = async () => {
  const client = await connect(JOURNAL_APPLICATION_NAME);
  journalRun = await serverRun(client);
  return client;
};

/** The tables the first reads plan queries on, analyzed at start if stale (persistence/recovery.ts analyzeStale). */
const STARTUP_TABLES = ['runtime.command_log', 'runtime.executions', 'runtime.trades', 'runtime.journal_batches', 'runtime.intake_batches'];

let writer: JournalWriter | undefined;
const queueMarks = new QueueMarks(data.queueMarks);
/** The most recent trades per instrument, for the gateways' tape reads: loaded from storage after the catch-up, then kept by every projection commit. */
const tapeView = new TapeView(data.tapeView);
/** After a write to the tape view: says so (once) when it filled the view. A view of 0 rows is full from the start: off, not filled. */
function tapeWritten(wasFull: boolean): void {
  if (!wasFull && tapeView.full) log('warn', 'more instruments than MARKET_DATA_INSTRUMENTS: the tape of the others is read from storage');
}

const projector = new Projector({
  control,
  shardCount: data.shardCount,
  principalIds: data.principalIds,
  // Sessions are loaded with each connection; a pair the venue never ran cannot reach the journal.
  sessionNames: (runNo, sessionNo) => {
    const names = sessionCache.get(`${runNo}:${sessionNo}`);
    if (names === undefined) throw new Error(`unknown venue session ${runNo}:${sessionNo}`);
    return names;
  },
  log,
  ownReadsWindow: data.ownReadsWindow,
  onSealed: (groups) => queueMarks.note(QUEUE_SLOTS.sealedGroups, groups),
  onTapeStored: (trades) => {
    if (!tapeView.loaded) return; // the start's catch-up: the load reads it back from storage
    const wasFull = tapeView.full;
    tapeView.publish(trades);
    tapeWritten(wasFull);
  },
});

/** The displayed books, kept from every ingested commit and published to the gateways' view. */
const books = new BookModel(data.shardCount);
const depthView = new DepthView(data.depthView);
let viewFull = false;

function publishBooks(update: BookUpdate): void {
  books.apply(update);
  const instruments = new Set<string>();
  for (const level of update.levels) instruments.add(level[0]);
  for (const [id] of update.instruments) instruments.add(id);
  if (!books.publish(depthView, instruments, update.watermarks) && !viewFull) {
    viewFull = true;
    log('warn', 'more instruments than MARKET_DATA_INSTRUMENTS: the depth of the others answers 503 until it is raised');
  }
}

async function loadBooks(client: pg.ClientBase): Promise<void> {
  await books.load(client);
  books.publish(depthView, null, books.watermarkEntries());
}

const writerClient: { client: pg.Client | null } = { client: null };
let projectorClient: pg.Client | null = null;
/** The flusher's connection was lost: it reconnects even with nothing to flush, to send again what a crash of the server took back. */
let projectorLost = false;
/**
 * Commits made durable and not yet ingested: the one just committed, or, while a
 * rebuild holds ingestion, every commit since it began. Those are bounded by
 * heldBytesMax: at it the writer takes no more commits until the rebuild ends (the
 * rings fill and the gateways answer 503), so the held bytes pass it by one commit at most.
 */
const ingestQueue: StorageCommit[] = [];
/** Bytes of the commits in ingestQueue (0 once it is drained). */
let ingestQueueBytes = 0;
let holdIngest = false;
/** The checkpoint of the open orders the database names (persistence/open-orders-snapshot.ts). */
let openOrdersNoted: OpenOrdersNote | null = null;
let writerDone = false;
let flusherWake: (() => void) | null = null;
let flusherIdle: Promise<void> = Promise.resolve();
/** Set by the writer while it waits for room (tier 2's sealed groups, or the held commits). */
let writerResume: (() => void) | null = null;
const resumeWriter = () => {
  writerResume?.();
  writerResume = null;
};
const commitBytes = (commit: StorageCommit) => {
  let bytes = 0;
  for (const batch of commit.intake) bytes += batch.payload.byteLength;
  for (const batch of commit.journals) bytes += batch.payload.byteLength;
  return bytes;
};

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
        [shard, projector.ingestedWatermark(shard)],
      );
      if (page.rows.length === 0) break;
      for (const row of page.rows) {
        const journal = { shard, firstSequence: Number(row.first_sequence), lastSequence: Number(row.last_sequence), commandCount: row.command_count, eventCount: row.event_count, payload: row.payload };
        const update = projector.ingest({ commitNo: Number(row.commit_no ?? 0), intake: [], journals: [journal] });
        if (update !== null) books.apply(update); // the books' snapshot was loaded before: what it holds is skipped
      }
      batches += page.rows.length;
      if (projector.openCommands >= GROUP_COMMANDS_MAX || projector.openBytes >= GROUP_BYTES_MAX) {
        projector.seal();
        while (await projector.flush(client));
      }
    }
  }
  projector.seal();
  while (await projector.flush(client));
  return batches;
}

/** Wakes the gateways that sleep (a busy one checks durability before it sleeps: gateway/durability.ts advanced()). */
const ringGateways = () => {
  for (const bell of gatewayBells) bell.ring();
};

/** Ingests what is queued (unless a rebuild holds it), publishing each commit's book changes to the gateways. */
function drainIngest(): void {
  while (!holdIngest && ingestQueue.length > 0) {
    const update = projector.ingest(ingestQueue.shift()!);
    if (update !== null) publishBooks(update);
  }
  if (!holdIngest && ingestQueueBytes > 0) {
    ingestQueueBytes = 0; // all ingested
    queueMarks.note(QUEUE_SLOTS.heldBytes, 0);
  }
  if (projector.openCommands >= GROUP_COMMANDS_MAX || projector.openBytes >= GROUP_BYTES_MAX) projector.seal();
  flusherWake?.();
  if (ownWaiting.length > 0) answerCaughtUp();
}

// ---- own-order and fills reads, from the in-memory model ----

/** How long a read waits for the model to reach the journal position durable at its arrival (read your writes). */
const OWN_READ_WAIT_MS = 2_000;
/** Reads waiting for the model to catch up, oldest first (each gateway's port bounds its own). */
const ownWaiting: { targets: number[]; answer: () => void; timer: NodeJS.Timeout }[] = [];

const caughtUp = (targets: readonly number[]) => targets.every((target, shard) => projector.ingestedWatermark(shard) >= target);

function answerCaughtUp(): void {
  for (let k = 0; k < ownWaiting.length; ) {
    const waiting = ownWaiting[k]!;
    if (!caughtUp(waiting.targets)) {
      k++;
      continue;
    }
    ownWaiting.splice(k, 1);
    clearTimeout(waiting.timer);
    waiting.answer();
  }
}

function ownRead(request: OwnReadRequest): OwnReadAnswer {
  const { read } = request;
  try {
    const rows = read.kind === 'fills' ? projector.own.fills(read.participants, read.instrumentId, read.limit) : projector.own.orders(read.view, read.participants, read.instrumentId, read.limit);
    const lookups: string[] = [];
    if (rows !== null && read.kind === 'orders') for (const row of rows) if ((row as { clientOrderId?: unknown }).clientOrderId === undefined) lookups.push(row.orderId as string);
    return { id: request.id, ok: true, rows: rows as unknown as Record<string, unknown>[] | null, lookups };
  } catch (error) {
    return { id: request.id, ok: false, ...failureOf(error, 'the own-order read failed') };
  }
}

for (const port of data.ownReadPorts) {
  port.on('message', (request: OwnReadRequest) => {
    // Until the start's catch-up is ingested the model is behind storage: the read thread answers.
    if (writer === undefined) {
      port.postMessage({ id: request.id, ok: true, rows: null, lookups: [] } satisfies OwnReadAnswer);
      return;
    }
    const targets = Array.from({ length: data.shardCount }, (_, shard) => control.journalCommitted(shard));
    if (caughtUp(targets)) {
      port.postMessage(ownRead(request));
      return;
    }
    const waiting = {
      targets,
      answer: () => port.postMessage(ownRead(request)),
      timer: setTimeout(() => {
        const at = ownWaiting.indexOf(waiting);
        if (at >= 0) ownWaiting.splice(at, 1);
        port.postMessage({ id: request.id, ok: false, message: 'the read models are behind the journal; retry shortly' } satisfies OwnReadAnswer);
      }, OWN_READ_WAIT_MS),
    };
    ownWaiting.push(waiting);
  });
}

/**
 * The open orders a graceful stop saved, once loaded, are a checkpoint at the projections
 * storage holds: the file becomes the slot the database does not name, and is named, so
 * that a start after a crash replays onto it only the journal since this start.
 */
async function adoptSavedOpenOrders(client: pg.Client, dir: string, saved: { file: string; token: string }): Promise<void> {
  const slot = openOrdersNoted?.slot === 0 ? 1 : 0;
  const watermarks = Array.from({ length: data.shardCount }, (_, shard) => projector.watermark(shard));
  try {
    await rename(saved.file, openOrdersCheckpointPath(dir, slot));
    await noteOpenOrders(client, { token: saved.token, slot, watermarks });
    openOrdersNoted = { token: saved.token, slot, watermarks };
  } catch (error) {
    log('warn', 'the open orders saved at the stop were not kept as a checkpoint', { err: (error as Error).message });
  }
}

/**
 * The open orders the start loaded (from storage, or a checkpoint with the journal after
 * it replayed onto it: Projector.takeLoadedOrders), written once the venue is ready as the
 * checkpoint the database names, in the slot it does not name, while the thread goes on
 * (writeOpenOrdersInBackground), then named on a connection of its own. Without it, each
 * crash after a crash replayed the journal since the last graceful stop: 96,000 to
 * 300,000 commands along the benchmark's chain of crashes, the last step before ready.
 */
async function checkpointLoadedOpenOrders(dir: string): Promise<void> {
  const loaded = projector.takeLoadedOrders();
  if (loaded === null) return;
  const began = performance.now();
  const slot = openOrdersNoted?.slot === 0 ? 1 : 0;
  const note: OpenOrdersNote = { token: randomUUID(), slot, watermarks: loaded.watermarks };
  try {
    const { count, bytes } = await writeOpenOrdersInBackground(openOrdersCheckpointPath(dir, slot), note.token, note.watermarks, loaded.frozen);
    const client = await connect(START_APPLICATION_NAME);
    try {
      await noteOpenOrders(client, note);
    } finally {
      await client.end().catch(() => undefined);
    }
    openOrdersNoted = note;
    log('info', 'open orders checkpoint written after the start', { count, bytes, slot, watermarks: note.watermarks, ms: Math.round(performance.now() - began) });
  } catch (error) {
    log('warn', 'the open orders the start loaded were not kept as a checkpoint: a crash replays the journal after the one named before', { err: (error as Error).message });
  }
}

/**
 * One commit at a time on one connection; whatever arrives meanwhile goes into the next
 * (group commit). The ingest of a durable commit (tier 2 in memory, the gateways' book
 * view) runs while the next commit is in flight, not between the two: the writer's
 * cycle, which every acknowledgement waits for, holds only the commit itself.
 */
async function writerLoop(writer: JournalWriter): Promise<void> {
  for (;;) {
    // Bounded memory: when tier 2 falls this far behind, or a rebuild has held this many
    // bytes of commits, tier 1 waits (its rings fill, the gateways answer 503).
    while (projector.sealedCount >= SEALED_GROUPS_MAX || (holdIngest && ingestQueueBytes >= data.heldBytesMax)) {
      await new Promise<void>((resolve) => (writerResume = resolve));
    }
    const commit = writer.collect();
    if (commit === null) {
      if (!holdIngest && ingestQueue.length > 0) {
        drainIngest(); // nothing to commit: ingest now rather than after the next commit
        continue;
      }
      if (stopping) return;
      const seen = doorbell.prepareSleep();
      if (writer.hasInput()) {
        doorbell.wake();
        continue;
      }
      await doorbell.sleepAsync(seen, 100);
      continue;
    }
    // Groups committed before this commit is sent: its WAL flush covers those of the same run of the server.
    const covered = projector.flushedCount;
    const run = journalRun;
    const durable = writer.commit(connectJournal, writerClient, commit); // sent before it returns (unless it must connect or retry first)
    drainIngest();
    await durable;
    if (journalRun === run) projector.durableThrough(covered, run);
    ringGateways();
    ingestQueue.push(commit);
    ingestQueueBytes += commitBytes(commit);
    if (holdIngest) queueMarks.note(QUEUE_SLOTS.heldBytes, ingestQueueBytes);
  }
}

/** Seals the open group once it is old enough (or at a stop) and sends sealed groups to storage, retrying on failure. */
async function flusherLoop(): Promise<void> {
  for (;;) {
    const ageMs = projector.openSinceMs > 0 ? performance.now() - projector.openSinceMs : -1;
    const wanted = control.takeSealRequest(); // cleared even with no open group: the reader asks again while it waits
    if (ageMs >= data.projectionGroupMs || (writerDone && ageMs >= 0) || (wanted && ageMs >= 0)) projector.seal();
    if (projector.sealedCount === 0) {
      if (writerDone && ingestQueue.length === 0 && projector.openSinceMs === 0) return;
      if (projectorLost && !stopping) {
        await reconnectFlusher();
        continue;
      }
      await new Promise<void>((resolve) => {
        flusherWake = resolve;
        const timeoutMs = ageMs >= 0 ? Math.max(1, data.projectionGroupMs - ageMs) : 100;
        setTimeout(resolve, timeoutMs);
        void control.sealRequested(timeoutMs).then(resolve);
      });
      flusherWake = null;
      continue;
    }
    let done: () => void = () => undefined;
    flusherIdle = new Promise<void>((resolve) => (done = resolve));
    let delayMs = 50;
    for (;;) {
      try {
        if (projectorClient === null || projectorLost) {
          await openFlusher();
          if (await projector.storedAlready(projectorClient!)) break; // a group whose acknowledgement was lost
        }
        await projector.flush(projectorClient!);
        break;
      } catch (error) {
        log('error', 'projection failed; retrying', { err: (error as Error).message });
        Atomics.add(control.ints, 2, 1);
        await projectorClient?.end().catch(() => undefined);
        projectorClient = null;
        await new Promise((resolve) => setTimeout(resolve, delayMs));
        delayMs = Math.min(delayMs * 2, 1000);
      }
    }
    done();
    resumeWriter();
  }
}

/** A new connection for the flusher; what a crash of the server took back goes again first. */
async function openFlusher(): Promise<void> {
  await projectorClient?.end().catch(() => undefined);
  projectorClient = null;
  const client = await connectProjector();
  const lost = () => {
    if (projectorClient !== client) return;
    projectorLost = true;
    flusherWake?.();
  };
  client.on('error', lost);
  client.on('end', lost);
  projectorClient = client;
  projectorLost = false;
  await projector.resendLost(client, await serverRun(client));
}

/** The flusher's connection was lost with nothing to flush: connect again (bounded back-off) until storage answers, or a group is sealed. */
async function reconnectFlusher(): Promise<void> {
  let delayMs = 50;
  while (projectorLost && !stopping && projector.sealedCount === 0) {
    try {
      await openFlusher();
      return;
    } catch (error) {
      projectorLost = true;
      log('warn', 'the projections\' connection is lost; reconnecting', { err: (error as Error).message });
      await new Promise((resolve) => setTimeout(resolve, delayMs));
      delayMs = Math.min(delayMs * 2, 1000);
    }
  }
}

/** Flushes everything ingested (ingestion held by the caller). */
async function flushAll(): Promise<void> {
  await flusherIdle;
  projector.seal();
  while (projector.sealedCount > 0) {
    flusherWake?.();
    await new Promise((resolve) => setTimeout(resolve, 2));
    await flusherIdle;
  }
}

function status(writer: JournalWriter): PersistenceStatus {
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
    projections: {
      groups: p.groups, rows: p.rows, busyMs: Math.round(p.busyUs / 1000), rowsPerBusySecond: perSecond(p.rows, p.busyUs), errors: Atomics.load(control.ints, 2),
      quarantinedRows: p.quarantinedRows, quarantinedGroups: p.quarantinedGroups, lagUs: p.lag.summary(), lagBuckets: p.lag.buckets(),
    },
  };
}

/**
 * Rebuilds run one at a time, in the order asked (each gateway bounds the operator
 * requests it has waiting, OPERATOR_WAITING_MAX): a rebuild clears and refills the
 * projector's open orders and ends the hold on ingestion, so a second one beside it
 * would see ingestion resume, or the first's cleared orders, in the middle of its own.
 */
let rebuilds: Promise<unknown> = Promise.resolve();

async function rebuildLifecycle(id: number): Promise<AdminAnswer> {
  const startedAt = new Date().toISOString();
  holdIngest = true;
  try {
    await flushAll();
    const client = await connectProjector(REBUILD_APPLICATION_NAME);
    try {
      // Its TRUNCATE waits for every reader of the table, and every later reader waits
      // behind it (PostgreSQL's lock queue): that wait is bounded, then the rebuild fails.
      await client.query(`SET lock_timeout = ${data.rebuildLockTimeoutMs}`);
      const rowsRebuilt = await projector.rebuildLifecycle(client); // one transaction: all of it or nothing
      await client.query('RESET lock_timeout'); // committed: what follows must not fail on a lock
      await loadBooks(client); // from the rebuilt table
      return {
        id,
        ok: true,
        type: 'rebuild-lifecycle',
        payload: { projection: 'runtime.order_lifecycle_state', status: 'COMPLETED', rowsRebuilt, startedAt, finishedAt: new Date().toISOString() },
      };
    } finally {
      await client.end();
    }
  } catch (error) {
    if ((error as { code?: string }).code === '55P03') {
      const message = `the rebuild could not lock runtime.order_lifecycle_state (or a table it reads) within REBUILD_LOCK_TIMEOUT_MS (${data.rebuildLockTimeoutMs} ms): another session holds it; nothing was changed`;
      return { id, ok: false, message };
    }
    return { id, ok: false, ...failureOf(error, 'the rebuild did not finish; retry later') };
  } finally {
    holdIngest = false;
    drainIngest();
    resumeWriter();
  }
}

/** How long each statement of a session roll may take in storage. */
const SESSION_ROLL_STATEMENT_TIMEOUT_MS = 10_000;

/**
 * The operator's session roll, in storage (persistence/venue-sessions.ts). The new
 * session's names go into this thread's cache before the answer: the gateways stamp its
 * numbers only after it, and the projector names every order's session from the cache.
 */
async function rollVenueSession(request: Extract<AdminRequest, { type: 'roll-session' }>): Promise<AdminAnswer> {
  try {
    const client = await connect(SESSION_ROLL_APPLICATION_NAME);
    try {
      // Bounded: a stuck server or a held lock answers within this, not at the gateway's 600 s bound on operator requests.
      await client.query(`SET statement_timeout = ${SESSION_ROLL_STATEMENT_TIMEOUT_MS}`);
      const roll = await rollSession(client, { runId: request.runId, venueSessionId: request.venueSessionId });
      if ('conflict' in roll) return { id: request.id, ok: false, message: roll.conflict, code: 'SESSION_CONFLICT' };
      sessionCache.set(`${roll.active.runNo}:${roll.active.sessionNo}`, [roll.active.runId, roll.active.venueSessionId]);
      if (roll.rolled) log('info', 'venue session rolled', { active: roll.active, ended: roll.previous });
      return { id: request.id, ok: true, type: 'roll-session', payload: roll };
    } finally {
      await client.end();
    }
  } catch (error) {
    // A failure before the commit changed nothing; one after it (the connection lost) may have rolled: the message says how to find out safely.
    return { id: request.id, ok: false, ...failureOf(error, 'storage did not roll the session, or did not confirm it; a retry naming the new runId and venueSessionId is safe either way') };
  }
}

for (const port of data.adminPorts) {
  port.on('message', async (request: AdminRequest) => {
    if (writer === undefined) {
      port.postMessage({ id: request.id, ok: false, message: 'the venue is starting' } satisfies AdminAnswer);
      return;
    }
    if (request.type === 'audit-pending') {
      port.postMessage({ id: request.id, ok: true, type: 'audit-pending', payload: projector.pendingAudit(request.commandId) } satisfies AdminAnswer);
      return;
    }
    if (request.type === 'status') {
      port.postMessage({ id: request.id, ok: true, type: 'status', payload: status(writer) } satisfies AdminAnswer);
      return;
    }
    if (request.type === 'roll-session') {
      port.postMessage(await rollVenueSession(request));
      return;
    }
    const answer = rebuilds.then(() => rebuildLifecycle(request.id)); // never rejects: a failure is an answer
    rebuilds = answer;
    port.postMessage(await answer);
  });
}

let stopped = false;
parentPort!.on('message', (message: { type: string } | PersistenceSave) => {
  if (message.type === 'stop') {
    stopping = true;
    doorbell.ringAlways();
    flusherWake?.();
  } else if (message.type === 'venue-ready') {
    // After the venue's ready, not this thread's: the write's slices and I/O would compete with the rest of the start.
    if (data.openOrdersDir !== null && !stopping) void checkpointLoadedOpenOrders(data.openOrdersDir);
  } else if (message.type === 'save' && 'file' in message) {
    try {
      if (!stopped) throw new Error('the persistence thread has not stopped');
      const { count, bytes } = projector.saveOpenOrders(message.file, message.token);
      parentPort!.postMessage({ type: 'saved', count, bytes } satisfies PersistenceSaved);
    } catch (error) {
      parentPort!.postMessage({ type: 'save-failed', message: (error as Error).message } satisfies PersistenceSaved);
    }
  }
});

async function main(): Promise<void> {
  const client = await connectProjector(START_APPLICATION_NAME);
  const lastCommit = await client.query<{ n: string | null }>(
    'SELECT greatest((SELECT max(commit_no) FROM runtime.intake_batches), (SELECT max(commit_no) FROM runtime.journal_batches)) AS n',
  );
  const phaseMs: Record<string, number> = {};
  let phaseStart = performance.now();
  const phase = async <T>(name: string, work: Promise<T>): Promise<T> => {
    const result = await work;
    phaseMs[name] = Math.round(performance.now() - phaseStart);
    phaseStart = performance.now();
    return result;
  };
  // Stale planner statistics made the books' GROUP BY below sort a million rows on disk: the
  // lifecycle table is analyzed at once, on its own connection, beside the loads that do not
  // need it; the other tables the first reads plan on right after, not waited for.
  const analyzer = connect(`${START_APPLICATION_NAME}-analyze`);
  const analyzed = analyzer.then((reader) => analyzeStale(reader, ['runtime.order_lifecycle_state']));
  void analyzed
    .then(async (first) => [...first, ...(await analyzeStale(await analyzer, STARTUP_TABLES))])
    .then((tables) => log('info', 'planner statistics refreshed', { tables }), (error: unknown) => log('warn', 'planner statistics not refreshed', { err: (error as Error).message }))
    .finally(() => analyzer.then((reader) => reader.end()).catch(() => undefined));
  // The displayed books' GROUP BY over the open orders runs beside the projector's load of
  // them, on its own connection, once the lifecycle table is analyzed (only faster reads:
  // a failed analyze is logged above, the start goes on): a snapshot with the projection
  // watermarks it holds, so the catch-up below applies to it exactly what it lacks. It
  // ran after the catch-up, and its 0.25-1 s on a start after a crash with a million
  // resting orders was the last step before the persistence thread was loaded.
  const booksLoaded = analyzed
    .catch(() => [])
    .then(async () => {
      const reader = await connect(`${START_APPLICATION_NAME}-books`);
      try {
        await books.load(reader);
      } finally {
        await reader.end().catch(() => undefined);
      }
    });
  booksLoaded.catch(() => undefined); // awaited below
  const dir = data.openOrdersDir;
  openOrdersNoted = dir === null ? null : await readOpenOrdersNote(client);
  const openOrders = await phase('openOrders', projector.load(client, data.openOrders, dir === null ? null : { dir, note: openOrdersNoted }));
  if (dir !== null && data.openOrders !== null && openOrders === SAVED_AT_STOP) await adoptSavedOpenOrders(client, dir, data.openOrders);
  const pending = await phase('pendingIntake', projector.loadPending(client));
  const pendingIds = projector.pendingIds(); // before the catch-up takes the journaled ones
  await phase('books', booksLoaded);
  await projector.resendLost(client, await serverRun(client)); // nothing to send yet: names the run the catch-up's groups go to
  const caughtUp = await phase('catchUp', catchUp(client));
  books.publish(depthView, null, books.watermarkEntries());
  const tapeWasFull = tapeView.full;
  await phase('tape', loadTapeView(client, tapeView));
  tapeWritten(tapeWasFull);
  tapeView.markLoaded();
  await client.end();
  const redrive = projector.redrivePlan();
  log('info', 'persistence loaded', { projectedBatches: caughtUp, pendingIntake: pending, toRedrive: projector.pendingCount, openOrders, ownReads: projector.ownReadsLoaded, phaseMs });
  parentPort!.postMessage({ type: 'loaded', redrive, projectedBatches: caughtUp, pendingIds } satisfies PersistenceLoaded, redrive.map((shard) => shard.slots));
  const journalDurable = await new Promise<number[]>((resolve) => {
    const onMessage = (message: { type: string; journalDurable?: number[] }) => {
      if (message.type !== 'journal') return;
      parentPort!.off('message', onMessage);
      resolve(message.journalDurable!);
    };
    parentPort!.on('message', onMessage);
  });
  const started = new JournalWriter({
    intakeRings: data.intakeRings,
    bodyRings: data.bodyRings,
    journalRings: data.journalRings,
    control,
    limits: data.limits,
    journalDurable,
    lastCommitNo: Number(lastCommit.rows[0]!.n ?? 0),
    log,
  });
  writer = started;
  for (let shard = 0; shard < data.shardCount; shard++) control.setJournalCommitted(shard, journalDurable[shard]!);
  control.databaseState = DB_UP;
  parentPort!.postMessage({ type: 'ready' });
  await Promise.all([
    writerLoop(started).then(() => {
      writerDone = true;
      flusherWake?.();
    }),
    flusherLoop(),
  ]);
  await writerClient.client?.end().catch(() => undefined);
  await projectorClient?.end().catch(() => undefined);
  for (const port of data.adminPorts) port.close();
  for (const port of data.ownReadPorts) port.close();
  stopped = true;
  parentPort!.postMessage({ type: 'stopped' });
}

main().catch((error: unknown) => {
  logger.fatal({ err: error }, 'persistence thread failed');
  process.exit(1);
});
