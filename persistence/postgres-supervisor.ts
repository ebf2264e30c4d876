// The supervisor of the embedded PostgreSQL: the venue started the server, so the venue owns
// its life. When it exits without being asked (killed, crashed), it is started again on
// the same data, port and socket after a bounded back-off; PostgreSQL's own crash recovery
// runs (postgres-recovery.ts, recoverAsStandby), and the venue's threads reconnect by
// themselves, as they do when an external server comes back. Tries count until the server
// has stayed up for STABLE_MS; after `maxTries` in a row the supervisor gives up and says so
// (log, /readyz, the persistence status), and the venue answers 503 until an operator
// restarts it. Meanwhile order commands are 503 with Retry-After.

import type { EmbeddedServer } from './embedded-postgres.ts';

/** The waits before each try, then the last one again: about 33 s before the tenth. */
export const RESTART_BACKOFF_MS = [250, 500, 1_000, 2_000, 4_000, 5_000] as const;
/** A server up this long has recovered: the next exit starts counting tries from one. */
export const STABLE_MS = 60_000;

export type SupervisorState = 'up' | 'restarting' | 'failed';

export interface SupervisorReport {
  state: SupervisorState;
  /** Tries since the server last exited (0 while it is up). */
  attempt: number;
  maxTries: number;
  /** Times it was started again since the venue started. */
  restarts: number;
  /** How the server last exited on its own, or null. */
  lastExit: string | null;
}

export class PostgresSupervisor {
  private current: EmbeddedServer | null;
  private stopping = false;
  private attempt = 0;
  private restarts = 0;
  private lastExit: string | null = null;
  private upSinceMs = Date.now();
  private wake: (() => void) | null = null;
  private restarting: Promise<void> = Promise.resolve();

  constructor(
    first: EmbeddedServer,
    /** Starts the server again on the same data and port. */
    private readonly start: () => Promise<EmbeddedServer>,
    private readonly maxTries: number,
    /** Hears every change of state (the gateways' control words, the log). */
    private readonly onReport: (report: SupervisorReport) => void,
    private readonly log: (level: 'info' | 'error' | 'fatal', message: string, fields?: object) => void,
    private readonly backoffMs: readonly number[] = RESTART_BACKOFF_MS,
  ) {
    this.current = first;
    this.watch(first);
  }

  get report(): SupervisorReport {
    const state: SupervisorState = this.current !== null ? 'up' : this.attempt >= this.maxTries && !this.stopping ? 'failed' : 'restarting';
    return { state, attempt: this.current !== null ? 0 : this.attempt, maxTries: this.maxTries, restarts: this.restarts, lastExit: this.lastExit };
  }

  /** The venue is ready: the server's deferred checkpoint may run (EmbeddedServer.ready). */
  ready(): void {
    this.current?.ready();
  }

  /** Stops the server (a try in progress is waited for, a wait cut short); nothing is started again after it. */
  async stop(): Promise<void> {
    this.stopping = true;
    this.wake?.();
    await this.restarting;
    await this.current?.stop();
  }

  private watch(server: EmbeddedServer): void {
    void server.exited.then((how) => {
      if (this.stopping || server !== this.current) return;
      this.current = null;
      this.lastExit = how;
      if (Date.now() - this.upSinceMs >= STABLE_MS) this.attempt = 0;
      this.restarting = this.restartLoop();
    });
  }

  private async restartLoop(): Promise<void> {
    this.log('error', 'the embedded PostgreSQL exited without being asked: starting it again', { exit: this.lastExit, maxTries: this.maxTries });
    const downSinceMs = Date.now();
    while (!this.stopping) {
      if (this.attempt >= this.maxTries) {
        this.onReport(this.report);
        this.log('fatal', `the embedded PostgreSQL could not be started again after ${this.maxTries} tries: orders are refused until an operator restarts the venue`, { exit: this.lastExit });
        return;
      }
      this.attempt++;
      this.onReport(this.report);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, this.backoffMs[Math.min(this.attempt - 1, this.backoffMs.length - 1)]);
        this.wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      this.wake = null;
      if (this.stopping) return;
      try {
        const server = await this.start();
        if (this.stopping) {
          await server.stop();
          return;
        }
        this.current = server;
        this.upSinceMs = Date.now();
        this.restarts++;
        this.watch(server);
        server.ready();
        this.log('info', 'the embedded PostgreSQL is up again', { tries: this.attempt, downMs: Date.now() - downSinceMs, restarts: this.restarts });
        this.onReport(this.report);
        return;
      } catch (error) {
        this.log('error', `the embedded PostgreSQL did not start (try ${this.attempt} of ${this.maxTries})`, { err: error });
      }
    }
  }
}
