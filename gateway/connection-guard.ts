// The bound on open connections. uWebSockets.js accepts every connection it can and has
// no hook when one opens or closes, and when the process runs out of file descriptors
// its accept fails on a listen socket that stays readable: the gateway threads spun at
// 100% CPU each (both cores of this machine) for as long as the flood held them, and the
// venue had no descriptor left for a new database connection.
//
// The main thread therefore counts the venue's open files (one stat of /proc/self/fd:
// its size is the count on Linux 6.2 and later, else the folder is listed) every
// GUARD_INTERVAL_MS, and tells the gateways to close their listen sockets when the files
// beyond those open before they listened reach the limit: MAX_CONNECTIONS, or what the
// file-descriptor limit leaves after FILE_RESERVE descriptors kept for the venue itself
// (database connections after a PostgreSQL restart, files). New connections are then
// refused by the kernel at once (ECONNREFUSED), the connections already open are served
// as before, and the gateways listen again once the count has fallen RESUME_FRACTION
// below the limit (idle connections close within 8 to 12 s: uWS's idle timeout).
//
// Counted are all of the venue's files beyond the baseline: client connections, and the
// few dozen database connections the storage threads open after the gateways listen.

import { readFileSync, readdirSync, statSync } from 'node:fs';

export const GUARD_INTERVAL_MS = 50;
/** Descriptors the bound leaves to the venue itself below the file-descriptor limit. */
export const FILE_RESERVE = 256;
/** Listening again once the count is this fraction of the limit below it. */
export const RESUME_FRACTION = 0.05;

/** The process's open files now. */
export function openFiles(): number {
  const size = statSync('/proc/self/fd').size;
  return size > 0 ? size : readdirSync('/proc/self/fd').length; // before Linux 6.2 the size is 0
}

/** The soft limit on open files (RLIMIT_NOFILE) of this process; Infinity when unlimited. */
export function fileLimit(limits = readFileSync('/proc/self/limits', 'utf8')): number {
  const match = /^Max open files\s+(\S+)/m.exec(limits);
  if (match === null) throw new Error('no "Max open files" line in /proc/self/limits');
  return match[1] === 'unlimited' ? Infinity : Number(match[1]);
}

export interface GuardBounds {
  maxConnections: number;
  fileLimit: number;
  /** Open files before the gateways listened. */
  baseline: number;
}

/** The connection limit the bounds give; throws if the file-descriptor limit leaves no room. */
export function connectionLimit({ maxConnections, fileLimit, baseline }: GuardBounds): number {
  const room = fileLimit - FILE_RESERVE - baseline;
  if (room < 1) {
    throw new Error(`the file-descriptor limit (ulimit -n ${fileLimit}) leaves no room for connections: ${baseline} files are open and ${FILE_RESERVE} are kept for the venue`);
  }
  return Math.min(maxConnections, room);
}

export class ConnectionGuard {
  readonly limit: number;
  readonly resumeAt: number;
  private accepting = true;

  constructor(
    private readonly bounds: GuardBounds,
    /** Called when the gateways must stop (false) or start again (true) accepting. */
    private readonly onChange: (accepting: boolean, connections: number) => void,
    /** Called with every count (the queue report's depth and high-water mark). */
    private readonly note: (connections: number) => void,
  ) {
    this.limit = connectionLimit(bounds);
    this.resumeAt = this.limit - Math.max(1, Math.floor(this.limit * RESUME_FRACTION));
  }

  get isAccepting(): boolean {
    return this.accepting;
  }

  /** One count of the venue's open files. */
  update(files: number): void {
    const connections = Math.max(0, files - this.bounds.baseline);
    this.note(connections);
    if (this.accepting && connections >= this.limit) {
      this.accepting = false;
      this.onChange(false, connections);
    } else if (!this.accepting && connections <= this.resumeAt) {
      this.accepting = true;
      this.onChange(true, connections);
    }
  }
}
