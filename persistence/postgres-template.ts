// A new cluster's data folder: an initdb of its own, or a copy of a template initialised
// once per machine, binaries and owner (EMBEDDED_POSTGRES_TEMPLATE), kept bounded on disk.

import { execFile } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import type { Stats } from 'node:fs';
import { chmod, chown, copyFile, lstat, mkdir, mkdtemp, readdir, rename, rm, stat, utimes, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { exists, type Binaries, type RunAs } from './postgres-placement.ts';

const run = promisify(execFile);
/** The venue's role, made by initdb as the cluster's superuser. */
export const USER = 'venue';

/** The arguments of initdb but its data folder and password file (also the template's key). */
const INITDB_ARGS = ['--auth=scram-sha-256', `--username=${USER}`, '--encoding=UTF8', '--locale=C'];

/** initdb into <root>/postgres (created), its password in <root>/postgres.password. */
export async function initialise(bin: Binaries, owner: RunAs, root: string, log: (message: string) => void): Promise<void> {
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

// `template` (EMBEDDED_POSTGRES_TEMPLATE, for tests and benchmarks that start many fresh
// venues): a new cluster is a copy of one initialised once per machine, binaries and
// owner (<tmpdir>/venue-postgres-template-<key>): a copy starts faster than an initdb of
// its own. Such clusters share the template's password and system identifier, and the
// copy is not fsynced (initdb syncs): fine for throwaway data, so the default (initdb for
// each) stays for a venue's own. Bounded on disk: a template's key changes with its
// binaries (each `npm ci` makes a new one), so whenever a start makes one, or finds its
// own unused for an hour, it removes this user's other templates (and builds cut short)
// unused for a day: each start that uses a template marks it used (its folder's mtime) at
// most once an hour.

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
export async function copyTemplate(bin: Binaries, owner: RunAs, root: string, under: string, log: (message: string) => void): Promise<void> {
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
