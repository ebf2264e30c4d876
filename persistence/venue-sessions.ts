// The venue sessions in storage (runtime.venue_sessions): the open one, which every
// accepted order is stamped with, and every one the venue ran. A session has names
// (runId, venueSessionId) and the numbers the engine compares (run_no, session_no);
// session numbers only grow, so a shard can tell an ended session's order by its
// number alone (core/matching-engine.ts, sessionFloor).
//
// openSession runs at start (a restart keeps the open session: API contract);
// rollSession is the operator's POST /admin/v1/venue/sessions: it ends the open
// session and opens the next in one transaction. The expiry of the ended session's DAY
// orders follows on the shards' streams (gateway/session-roll.ts; completed at the next
// start if the venue stops first: runtime/session-roll-finish.ts).

import type pg from 'pg';
import type { NumberedSession, SessionRoll } from '../core/storage-protocol.ts';

interface SessionRow {
  run_no: number;
  session_no: number;
  run_id: string;
  venue_session_id: string;
  started_at: Date;
  ended_at: Date | null;
}

/** Names tried for a roll that names no venueSessionId: `session-<n>`, then with a suffix if an operator took that name. */
const DEFAULT_NAME_TRIES = 16;

async function sessionRows(client: pg.ClientBase): Promise<SessionRow[]> {
  return (await client.query<SessionRow>('SELECT run_no, session_no, run_id, venue_session_id, started_at, ended_at FROM runtime.venue_sessions ORDER BY session_no')).rows;
}

function numbered(row: SessionRow): NumberedSession {
  return { runNo: row.run_no, sessionNo: row.session_no, runId: row.run_id, venueSessionId: row.venue_session_id, startedAt: row.started_at.toISOString() };
}

/**
 * The session orders are stamped with: the open one if the venue ran before (a
 * restart does not end a session), else a new one with the configured names.
 * Returns it with every session the venue ran.
 */
export async function openSession(client: pg.ClientBase, wanted: { runId: string; venueSessionId: string }): Promise<{ active: NumberedSession; known: NumberedSession[]; resumed: boolean }> {
  let rows = await sessionRows(client);
  const open = rows.filter((row) => row.ended_at === null).at(-1);
  if (open !== undefined) return { active: numbered(open), known: rows.map(numbered), resumed: true };
  const { runNo, sessionNo } = nextNumbers(rows, wanted.runId);
  await insertSession(client, runNo, sessionNo, wanted.runId, wanted.venueSessionId);
  rows = await sessionRows(client);
  const active = rows.find((row) => row.session_no === sessionNo)!;
  return { active: numbered(active), known: rows.map(numbered), resumed: false };
}

/**
 * Ends the open session and opens the one asked for (runId null: the open session's;
 * venueSessionId null: `session-<its number>`), in one transaction under a table lock
 * (two rolls at once take turns). The ended session's `ended_at` is the new one's
 * `started_at`. A pair the venue ran before answers `conflict`; the open pair itself
 * answers the roll that opened it again, changing nothing (a retry).
 */
export async function rollSession(client: pg.ClientBase, wanted: { runId: string | null; venueSessionId: string | null }): Promise<SessionRoll | { conflict: string }> {
  await client.query('BEGIN');
  try {
    await client.query('LOCK TABLE runtime.venue_sessions IN SHARE ROW EXCLUSIVE MODE');
    const rows = await sessionRows(client);
    const open = rows.filter((row) => row.ended_at === null).at(-1);
    if (open === undefined) throw new Error('no venue session is open');
    const runId = wanted.runId ?? open.run_id;
    const taken = (name: string) => rows.find((row) => row.run_id === runId && row.venue_session_id === name);
    if (wanted.venueSessionId !== null) {
      const same = taken(wanted.venueSessionId);
      if (same === open) {
        await client.query('COMMIT');
        const previous = rows.filter((row) => row.ended_at !== null && row.session_no < open.session_no).at(-1);
        return { active: numbered(open), previous: previous === undefined ? null : ended(previous, previous.ended_at!), rolled: false };
      }
      if (same !== undefined) {
        await client.query('ROLLBACK');
        return { conflict: `the venue ran session ${runId}/${wanted.venueSessionId} before (it ended at ${same.ended_at?.toISOString()}); a session's names are never reused` };
      }
    }
    const { runNo, sessionNo } = nextNumbers(rows, runId);
    let name = wanted.venueSessionId;
    for (let k = 1; name === null && k <= DEFAULT_NAME_TRIES; k++) {
      const candidate = k === 1 ? `session-${sessionNo}` : `session-${sessionNo}-${k}`;
      if (taken(candidate) === undefined) name = candidate;
    }
    if (name === null) throw new Error(`no free default name for session ${sessionNo}: name one`);
    const endedAt = (await client.query<{ ended_at: Date }>('UPDATE runtime.venue_sessions SET ended_at = now() WHERE session_no = $1 RETURNING ended_at', [open.session_no])).rows[0]!.ended_at;
    await insertSession(client, runNo, sessionNo, runId, name);
    await client.query('COMMIT');
    return { active: { runNo, sessionNo, runId, venueSessionId: name, startedAt: endedAt.toISOString() }, previous: ended(open, endedAt), rolled: true };
  } catch (error) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw error;
  }
}

function ended(row: SessionRow, endedAt: Date): NumberedSession & { endedAt: string } {
  return { ...numbered(row), endedAt: endedAt.toISOString() };
}

/** The numbers of a new session of `runId`: its run's number (a new one for a new run), the next session number. */
function nextNumbers(rows: readonly SessionRow[], runId: string): { runNo: number; sessionNo: number } {
  const sameRun = rows.find((row) => row.run_id === runId);
  return {
    runNo: sameRun?.run_no ?? Math.max(0, ...rows.map((row) => row.run_no)) + 1,
    sessionNo: Math.max(0, ...rows.map((row) => row.session_no)) + 1,
  };
}

async function insertSession(client: pg.ClientBase, runNo: number, sessionNo: number, runId: string, venueSessionId: string): Promise<void> {
  await client.query('INSERT INTO runtime.venue_sessions (run_no, session_no, run_id, venue_session_id, started_at) VALUES ($1, $2, $3, $4, now())', [runNo, sessionNo, runId, venueSessionId]);
}
