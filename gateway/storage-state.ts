// What the gateways know of the embedded PostgreSQL's supervisor (persistence/
// postgres-supervisor.ts), from the venue control words the main thread writes: /readyz
// says why storage is unavailable, order commands are refused at once while the server is
// being started again, and the persistence status reports it.

import {
  STORAGE_FAILED,
  STORAGE_RESTARTING,
  STORAGE_UP,
  VENUE_STORAGE_ATTEMPT_WORD,
  VENUE_STORAGE_EMBEDDED_WORD,
  VENUE_STORAGE_RESTARTS_WORD,
  VENUE_STORAGE_STATE_WORD,
  VENUE_STORAGE_TRIES_WORD,
} from './venue-memory.ts';

export interface EmbeddedStorage {
  state: 'up' | 'restarting' | 'failed';
  /** The try the supervisor is at (0 while up), and its bound (EMBEDDED_POSTGRES_RESTARTS). */
  attempt: number;
  maxTries: number;
  /** Times the server was started again since the venue started. */
  restarts: number;
}

/** Writes the supervisor's report to the control words (the main thread, at each change). */
export function publishEmbeddedStorage(control: Int32Array, report: EmbeddedStorage): void {
  Atomics.store(control, VENUE_STORAGE_EMBEDDED_WORD, 1);
  Atomics.store(control, VENUE_STORAGE_ATTEMPT_WORD, report.attempt);
  Atomics.store(control, VENUE_STORAGE_TRIES_WORD, report.maxTries);
  Atomics.store(control, VENUE_STORAGE_RESTARTS_WORD, report.restarts);
  Atomics.store(control, VENUE_STORAGE_STATE_WORD, report.state === 'up' ? STORAGE_UP : report.state === 'failed' ? STORAGE_FAILED : STORAGE_RESTARTING);
}

/** The embedded server's supervisor as the control words say, or null with DATABASE_URL. */
export function embeddedStorage(control: Int32Array): EmbeddedStorage | null {
  if (Atomics.load(control, VENUE_STORAGE_EMBEDDED_WORD) !== 1) return null;
  const state = Atomics.load(control, VENUE_STORAGE_STATE_WORD);
  return {
    state: state === STORAGE_RESTARTING ? 'restarting' : state === STORAGE_FAILED ? 'failed' : 'up',
    attempt: Atomics.load(control, VENUE_STORAGE_ATTEMPT_WORD),
    maxTries: Atomics.load(control, VENUE_STORAGE_TRIES_WORD),
    restarts: Atomics.load(control, VENUE_STORAGE_RESTARTS_WORD),
  };
}

/** Why the embedded server is unavailable, or null while it is up (or external). */
export function embeddedStorageProblem(control: Int32Array): string | null {
  const storage = embeddedStorage(control);
  if (storage === null || storage.state === 'up') return null;
  return storage.state === 'failed'
    ? `storage is unavailable: the embedded PostgreSQL exited and could not be started again after ${storage.maxTries} tries; an operator must restart the venue (see its log)`
    : `storage is unavailable: the embedded PostgreSQL exited and is being started again (try ${storage.attempt} of ${storage.maxTries}); commands are refused until it is back`;
}
