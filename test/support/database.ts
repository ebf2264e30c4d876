// A real PostgreSQL server for a test file: the embedded server on a temporary data
// folder, at a fixed port so it can be stopped and started again under a running venue.

import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { startEmbeddedPostgres, type EmbeddedServer } from '../../persistence/embedded-postgres.ts';
import { migrate } from '../../persistence/migrations.ts';

export class TestDatabase {
  private server: EmbeddedServer;
  private readonly root: string;
  private databases = 0;

  private constructor(server: EmbeddedServer, root: string) {
    this.server = server;
    this.root = root;
  }

  static async start(): Promise<TestDatabase> {
    const root = mkdtempSync(path.join(os.tmpdir(), 'venue-db-'));
    return new TestDatabase(await startEmbeddedPostgres(root, () => undefined, { template: true }), root);
  }

  /** The URL of the server's default database. */
  get url(): string {
    return this.server.url;
  }

  /** A new empty database on the server; its URL. */
  async freshDatabase(): Promise<string> {
    const name = `test_${process.pid}_${++this.databases}`;
    const admin = new pg.Client({ connectionString: this.server.url });
    await admin.connect();
    try {
      await admin.query(`CREATE DATABASE ${name}`);
    } finally {
      await admin.end();
    }
    const url = new URL(this.server.url);
    url.pathname = `/${name}`;
    return url.toString();
  }

  /** Stops the server (fast shutdown), as an outage would. */
  async stopServer(): Promise<void> {
    await this.server.stop();
  }

  /** Starts it again on the same data and port. */
  async startServer(): Promise<void> {
    this.server = await startEmbeddedPostgres(this.root, () => undefined, { port: this.server.port });
  }

  async remove(): Promise<void> {
    await this.server.stop();
    rmSync(this.root, { recursive: true, force: true });
  }
}

/** Runs fn with a connected client, then closes it. */
export async function withClient<T>(url: string, fn: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}

/** A server with one fresh database, migrated: a test file's fixture (remove() the server after). */
export async function migratedDatabase(): Promise<{ database: TestDatabase; url: string }> {
  const database = await TestDatabase.start();
  const url = await database.freshDatabase();
  await withClient(url, (client) => migrate(client));
  return { database, url };
}

/**
 * Rows each table's scans read when `sql` runs (EXPLAIN ANALYZE): returned plus removed by
 * a filter or an index recheck, times the scan's loops (EXPLAIN gives them per loop).
 */
export async function rowsRead(client: pg.ClientBase, sql: string, params: unknown[]): Promise<Map<string, number>> {
  const explained = await client.query(`EXPLAIN (ANALYZE, FORMAT JSON) ${sql}`, params);
  const read = new Map<string, number>();
  const walk = (node: Record<string, unknown>) => {
    const table = node['Relation Name'] as string | undefined;
    if (table !== undefined) {
      const perLoop = ['Actual Rows', 'Rows Removed by Filter', 'Rows Removed by Index Recheck'].reduce((sum, key) => sum + ((node[key] as number | undefined) ?? 0), 0);
      read.set(table, (read.get(table) ?? 0) + perLoop * ((node['Actual Loops'] as number | undefined) ?? 1));
    }
    for (const child of (node.Plans as Record<string, unknown>[] | undefined) ?? []) walk(child);
  };
  walk((explained.rows[0]['QUERY PLAN'] as Array<{ Plan: Record<string, unknown> }>)[0]!.Plan);
  return read;
}
