// The venue session: the active (runId, venueSessionId) pair every accepted order is
// stamped with. The engine compares small numbers, so each pair the venue ever ran has
// one (runtime.venue_sessions: run_no, session_no); a pair the venue never ran maps
// to -1, which matches no order. A restart keeps the open session (API contract); the
// operator's roll (gateway/session-roll.ts) makes a new one active in every gateway.

export type { NumberedSession, VenueSession } from '../core/storage-protocol.ts';
import type { NumberedSession, VenueSession } from '../core/storage-protocol.ts';

export class SessionRegistry {
  private current: NumberedSession;
  private readonly byNames = new Map<string, NumberedSession>();

  /** `known` holds every session the venue ran, the active one included. */
  constructor(active: NumberedSession, known: readonly NumberedSession[] = [active]) {
    this.current = active;
    for (const session of [...known, active]) this.byNames.set(`${session.runId}\u0000${session.venueSessionId}`, session);
  }

  get active(): VenueSession {
    return { runId: this.current.runId, venueSessionId: this.current.venueSessionId, startedAt: this.current.startedAt };
  }

  /**
   * A session the venue rolled to: known from now on, and active unless a later one is
   * (two rolls' messages may arrive in either order; session numbers only grow).
   */
  activate(session: NumberedSession): void {
    this.byNames.set(`${session.runId}\u0000${session.venueSessionId}`, session);
    if (session.sessionNo > this.current.sessionNo) this.current = session;
  }

  /** Numbers stamped on a new order. */
  activeNumbers(): [number, number] {
    return [this.current.runNo, this.current.sessionNo];
  }

  /** Numbers for a quoted pair (cancel, modify); -1 for a pair this venue never ran. */
  numbersOf(runId: string, venueSessionId: string): [number, number] {
    const session = this.byNames.get(`${runId}\u0000${venueSessionId}`);
    return session === undefined ? [-1, -1] : [session.runNo, session.sessionNo];
  }
}
