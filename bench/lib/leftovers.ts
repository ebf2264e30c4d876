// What a benchmark starts outside its own process (venues, bare servers, PostgreSQL
// servers and their data folders) is stopped and removed when the benchmark's process
// ends, however it ends short of a kill -9: an exception nobody caught, a broken pipe on
// its output, Ctrl-C, SIGTERM. Without this a run cut short left its venue, the venue's
// PostgreSQL and gigabytes of data behind, and a server left listening skews every later
// run on the machine (found: a bare uWebSockets.js server from a load run killed by a
// broken pipe, still up 40 minutes later).
//
// At exit, at once (an exit handler cannot wait for promises): every registered child
// process still running is killed (SIGKILL), then for every registered data folder its
// PostgreSQL, if one runs there, gets an immediate shutdown (SIGQUIT: the postmaster stops
// its backends and removes its shared memory; its next start, if any, replays the WAL),
// waited for up to 5 s, and the folder is removed if the benchmark made it.

import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { statState } from '../load/cpu-use.ts';
import { clusterRootOf } from '../../persistence/postgres-placement.ts';

const children = new Set<ChildProcess>();
/** Folder → whether to remove it (else only the PostgreSQL running on it is stopped). */
const folders = new Map<string, boolean>();
let installed = false;

const EXIT_CODES: Partial<Record<NodeJS.Signals, number>> = { SIGINT: 130, SIGTERM: 143, SIGHUP: 129 };
const POSTGRES_EXIT_WAIT_MS = 5_000;

function install(): void {
  if (installed) return;
  installed = true;
  process.once('exit', cleanUpNow);
  // A signal's default action ends the process without its exit handlers; these end it through them.
  for (const [signal, code] of Object.entries(EXIT_CODES) as [NodeJS.Signals, number][]) process.once(signal, () => process.exit(code));
}

/** The child is killed at this process's exit if it still runs then. */
export function reapAtExit<T extends ChildProcess>(child: T): T {
  install();
  children.add(child);
  child.once('exit', () => children.delete(child));
  return child;
}

/** A new folder under the OS's temporary folder (mkdtemp with `prefix`), removed at exit with any PostgreSQL running on it. */
export function scratchFolder(prefix: string): string {
  const folder = mkdtempSync(path.join(os.tmpdir(), prefix));
  removeAtExit(folder);
  return folder;
}

/** An existing folder: at exit, any PostgreSQL running on it is stopped and the folder removed. */
function removeAtExit(folder: string): void {
  install();
  folders.set(folder, true);
}

/** A folder someone else owns (kept at exit): only the PostgreSQL running on it, if any, is stopped. */
export function stopPostgresAtExit(folder: string): void {
  install();
  if (!folders.has(folder)) folders.set(folder, false);
}

/** The pid of the PostgreSQL running on `folder` (its `postgres/postmaster.pid`, as the embedded server lays it out), or 0. */
export function postmasterIn(folder: string): number {
  try {
    const pid = Number(readFileSync(path.join(clusterRootOf(folder), 'postgres', 'postmaster.pid'), 'utf8').split('\n')[0]);
    return Number.isInteger(pid) && pid > 0 ? pid : 0;
  } catch {
    return 0;
  }
}

function signal(pid: number, name: NodeJS.Signals): boolean {
  try {
    process.kill(pid, name);
    return true;
  } catch {
    return false; // gone already
  }
}

/** Running: not gone and not a zombie (a postmaster this process started stays one until reaped, which no exit handler does). */
export function running(pid: number): boolean {
  try {
    return statState(readFileSync(`/proc/${pid}/stat`, 'utf8')) !== 'Z';
  } catch {
    return false;
  }
}

const sleeper = new Int32Array(new SharedArrayBuffer(4));

/**
 * Whether `pid` is still the postmaster of `folder`: after a kill -9 the postmaster.pid file
 * stays, and its pid may since belong to another process, which must not get the signal.
 */
function postmasterOf(pid: number, folder: string): boolean {
  try {
    const args = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
    const at = args.indexOf('-D');
    return at >= 0 && path.resolve(args[at + 1] ?? '') === path.resolve(folder, 'postgres');
  } catch {
    return false;
  }
}

/** The exit handler: runs the cleanups at once. */
function cleanUpNow(): void {
  for (const child of children) if (child.pid !== undefined && child.exitCode === null && child.signalCode === null) signal(child.pid, 'SIGKILL');
  children.clear();
  for (const [folder, remove] of folders) {
    const postmaster = postmasterIn(folder);
    if (postmaster > 0 && postmasterOf(postmaster, folder) && signal(postmaster, 'SIGQUIT')) {
      const deadline = Date.now() + POSTGRES_EXIT_WAIT_MS;
      while (running(postmaster) && Date.now() < deadline) Atomics.wait(sleeper, 0, 0, 10);
    }
    if (remove) rmSync(folder, { recursive: true, force: true });
  }
  folders.clear();
}
