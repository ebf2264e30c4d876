// POST /admin/v1/venue/sessions: the operator ends the open venue session and opens the
// next (API contract, "Venue session"). Three steps, each bounded:
//
//   1. storage: the persistence thread ends the open session and opens the new one in
//      one transaction (persistence/venue-sessions.ts); from then on it is the session a
//      restart continues;
//   2. every gateway stamps new orders with the new session: the main thread relays the
//      new session to each gateway thread and tells the one that rolled once all of them
//      have it (SessionSwitches, relaySessionRolls);
//   3. every shard expires the ended session's resting DAY orders: EXPIRE commands on
//      each shard's stream, made durable like any outcome (OrderFlow.expireSession). The
//      first one raises the shard's session floor, so an order stamped with the ended
//      session that reaches the shard after it (a gateway that had not switched yet)
//      fails SESSION_ENDED: nothing of it is carried out (command status FAILED).
//
// The answer comes after step 3. If the venue stops before, the next start finishes the
// expiry (runtime/session-roll-finish.ts); a retry naming the new pair re-runs steps 2 and 3 (idempotent)
// and answers as the first roll would have.

import type { Worker } from 'node:worker_threads';
import type { NumberedSession, SessionRoll } from '../core/storage-protocol.ts';
import { errorBody, ERRORS, serverErrorBody } from './error-catalog.ts';
import type { OrderFlow } from './order-flow.ts';
import type { SessionRegistry } from './sessions.ts';

/** The messages of step 2 (`roll`: the rolling gateway's own number for this roll). */
export type SessionMessage =
  /** gateway -> main: storage holds a new session; tell every gateway */
  | { type: 'session-rolled'; gatewayId: number; roll: number; session: NumberedSession }
  /** main -> every gateway: stamp new orders with this session */
  | { type: 'session'; gatewayId: number; roll: number; session: NumberedSession }
  /** gateway -> main: done */
  | { type: 'session-switched'; gatewayId: number; roll: number }
  /** main -> the rolling gateway: every gateway has it */
  | { type: 'sessions-switched'; roll: number };

/** How long step 2 may take; step 3 has SESSION_EXPIRY_TIMEOUT_MS. */
export const SESSION_SWITCH_TIMEOUT_MS = 5_000;
export const SESSION_EXPIRY_TIMEOUT_MS = 60_000;

/** Rolls a gateway lets wait at once (each holds an operator request). */
const ROLLS_WAITING_MAX = 16;

/** Main thread: relays each roll to every gateway, and answers the gateway that rolled once all have switched. */
export function relaySessionRolls(gateways: readonly Worker[]): void {
  const left = new Map<string, number>();
  for (const worker of gateways) {
    worker.on('message', (message: SessionMessage) => {
      if (message.type === 'session-rolled') {
        const key = `${message.gatewayId}:${message.roll}`;
        left.set(key, gateways.length);
        // Bounded: a roll whose gateways did not all answer is given up by its gateway at SESSION_SWITCH_TIMEOUT_MS, and here too.
        setTimeout(() => left.delete(key), SESSION_SWITCH_TIMEOUT_MS).unref();
        for (const gateway of gateways) gateway.postMessage({ type: 'session', gatewayId: message.gatewayId, roll: message.roll, session: message.session } satisfies SessionMessage);
      } else if (message.type === 'session-switched') {
        const key = `${message.gatewayId}:${message.roll}`;
        const count = left.get(key);
        if (count === undefined) return;
        if (count > 1) left.set(key, count - 1);
        else {
          left.delete(key);
          gateways[message.gatewayId]!.postMessage({ type: 'sessions-switched', roll: message.roll } satisfies SessionMessage);
        }
      }
    });
  }
}

/** Gateway thread: its side of step 2. */
export class SessionSwitches {
  private nextRoll = 1;
  private readonly waiting = new Map<number, () => void>();

  constructor(
    private readonly gatewayId: number,
    private readonly sessions: SessionRegistry,
    private readonly post: (message: SessionMessage) => void,
  ) {}

  /** Handles a message of the main thread's; false if it is not one of these. */
  handle(message: { type: string }): boolean {
    const m = message as SessionMessage;
    if (m.type === 'session') {
      this.sessions.activate(m.session);
      this.post({ type: 'session-switched', gatewayId: m.gatewayId, roll: m.roll });
      return true;
    }
    if (m.type === 'sessions-switched') {
      this.waiting.get(m.roll)?.();
      this.waiting.delete(m.roll);
      return true;
    }
    return false;
  }

  /** Every gateway stamps `session` once this resolves; rejects past SESSION_SWITCH_TIMEOUT_MS or with too many rolls waiting. */
  switchAll(session: NumberedSession): Promise<void> {
    if (this.waiting.size >= ROLLS_WAITING_MAX) return Promise.reject(new Error(`${ROLLS_WAITING_MAX} session rolls are waiting on this gateway already`));
    const roll = this.nextRoll++;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.waiting.delete(roll);
        reject(new Error(`not every gateway took the new session within ${SESSION_SWITCH_TIMEOUT_MS} ms`));
      }, SESSION_SWITCH_TIMEOUT_MS);
      this.waiting.set(roll, () => {
        clearTimeout(timer);
        resolve();
      });
      this.post({ type: 'session-rolled', gatewayId: this.gatewayId, roll, session });
    });
  }
}

/** A roll's 503 when storage did not roll it, or did not say so. */
export const ROLL_FAILED = 'storage did not roll the session, or did not confirm it; a retry naming the new runId and venueSessionId is safe either way';

/** The body of a successful roll's answer. */
export interface SessionRollAnswer {
  runId: string;
  venueSessionId: string;
  startedAt: string;
  previous: { runId: string; venueSessionId: string; startedAt: string; endedAt: string } | null;
  expiredOrders: number;
}

/** The three steps; the status and body to answer. */
export async function rollSession(flow: OrderFlow, switches: SessionSwitches, wanted: { runId: string | null; venueSessionId: string | null }): Promise<{ status: number; body: string }> {
  const stored = await flow.rollSessionInStorage(wanted.runId, wanted.venueSessionId);
  if (!stored.ok) {
    if (stored.code !== undefined) return { status: ERRORS[stored.code].status, body: errorBody(stored.code, stored.message) };
    return { status: 503, body: serverErrorBody('UNAVAILABLE', stored.message, stored.cause) };
  }
  if (stored.type !== 'roll-session') throw new Error(`the persistence thread answered a roll with ${stored.type}`);
  const roll: SessionRoll = stored.payload;
  const { active } = roll;
  try {
    await switches.switchAll(active);
    const expiredOrders = await flow.expireSession(active.sessionNo, Date.now() + SESSION_EXPIRY_TIMEOUT_MS);
    const previous = roll.previous === null ? null : { runId: roll.previous.runId, venueSessionId: roll.previous.venueSessionId, startedAt: roll.previous.startedAt, endedAt: roll.previous.endedAt };
    const answer: SessionRollAnswer = { runId: active.runId, venueSessionId: active.venueSessionId, startedAt: active.startedAt, previous, expiredOrders };
    return { status: 200, body: JSON.stringify(answer) };
  } catch (error) {
    const message = `session ${active.runId}/${active.venueSessionId} is open (storage holds the roll), but its expiry did not finish in time; retry with this runId and venueSessionId to finish it (a restart finishes it too)`;
    return { status: 503, body: serverErrorBody('UNAVAILABLE', message, error) };
  }
}
