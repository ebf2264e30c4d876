// What the main thread reads from storage at start-up, before the venue is ready:
// the settings a restart must keep, the open venue session, each shard's journal (to
// rebuild its book), and what the gateways' shared tables should remember. (The
// captured commands that never reached the journal are found by the persistence
// thread, which holds the intake records still waiting for an outcome.)
//
// Everything here runs once, on one connection, in pages of bounded size.

import { crc32 } from 'node:zlib';
import type pg from 'pg';
import copyStreams from 'pg-copy-streams';
import type { NumberedSession } from '../core/storage-protocol.ts';

const JOURNAL_PAGE_ROWS = 64;

/** Settings fixed by the first start: they decide where instruments live. */
export async function checkSettings(client: pg.ClientBase, settings: Record<string, string>): Promise<void> {
  for (const [name, value] of Object.entries(settings)) {
    await client.query('INSERT INTO runtime.venue_settings (name, value) VALUES ($1, $2) ON CONFLICT (name) DO NOTHING', [name, value]);
    const stored = (await client.query<{ value: string }>('SELECT value FROM runtime.venue_settings WHERE name = $1', [name])).rows[0]!.value;
    if (stored !== value) {
      throw new Error(`the data was written with ${name}=${stored}; this start asks for ${value} (instruments would move to other shards). Start with ${name}=${stored} or a fresh DATA_DIR/database.`);
    }
  }
}

/**
 * The session orders are stamped with: the open one if the venue ran before (a
 * restart does not end a session), else a new one with the configured names.
 * Returns it with every session the venue ran.
 */
export async function openSession(
  client: pg.ClientBase,
  wanted: { runId: string; venueSessionId: string },
): Promise<{ active: NumberedSession; known: NumberedSession[]; resumed: boolean }> {
  const load = async () =>
    (
      await client.query<{ run_no: number; session_no: number; run_id: string; venue_session_id: string; started_at: Date; ended_at: Date | null }>(
        'SELECT run_no, session_no, run_id, venue_session_id, started_at, ended_at FROM runtime.venue_sessions ORDER BY run_no, session_no',
      )
    ).rows;
  let rows = await load();
  const open = rows.filter((row) => row.ended_at === null).at(-1);
  const numbered = (row: (typeof rows)[number]): NumberedSession => ({
    runNo: row.run_no,
    sessionNo: row.session_no,
    runId: row.run_id,
    venueSessionId: row.venue_session_id,
    startedAt: row.started_at.toISOString(),
  });
  if (open !== undefined) return { active: numbered(open), known: rows.map(numbered), resumed: true };
  const sameRun = rows.find((row) => row.run_id === wanted.runId);
  const runNo = sameRun?.run_no ?? Math.max(0, ...rows.map((row) => row.run_no)) + 1;
  const sessionNo = Math.max(0, ...rows.map((row) => row.session_no)) + 1;
  await client.query('INSERT INTO runtime.venue_sessions (run_no, session_no, run_id, venue_session_id, started_at) VALUES ($1, $2, $3, $4, now())', [
    runNo,
    sessionNo,
    wanted.runId,
    wanted.venueSessionId,
  ]);
  rows = await load();
  const active = rows.find((row) => row.run_no === runNo && row.session_no === sessionNo)!;
  return { active: numbered(active), known: rows.map(numbered), resumed: false };
}

/**
 * A shard's journal, page by page, in sequence order: each page's payloads joined in
 * one buffer (whole commands, 8-byte aligned). Checks each batch's checksum and that
 * the stream has no gap. Returns the last sequence read (0 for an empty journal).
 */
export async function readJournal(client: pg.ClientBase, shard: number, onPage: (payload: ArrayBuffer, lastSequence: number) => Promise<void>): Promise<number> {
  let last = 0;
  for (;;) {
    const page = await client.query<{ first_sequence: string; last_sequence: string; checksum: string; payload: Buffer }>(
      'SELECT first_sequence, last_sequence, checksum, payload FROM runtime.journal_batches WHERE shard_id = $1 AND first_sequence > $2 ORDER BY first_sequence LIMIT $3',
      [shard, last, JOURNAL_PAGE_ROWS],
    );
    if (page.rows.length === 0) return last;
    const joined = new Uint8Array(page.rows.reduce((sum, row) => sum + row.payload.byteLength, 0));
    let at = 0;
    for (const row of page.rows) {
      const first = Number(row.first_sequence);
      if (first !== last + 1) throw new Error(`shard ${shard} journal has a gap: the batch after sequence ${last} starts at ${first}`);
      if (crc32(row.payload) !== Number(row.checksum)) throw new Error(`shard ${shard} journal batch at sequence ${first} fails its checksum`);
      joined.set(row.payload, at);
      at += row.payload.byteLength;
      last = Number(row.last_sequence);
    }
    await onPage(joined.buffer, last);
  }
}

/** The most recent commands (what idempotency and status lookups should find first). */
export async function recentCommands(client: pg.ClientBase, limit: number): Promise<{ commandId: string; scopeDigest: Buffer; payloadHash: Buffer }[]> {
  const rows = await client.query<{ command_id: string; scope_digest: Buffer; payload_hash: Buffer }>(
    'SELECT command_id, scope_digest, payload_hash FROM runtime.command_log ORDER BY received_at DESC LIMIT $1',
    [limit],
  );
  return rows.rows.map((row) => ({ commandId: row.command_id, scopeDigest: row.scope_digest, payloadHash: row.payload_hash }));
}

/**
 * Every stored command's idempotency scope digest and commandId, as four words each,
 * streamed with a binary COPY (no text decoding of millions of rows). Returns how many.
 */
export async function storedCommandKeys(client: pg.ClientBase, onKey: (scope: Int32Array, commandId: Int32Array) => void): Promise<number> {
  const stream = client.query(copyStreams.to('COPY (SELECT scope_digest, command_id FROM runtime.command_log) TO STDOUT (FORMAT binary)'));
  const scope = new Int32Array(4);
  const commandId = new Int32Array(4);
  let rest: Buffer = Buffer.alloc(0);
  let headerDone = false;
  let count = 0;
  const ROW_BYTES = 2 + 4 + 16 + 4 + 16;
  for await (const chunk of stream as AsyncIterable<Buffer>) {
    const data: Buffer = rest.byteLength === 0 ? chunk : Buffer.concat([rest, chunk]);
    let at = 0;
    if (!headerDone) {
      if (data.byteLength < 19) {
        rest = data;
        continue;
      }
      at = 19 + data.readInt32BE(15); // signature (11), flags (4), header extension length (4) and its bytes
      headerDone = true;
    }
    while (data.byteLength - at >= 2) {
      if (data.readInt16BE(at) === -1) break; // trailer
      if (data.byteLength - at < ROW_BYTES) break;
      if (data.readInt16BE(at) !== 2 || data.readInt32BE(at + 2) !== 16 || data.readInt32BE(at + 22) !== 16) throw new Error('unexpected row in the command log key scan');
      for (let k = 0; k < 4; k++) {
        scope[k] = data.readInt32BE(at + 6 + k * 4);
        commandId[k] = data.readInt32BE(at + 26 + k * 4);
      }
      onKey(scope, commandId);
      count++;
      at += ROW_BYTES;
    }
    rest = data.subarray(at);
  }
  return count;
}

export interface KnownOrder {
  orderId: string;
  shard: number;
  instrumentId: string;
  participantId: string;
  accountId: string;
  clientOrderId: string | null;
  runId: string;
  venueSessionId: string;
}

/** Orders the gateways should know (open ones first, then the most recent). */
export async function knownOrders(client: pg.ClientBase, limit: number): Promise<KnownOrder[]> {
  const rows = await client.query<{
    order_id: string;
    shard_id: number;
    instrument_id: string;
    participant_id: string;
    account_id: string;
    client_order_id: string | null;
    run_id: string;
    venue_session_id: string;
  }>(
    `SELECT order_id, shard_id, instrument_id, participant_id, account_id, client_order_id, run_id, venue_session_id
       FROM runtime.order_lifecycle_state
      ORDER BY (state IN ('OPEN', 'PARTIALLY_FILLED')) DESC, last_sequence DESC
      LIMIT $1`,
    [limit],
  );
  return rows.rows.map((row) => ({
    orderId: row.order_id,
    shard: row.shard_id,
    instrumentId: row.instrument_id,
    participantId: row.participant_id,
    accountId: row.account_id,
    clientOrderId: row.client_order_id,
    runId: row.run_id,
    venueSessionId: row.venue_session_id,
  }));
}
