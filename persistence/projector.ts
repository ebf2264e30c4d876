// Tier 2 of storage: materializes tier-1 commits into relational projections, right
// behind the journal writer and in commit order:
//   runtime.command_log            one row per command: its intake record and its outcome
//   runtime.executions             one row per execution (both sides of every fill)
//   runtime.trades                 one row per trade, with both counterparties
//   runtime.order_lifecycle_state  the current state of every order
//   runtime.instruments            every instrument the venue took an order for
//
// Two steps. ingest() takes each commit as soon as it is durable: it applies it to the
// in-memory order lifecycle (projection-apply.ts), returns what it changed in the
// displayed books (the read thread's depth follows the durable journal within a
// millisecond) and appends the commit's rows to the open group. seal() closes the open
// group into one transaction (projection-group.ts) and flush() sends it (one round trip:
// projection-flusher.ts), together with the watermarks (runtime.projection_watermarks):
// per shard the last journal sequence materialized ('runtime'), and for intake
// ('runtime-intake') the last commit all of whose intake records have their command_log
// row. Groups are made large on purpose (the caller seals by size and age): each
// transaction costs the server a fixed amount, whatever it holds. A crash never applies
// a commit twice: start-up projects from the watermarks (projector-load.ts).
//
// A command's intake record (same or earlier commit) waits in `pending` until its
// outcome arrives on the journal; then the two make its command_log row. What is still
// pending after the start-up catch-up was taken but never sequenced: recovery re-drives
// it (redrivePlan(), pending-intake.ts).
//
// Everything is read from the binary records (core/journal-format.ts,
// core/intake-record.ts) and written as binary COPY: ids stay as words or bytes
// from the rings to PostgreSQL, never text. Open orders are held in memory (loaded at
// start from the file a graceful stop saved, from that file with the journal after it
// replayed after a crash, or from order_lifecycle_state) so a fill of a resting order
// knows whose it is.

import type pg from 'pg';
import { unpackCurrency } from '../core/command-slot.ts';
import { STATE_OPEN, STATE_PARTIALLY_FILLED } from '../core/codes.ts';
import { journalView } from '../core/journal-format.ts';
import type { PersistenceControl } from '../core/persistence-control.ts';
import type { AuditRecord } from '../core/storage-protocol.ts';
import type { TapeBatch } from '../core/tape-view.ts';
import { formatUuid } from '../core/uuid.ts';
import type { StorageCommit } from './journal-writer.ts';
import { rebuildLifecycle } from './lifecycle-rebuild.ts';
import type { OpenOrdersNote } from './open-orders-snapshot.ts';
import { OwnReads } from './own-reads.ts';
import { PendingIntakes, type RedriveShard } from './pending-intake.ts';
import { CommandApplier, type Level } from './projection-apply.ts';
import { GroupFlusher, ProjectorStats } from './projection-flusher.ts';
import { Rows, sealedGroup, SessionBytes, type SessionNames } from './projection-group.ts';
import { ProjectorLoad } from './projector-load.ts';
import type { FrozenOrders } from './resting-orders.ts';

/** OWN_READS_WINDOW's default: closed orders and fills kept per participant, twice the most a read asks for. */
export const OWN_READS_WINDOW_DEFAULT = 2000;

/**
 * What one commit changed in the displayed books (open LIMIT orders): per
 * (instrument, side, price) the change of open quantity and of order count, the
 * instruments first seen, and the journal positions reached. The read thread keeps
 * its in-memory depth from these.
 */
export interface BookUpdate {
  watermarks: [shard: number, sequence: number][];
  levels: [instrumentId: string, side: string, priceNanos: number, quantityDelta: number, countDelta: number][];
  instruments: [instrumentId: string, currency: string, shard: number][];
}

function addLevel(levels: Map<string, BookUpdate['levels'][number]>, level: Level | null, sign: number): void {
  if (level === null) return;
  const [instrument, side, priceNanos, quantity] = level;
  const key = `${instrument}|${side}|${priceNanos}`;
  const entry = levels.get(key) ?? [instrument, side, priceNanos, 0, 0];
  entry[3] += sign * quantity;
  entry[4] += sign;
  levels.set(key, entry);
}

export class Projector {
  readonly stats = new ProjectorStats();
  /** Own orders and fills in memory (persistence/own-reads.ts), changed by every ingested commit. */
  readonly own: OwnReads;
  private readonly pending = new PendingIntakes();
  private readonly sessions: SessionBytes;
  private readonly applier: CommandApplier;
  private readonly flusher: GroupFlusher;
  private readonly loader: ProjectorLoad;
  /** Per shard: the last sequence storage holds (flushed), and the last ingested. */
  private readonly projected: number[];
  private readonly ingested: number[];
  private intakeWatermark = 0;
  private open = new Rows();

  constructor(options: {
    control: PersistenceControl;
    shardCount: number;
    sessionNames: SessionNames;
    /** Principal ids by their index in the principals file (intake records carry the index). */
    principalIds: readonly string[];
    log: (level: 'info' | 'warn' | 'error', message: string, fields?: object) => void;
    /** Hears the number of sealed, unflushed groups whenever it changes (the queue's high-water mark). */
    onSealed?: (groups: number) => void;
    /** Hears each group's trades once storage holds them, before the projection watermarks move. */
    onTapeStored?: (trades: TapeBatch) => void;
    /** OWN_READS_WINDOW: closed orders and fills kept in memory per participant. */
    ownReadsWindow?: number;
  }) {
    this.own = new OwnReads(options.ownReadsWindow ?? OWN_READS_WINDOW_DEFAULT, options.sessionNames);
    this.sessions = new SessionBytes(options.sessionNames);
    this.projected = Array.from({ length: options.shardCount }, () => 0);
    this.ingested = Array.from({ length: options.shardCount }, () => 0);
    const principals = options.principalIds.map((id) => Buffer.from(id, 'utf8'));
    this.applier = new CommandApplier(this.pending, principals, this.own, this.sessions, options.log);
    this.flusher = new GroupFlusher(this.projected, options.control, this.stats, options.log, options.onSealed ?? (() => undefined), options.onTapeStored ?? (() => undefined));
    this.loader = new ProjectorLoad(this.projected, this.ingested, options.control, this.applier, this.own);
  }

  /** Last sequence storage holds per shard. */
  watermark(shard: number): number {
    return this.projected[shard]!;
  }

  /** Last sequence ingested per shard (storage holds it once its group is flushed). */
  ingestedWatermark(shard: number): number {
    return this.ingested[shard]!;
  }

  /** Open orders held (the compact store and those touched since the start). */
  get openOrderCount(): number {
    return this.applier.openOrderCount;
  }

  /** Commands taken and waiting for their outcome. */
  get pendingCount(): number {
    return this.pending.size;
  }

  /** The open group's commands, its approximate bytes and when its first commit came. */
  get openCommands(): number {
    return this.open.commandCount;
  }

  get openBytes(): number {
    return this.open.bytes;
  }

  get openSinceMs(): number {
    return this.open.openedAtMs;
  }

  /** Groups sealed and not yet in storage. */
  get sealedCount(): number {
    return this.flusher.sealedCount;
  }

  /** Groups flushed since the start (a journal commit sent after this many covers them: durableThrough). */
  get flushedCount(): number {
    return this.flusher.flushedCount;
  }

  /** Where the own-reads model came from at start: the stop's file, or why not (its windows then start empty). */
  get ownReadsLoaded(): string {
    return this.loader.ownReadsLoaded;
  }

  /**
   * Loads the watermarks and the open orders (at start, before the first commit): from
   * the file saved at the last graceful stop when the main thread names one and it is
   * true of storage (persistence/open-orders-snapshot.ts); else, after a crash, from the
   * checkpoint the database names (`checkpoint`: DATA_DIR and the note) with the journal
   * after it replayed onto it; else from the table. Says which.
   */
  async load(client: pg.ClientBase, saved: { file: string; token: string } | null = null, checkpoint: { dir: string; note: OpenOrdersNote | null } | null = null): Promise<string> {
    const intakeWatermark = await this.loader.loadWatermarks(client);
    if (intakeWatermark !== null) this.intakeWatermark = intakeWatermark;
    return this.loader.loadOpenOrders(client, saved, checkpoint);
  }

  /** The open orders load() read, for the checkpoint written after the start (ProjectorLoad.takeLoadedOrders). Given once. */
  takeLoadedOrders(): { frozen: FrozenOrders; watermarks: number[] } | null {
    return this.loader.takeLoadedOrders();
  }

  /**
   * Writes the open orders for the next start (persistence/open-orders-snapshot.ts), at
   * a graceful stop: only when everything ingested is in storage, so that they are
   * exactly the table's open rows at the watermarks written with them.
   */
  saveOpenOrders(file: string, token: string): { count: number; bytes: number } {
    if (this.open.commandCount > 0 || this.flusher.sealedCount > 0 || this.projected.some((sequence, shard) => sequence !== this.ingested[shard])) {
      throw new Error(`projections are not all in storage (projected ${this.projected.join()}, ingested ${this.ingested.join()}, ${this.flusher.sealedCount} groups sealed)`);
    }
    return this.loader.save(file, token);
  }

  /**
   * Start-up: the intake records beyond the intake watermark whose commands have no
   * command_log row yet become pending again (their outcomes are on the journal beyond
   * the journal watermarks, or nowhere: then they are re-driven). Returns how many.
   */
  loadPending(client: pg.ClientBase): Promise<number> {
    return this.pending.load(client, this.intakeWatermark);
  }

  /** The commandIds and orderIds of the commands still pending, for the gateways' tables to learn by id (PendingIntakes.ids). */
  pendingIds(): { commandIds: string[]; orderIds: string[] } {
    return this.pending.ids();
  }

  /** What is still pending, per shard in the order taken: to be re-driven (recovery). */
  redrivePlan(): RedriveShard[] {
    return this.pending.redrivePlan();
  }

  /** The audit record of a command taken but not yet on the journal, or null (none such pending). */
  pendingAudit(commandId: string): AuditRecord | null {
    return this.pending.audit(commandId);
  }

  /**
   * Applies one commit (in commit order) to the in-memory lifecycle and appends its
   * rows to the open group. Returns what it changed in the displayed books, or null.
   */
  ingest(commit: StorageCommit): BookUpdate | null {
    const started = performance.now();
    const applier = this.applier;
    for (const batch of commit.intake) this.pending.add(commit.commitNo, batch.gateway, batch.payload, batch.bodies ?? null);
    const group = this.open;
    group.lastCommit = Math.max(group.lastCommit, commit.commitNo);
    if (group.openedAtMs === 0) group.openedAtMs = started;
    const touched = new Map<string, Level | null>();
    const instruments: BookUpdate['instruments'] = [];
    const watermarks: BookUpdate['watermarks'] = [];
    for (const batch of commit.journals) {
      if (batch.lastSequence <= this.ingested[batch.shard]!) continue; // already materialized
      if (batch.firstSequence !== this.ingested[batch.shard]! + 1)
        throw new Error(`projection of shard ${batch.shard} out of step: batch ${batch.firstSequence}, watermark ${this.ingested[batch.shard]}`);
      const view = journalView(batch.payload);
      const before = group.instruments.size;
      for (let at = 0; at < view.bytes.byteLength;) at = applier.apply(group, touched, view, at, batch.shard, batch.firstSequence);
      for (const [ids, currency, shard] of [...group.instruments.values()].slice(before)) instruments.push([formatUuid(ids, 0), unpackCurrency(currency), shard]);
      this.ingested[batch.shard] = batch.lastSequence;
      group.watermarks.set(batch.shard, batch.lastSequence);
      watermarks.push([batch.shard, batch.lastSequence]);
      group.commandCount += batch.commandCount;
    }
    if (commit.journaledAtMs !== undefined && commit.journals.length > 0) group.journaledAtMs.push(commit.journaledAtMs);
    const levels = new Map<string, BookUpdate['levels'][number]>();
    for (const [key, before] of touched) {
      const order = applier.live.get(key) ?? group.lifecycle.get(key)!;
      addLevel(levels, before, -1);
      addLevel(levels, applier.levelOf(order), 1);
      this.own.changed(key, order, order.clientOrderKnown);
      if (order.state !== STATE_OPEN && order.state !== STATE_PARTIALLY_FILLED) applier.live.delete(key);
    }
    this.stats.busyUs += (performance.now() - started) * 1000;
    if (watermarks.length === 0) return null;
    return { watermarks, levels: [...levels.values()].filter((entry) => entry[3] !== 0 || entry[4] !== 0), instruments };
  }

  /** The open group's trades so far (ingest() appends a commit's trades to it; seal() starts a new one). */
  get openTape(): TapeBatch {
    return this.open.tape;
  }

  /** Closes the open group into a transaction for flush(); nothing if it is empty. */
  seal(): void {
    const group = this.open;
    if (group.lastCommit === 0 && group.commandCount === 0) return;
    let intakeWatermark = Math.max(group.lastCommit, this.intakeWatermark);
    const oldest = this.pending.oldestCommit();
    if (oldest !== null) intakeWatermark = oldest - 1; // the oldest intake record still waiting for its outcome
    this.open = new Rows();
    if (group.watermarks.size === 0 && intakeWatermark === this.intakeWatermark) return;
    const flush = sealedGroup(group, intakeWatermark, this.applier.nextTapeSequence - 1, this.applier.instruments, this.sessions);
    this.intakeWatermark = intakeWatermark;
    this.flusher.add(flush);
  }

  /**
   * Sends the oldest sealed group; storage then holds everything ingested up to it.
   * After a failure the same group is sent again: check storedAlready() first (a lost
   * acknowledgement). Returns false when nothing is sealed.
   */
  flush(client: pg.ClientBase): Promise<boolean> {
    return this.flusher.flush(client);
  }

  /** After a failed flush: whether storage holds the oldest sealed group after all (then it is done). */
  storedAlready(client: pg.ClientBase): Promise<boolean> {
    return this.flusher.storedAlready(client);
  }

  /** A commit that waited for the WAL flush covers the groups flushed before it on that run (GroupFlusher.durableThrough). */
  durableThrough(count: number, run: string): void {
    this.flusher.durableThrough(count, run);
  }

  /** On a new connection to run `run` of the server: what a crash took back is sent again (GroupFlusher.resendLost). */
  resendLost(client: pg.ClientBase, run: string): Promise<number> {
    return this.flusher.resendLost(client, run);
  }

  /**
   * Rebuilds order_lifecycle_state from the whole journal, in one transaction, and
   * leaves the in-memory open orders as the rebuilt table has them. Returns the rows.
   * (The operator's rebuild route: the caller stops ingesting and flushes every group
   * first, so storage holds everything ingested.)
   */
  async rebuildLifecycle(client: pg.ClientBase): Promise<number> {
    if (this.flusher.sealedCount > 0 || this.open.commandCount > 0) throw new Error('the rebuild needs every ingested group flushed first');
    return rebuildLifecycle(client, this.applier, this.own, this.projected, this.sessions);
  }
}
