// A PostgreSQL client whose dropped connection surfaces on its next query, never as an
// 'error' event without a listener (which would end the process): the embedded server
// can be killed and started again under a running venue (persistence/postgres-supervisor.ts).

import pg from 'pg';

export function pgClient(config: string | pg.ClientConfig): pg.Client {
  const client = new pg.Client(config);
  client.on('error', () => undefined);
  return client;
}
