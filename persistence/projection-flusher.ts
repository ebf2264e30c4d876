// Sends sealed projection groups to storage, oldest first, one transaction each, and
// keeps those committed without waiting for the WAL until a synchronous commit covers
// them: a crash of the server that took them back has them sent again (resendLost).

import type pg from 'pg';
import type { PersistenceControl } from '../core/persistence-control.ts';
import type { TapeBatch } from '../core/tape-view.ts';
import { isDataRefusal } from './quarantine.ts';
import { LatencyHistogram } from './latency-histogram.ts';
import { runScript } from './pg-script.ts';
import { INTAKE_PROJECTION_NAME, PROJECTION_NAME, PROJECTOR_VACUUM_GROUPS, PROJECTOR_VACUUM_SQL, scriptOf, type Flush } from './projection-group.ts';
import { quarantineRefused, reportQuarantine } from './projection-quarantine.ts';

/** What the projector did since it started. */
export class ProjectorStats {
  groups = 0;
  rows = 0;
  /** Rows storage refused, kept in runtime.quarantined_rows (a group quarantined whole counts its COPYs). */
  quarantinedRows = 0;
  quarantinedGroups = 0;
  /** Time spent ingesting commits and committing groups, µs. */
  busyUs = 0;
  /** Projection lag per journal batch: its journal commit to its projection commit (µs). */
  readonly lag = new LatencyHistogram();
}

export class GroupFlusher {
  private readonly sealed: Flush[] = [];
  /**
   * Groups flushed, oldest first, with the script sent: committed without waiting for the
   * WAL flush, a crash of the server may take them back until a synchronous commit covers
   * them (durableThrough); resendLost sends those it took back again.
   */
  private readonly provisional: { flush: Flush; script: [string, Buffer[]]; ordinal: number; run: string }[] = [];
  private flushedGroups = 0;
  private groupsSinceVacuum = 0;
  /** The run of the server (its start time) the groups are flushed on now. */
  private serverRun = '';

  constructor(
    /** Per shard, the last sequence storage holds: moved as groups are flushed (the projector's own array). */
    private readonly projected: number[],
    private readonly control: PersistenceControl,
    private readonly stats: ProjectorStats,
    private readonly log: (level: 'info' | 'warn' | 'error', message: string, fields?: object) => void,
    private readonly onSealed: (groups: number) => void,
    private readonly onTapeStored: (trades: TapeBatch) => void,
  ) {}

  /** Groups sealed and not yet in storage. */
  get sealedCount(): number {
    return this.sealed.length;
  }

  /** A group just sealed, sent after those before it. */
  add(flush: Flush): void {
    this.sealed.push(flush);
    this.onSealed(this.sealed.length);
  }

  /**
   * Sends the oldest sealed group; storage then holds everything ingested up to it.
   * After a failure the same group is sent again: check storedAlready() first (a lost
   * acknowledgement). Returns false when nothing is sealed.
   */
  async flush(client: pg.ClientBase): Promise<boolean> {
    const flush = this.sealed[0];
    if (flush === undefined) return false;
    const started = performance.now();
    let script = scriptOf(flush);
    for (;;) {
      try {
        await runScript(client, ...script);
        break;
      } catch (error) {
        // Storage down or busy: the caller retries the group as it is. Storage refusing data: the refused row is set aside.
        if (!isDataRefusal(error) || flush.whole) throw error;
        quarantineRefused(flush, error, this.projected);
        script = scriptOf(flush);
      }
    }
    if (flush.quarantined.length > 0) {
      this.stats.quarantinedRows += flush.quarantined.length;
      if (flush.whole) this.stats.quarantinedGroups++;
      reportQuarantine(flush, this.log);
    }
    this.flushed(flush, started, script);
    // Kept for a resend until a synchronous commit covers them; past the bound, one is made here.
    if (this.provisional.length >= PROVISIONAL_GROUPS_MAX) {
      await client.query(DURABLE_POINT_SQL);
      this.provisional.length = 0;
    }
    if (++this.groupsSinceVacuum >= PROJECTOR_VACUUM_GROUPS) {
      this.groupsSinceVacuum = 0;
      await client.query(PROJECTOR_VACUUM_SQL);
    }
    return true;
  }

  /** After a failed flush: whether storage holds the oldest sealed group after all (then it is done). */
  async storedAlready(client: pg.ClientBase): Promise<boolean> {
    const flush = this.sealed[0];
    if (flush === undefined) return false;
    const done = holds(await storedMarks(client), flush);
    if (done) this.flushed(flush, performance.now(), scriptOf(flush));
    return done;
  }

  /** Groups flushed since the start (a journal commit sent after this many covers them: durableThrough). */
  get flushedCount(): number {
    return this.flushedGroups;
  }

  /**
   * A commit that waited for the WAL flush was sent, on run `run` of the server, after
   * `count` groups were flushed: the WAL is flushed past the commits of those flushed on
   * that run, so no crash can take them back.
   */
  durableThrough(count: number, run: string): void {
    while (this.provisional.length > 0 && this.provisional[0]!.ordinal <= count && this.provisional[0]!.run === run) this.provisional.shift();
  }

  /**
   * On a new connection to run `run` of the server (its start time): the groups flushed on
   * an earlier run that it took back in a crash (storage keeps a prefix of the commits) are
   * sent again in order, reads held back to what storage holds until they are in; those it
   * holds are durable (a clean stop flushed them, or the crash recovery replayed them).
   * Returns how many were sent again.
   */
  async resendLost(client: pg.ClientBase, run: string): Promise<number> {
    this.serverRun = run;
    if (this.provisional.every((entry) => entry.run === run)) return 0;
    const marks = await storedMarks(client);
    for (let k = this.provisional.length - 1; k >= 0; k--) {
      const entry = this.provisional[k]!;
      if (entry.run !== run && holds(marks, entry.flush)) this.provisional.splice(k, 1);
    }
    // What is left of earlier runs is what storage lacks: the last groups, sent again in order (a try cut short goes on at the next connection).
    const lost = this.provisional.filter((entry) => entry.run !== run);
    if (lost.length === 0) return 0;
    for (const shard of new Set(lost.flatMap((entry) => [...entry.flush.watermarks.keys()]))) {
      this.projected[shard] = marks.projected(shard);
      this.control.setProjected(shard, this.projected[shard]!);
    }
    for (const entry of lost) {
      await runScript(client, ...entry.script);
      entry.run = run;
      for (const [shard, sequence] of entry.flush.watermarks) {
        this.projected[shard] = sequence;
        this.control.setProjected(shard, sequence);
      }
    }
    this.log('warn', 'storage lost projection groups in a crash of the server (committed without waiting for the WAL): sent again', { groups: lost.length });
    return lost.length;
  }

  private flushed(flush: Flush, started: number, script: [string, Buffer[]]): void {
    const committed = performance.now();
    this.provisional.push({ flush, script, ordinal: ++this.flushedGroups, run: this.serverRun });
    this.sealed.shift();
    this.onSealed(this.sealed.length);
    this.stats.busyUs += (committed - started) * 1000;
    for (const at of flush.journaledAtMs) this.stats.lag.record((committed - at) * 1000);
    this.stats.groups++;
    this.stats.rows += flush.rows;
    if (flush.tape.length > 0 && !flush.whole) this.onTapeStored(flush.tape);
    for (const [shard, sequence] of flush.watermarks) {
      this.projected[shard] = sequence;
      this.control.setProjected(shard, sequence);
    }
  }
}

/** Flushed groups kept for a resend at most; past it a synchronous commit makes them durable. */
const PROVISIONAL_GROUPS_MAX = 64;
/** A transaction that waits for the WAL flush: every commit before it is durable once it returns. */
const DURABLE_POINT_SQL = 'BEGIN; SET LOCAL synchronous_commit = on; SELECT txid_current(); COMMIT';

/** The projection watermarks storage holds. */
async function storedMarks(client: pg.ClientBase): Promise<{ projected: (shard: number) => number; intake: number }> {
  const marks = await client.query<{ projection: string; shard_id: number; sequence: string }>('SELECT projection, shard_id, sequence FROM runtime.projection_watermarks WHERE projection = ANY($1)', [
    [PROJECTION_NAME, INTAKE_PROJECTION_NAME],
  ]);
  const stored = (projection: string, shard: number) => Number(marks.rows.find((row) => row.projection === projection && row.shard_id === shard)?.sequence ?? 0);
  return { projected: (shard) => stored(PROJECTION_NAME, shard), intake: stored(INTAKE_PROJECTION_NAME, 0) };
}

/** Whether storage holds a group: its watermarks, every one, are reached. */
function holds(marks: Awaited<ReturnType<typeof storedMarks>>, flush: Flush): boolean {
  return [...flush.watermarks].every(([shard, sequence]) => marks.projected(shard) >= sequence) && marks.intake >= flush.intakeWatermark;
}
