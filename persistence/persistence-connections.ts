// The persistence thread's connections to storage, each named for what it does, and the
// venue sessions' names they load (the projector names every order's session from them).

import type pg from 'pg';
import { JOURNAL_APPLICATION_NAME, PROJECTOR_APPLICATION_NAME } from './connection-names.ts';
import { pgClient } from './pg-client.ts';
import { PROJECTOR_SESSION_SQL } from './projection-group.ts';

/** Which run of the server a connection talks to (its start time): a crash and restart in between changes it. */
export async function serverRun(client: pg.ClientBase): Promise<string> {
  return (await client.query<{ run: string }>('SELECT pg_postmaster_start_time()::text AS run')).rows[0]!.run;
}

export class StorageConnections {
  /** The run of the server the journal's connection talks to. */
  journalRun = '';
  /** Run and session ids by `${runNo}:${sessionNo}`. */
  private readonly sessions = new Map<string, [string, string]>();

  constructor(private readonly databaseUrl: string) {}

  /**
   * A connection named for what it does (`application_name`, shown by pg_stat_activity): an
   * operator, and the benchmarks, can tell the journal's commits from the projections.
   */
  readonly connect = async (name: string): Promise<pg.Client> => {
    const client = pgClient({ connectionString: this.databaseUrl, application_name: name });
    await client.connect();
    return client;
  };

  /**
   * The projector's connection commits without waiting for the WAL flush: a projection
   * transaction writes its rows and its watermarks together, so a crash loses whole
   * transactions only, and the start-up catch-up projects them again from the journal.
   * The journal's commits then do not queue behind the projections' larger flushes.
   */
  readonly connectProjector = async (name = PROJECTOR_APPLICATION_NAME): Promise<pg.Client> => {
    const client = await this.connect(name);
    await client.query(PROJECTOR_SESSION_SQL);
    await this.loadSessions(client);
    return client;
  };

  /** The journal writer's connection; notes the run of the server it talks to. */
  readonly connectJournal = async (): Promise<pg.Client> => {
    const client = await this.connect(JOURNAL_APPLICATION_NAME);
    this.journalRun = await serverRun(client);
    return client;
  };

  /** The names of a session the venue ran. Sessions are loaded with each connection; a pair the venue never ran cannot reach the journal. */
  readonly sessionNames = (runNo: number, sessionNo: number): [string, string] => {
    const names = this.sessions.get(`${runNo}:${sessionNo}`);
    if (names === undefined) throw new Error(`unknown venue session ${runNo}:${sessionNo}`);
    return names;
  };

  /** A session just rolled to, known before the gateways stamp its numbers. */
  noteSession(runNo: number, sessionNo: number, runId: string, venueSessionId: string): void {
    this.sessions.set(`${runNo}:${sessionNo}`, [runId, venueSessionId]);
  }

  private async loadSessions(client: pg.ClientBase): Promise<void> {
    const rows = await client.query<{ run_no: number; session_no: number; run_id: string; venue_session_id: string }>(
      'SELECT run_no, session_no, run_id, venue_session_id FROM runtime.venue_sessions',
    );
    for (const row of rows.rows) this.sessions.set(`${row.run_no}:${row.session_no}`, [row.run_id, row.venue_session_id]);
  }
}
