// The real venue (server.ts) as a child process on a fresh data folder, for the
// benchmarks: its URL, its database URL (the embedded server it started), a stop.

import { spawn, type ChildProcess } from 'node:child_process';
import { rmSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { embeddedUrl } from '../../persistence/embedded-postgres.ts';
import { postmasterIn, reapAtExit, running, scratchFolder, stopPostgresAtExit } from '../lib/leftovers.ts';
import { childrenOf } from './cpu-use.ts';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

export interface BenchVenue {
  baseUrl: string;
  databaseUrl: string;
  /** The venue's DATA_DIR. */
  dataDir: string;
  child: ChildProcess;
  /** Milliseconds from spawn to /readyz 200. */
  readyMs: number;
  /** The embedded PostgreSQL's postmaster (null with DATABASE_URL): its processes are the venue's database. */
  postgresPid: number | null;
  /** SIGTERM, wait for the exit; removes the data folder unless keepData. */
  stop(options?: { keepData?: boolean }): Promise<void>;
  /**
   * kill -9, wait for the exit; the data folder is kept (its embedded database too: the next
   * start on it stops it). `database`: its embedded PostgreSQL's postmaster is killed too, as a
   * machine's crash would stop both (the next start's PostgreSQL then replays its WAL).
   */
  kill(options?: { database?: boolean }): Promise<void>;
  /** What the venue printed (its last 64 KiB at least). */
  log(): string;
}

/** `nodeArgs`: extra node flags (e.g. --cpu-prof, which NODE_OPTIONS may not carry). */
export async function startBenchVenue(env: Record<string, string>, dataDir?: string, nodeArgs: string[] = []): Promise<BenchVenue> {
  const dir = dataDir ?? scratchFolder('venue-bench-');
  stopPostgresAtExit(dir); // a caller's folder is kept, but not its PostgreSQL
  const started = performance.now();
  const child = reapAtExit(
    spawn(process.execPath, [...nodeArgs, 'runtime/venue-start.mjs'], {
      // as npm start runs it
      cwd: ROOT,
      // Huge pages as `npm start` asks for them (decision 0014), whatever started the bench: run
      // bare by tsx, the venue lost them and a crash start took 1-1.3 s longer loading its engines.
      env: {
        ...process.env,
        GLIBC_TUNABLES: 'glibc.malloc.hugetlb=1',
        PORT: '0',
        DATA_DIR: dir,
        LOG_LEVEL: 'info',
        GATEWAY_THREADS: '2',
        MATCHING_SHARDS: '2',
        EMBEDDED_POSTGRES_TEMPLATE: 'true',
        ...env,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    }),
  );
  let seen = '';
  const port = await new Promise<number>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`the venue did not start:\n${seen.slice(-4000)}`)), 300_000);
    const onData = (chunk: Buffer) => {
      seen += chunk.toString();
      if (seen.length > 1 << 20) seen = seen.slice(-65536); // bounded
      const match = /venue listening on http:\/\/[^:]+:(\d+)/.exec(seen);
      if (match !== null) {
        clearTimeout(timer);
        resolve(Number(match[1]));
      }
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`the venue exited with ${code}:\n${seen.slice(-4000)}`));
    });
  });
  const baseUrl = `http://127.0.0.1:${port}`;
  // The venue listens before it has recovered its books; ready is /readyz 200.
  for (;;) {
    const ready = await fetch(`${baseUrl}/readyz`).then(
      (r) => r.status,
      () => 0,
    );
    if (ready === 200) break;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  const readyMs = performance.now() - started;
  const databaseUrl = env.DATABASE_URL ?? (await embeddedUrl(dir));
  if (databaseUrl === null) throw new Error('the venue runs no embedded PostgreSQL on its data folder');
  const end = async (signal: NodeJS.Signals) => {
    if (child.exitCode === null && child.signalCode === null) {
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill(signal);
      await exited;
    }
  };
  return {
    baseUrl,
    databaseUrl,
    dataDir: dir,
    child,
    readyMs,
    postgresPid: env.DATABASE_URL === undefined ? postmasterOf(dir) : null,
    stop: async (options = {}) => {
      await end('SIGTERM');
      if (!options.keepData && dataDir === undefined) rmSync(dir, { recursive: true, force: true });
    },
    kill: async (options = {}) => {
      const postmaster = options.database ? postmasterOf(dir) : 0;
      await end('SIGKILL');
      if (postmaster > 0) {
        // The postmaster and every process it started, all at once, as a power cut would.
        const all = [postmaster, ...childrenOf(postmaster)];
        for (const pid of all) {
          try {
            process.kill(pid, 'SIGKILL');
          } catch (error) {
            if ((error as NodeJS.ErrnoException).code !== 'ESRCH') throw error; // a backend that ended since it was listed
          }
        }
        while (all.some(running)) await new Promise((resolve) => setTimeout(resolve, 10));
      }
    },
    log: () => seen,
  };
}

/** The pid of the embedded PostgreSQL running on a venue's data folder. */
function postmasterOf(dataDir: string): number {
  const pid = postmasterIn(dataDir);
  if (pid === 0) throw new Error(`no PostgreSQL runs on ${dataDir} (no readable postgres/postmaster.pid)`);
  return pid;
}
