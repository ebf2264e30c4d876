// The start's storage phases: PostgreSQL (the embedded server under its supervisor, or
// the one DATABASE_URL names), then migrations, the settings a restart must keep and the open session.

import type pg from 'pg';
import type { VenueConfig } from '../core/config.ts';
import { publishEmbeddedStorage } from '../gateway/storage-state.ts';
import { startEmbeddedPostgres } from '../persistence/embedded-postgres.ts';
import { migrate } from '../persistence/migrations.ts';
import { PostgresSupervisor, type SupervisorReport } from '../persistence/postgres-supervisor.ts';
import { checkSettings } from '../persistence/recovery.ts';
import { openSession } from '../persistence/venue-sessions.ts';
import { logger } from './venue.ts';

export interface Storage {
  databaseUrl: string;
  stopDatabase: () => Promise<void>;
  /** The venue is ready: the embedded server's deferred checkpoint may run. */
  databaseReady: () => void;
  /** From now on the supervisor's reports go to the gateways' control words, the last one at once. */
  publishTo: (venueControl: SharedArrayBuffer) => void;
}

export type OpenedSession = Awaited<ReturnType<typeof openSession>>;

export async function startStorage(config: VenueConfig): Promise<Storage> {
  let databaseUrl = config.databaseUrl;
  let stopDatabase = async (): Promise<void> => undefined;
  let databaseReady = (): void => undefined;
  /** What the embedded server's supervisor last reported, published to the gateways once their memory exists. */
  let storageReport: SupervisorReport | null = null;
  let publishStorage = (_report: SupervisorReport): void => undefined;
  if (databaseUrl === '') {
    const pgLog = (message: string) => logger.info(message);
    const server = await startEmbeddedPostgres(config.dataDir, pgLog, { template: config.embeddedPostgresTemplate });
    const supervisor = new PostgresSupervisor(
      server,
      () => startEmbeddedPostgres(config.dataDir, pgLog, { port: server.port }),
      config.embeddedPostgresRestarts,
      (report) => {
        storageReport = report;
        publishStorage(report);
      },
      (level, message, fields) => logger[level](fields ?? {}, message),
    );
    storageReport = supervisor.report;
    databaseUrl = server.url;
    stopDatabase = () => supervisor.stop();
    databaseReady = () => supervisor.ready();
    logger.info({ dataDir: server.dataDir, port: server.port }, 'embedded PostgreSQL is up');
  }
  const publishTo = (venueControl: SharedArrayBuffer) => {
    publishStorage = (report) => publishEmbeddedStorage(new Int32Array(venueControl), report);
    if (storageReport !== null) publishStorage(storageReport);
  };
  return { databaseUrl, stopDatabase, databaseReady, publishTo };
}

/** Migrations, the settings a restart must keep (MATCHING_SHARDS), and the venue session: the open one continues. */
export async function openStorage(client: pg.Client, config: VenueConfig): Promise<OpenedSession> {
  const applied = await migrate(client);
  if (applied.length > 0) logger.info({ applied }, 'migrations applied');
  await checkSettings(client, { matching_shards: String(config.matchingShards) });
  const session = await openSession(client, { runId: config.venueRunId, venueSessionId: config.venueSessionId });
  if (session.resumed && (session.active.runId !== config.venueRunId || session.active.venueSessionId !== config.venueSessionId)) {
    logger.warn({ open: session.active, configured: { runId: config.venueRunId, venueSessionId: config.venueSessionId } }, 'the open venue session continues; a restart does not start a new one');
  }
  return session;
}
