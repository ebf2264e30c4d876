// Tier 1 of storage: what acknowledgements wait for. Drains the intake rings (one per
// gateway) and the journal rings (one per shard), and commits per batch one binary
// COPY of command_log rows, then one of journal_batches rows (a row per shard per
// batch), each its own transaction on its own connection, the journal COPY of one
// batch overlapping the command-log COPY of the next (see commitIntake()). Batches close when the writer is free (group commit: whatever
// arrived during the previous commit goes into the next) or at a size bound; there is
// no timer. After each commit it publishes, per shard, the last durable sequence and,
// per gateway, the count of durable intake records, and wakes the gateways.
//
// Journals are taken before intake (see collect()), so the command log never lacks a
// journaled command.
//
// A failed commit (database down or slow) keeps the batch in memory and retries it
// with a back-off; meanwhile the rings fill and the gateways answer 503. A commit
// whose acknowledgement was lost is detected on retry (its rows are already there)
// and not written twice.

import { crc32 } from 'node:zlib';
import type pg from 'pg';
import { readIntake, INTAKE_RECORD_BYTES, type IntakeEntry } from '../core/intake-record.ts';
import { PersistenceControl, DB_DOWN, DB_UP } from '../core/persistence-control.ts';
import { RESULT_COUNT_WORD, RESULT_RECORD_BYTES, RESULT_SEQUENCE_FLOAT } from '../core/result-slot.ts';
import { RingConsumer } from '../core/ring.ts';
import { JOURNAL_COMMAND_RECORDS } from '../core/shard-runner.ts';
import { COMMAND_TIMESTAMP_US_FLOAT } from '../core/command-slot.ts';
import { BinaryCopy, copyInto } from './copy-binary.ts';
import { LatencyHistogram } from './latency-histogram.ts';

export interface JournalBatch {
  shard: number;
  firstSequence: number;
  lastSequence: number;
  commandCount: number;
  eventCount: number;
  /** For each command: its 128-byte slot, its result header and event records. */
  payload: Buffer;
  /** When the shard sequenced each command (µs, wall clock). */
  sequencedAtUs: number[];
  /** When the batch's journal commit finished (performance.now() ms); unset for batches read back from storage. */
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
  /** Time spent in successful commits (BEGIN to COMMIT), µs. */
  busyUs = 0;
  /** Gateway receipt -> command log row committed. */
  readonly captureLatency = new LatencyHistogram();
  /** Shard sequencing -> journal batch committed. */
  readonly journalLatency = new LatencyHistogram();
}

export interface WriterBatch {
  intake: IntakeEntry[];
  /** Intake records taken per gateway in this batch. */
  intakeCounts: number[];
  journals: JournalBatch[];
}

export interface WriterLimits {
  /** Most journal bytes in one transaction (intake is bounded by its rings). */
  journalBytesMax: number;
}

/** Per shard: records copied off the ring that do not yet form a complete command. */
class ShardStream {
  pending: Buffer = Buffer.alloc(0);
  constructor(readonly ring: RingConsumer) {}
}

const COMMAND_RECORDS = JOURNAL_COMMAND_RECORDS + 1; // the slot and the header

export class JournalWriter {
  private readonly intakeRings: RingConsumer[];
  private readonly shards: ShardStream[];
  private readonly control: PersistenceControl;
  private readonly principalIds: readonly string[];
  private readonly limits: WriterLimits;
  /** Durable intake records per gateway, and the last durable sequence per shard. */
  private readonly intakeDurable: number[];
  private readonly journalDurable: number[];
  private readonly log: (level: 'info' | 'warn' | 'error', message: string, fields?: object) => void;
  readonly stats = new WriterStats();

  constructor(options: {
    intakeRings: SharedArrayBuffer[];
    journalRings: SharedArrayBuffer[];
    control: PersistenceControl;
    principalIds: readonly string[];
    limits: WriterLimits;
    journalDurable: number[];
    log: (level: 'info' | 'warn' | 'error', message: string, fields?: object) => void;
  }) {
    this.intakeRings = options.intakeRings.map((ring) => new RingConsumer(ring, INTAKE_RECORD_BYTES));
    this.shards = options.journalRings.map((ring) => new ShardStream(new RingConsumer(ring, RESULT_RECORD_BYTES)));
    this.control = options.control;
    this.principalIds = options.principalIds;
    this.limits = options.limits;
    this.intakeDurable = this.intakeRings.map(() => 0);
    this.journalDurable = [...options.journalDurable];
    this.log = options.log;
  }

  /** True when a ring has something to take. */
  hasInput(): boolean {
    return this.intakeRings.some((ring) => ring.available() > 0) || this.shards.some((shard) => shard.ring.available() > 0);
  }

  /**
   * Takes what the rings hold now. Journals first, then every intake record: a
   * command's intake record is published before its slot reaches the shard, so every
   * command of the journals taken has its intake record in this batch or an earlier
   * one. The command log never lacks a journaled command. (Intake is bounded by its
   * rings; journals by journalBytesMax.) Empty when there is nothing.
   */
  collect(): WriterBatch {
    const journals: JournalBatch[] = [];
    let bytes = 0;
    for (let shard = 0; shard < this.shards.length && bytes < this.limits.journalBytesMax; shard++) {
      const batch = this.takeCommands(shard, this.limits.journalBytesMax - bytes);
      if (batch !== null) {
        journals.push(batch);
        bytes += batch.payload.byteLength;
      }
    }
    const intake: IntakeEntry[] = [];
    const intakeCounts = this.intakeRings.map(() => 0);
    for (let gateway = 0; gateway < this.intakeRings.length; gateway++) {
      const ring = this.intakeRings[gateway]!;
      const count = ring.available();
      for (let k = 0; k < count; k++) intake.push(readIntake(ring, ring.slotOffset(ring.nextIndex + k)));
      if (count > 0) ring.release(count);
      intakeCounts[gateway] = count;
    }
    return { intake, intakeCounts, journals };
  }

  /** Copies a shard's available records and cuts off the complete commands. */
  private takeCommands(shard: number, bytesMax: number): JournalBatch | null {
    const stream = this.shards[shard]!;
    const ring = stream.ring;
    const available = Math.min(ring.available(), Math.ceil(bytesMax / RESULT_RECORD_BYTES) + COMMAND_RECORDS);
    if (available > 0) {
      const copied = Buffer.allocUnsafe(stream.pending.byteLength + available * RESULT_RECORD_BYTES);
      stream.pending.copy(copied, 0);
      let at = stream.pending.byteLength;
      for (let k = 0; k < available; k++, at += RESULT_RECORD_BYTES) {
        const from = ring.slotOffset(ring.nextIndex + k);
        copied.set(ring.bytes.subarray(from, from + RESULT_RECORD_BYTES), at);
      }
      ring.release(available);
      stream.pending = copied;
    }
    const data = stream.pending;
    let end = 0;
    let commands = 0;
    let events = 0;
    let first = 0;
    let last = 0;
    const sequencedAtUs: number[] = [];
    for (;;) {
      const headerAt = end + JOURNAL_COMMAND_RECORDS * RESULT_RECORD_BYTES;
      if (headerAt + RESULT_RECORD_BYTES > data.byteLength) break;
      const count = data.readInt32LE(headerAt + RESULT_COUNT_WORD * 4);
      const commandEnd = headerAt + (1 + count) * RESULT_RECORD_BYTES;
      if (commandEnd > data.byteLength) break;
      const firstEvent = headerAt + RESULT_RECORD_BYTES;
      if (commands === 0) first = data.readDoubleLE(firstEvent + RESULT_SEQUENCE_FLOAT * 8);
      last = data.readDoubleLE(commandEnd - RESULT_RECORD_BYTES + RESULT_SEQUENCE_FLOAT * 8);
      events += count;
      commands++;
      sequencedAtUs.push(data.readDoubleLE(end + COMMAND_TIMESTAMP_US_FLOAT * 8));
      end = commandEnd;
      if (end >= bytesMax) break;
    }
    if (commands === 0) return null;
    stream.pending = data.subarray(end);
    const payload = Buffer.from(data.subarray(0, end));
    const expected = this.journalDurable[shard]! + 1;
    if (first !== expected) throw new Error(`shard ${shard} journal out of step: batch starts at ${first}, expected ${expected}`);
    this.journalDurable[shard] = last; // the next batch starts after this one (committed or retried)
    return { shard, firstSequence: first, lastSequence: last, commandCount: commands, eventCount: events, payload, sequencedAtUs };
  }

  /**
   * Stage 1 of a batch: its command log rows (one COPY, its own transaction), published
   * at once (captured-ack and accepted-async answers wait for this). Retries with a
   * back-off until the database takes them.
   *
   * Stage 2 (commitJournals) runs on another connection and may overlap the next
   * batch's stage 1: a journaled command's log row is in the same or an earlier batch
   * (see collect()), whose stage 1 has finished, so the command log never lacks a
   * journaled command; a crash between the stages leaves captured commands without an
   * outcome, which recovery re-drives.
   */
  async commitIntake(connect: () => Promise<pg.Client>, clientRef: { client: pg.Client | null }, batch: WriterBatch, onDurable: () => void): Promise<void> {
    if (batch.intake.length > 0) {
      await this.retrying(connect, clientRef, async (client, retrying) => {
        const rows = retrying ? await this.notYetLogged(client, batch.intake) : batch.intake;
        const started = performance.now();
        if (rows.length > 0) await copyInto(client, INTAKE_TARGET, this.intakeCopy(rows));
        this.stats.busyUs += (performance.now() - started) * 1000;
      });
    }
    this.publishIntake(batch);
    this.recordIntake(batch);
    onDurable();
  }

  /** Stage 2 of a batch: its journal rows (one COPY), then the new durable sequences. */
  async commitJournals(connect: () => Promise<pg.Client>, clientRef: { client: pg.Client | null }, batch: WriterBatch): Promise<void> {
    if (batch.journals.length === 0) return;
    await this.retrying(connect, clientRef, async (client, retrying) => {
      const journals = retrying ? await this.notYetJournaled(client, batch.journals) : batch.journals;
      const started = performance.now();
      if (journals.length > 0) await copyInto(client, JOURNAL_TARGET, journalCopy(journals));
      this.stats.busyUs += (performance.now() - started) * 1000;
    });
    const now = performance.now();
    for (const journal of batch.journals) {
      journal.journaledAtMs = now;
      this.control.setJournalCommitted(journal.shard, journal.lastSequence);
    }
    this.control.countCommit();
    this.recordJournals(batch);
  }

  /** Runs `write` until it succeeds; marks the database down while it fails. */
  private async retrying(
    connect: () => Promise<pg.Client>,
    clientRef: { client: pg.Client | null },
    write: (client: pg.Client, retrying: boolean) => Promise<void>,
  ): Promise<void> {
    let delayMs = 50;
    let retrying = false;
    for (;;) {
      try {
        if (clientRef.client === null) clientRef.client = await connect();
        await write(clientRef.client, retrying);
        this.control.databaseState = DB_UP;
        return;
      } catch (error) {
        const code = (error as { code?: string }).code;
        if (code === '23505' && !retrying) throw error; // a real conflict, not a lost acknowledgement
        if (this.control.databaseState !== DB_DOWN) this.log('error', 'journal commit failed; retrying', { err: (error as Error).message, code });
        this.control.databaseState = DB_DOWN;
        await clientRef.client?.end().catch(() => undefined);
        clientRef.client = null;
        retrying = true;
        await new Promise((resolve) => setTimeout(resolve, delayMs));
        delayMs = Math.min(delayMs * 2, 1000);
      }
    }
  }

  private publishIntake(batch: WriterBatch): void {
    for (let gateway = 0; gateway < batch.intakeCounts.length; gateway++) {
      if (batch.intakeCounts[gateway] === 0) continue;
      this.intakeDurable[gateway]! += batch.intakeCounts[gateway]!;
      this.control.setIntakeCommitted(gateway, this.intakeDurable[gateway]!);
    }
  }

  private recordIntake(batch: WriterBatch): void {
    const stats = this.stats;
    const nowUs = (performance.timeOrigin + performance.now()) * 1000;
    stats.intakeRows += batch.intake.length;
    for (const entry of batch.intake) stats.captureLatency.record(nowUs - entry.receivedAtUs);
  }

  private recordJournals(batch: WriterBatch): void {
    const stats = this.stats;
    const nowUs = (performance.timeOrigin + performance.now()) * 1000;
    stats.commits++;
    for (const journal of batch.journals) {
      stats.journalRows++;
      stats.journalCommands += journal.commandCount;
      stats.journalEvents += journal.eventCount;
      stats.journalBytes += journal.payload.byteLength;
      for (const at of journal.sequencedAtUs) stats.journalLatency.record(nowUs - at);
    }
  }

  /** After a lost acknowledgement: the intake rows the database does not hold yet. */
  private async notYetLogged(client: pg.Client, intake: IntakeEntry[]): Promise<IntakeEntry[]> {
    if (intake.length === 0) return intake;
    const ids = intake.map((entry) => Buffer.from(entry.commandId).toString('hex'));
    const present = new Set(
      (await client.query<{ id: string }>("SELECT encode(uuid_send(command_id), 'hex') AS id FROM runtime.command_log WHERE command_id = ANY($1::uuid[])", [ids.map(hexToUuid)])).rows.map(
        (row) => row.id,
      ),
    );
    return intake.filter((_, k) => !present.has(ids[k]!));
  }

  /** After a lost acknowledgement: the journal batches the database does not hold yet. */
  private async notYetJournaled(client: pg.Client, journals: JournalBatch[]): Promise<JournalBatch[]> {
    const missing: JournalBatch[] = [];
    for (const journal of journals) {
      const found = await client.query('SELECT 1 FROM runtime.journal_batches WHERE shard_id = $1 AND first_sequence = $2', [journal.shard, journal.firstSequence]);
      if (found.rowCount === 0) missing.push(journal);
    }
    return missing;
  }

  private intakeCopy(intake: IntakeEntry[]): BinaryCopy {
    const copy = new BinaryCopy(intake.length * 512 + 64);
    for (const entry of intake) {
      copy
        .row(14)
        .uuid(entry.commandId)
        .bytea(entry.scopeDigest)
        .bytea(entry.payloadHash)
        .text(this.principalIds[entry.principal] ?? `#${entry.principal}`)
        .text(entry.clientId)
        .text(entry.idempotencyKey)
        .smallint(entry.route)
        .smallint(entry.processingMode)
        .smallint(entry.shard)
        .uuid(entry.orderId)
        .uuid(entry.instrumentId)
        .text(entry.clientOrderId)
        .bytea(entry.slot)
        .timestampUs(entry.receivedAtUs);
    }
    return copy;
  }
}

const INTAKE_TARGET =
  'runtime.command_log (command_id, scope_digest, payload_hash, principal_id, client_id, idempotency_key, route, processing_mode, shard_id, order_id, instrument_id, client_order_id, slot, received_at)';
const JOURNAL_TARGET = 'runtime.journal_batches (shard_id, first_sequence, last_sequence, command_count, event_count, checksum, payload)';

function journalCopy(journals: JournalBatch[]): BinaryCopy {
  const copy = new BinaryCopy(journals.reduce((sum, j) => sum + j.payload.byteLength + 64, 64));
  for (const journal of journals) {
    copy
      .row(7)
      .smallint(journal.shard)
      .bigint(journal.firstSequence)
      .bigint(journal.lastSequence)
      .integer(journal.commandCount)
      .integer(journal.eventCount)
      .bigint(crc32(journal.payload))
      .bytea(journal.payload);
  }
  return copy;
}

function hexToUuid(hex: string): string {
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}
