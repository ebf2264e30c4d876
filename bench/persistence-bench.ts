// Persistence under load, end to end: the real venue (server.ts, its embedded
// PostgreSQL on a fresh data folder), driven over HTTP by an in-process load
// generator (keep-alive connections, a bounded number of requests in flight, a
// bounded duration), once per processing mode measured.
//
// Orders rest and cross on 8 instruments (about one trade per two orders), so both
// tiers carry their real mix. Reported per mode:
//  - commands/s answered 2xx and the client-side latency (p50, p99);
//  - tier 1 (command log + journal, COPY, one transaction per group commit): rows/s
//    during the run, rows per second of commit time (its capacity), and the latency
//    from command to durable: gateway receipt -> command log committed, and shard
//    sequencing -> journal committed (p50, p99), from the venue's own histograms;
//  - tier 2 (projections, COPY): rows per second of transaction time, the largest lag
//    seen (journal sequences not yet projected, sampled every 250 ms) and how long
//    it took to catch up after the load stopped.
// The load generator shares the 2 cores with the venue and PostgreSQL: commands/s is
// a floor for what the venue can take, not its ceiling (wrk drives it harder).

import { rmSync } from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import { fileURLToPath } from 'node:url';
import { randomBytes, randomUUID } from 'node:crypto';
import pg from 'pg';
import { INTAKE_RECORD_BYTES } from '../core/intake-record.ts';
import { BODY_SLOT_BYTES } from '../core/body-ring.ts';
import { PersistenceControl } from '../core/persistence-control.ts';
import { RESULT_RECORD_BYTES } from '../core/result-slot.ts';
import { createRingBuffer } from '../core/ring.ts';
import { startEmbeddedPostgres } from '../persistence/embedded-postgres.ts';
import { JournalWriter, type StorageCommit } from '../persistence/journal-writer.ts';
import type { LatencySummary, PersistenceStatus } from '../core/storage-protocol.ts';
import { LatencyHistogram } from '../persistence/latency-histogram.ts';
import { migrate } from '../persistence/migrations.ts';
import { scratchFolder } from './lib/leftovers.ts';
import { crossingOrderBody } from './lib/order-body.ts';
import { writeResult } from './lib/results.ts';
import { startBenchVenue } from './load/venue.ts';

const TOKEN = 'dev-token-trader-a';
const OPERATOR = 'dev-token-operator';
const INSTRUMENTS = Array.from({ length: 8 }, (_, k) => `7c000000-0000-4000-8000-00000000000${k}`);

function getJson<T>(url: string, token: string): Promise<T> {
  return new Promise((resolve, reject) => {
    http
      .get(url, { headers: { authorization: `Bearer ${token}` } }, (response) => {
        let text = '';
        response.setEncoding('utf8');
        response.on('data', (chunk: string) => (text += chunk));
        response.on('end', () => (response.statusCode === 200 ? resolve(JSON.parse(text) as T) : reject(new Error(`${response.statusCode} ${text}`))));
      })
      .on('error', reject);
  });
}

interface LoadResult {
  sent: number;
  answered2xx: number;
  answered503: number;
  other: number;
  seconds: number;
  latencyUs: LatencySummary;
}

async function drive(baseUrl: string, seconds: number, maxRequests: number, inFlight: number): Promise<LoadResult> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: inFlight });
  const url = new URL('/api/v1/orders/submit', baseUrl);
  const latency = new LatencyHistogram();
  const result = { sent: 0, answered2xx: 0, answered503: 0, other: 0 };
  const started = performance.now();
  const deadline = started + seconds * 1000;
  const one = (i: number) =>
    new Promise<void>((resolve) => {
      const body = crossingOrderBody(i, INSTRUMENTS);
      const at = performance.now();
      const request = http.request(
        url,
        {
          method: 'POST',
          agent,
          headers: {
            authorization: `Bearer ${TOKEN}`,
            'content-type': 'application/json',
            'content-length': Buffer.byteLength(body),
            'x-client-id': 'bench',
            'idempotency-key': crypto.randomUUID(),
          },
        },
        (response) => {
          response.resume();
          response.on('end', () => {
            const status = response.statusCode ?? 0;
            if (status === 200 || status === 202) {
              result.answered2xx++;
              latency.record((performance.now() - at) * 1000);
            } else if (status === 503) result.answered503++;
            else result.other++;
            resolve();
          });
        },
      );
      request.on('error', () => {
        result.other++;
        resolve();
      });
      request.end(body);
    });
  const lane = async () => {
    while (performance.now() < deadline && result.sent < maxRequests) await one(result.sent++);
  };
  await Promise.all(Array.from({ length: inFlight }, lane));
  agent.destroy();
  return { ...result, seconds: (performance.now() - started) / 1000, latencyUs: latency.summary() };
}

const lagOf = (status: PersistenceStatus) => status.shards.reduce((sum, shard) => sum + shard.projectionLag, 0);

async function measureMode(mode: string, seconds: number, maxRequests: number, inFlight: number): Promise<Record<string, unknown>> {
  const venue = await startBenchVenue({ PROCESSING_MODE: mode, GATEWAY_THREADS: '2', MATCHING_SHARDS: '2' });
  try {
    await drive(venue.baseUrl, 1, 2_000, 16); // warm-up: JIT, connections, first pages
    const statusUrl = `${venue.baseUrl}/admin/v1/persistence/status`;
    const before = await getJson<PersistenceStatus>(statusUrl, OPERATOR);
    let maxLag = 0;
    let sampling = true;
    const sampler = (async () => {
      while (sampling) {
        maxLag = Math.max(maxLag, lagOf(await getJson<PersistenceStatus>(statusUrl, OPERATOR)));
        await new Promise((resolve) => setTimeout(resolve, 250));
      }
    })();
    const load = await drive(venue.baseUrl, seconds, maxRequests, inFlight);
    sampling = false;
    await sampler;
    const stopped = performance.now();
    let after = await getJson<PersistenceStatus>(statusUrl, OPERATOR);
    maxLag = Math.max(maxLag, lagOf(after));
    while (lagOf(after) > 0 && performance.now() - stopped < 60_000) {
      await new Promise((resolve) => setTimeout(resolve, 20));
      after = await getJson<PersistenceStatus>(statusUrl, OPERATOR);
    }
    const catchUpMs = Math.round(performance.now() - stopped);
    const tier1Rows = after.journal.intakeRows + after.journal.journalRows - (before.journal.intakeRows + before.journal.journalRows);
    const figures = {
      mode,
      inFlight,
      commandsPerSecond: Math.round(load.answered2xx / load.seconds),
      load,
      tier1: {
        rowsPerSecondDuringRun: Math.round(tier1Rows / load.seconds),
        commandLogRows: after.journal.intakeRows - before.journal.intakeRows,
        journalRows: after.journal.journalRows - before.journal.journalRows,
        commits: after.journal.commits - before.journal.commits,
        rowsPerBusySecond: after.journal.rowsPerBusySecond,
        eventsPerBusySecond: Math.round((after.journal.events / Math.max(1, after.journal.busyMs)) * 1000),
        captureLatencyUs: after.journal.captureLatencyUs,
        journalLatencyUs: after.journal.journalLatencyUs,
      },
      tier2: {
        rows: after.projections.rows - before.projections.rows,
        rowsPerBusySecond: after.projections.rowsPerBusySecond,
        maxLagSequences: maxLag,
        catchUpMs,
        errors: after.projections.errors,
      },
    };
    console.log(
      `${mode.padEnd(14)} ${String(figures.commandsPerSecond).padStart(7)} cmd/s  client p50 ${(load.latencyUs.p50 / 1000).toFixed(2)} ms p99 ${(load.latencyUs.p99 / 1000).toFixed(2)} ms | ` +
        `tier 1 ${figures.tier1.rowsPerBusySecond} rows/busy-s, capture p50 ${(after.journal.captureLatencyUs.p50 / 1000).toFixed(2)} ms p99 ${(after.journal.captureLatencyUs.p99 / 1000).toFixed(2)} ms, ` +
        `journal p50 ${(after.journal.journalLatencyUs.p50 / 1000).toFixed(2)} ms p99 ${(after.journal.journalLatencyUs.p99 / 1000).toFixed(2)} ms | ` +
        `tier 2 ${figures.tier2.rowsPerBusySecond} rows/busy-s, max lag ${maxLag}, catch-up ${catchUpMs} ms`,
    );
    return figures;
  } finally {
    await venue.stop();
  }
}

/** The JSON text of a submit as the load generator sends one: the body each intake record carries. */
const SUBMIT_BODY_BYTES = Buffer.byteLength(
  JSON.stringify({
    commandId: randomUUID(),
    traceId: randomUUID(),
    causationId: randomUUID(),
    correlationId: randomUUID(),
    actorId: 'load-lane-0',
    occurredAt: new Date().toISOString(),
    orderId: randomUUID(),
    instrumentId: randomUUID(),
    participantId: randomUUID(),
    accountId: randomUUID(),
    side: 'BUY',
    orderType: 'LIMIT',
    quantityUnits: '5',
    limitPrice: '100.25',
    currency: 'USD',
    timeInForce: 'DAY',
  }),
);

/**
 * The capacity of tier 1 alone: the journal writer's own commit (one transaction in
 * one round trip: an intake_batches row and a journal_batches row, fsync) fed
 * synthetic commits of each size in `batchSizes` (commands; an intake record, the
 * command's JSON text of `bodyBytes` (the audit trail), and a 256-byte journal entry
 * each: slot, header, one event), about `commands` commands per size, on a fresh embedded
 * PostgreSQL with nothing else running. The storage ceiling, in commands per second.
 */
export async function copyCapacity(
  batchSizes: number[],
  commands: number,
  bodyBytes = SUBMIT_BODY_BYTES,
): Promise<{ batchCommands: number; bodyBytes: number; commandsPerSecond: number; msPerCommit: number }[]> {
  const dataDir = scratchFolder('venue-bench-copy-');
  const server = await startEmbeddedPostgres(dataDir, () => undefined, { template: true });
  try {
    const admin = new pg.Client({ connectionString: server.url });
    await admin.connect();
    await migrate(admin);
    await admin.end();
    const writer = new JournalWriter({
      intakeRings: [createRingBuffer(INTAKE_RECORD_BYTES, 16)],
      bodyRings: [createRingBuffer(BODY_SLOT_BYTES, 1024)],
      journalRings: [createRingBuffer(RESULT_RECORD_BYTES, 64)],
      control: new PersistenceControl(PersistenceControl.create()),
      limits: { journalBytesMax: 1 << 24 },
      journalDurable: [0],
      lastCommitNo: 0,
      log: () => undefined,
    });
    const connect = async () => {
      const client = new pg.Client({ connectionString: server.url });
      await client.connect();
      return client;
    };
    const ref: { client: pg.Client | null } = { client: null };
    let commitNo = 0;
    let sequence = 0;
    const commit = (batchCommands: number): StorageCommit => {
      const first = sequence + 1;
      sequence += batchCommands;
      return {
        commitNo: ++commitNo,
        intake: [{ gateway: 0, count: batchCommands, payload: randomBytes(batchCommands * INTAKE_RECORD_BYTES), bodies: Buffer.alloc(batchCommands * bodyBytes, '{"commandId":"0b9c5e4a-7f3d"}') }],
        journals: [{ shard: 0, firstSequence: first, lastSequence: sequence, commandCount: batchCommands, eventCount: batchCommands, payload: randomBytes(batchCommands * 256) }],
      };
    };
    const results = [];
    for (const batchCommands of batchSizes) {
      const batches = Math.max(5, Math.round(commands / batchCommands));
      const prepared = Array.from({ length: batches + 1 }, () => commit(batchCommands));
      await writer.commit(connect, ref, prepared.shift()!); // warm-up
      const started = performance.now();
      for (const next of prepared) await writer.commit(connect, ref, next);
      const ms = performance.now() - started;
      results.push({ batchCommands, bodyBytes, commandsPerSecond: Math.round((batchCommands * batches) / (ms / 1000)), msPerCommit: Number((ms / batches).toFixed(2)) });
    }
    await ref.client?.end();
    return results;
  } finally {
    await server.stop();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

export async function runPersistenceBench(quick: boolean): Promise<void> {
  // With and without the commands' JSON texts, alternating: what the audit trail costs tier 1.
  const capacity: Awaited<ReturnType<typeof copyCapacity>> = [];
  for (let round = 0; round < (quick ? 1 : 3); round++) {
    for (const bodyBytes of [0, SUBMIT_BODY_BYTES]) capacity.push(...(await copyCapacity(quick ? [64, 512] : [32, 256, 2048], quick ? 20_000 : 100_000, bodyBytes)));
  }
  for (const result of capacity) {
    console.log(
      `tier 1 alone, ${String(result.batchCommands).padStart(4)} commands per commit, ${result.bodyBytes}-byte bodies: ${result.commandsPerSecond} commands/s, ${result.msPerCommit} ms per commit`,
    );
  }
  const seconds = quick ? 3 : 10;
  const maxRequests = quick ? 60_000 : 400_000;
  const inFlight = 128;
  const modes = quick ? ['sync-result'] : ['sync-result', 'captured-ack'];
  const runs: Record<string, unknown>[] = [];
  for (const mode of modes) runs.push(await measureMode(mode, seconds, maxRequests, inFlight));
  writeResult('persistence', {
    machine: { cpus: os.availableParallelism(), node: process.version },
    note: 'the load generator runs on the same 2 cores as the venue and PostgreSQL; latencies in microseconds',
    seconds,
    copyCapacity: capacity,
    runs,
  });
}

if (process.argv[1] === fileURLToPath(import.meta.url)) await runPersistenceBench(process.argv.includes('--quick'));
