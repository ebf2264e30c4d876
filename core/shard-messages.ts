// The messages between the main thread and a matching shard's thread
// (runtime/shard-thread.ts): what the shard is started with, what it says when ready,
// halted or checkpointed, and the recovery work it is given before it runs.

import type { MessagePort } from 'node:worker_threads';
import type { EngineCapture } from './engine-state.ts';

export interface ShardThreadData {
  shardId: number;
  orderCapacity: number;
  /**
   * The engine's order store (orderStoreBytes(orderCapacity) bytes, all zero), which the
   * main thread allocated and faults in after the venue is ready (runtime/prefault.ts): the
   * shard writes only what a restored engine holds before then. Absent, the engine
   * allocates its own and faults it all in here.
   */
  orderMemory?: SharedArrayBuffer;
  hashSeed: number;
  batchMax: number;
  commandRings: SharedArrayBuffer[];
  resultRings: SharedArrayBuffer[];
  doorbell: SharedArrayBuffer;
  gatewayDoorbells: SharedArrayBuffer[];
  journalRing: SharedArrayBuffer | null;
  journalDoorbell: SharedArrayBuffer | null;
  control: SharedArrayBuffer;
  /** Recovery messages; null starts the loop at once (nothing to recover). */
  recoveryPort: MessagePort | null;
  /**
   * The engine saved at the last graceful stop, if the database still names it (at the
   * journal's last sequence for this shard), or the last checkpoint the database names
   * (at or before it: the journal's tail is replayed after it).
   */
  snapshot: { file: string; token: string; sequence: number; source: 'stop' | 'checkpoint' } | null;
  /** Commands between checkpoints of the engine while running; 0: none. */
  checkpointCommands: number;
  /**
   * The journal sequence a crash now would replay this shard from: that of the last
   * checkpoint the database names, 0 if none. The commands after it, replayed or restored at
   * this start, count toward the next checkpoint, so that a venue restarted more often than
   * every `checkpointCommands` commands still takes one and a crash never replays more.
   */
  checkpointFrom: number;
  /**
   * Buffers (SharedArrayBuffer) the main thread sends for the next checkpoints' copies,
   * its pages already faulted in; read without the event loop (receiveMessageOnPort) when
   * a checkpoint is taken. Null: the shard allocates its own.
   */
  checkpointBuffers: MessagePort | null;
  /**
   * How long a checkpoint that falls due before a big enough buffer has come waits for one
   * (the shard matching on meanwhile) before it allocates its own (CHECKPOINT_BUFFER_WAIT_MS
   * if unset): a fresh buffer's page faults would pause the shard for a second or more at
   * a million orders, and a start whose replay filled the interval is due at once.
   */
  checkpointBufferWaitMs?: number;
}

/** The default of ShardThreadData.checkpointBufferWaitMs. */
export const CHECKPOINT_BUFFER_WAIT_MS = 10_000;

/** The shard's first message: its engine restored from the snapshot (at `sequence`), or empty and why (a replay follows). */
export interface ShardReady {
  type: 'ready';
  shardId: number;
  /** Where the engine came from: null, empty (`why` says why, when a file was named). */
  restored: 'stop' | 'checkpoint' | null;
  sequence: number;
  why: string | null;
  /** Milliseconds this thread took to build its engine (the file read, or a fresh engine's memory faulted in). */
  loadMs: number;
  /** What a copy of the engine's state takes at this point (before the journal's replay). */
  stateBytes: number;
}

/** Asked of a stopped shard: its engine written to `file` for the next start. */
export interface ShardSave {
  type: 'save';
  file: string;
  token: string;
}

export type ShardSaved = { type: 'saved'; sequence: number; bytes: number } | { type: 'save-failed'; message: string };

/** Sent once if an internal check failed while carrying out a command: the shard halted (ShardRunner.halted). */
export interface ShardHalted {
  type: 'halted';
  shardId: number;
  message: string;
}

/**
 * Sent while running: a copy of the engine between two batches (in a SharedArrayBuffer
 * the shard copies into again at its next checkpoint, once SHARD_CHECKPOINT_WORD is
 * cleared), and how long the copy held the shard.
 */
export interface ShardCheckpoint {
  type: 'checkpoint';
  shardId: number;
  capture: EngineCapture;
  pauseMs: number;
}

export type RecoveryRequest =
  /** `bytes` of journal at the start of `payload`, whose buffer is transferred back with the answer (persistence/recovery.ts, readJournal). */
  | { type: 'replay'; payload: ArrayBuffer; bytes: number }
  | { type: 'redrive'; slots: ArrayBuffer }
  /** The open session's number: a session roll the venue stopped in the middle of is finished (core/session-expiry.ts). */
  | { type: 'expire'; floor: number }
  | { type: 'start' };

export type RecoveryAnswer =
  | { type: 'replayed'; commands: number; sequence: number; payload: ArrayBuffer }
  | { type: 'redriven'; commands: number; sequence: number }
  | { type: 'expired'; commands: number; orders: number; sequence: number }
  | { type: 'failed'; message: string };
