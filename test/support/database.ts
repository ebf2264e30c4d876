// A real PostgreSQL server for a test file: the embedded server on a temporary data
// folder, at a fixed port so it can be stopped and started again under a running venue.

import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { startEmbeddedPostgres, type EmbeddedServer } from '../../persistence/embedded-postgres.ts';

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
    return new TestDatabase(await startEmbeddedPostgres(root, () => undefined), root);
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
