// Applies migrations/NNN_name.sql in order, each in its own transaction, and records
// them in public.schema_migrations with a checksum: a second start applies nothing,
// and a migration edited after it was applied stops the start.

import { createHash } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import type pg from 'pg';

export const MIGRATIONS_DIR = fileURLToPath(new URL('../migrations/', import.meta.url));
const FILE = /^(\d{3})_([a-z0-9_]+)\.sql$/;
const LOCK_KEY = 0x76656e75; // 'venu': one migrator at a time

export async function migrate(client: pg.Client, dir = MIGRATIONS_DIR): Promise<string[]> {
  const files = (await readdir(dir)).filter((name) => FILE.test(name)).sort();
  await client.query('SELECT pg_advisory_lock($1)', [LOCK_KEY]);
  try {
    await client.query('CREATE TABLE IF NOT EXISTS public.schema_migrations (version integer PRIMARY KEY, name text NOT NULL, checksum text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())');
    const applied = new Map((await client.query<{ version: number; checksum: string }>('SELECT version, checksum FROM public.schema_migrations')).rows.map((r) => [r.version, r.checksum]));
    const done: string[] = [];
    for (const name of files) {
      const [, versionText] = FILE.exec(name)!;
      const version = Number(versionText);
      const sql = await readFile(`${dir}/${name}`, 'utf8');
      const checksum = createHash('sha256').update(sql).digest('hex');
      const known = applied.get(version);
      if (known !== undefined) {
        if (known !== checksum) throw new Error(`migration ${name} changed after it was applied`);
        continue;
      }
      await client.query('BEGIN');
      try {
        await client.query(sql);
        await client.query('INSERT INTO public.schema_migrations (version, name, checksum) VALUES ($1, $2, $3)', [version, name, checksum]);
        await client.query('COMMIT');
      } catch (error) {
        await client.query('ROLLBACK');
        throw new Error(`migration ${name} failed: ${(error as Error).message}`, { cause: error });
      }
      done.push(name);
    }
    return done;
  } finally {
    await client.query('SELECT pg_advisory_unlock($1)', [LOCK_KEY]);
  }
}
