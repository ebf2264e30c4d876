// The venue session: the active (runId, venueSessionId) pair every accepted order is
// stamped with. The engine compares small numbers, so each known pair gets one;
// a pair the venue never ran maps to -1, which matches no order.

export interface VenueSession {
  runId: string;
  venueSessionId: string;
  startedAt: string;
}

export class SessionRegistry {
  private readonly current: VenueSession;
  private readonly runNo = 1;
  private readonly sessionNo = 1;

  constructor(session: VenueSession) {
    this.current = session;
  }

  get active(): VenueSession {
    return this.current;
  }

  /** Numbers stamped on a new order. */
  activeNumbers(): [number, number] {
    return [this.runNo, this.sessionNo];
  }

  /** Numbers for a quoted pair (cancel, modify); -1 for a pair this venue never ran. */
  numbersOf(runId: string, venueSessionId: string): [number, number] {
    return [
      runId === this.current.runId ? this.runNo : -1,
      venueSessionId === this.current.venueSessionId ? this.sessionNo : -1,
    ];
  }

  /** The pair behind numbers (resolving a clientOrderId back to a full cancel). */
  namesOf(runNo: number, sessionNo: number): [string, string] | null {
    return runNo === this.runNo && sessionNo === this.sessionNo ? [this.current.runId, this.current.venueSessionId] : null;
  }
}
