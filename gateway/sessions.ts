// The venue session: the active (runId, venueSessionId) pair every accepted order is
// stamped with. The engine compares small numbers, so each pair the venue ever ran has
// one (runtime.venue_sessions: run_no, session_no); a pair the venue never ran maps
// to -1, which matches no order. A restart keeps the open session (API contract); the
// operator's roll (gateway/session-roll.ts) makes a new one active in every gateway.

export type { NumberedSession, VenueSession } from '../core/storage-protocol.ts';
import type { NumberedSession, VenueSession } from '../core/storage-protocol.ts';

export class SessionRegistry {
  private current: NumberedSession;
  /** runId -> venueSessionId -> session: looked up without building a key per command. */
  private readonly byNames = new Map<string, Map<string, NumberedSession>>();

  /** `known` holds every session the venue ran, the active one included. */
  constructor(active: NumberedSession, known: readonly NumberedSession[] = [active]) {
    this.current = active;
    for (const session of [...known, active]) this.remember(session);
  }

  get active(): VenueSession {
    return { runId: this.current.runId, venueSessionId: this.current.venueSessionId, startedAt: this.current.startedAt };
  }

  /**
   * A session the venue rolled to: known from now on, and active unless a later one is
   * (two rolls' messages may arrive in either order; session numbers only grow).
   */
  activate(session: NumberedSession): void {
    this.remember(session);
    if (session.sessionNo > this.current.sessionNo) this.current = session;
  }

  private remember(session: NumberedSession): void {
    let sessions = this.byNames.get(session.runId);
    if (sessions === undefined) this.byNames.set(session.runId, (sessions = new Map()));
    sessions.set(session.venueSessionId, session);
  }

  /** The numbers stamped on a new order: the active session's. */
  get activeRunNo(): number {
    return this.current.runNo;
  }

  get activeSessionNo(): number {
    return this.current.sessionNo;
  }

  /** Numbers for a quoted pair (cancel, modify); -1 for a pair this venue never ran. */
  numbersOf(runId: string, venueSessionId: string): [number, number] {
    const session = this.byNames.get(runId)?.get(venueSessionId);
    return session === undefined ? [-1, -1] : [session.runNo, session.sessionNo];
  }

  /** The session a quoted pair names, or undefined for a pair this venue never ran. */
  sessionOf(runId: string, venueSessionId: string): NumberedSession | undefined {
    return this.byNames.get(runId)?.get(venueSessionId);
  }
}
