// The persistence thread's running loops: the journal writer's group commits, the ingest of
// each durable commit right behind it (held while a rebuild runs), and the flusher beside them.

import type pg from 'pg';
import type { Doorbell } from '../core/doorbell.ts';
import { QUEUE_SLOTS, type QueueMarks } from '../core/queue-marks.ts';
import { SEALED_GROUPS_MAX } from '../core/storage-protocol.ts';
import type { JournalWriter, StorageCommit } from './journal-writer.ts';
import type { MarketViews } from './market-views.ts';
import type { OwnReadAnswers } from './own-read-answers.ts';
import type { StorageConnections } from './persistence-connections.ts';
import type { FlushLoop, WriterSide } from './projection-flush-loop.ts';
import type { Projector } from './projector.ts';

/**
 * Tier 2 seals its open group at PROJECTION_GROUP_MS of age, at once when a read waits
 * for the tables (PersistenceControl.requestSeal), or when it holds this many commands or
 * bytes: every transaction costs the server about the same fixed amount whatever it
 * holds (prepared plans, commit), so groups are made large on purpose (docs/decisions/0042).
 */
export const GROUP_COMMANDS_MAX = 4096;
export const GROUP_BYTES_MAX = 8 << 20;

const commitBytes = (commit: StorageCommit) => {
  let bytes = 0;
  for (const batch of commit.intake) bytes += batch.payload.byteLength;
  for (const batch of commit.journals) bytes += batch.payload.byteLength;
  return bytes;
};

export class PersistencePipeline implements WriterSide {
  /** The journal writer once the start is over (operator and own reads are answered from then on). */
  writer: JournalWriter | null = null;
  stopping = false;
  writerDone = false;
  private readonly writerClient: { client: pg.Client | null } = { client: null };
  /**
   * Commits made durable and not yet ingested: the one just committed, or, while a
   * rebuild holds ingestion, every commit since it began. Those are bounded by
   * heldBytesMax: at it the writer takes no more commits until the rebuild ends (the
   * rings fill and the gateways answer 503), so the held bytes pass it by one commit at most.
   */
  private readonly ingestQueue: StorageCommit[] = [];
  /** Bytes of the commits in ingestQueue (0 once it is drained). */
  private ingestQueueBytes = 0;
  private holdIngest = false;
  /** Set by the writer while it waits for room (tier 2's sealed groups, or the held commits). */
  private writerResume: (() => void) | null = null;

  constructor(
    private readonly projector: Projector,
    private readonly flusher: FlushLoop,
    private readonly connections: StorageConnections,
    private readonly views: MarketViews,
    private readonly ownReads: OwnReadAnswers,
    private readonly queueMarks: QueueMarks,
    private readonly doorbell: Doorbell,
    private readonly gatewayBells: Doorbell[],
    /** REBUILD_HELD_BYTES_MAX: while a rebuild holds the ingest, the writer takes no commit once the held ones reach it. */
    private readonly heldBytesMax: number,
  ) {}

  get ingestQueued(): number {
    return this.ingestQueue.length;
  }

  /** Runs the writer (set once the start is over) and the flusher until the stop, then ends their connections. */
  async run(): Promise<void> {
    const writer = this.writer;
    if (writer === null) throw new Error('the journal writer is not set');
    await Promise.all([
      this.writerLoop(writer).then(() => {
        this.writerDone = true;
        this.flusher.wake();
      }),
      this.flusher.run(this),
    ]);
    await this.writerClient.client?.end().catch(() => undefined);
    await this.flusher.close();
  }

  /** The venue stops: the writer commits what it has and returns, the flusher sends what is left. */
  stop(): void {
    this.stopping = true;
    this.doorbell.ringAlways();
    this.flusher.stop();
  }

  resumeWriter(): void {
    this.writerResume?.();
    this.writerResume = null;
  }

  /** Holds ingestion (durable commits wait in the queue) and flushes everything ingested before. */
  async holdIngestion(): Promise<void> {
    this.holdIngest = true;
    await this.flusher.flushAll();
  }

  /** Ends the hold: the held commits are ingested, and the writer goes on. */
  releaseIngestion(): void {
    this.holdIngest = false;
    this.drainIngest();
    this.resumeWriter();
  }

  /** Wakes the gateways that sleep (a busy one checks durability before it sleeps: gateway/durability.ts advanced()). */
  private ringGateways(): void {
    for (const bell of this.gatewayBells) bell.ring();
  }

  /** Ingests what is queued (unless a rebuild holds it), publishing each commit's book changes to the gateways. */
  private drainIngest(): void {
    const projector = this.projector;
    const ingestQueue = this.ingestQueue;
    while (!this.holdIngest && ingestQueue.length > 0) {
      const tape = projector.openTape;
      const tradesFrom = tape.length;
      const update = projector.ingest(ingestQueue.shift()!);
      this.views.streamTrades(tape, tradesFrom);
      if (update !== null) this.views.publishBooks(update);
    }
    if (this.views.takeStreamed() > 0) this.ringGateways(); // their stream readers (gateway/market-stream.ts)
    if (!this.holdIngest && this.ingestQueueBytes > 0) {
      this.ingestQueueBytes = 0; // all ingested
      this.queueMarks.note(QUEUE_SLOTS.heldBytes, 0);
    }
    if (projector.openCommands >= GROUP_COMMANDS_MAX || projector.openBytes >= GROUP_BYTES_MAX) projector.seal();
    this.flusher.wake();
    this.ownReads.answerCaughtUp();
  }

  /**
   * One commit at a time on one connection; whatever arrives meanwhile goes into the next
   * (group commit). The ingest of a durable commit (tier 2 in memory, the gateways' book
   * view) runs while the next commit is in flight, not between the two: the writer's
   * cycle, which every acknowledgement waits for, holds only the commit itself.
   */
  private async writerLoop(writer: JournalWriter): Promise<void> {
    const projector = this.projector;
    const connections = this.connections;
    const doorbell = this.doorbell;
    for (;;) {
      // Bounded memory: when tier 2 falls this far behind, or a rebuild has held this many
      // bytes of commits, tier 1 waits (its rings fill, the gateways answer 503).
      while (projector.sealedCount >= SEALED_GROUPS_MAX || (this.holdIngest && this.ingestQueueBytes >= this.heldBytesMax)) {
        await new Promise<void>((resolve) => (this.writerResume = resolve));
      }
      const commit = writer.collect();
      if (commit === null) {
        if (!this.holdIngest && this.ingestQueue.length > 0) {
          this.drainIngest(); // nothing to commit: ingest now rather than after the next commit
          continue;
        }
        if (this.stopping) return;
        const seen = doorbell.prepareSleep();
        if (writer.hasInput()) {
          doorbell.wake();
          continue;
        }
        await doorbell.sleepAsync(seen, 100);
        continue;
      }
      // Groups committed before this commit is sent: its WAL flush covers those of the same run of the server.
      const covered = projector.flushedCount;
      const run = connections.journalRun;
      const durable = writer.commit(connections.connectJournal, this.writerClient, commit); // sent before it returns (unless it must connect or retry first)
      this.drainIngest();
      await durable;
      if (connections.journalRun === run) projector.durableThrough(covered, run);
      this.ringGateways();
      this.ingestQueue.push(commit);
      this.ingestQueueBytes += commitBytes(commit);
      if (this.holdIngest) this.queueMarks.note(QUEUE_SLOTS.heldBytes, this.ingestQueueBytes);
    }
  }
}
