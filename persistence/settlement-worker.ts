// Entry of the settlement pool's threads (piscina; the read thread starts the pool:
// persistence/settlement-pool.ts). Each task is one settlement read or operator request,
// carried out here whole: the facts loaded, replayed (the read cache of
// settlement-store.ts lives in this thread), the workflow decided and appended, the view
// rendered and checksummed. What crosses back is the answer: a read's JSON as UTF-8 bytes,
// moved rather than copied (core/storage-protocol.ts AnsweredBytes).
//
// Why here and not in the read thread: for a run of 20,000 trades a materialization or a
// first read holds a thread for seconds (decision 0046); the read thread answers every
// other read meanwhile.

import { threadId } from 'node:worker_threads';
import pg from 'pg';
import { Piscina } from 'piscina';
import type { AnsweredBytes, PlaneAnswer, SettlementAdmin, SettlementRead } from '../core/storage-protocol.ts';
import { SETTLEMENT_APPLICATION_NAME } from './connection-names.ts';
import { readCacheSize, settlementAdmin, settlementRead } from './settlement-store.ts';

export type SettlementTask =
  | { type: 'read'; databaseUrl: string; read: SettlementRead; competitionProfile: string }
  | { type: 'admin'; databaseUrl: string; admin: SettlementAdmin }
  /** The thread's id and the runs its read cache keeps (tests). */
  | { type: 'probe'; databaseUrl: string };

export interface SettlementProbe {
  threadId: number;
  cachedRuns: string[];
}

let pool: pg.Pool | null = null;

/** One connection per task at a time (a thread runs one task at a time), a second for a read overlapping an append. */
function poolFor(databaseUrl: string): pg.Pool {
  if (pool === null) {
    pool = new pg.Pool({ connectionString: databaseUrl, max: 2, application_name: SETTLEMENT_APPLICATION_NAME });
    pool.on('error', () => undefined); // an idle connection the server ended is replaced, not fatal
  }
  return pool;
}

const encoder = new TextEncoder();

/** A read's answer as bytes of their own (never a slice of Buffer's shared pool), handed to piscina to move. */
function moved(body: string): unknown {
  const bytes = encoder.encode(body);
  const answer: AnsweredBytes = { ok: true, body: bytes, error: null };
  return Piscina.move({ [Piscina.transferableSymbol]: [bytes.buffer], [Piscina.valueSymbol]: answer } as never);
}

export default async function settlementTask(task: SettlementTask): Promise<PlaneAnswer | AnsweredBytes | SettlementProbe> {
  const db = poolFor(task.databaseUrl);
  switch (task.type) {
    case 'read':
      // A read is always answered (a made-up run reads empty): its body moves as bytes.
      return moved((await settlementRead(db, task.read, task.competitionProfile)).body) as AnsweredBytes;
    case 'admin':
      return settlementAdmin(db, task.admin);
    case 'probe':
      return { threadId, cachedRuns: readCacheSize().names };
  }
}
