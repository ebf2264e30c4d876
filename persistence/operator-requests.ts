// The operator's requests the gateways pass to the persistence thread: its status, the
// audit of a command not yet journaled, the session roll and the lifecycle rebuild.

import type { MessagePort } from 'node:worker_threads';
import { DB_DOWN, DB_UP, type PersistenceControl } from '../core/persistence-control.ts';
import { failureOf, type AdminAnswer, type AdminRequest, type PersistenceStatus } from '../core/storage-protocol.ts';
import { REBUILD_APPLICATION_NAME, SESSION_ROLL_APPLICATION_NAME } from './connection-names.ts';
import type { JournalWriter } from './journal-writer.ts';
import type { MarketViews } from './market-views.ts';
import type { StorageConnections } from './persistence-connections.ts';
import type { PersistencePipeline } from './persistence-pipeline.ts';
import type { Projector } from './projector.ts';
import { rollSession } from './venue-sessions.ts';

/** How long each statement of a session roll may take in storage. */
const SESSION_ROLL_STATEMENT_TIMEOUT_MS = 10_000;

export class OperatorRequests {
  /**
   * Rebuilds run one at a time, in the order asked (each gateway bounds the operator
   * requests it has waiting, OPERATOR_WAITING_MAX): a rebuild clears and refills the
   * projector's open orders and ends the hold on ingestion, so a second one beside it
   * would see ingestion resume, or the first's cleared orders, in the middle of its own.
   */
  private rebuilds: Promise<unknown> = Promise.resolve();

  constructor(
    private readonly projector: Projector,
    private readonly pipeline: PersistencePipeline,
    private readonly connections: StorageConnections,
    private readonly views: MarketViews,
    private readonly control: PersistenceControl,
    private readonly shardCount: number,
    /** REBUILD_LOCK_TIMEOUT_MS: the rebuild's lock_timeout. */
    private readonly rebuildLockTimeoutMs: number,
    private readonly log: (level: 'info', message: string, fields: object) => void,
  ) {}

  /** Answers the requests coming on one gateway's port; until the writer starts, that the venue is starting. */
  listen(port: MessagePort): void {
    port.on('message', (request: AdminRequest) => {
      // A request that throws is still answered: its gateway waits on the id until its bound.
      this.answer(request).then(
        (answer) => port.postMessage(answer),
        (error: unknown) => port.postMessage({ id: request.id, ok: false, ...failureOf(error, 'the persistence thread could not answer the request') } satisfies AdminAnswer),
      );
    });
  }

  private async answer(request: AdminRequest): Promise<AdminAnswer> {
    const writer = this.pipeline.writer;
    if (writer === null) return { id: request.id, ok: false, message: 'the venue is starting' };
    if (request.type === 'audit-pending') return { id: request.id, ok: true, type: 'audit-pending', payload: this.projector.pendingAudit(request.commandId) };
    if (request.type === 'status') return { id: request.id, ok: true, type: 'status', payload: this.status(writer) };
    if (request.type === 'roll-session') return this.rollVenueSession(request);
    const answer = this.rebuilds.then(() => this.rebuildLifecycle(request.id)); // never rejects: a failure is an answer
    this.rebuilds = answer;
    return answer;
  }

  private status(writer: JournalWriter): PersistenceStatus {
    const control = this.control;
    const w = writer.stats;
    const p = this.projector.stats;
    const perSecond = (rows: number, busyUs: number) => (busyUs === 0 ? 0 : Math.round((rows / busyUs) * 1e6));
    return {
      database: control.databaseState === DB_UP ? 'up' : control.databaseState === DB_DOWN ? 'down' : 'starting',
      shards: Array.from({ length: this.shardCount }, (_, shardId) => {
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
        groups: p.groups,
        rows: p.rows,
        busyMs: Math.round(p.busyUs / 1000),
        rowsPerBusySecond: perSecond(p.rows, p.busyUs),
        errors: Atomics.load(control.ints, 2),
        quarantinedRows: p.quarantinedRows,
        quarantinedGroups: p.quarantinedGroups,
        lagUs: p.lag.summary(),
        lagBuckets: p.lag.buckets(),
      },
    };
  }

  private async rebuildLifecycle(id: number): Promise<AdminAnswer> {
    const startedAt = new Date().toISOString();
    try {
      await this.pipeline.holdIngestion();
      const client = await this.connections.connectProjector(REBUILD_APPLICATION_NAME);
      try {
        // Its TRUNCATE waits for every reader of the table, and every later reader waits
        // behind it (PostgreSQL's lock queue): that wait is bounded, then the rebuild fails.
        await client.query(`SET lock_timeout = ${this.rebuildLockTimeoutMs}`);
        const rowsRebuilt = await this.projector.rebuildLifecycle(client); // one transaction: all of it or nothing
        await client.query('RESET lock_timeout'); // committed: what follows must not fail on a lock
        await this.views.loadBooks(client); // from the rebuilt table
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
        const message = `the rebuild could not lock runtime.order_lifecycle_state (or a table it reads) within REBUILD_LOCK_TIMEOUT_MS (${this.rebuildLockTimeoutMs} ms): another session holds it; nothing was changed`;
        return { id, ok: false, message };
      }
      return { id, ok: false, ...failureOf(error, 'the rebuild did not finish; retry later') };
    } finally {
      this.pipeline.releaseIngestion();
    }
  }

  /**
   * The operator's session roll, in storage (persistence/venue-sessions.ts). The new
   * session's names go into this thread's cache before the answer: the gateways stamp its
   * numbers only after it, and the projector names every order's session from the cache.
   */
  private async rollVenueSession(request: Extract<AdminRequest, { type: 'roll-session' }>): Promise<AdminAnswer> {
    try {
      const client = await this.connections.connect(SESSION_ROLL_APPLICATION_NAME);
      try {
        // Bounded: a stuck server or a held lock answers within this, not at the gateway's 600 s bound on operator requests.
        await client.query(`SET statement_timeout = ${SESSION_ROLL_STATEMENT_TIMEOUT_MS}`);
        const roll = await rollSession(client, { runId: request.runId, venueSessionId: request.venueSessionId });
        if ('conflict' in roll) return { id: request.id, ok: false, message: roll.conflict, code: 'SESSION_CONFLICT' };
        this.connections.noteSession(roll.active.runNo, roll.active.sessionNo, roll.active.runId, roll.active.venueSessionId);
        if (roll.rolled) this.log('info', 'venue session rolled', { active: roll.active, ended: roll.previous });
        return { id: request.id, ok: true, type: 'roll-session', payload: roll };
      } finally {
        await client.end();
      }
    } catch (error) {
      // A failure before the commit changed nothing; one after it (the connection lost) may have rolled: the message says how to find out safely.
      return { id: request.id, ok: false, ...failureOf(error, 'storage did not roll the session, or did not confirm it; a retry naming the new runId and venueSessionId is safe either way') };
    }
  }
}
