// A cluster whose last server did not stop cleanly: a server left running is stopped, and
// a killed one's cluster recovers as a standby, promoted, its checkpoint put off until ready.

import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { chown, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import type pg from 'pg';
import { pgClient } from './pg-client.ts';
import { exists, type Binaries, type RunAs } from './postgres-placement.ts';

const run = promisify(execFile);

/** Whether a process of this pid is there (EPERM: it is, another user's). */
export function alive(pid: number): boolean {
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

/** A server still running on our data directory (its venue was killed) is shut down cleanly. */
export async function stopLeftover(bin: Binaries, dataDir: string, owner: RunAs, log: (message: string) => void): Promise<void> {
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
 * every page its redo dirtied before it accepts a connection (under load, most of the
 * shared_buffers), on the start's path. A promotion writes an end-of-recovery record
 * instead and starts a spread checkpoint; the venue asks for it at once when it is ready
 * (EmbeddedServer.ready). Run beside the venue's start, on two saturated cores, that
 * checkpoint makes the start no faster (docs/decisions/0009-postgresql-promoted-after-crash.md).
 * Each promotion starts a new timeline (a history file of a few bytes in pg_wal). A stop
 * cut short during the standby phase leaves the state "in archive recovery" or "shut down
 * in recovery": the next start does the same again. True when the start must promote.
 */
export async function recoverAsStandby(dataDir: string, owner: RunAs, log: (message: string) => void): Promise<boolean> {
  const signal = path.join(dataDir, 'standby.signal');
  const state = await clusterState(dataDir);
  if (state === null || state === DB_SHUTDOWNED) return exists(signal); // a signal left by someone else: still promoted, never left read-only
  log(
    `PostgreSQL's last run on ${dataDir} did not stop cleanly (pg_control state ${state}): it recovers as a standby and is promoted, its end-of-recovery checkpoint put off until the venue is ready`,
  );
  await writeFile(signal, '', { mode: 0o600 });
  if (owner.uid !== undefined) await chown(signal, owner.uid, owner.gid!);
  return true;
}

/** Ends a standby's recovery: pg_promote waits until the server takes writes, up to 60 s. */
export async function promote(connection: pg.ClientConfig, log: (message: string) => void): Promise<void> {
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
export function checkpointInBackground(connection: pg.ClientConfig, log: (message: string) => void): void {
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
