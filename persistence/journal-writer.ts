// Tier 1 of storage: what acknowledgements wait for. Each commit is one transaction
// sent in one round trip (pg-script.ts) holding only narrow rows:
//   runtime.intake_batches   one row per gateway: the intake records it published
//                            since the last commit, packed as they sat on its ring
//   runtime.journal_batches  one row per shard: the commands it sequenced since the
//                            last commit, each with its result header and events
// A commit takes whatever the rings hold when the writer is free (group commit; no
// timer), bounded by PERSISTENCE_BYTES_MAX of journal. After it, the writer publishes
// per gateway the count of durable intake records and per shard the last durable
// sequence (shared memory), and the gateways release the answers waiting for them.
//
// Journals are taken before intake (collect()): a command's intake record is published
// before its slot reaches the shard, so every journaled command has its intake record
// in the same commit or an earlier one.
//
// A failed commit (database down or slow) keeps the batch in memory and retries it
// with a back-off; meanwhile the rings fill and the gateways answer 503. A commit
// whose acknowledgement was lost is found on retry (it is all there or not at all)
// and not written twice.

import { crc32 } from 'node:zlib';
import type pg from 'pg';
import { COMMAND_TIMESTAMP_US_FLOAT } from '../core/command-slot.ts';
import { INTAKE_BODY_LENGTH_WORD, INTAKE_LAYOUT_PACKED, INTAKE_RECEIVED_AT_FLOAT, INTAKE_RECORD_BYTES, packedIntakeBytes, packIntake } from '../core/intake-record.ts';
import { BODY_SLOT_BYTES, takeBodies } from '../core/body-ring.ts';
import { PersistenceControl, DB_DOWN, DB_UP } from '../core/persistence-control.ts';
import { RESULT_COUNT_WORD, RESULT_RECORD_BYTES, RESULT_SEQUENCE_FLOAT } from '../core/result-slot.ts';
import { RingConsumer } from '../core/ring.ts';
import type { PersistenceCounters } from '../core/venue-metrics.ts';
import { JOURNAL_COMMAND_RECORDS } from '../core/shard-runner.ts';
import { BinaryCopy } from './copy-binary.ts';
import { LatencyHistogram } from './latency-histogram.ts';
import { runScript } from './pg-script.ts';

export interface JournalBatch {
  shard: number;
  firstSequence: number;
  lastSequence: number;
  commandCount: number;
  eventCount: number;
  /** For each command: its 128-byte slot, its result header and event records. */
  payload: Buffer;
}

/** The intake records one gateway published, packed (INTAKE_RECORD_BYTES each), and their commands' JSON texts back to back. */
export interface IntakeBatch {
  gateway: number;
  count: number;
  payload: Buffer;
  bodies: Uint8Array;
}

/** What one tier-1 commit made durable (and what tier 2 materializes from it). */
export interface StorageCommit {
  commitNo: number;
  intake: IntakeBatch[];
  journals: JournalBatch[];
  /** When the commit finished (performance.now() ms); unset for commits read back from storage. */
  journaledAtMs?: number;
}

/** What the writer did since it started (the persistence status route and the benchmark read it). */
export class WriterStats {
  commits = 0;
  intakeRows = 0;
  journalRows = 0;
  journalCommands = 0;
  journalEvents = 0;
  journalBytes = 0;
  /** Time spent in successful commits (send to answer), µs. */
  busyUs = 0;
  /** Gateway receipt -> intake record committed. */
  readonly captureLatency = new LatencyHistogram();
  /** Shard sequencing -> journal batch committed. */
  readonly journalLatency = new LatencyHistogram();
}

export interface WriterLimits {
  /** Most journal bytes in one commit (intake is bounded by its rings). */
  journalBytesMax: number;
}

/** Per shard: records copied off the ring that do not yet form a complete command. */
class ShardStream {
  pending: Uint8Array = new Uint8Array(0);
  constructor(readonly ring: RingConsumer) {}
}

const COMMAND_RECORDS = JOURNAL_COMMAND_RECORDS + 1; // the slot and the header

/** A buffer on its own ArrayBuffer: 8-byte aligned, so word and float views fit it. */
function alignedBuffer(bytes: number): Buffer {
  return Buffer.from(new ArrayBuffer(bytes));
}

export class JournalWriter {
  private readonly intakeRings: RingConsumer[];
  private readonly bodyRings: RingConsumer[];
  private readonly shards: ShardStream[];
  private readonly control: PersistenceControl;
  private readonly limits: WriterLimits;
  /** Durable intake records per gateway, and the last journaled sequence per shard (committed or held). */
  private readonly intakeDurable: number[];
  private readonly journalTaken: number[];
  private commitNo: number;
  private readonly log: (level: 'info' | 'warn' | 'error', message: string, fields?: object) => void;
  private readonly counters: PersistenceCounters | null;
  readonly stats = new WriterStats();

  constructor(options: {
    intakeRings: SharedArrayBuffer[];
    /** Per gateway, the commands' JSON texts its intake records announce (core/body-ring.ts). */
    bodyRings: SharedArrayBuffer[];
    journalRings: SharedArrayBuffer[];
    control: PersistenceControl;
    limits: WriterLimits;
    journalDurable: number[];
    /** The last commit number storage holds (0 for a new database). */
    lastCommitNo: number;
    log: (level: 'info' | 'warn' | 'error', message: string, fields?: object) => void;
    /** Where GET /metrics finds the commit durations (core/venue-metrics.ts); none in benchmarks. */
    counters?: PersistenceCounters;
  }) {
    this.intakeRings = options.intakeRings.map((ring) => new RingConsumer(ring, INTAKE_RECORD_BYTES));
    this.bodyRings = options.bodyRings.map((ring) => new RingConsumer(ring, BODY_SLOT_BYTES));
    this.shards = options.journalRings.map((ring) => new ShardStream(new RingConsumer(ring, RESULT_RECORD_BYTES)));
    this.control = options.control;
    this.limits = options.limits;
    this.intakeDurable = this.intakeRings.map(() => 0);
    this.journalTaken = [...options.journalDurable];
    this.commitNo = options.lastCommitNo;
    this.log = options.log;
    this.counters = options.counters ?? null;
  }

  /** True when a ring has something to take. */
  hasInput(): boolean {
    return this.intakeRings.some((ring) => ring.available() > 0) || this.shards.some((shard) => shard.ring.available() > 0);
  }

  /**
   * Takes what the rings hold now: journals first, then every intake record (see the
   * file comment). Null when there is nothing.
   */
  collect(): StorageCommit | null {
    const journals: JournalBatch[] = [];
    let bytes = 0;
    for (let shard = 0; shard < this.shards.length && bytes < this.limits.journalBytesMax; shard++) {
      const batch = this.takeCommands(shard, this.limits.journalBytesMax - bytes);
      if (batch !== null) {
        journals.push(batch);
        bytes += batch.payload.byteLength;
      }
    }
    const intake: IntakeBatch[] = [];
    for (let gateway = 0; gateway < this.intakeRings.length; gateway++) {
      const ring = this.intakeRings[gateway]!;
      const count = ring.available();
      if (count === 0) continue;
      const payload = alignedBuffer(count * INTAKE_RECORD_BYTES);
      ring.copyOut(count, payload, 0);
      ring.release(count);
      const words = new Int32Array(payload.buffer, payload.byteOffset, payload.byteLength >> 2);
      const lengths = Array.from({ length: count }, (_, k) => words[((k * INTAKE_RECORD_BYTES) >> 2) + INTAKE_BODY_LENGTH_WORD]!);
      intake.push({ gateway, count, payload, bodies: takeBodies(this.bodyRings[gateway]!, lengths) });
    }
    if (journals.length === 0 && intake.length === 0) return null;
    return { commitNo: ++this.commitNo, intake, journals };
  }

  /** Copies a shard's available records and cuts off the complete commands. */
  private takeCommands(shard: number, bytesMax: number): JournalBatch | null {
    const stream = this.shards[shard]!;
    const ring = stream.ring;
    const available = Math.min(ring.available(), Math.ceil(bytesMax / RESULT_RECORD_BYTES) + COMMAND_RECORDS);
    if (available > 0) {
      const copied = new Uint8Array(stream.pending.byteLength + available * RESULT_RECORD_BYTES);
      copied.set(stream.pending, 0);
      ring.copyOut(available, copied, stream.pending.byteLength);
      ring.release(available);
      stream.pending = copied;
    }
    const data = stream.pending;
    if (data.byteLength === 0) return null;
    const words = new Int32Array(data.buffer, data.byteOffset, data.byteLength >> 2);
    const floats = new Float64Array(data.buffer, data.byteOffset, data.byteLength >> 3);
    let end = 0;
    let commands = 0;
    let events = 0;
    let first = 0;
    let last = 0;
    for (;;) {
      const headerAt = end + JOURNAL_COMMAND_RECORDS * RESULT_RECORD_BYTES;
      if (headerAt + RESULT_RECORD_BYTES > data.byteLength) break;
      const count = words[(headerAt >> 2) + RESULT_COUNT_WORD]!;
      const commandEnd = headerAt + (1 + count) * RESULT_RECORD_BYTES;
      if (commandEnd > data.byteLength) break;
      if (commands === 0) first = floats[((headerAt + RESULT_RECORD_BYTES) >> 3) + RESULT_SEQUENCE_FLOAT]!;
      last = floats[((commandEnd - RESULT_RECORD_BYTES) >> 3) + RESULT_SEQUENCE_FLOAT]!;
      events += count;
      commands++;
      end = commandEnd;
      if (end >= bytesMax) break;
    }
    if (commands === 0) return null;
    const payload = alignedBuffer(end);
    payload.set(data.subarray(0, end));
    stream.pending = data.subarray(end);
    const expected = this.journalTaken[shard]! + 1;
    if (first !== expected) throw new Error(`shard ${shard} journal out of step: batch starts at ${first}, expected ${expected}`);
    this.journalTaken[shard] = last; // the next batch starts after this one (committed or retried)
    return { shard, firstSequence: first, lastSequence: last, commandCount: commands, eventCount: events, payload };
  }

  /**
   * Makes a commit durable (retrying with a back-off until the database takes it),
   * then publishes it: the intake counts per gateway and the journal sequences per
   * shard, which release the answers waiting for them.
   */
  async commit(connect: () => Promise<pg.Client>, clientRef: { client: pg.Client | null }, commit: StorageCommit): Promise<void> {
    let delayMs = 50;
    let retrying = false;
    for (;;) {
      try {
        if (clientRef.client === null) clientRef.client = await connect();
        const client = clientRef.client;
        if (!retrying || !(await this.stored(client, commit))) {
          const started = performance.now();
          await runScript(client, COMMIT_SCRIPT[(commit.intake.length > 0 ? 1 : 0) + (commit.journals.length > 0 ? 2 : 0)]!, commitCopies(commit));
          const tookMs = performance.now() - started;
          this.stats.busyUs += tookMs * 1000;
          this.counters?.journalCommit(tookMs / 1000);
        }
        this.control.databaseState = DB_UP;
        break;
      } catch (error) {
        const code = (error as { code?: string }).code;
        if (code === '23505' && !retrying) throw error; // a real conflict, not a lost acknowledgement
        if (this.control.databaseState !== DB_DOWN) this.log('error', 'journal commit failed; retrying', { err: error, code });
        this.control.databaseState = DB_DOWN;
        await clientRef.client?.end().catch(() => undefined);
        clientRef.client = null;
        retrying = true;
        await new Promise((resolve) => setTimeout(resolve, delayMs));
        delayMs = Math.min(delayMs * 2, 1000);
      }
    }
    commit.journaledAtMs = performance.now();
    for (const batch of commit.intake) {
      this.intakeDurable[batch.gateway]! += batch.count;
      this.control.setIntakeCommitted(batch.gateway, this.intakeDurable[batch.gateway]!);
    }
    for (const journal of commit.journals) this.control.setJournalCommitted(journal.shard, journal.lastSequence);
    this.control.countCommit();
    this.record(commit);
  }

  /** After a lost acknowledgement: whether the commit is in storage (a commit is all there or not at all). */
  private async stored(client: pg.Client, commit: StorageCommit): Promise<boolean> {
    const journal = commit.journals[0];
    const found =
      journal !== undefined
        ? await client.query('SELECT 1 FROM runtime.journal_batches WHERE shard_id = $1 AND first_sequence = $2', [journal.shard, journal.firstSequence])
        : await client.query('SELECT 1 FROM runtime.intake_batches WHERE commit_no = $1', [commit.commitNo]);
    return (found.rowCount ?? 0) > 0;
  }

  private record(commit: StorageCommit): void {
    const stats = this.stats;
    const nowUs = (performance.timeOrigin + performance.now()) * 1000;
    stats.commits++;
    for (const batch of commit.intake) {
      stats.intakeRows += batch.count;
      const floats = new Float64Array(batch.payload.buffer, batch.payload.byteOffset, batch.payload.byteLength >> 3);
      for (let k = 0; k < batch.count; k++) stats.captureLatency.record(nowUs - floats[k * (INTAKE_RECORD_BYTES >> 3) + INTAKE_RECEIVED_AT_FLOAT]!);
    }
    for (const journal of commit.journals) {
      stats.journalRows++;
      stats.journalCommands += journal.commandCount;
      stats.journalEvents += journal.eventCount;
      stats.journalBytes += journal.payload.byteLength;
      const words = new Int32Array(journal.payload.buffer, journal.payload.byteOffset, journal.payload.byteLength >> 2);
      const floats = new Float64Array(journal.payload.buffer, journal.payload.byteOffset, journal.payload.byteLength >> 3);
      for (let at = 0; at < journal.payload.byteLength;) {
        stats.journalLatency.record(nowUs - floats[(at >> 3) + COMMAND_TIMESTAMP_US_FLOAT]!);
        const headerAt = at + JOURNAL_COMMAND_RECORDS * RESULT_RECORD_BYTES;
        at = headerAt + (1 + words[(headerAt >> 2) + RESULT_COUNT_WORD]!) * RESULT_RECORD_BYTES;
      }
    }
  }
}

const INTAKE_COPY = 'COPY runtime.intake_batches (commit_no, gateway_id, record_count, checksum, payload, bodies, bodies_checksum, layout) FROM STDIN (FORMAT binary)';
const JOURNAL_COPY = 'COPY runtime.journal_batches (commit_no, shard_id, first_sequence, last_sequence, command_count, event_count, checksum, payload) FROM STDIN (FORMAT binary)';
/** By (intake ? 1 : 0) + (journals ? 2 : 0). */
const COMMIT_SCRIPT = ['', INTAKE_COPY, JOURNAL_COPY, `${INTAKE_COPY}; ${JOURNAL_COPY}`];

/** Reused for each intake batch's packed records (copied into the COPY's buffer at once). */
let packScratch = new Uint8Array(1 << 16);

/**
 * The batch's records packed for storage (core/intake-record.ts packIntake): a third of
 * the bytes PostgreSQL writes, WAL-logs and splits into TOAST chunks on the commit path.
 */
function packed(batch: IntakeBatch): Uint8Array {
  const words = new Int32Array(batch.payload.buffer, batch.payload.byteOffset, batch.payload.byteLength >> 2);
  const bytes = packedIntakeBytes(words, batch.count);
  if (packScratch.byteLength < bytes) packScratch = new Uint8Array(Math.max(bytes, packScratch.byteLength * 2));
  const into = packScratch.subarray(0, bytes);
  into.fill(0);
  packIntake(batch.payload, words, batch.count, into);
  return into;
}

function commitCopies(commit: StorageCommit): Buffer[] {
  const copies: Buffer[] = [];
  if (commit.intake.length > 0) {
    const copy = new BinaryCopy(commit.intake.reduce((sum, batch) => sum + batch.payload.byteLength + 64, 64));
    for (const batch of commit.intake) {
      const payload = packed(batch);
      copy
        .row(8)
        .bigint(commit.commitNo)
        .smallint(batch.gateway)
        .integer(batch.count)
        .bigint(crc32(payload))
        .bytea(payload)
        .bytea(batch.bodies)
        .bigint(crc32(batch.bodies))
        .smallint(INTAKE_LAYOUT_PACKED);
    }
    copies.push(copy.finish());
  }
  if (commit.journals.length > 0) {
    const copy = new BinaryCopy(commit.journals.reduce((sum, journal) => sum + journal.payload.byteLength + 64, 64));
    for (const journal of commit.journals) {
      copy
        .row(8)
        .bigint(commit.commitNo)
        .smallint(journal.shard)
        .bigint(journal.firstSequence)
        .bigint(journal.lastSequence)
        .integer(journal.commandCount)
        .integer(journal.eventCount)
        .bigint(crc32(journal.payload))
        .bytea(journal.payload);
    }
    copies.push(copy.finish());
  }
  return copies;
}
