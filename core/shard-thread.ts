// Worker entry of a matching shard: builds the engine (from the snapshot saved at the
// last graceful stop when the main thread names one, core/engine-snapshot.ts; else
// empty), faults its memory in, says ready, then takes recovery work over its recovery
// port (journal payloads to replay, captured commands to re-drive) until told to start.
// From then on it runs the shard loop until the stop word is set. The loop blocks this
// thread (Atomics.wait), so control travels through shared memory, not messages. Once
// stopped, a venue's shard can be asked to save its engine for the next start.

import { parentPort, workerData, type MessagePort } from 'node:worker_threads';
import { COMMAND_SLOT_BYTES } from './command-slot.ts';
import { readEngineSnapshot, writeEngineSnapshot } from './engine-snapshot.ts';
import { INSTRUMENT_CAPACITY_DEFAULT, MatchingEngine, OWNER_CAPACITY_DEFAULT } from './matching-engine.ts';
import { SHARD_COMMANDS_WORD, ShardRunner } from './shard-runner.ts';

export interface ShardThreadData {
  shardId: number;
  orderCapacity: number;
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
  /** The engine saved at the last graceful stop, if the database still names it (the journal's last sequence for this shard). */
  snapshot: { file: string; token: string; sequence: number } | null;
}

/** The shard's first message: its engine restored from the snapshot (at `sequence`), or empty and why (a replay follows). */
export interface ShardReady {
  type: 'ready';
  shardId: number;
  restored: boolean;
  sequence: number;
  why: string | null;
}

/** Asked of a stopped shard: its engine written to `file` for the next start. */
export interface ShardSave {
  type: 'save';
  file: string;
  token: string;
}

export type ShardSaved = { type: 'saved'; sequence: number; bytes: number } | { type: 'save-failed'; message: string };

export type RecoveryRequest =
  | { type: 'replay'; payload: ArrayBuffer }
  | { type: 'redrive'; slots: ArrayBuffer }
  | { type: 'start' };

export type RecoveryAnswer = { type: 'replayed'; commands: number; sequence: number } | { type: 'redriven'; commands: number; sequence: number } | { type: 'failed'; message: string };

const data = workerData as ShardThreadData;

function freshEngine(): MatchingEngine {
  const engine = new MatchingEngine({ orderCapacity: data.orderCapacity, hashSeed: data.hashSeed });
  engine.prefault();
  return engine;
}

let why: string | null = null;
let engine: MatchingEngine;
if (data.snapshot === null) engine = freshEngine();
else {
  const restored = readEngineSnapshot(
    data.snapshot.file,
    { token: data.snapshot.token, shard: data.shardId, sequence: data.snapshot.sequence },
    { orderCapacity: data.orderCapacity, instrumentCapacity: INSTRUMENT_CAPACITY_DEFAULT, ownerCapacity: OWNER_CAPACITY_DEFAULT },
  );
  if (typeof restored === 'string') {
    why = restored;
    engine = freshEngine();
  } else engine = restored;
}
const runner = new ShardRunner({
  engine,
  commandRings: data.commandRings,
  resultRings: data.resultRings,
  doorbell: data.doorbell,
  gatewayDoorbells: data.gatewayDoorbells,
  journalRing: data.journalRing,
  journalDoorbell: data.journalDoorbell,
  control: data.control,
  batchMax: data.batchMax,
  clockUs: () => Math.round((performance.timeOrigin + performance.now()) * 1000),
});

function runLoop(): void {
  runner.run();
  // A venue's shard (which the venue terminates) stays to be asked for its engine.
  if (data.recoveryPort !== null) parentPort!.on('message', save);
  parentPort!.postMessage({ type: 'stopped', shardId: data.shardId, commands: Atomics.load(new Int32Array(data.control), SHARD_COMMANDS_WORD) });
}

function save(request: ShardSave): void {
  if (request.type !== 'save') return;
  try {
    const { bytes, sequence } = writeEngineSnapshot(request.file, engine, request.token, data.shardId);
    parentPort!.postMessage({ type: 'saved', sequence, bytes } satisfies ShardSaved);
  } catch (error) {
    parentPort!.postMessage({ type: 'save-failed', message: (error as Error).message } satisfies ShardSaved);
  }
}

parentPort!.postMessage({ type: 'ready', shardId: data.shardId, restored: data.snapshot !== null && why === null, sequence: engine.sequence, why } satisfies ShardReady);
const port = data.recoveryPort;
if (port === null) {
  runLoop();
} else {
  port.on('message', (request: RecoveryRequest) => {
    try {
      if (request.type === 'replay') {
        const commands = runner.replay(new Uint8Array(request.payload));
        port.postMessage({ type: 'replayed', commands, sequence: engine.sequence } satisfies RecoveryAnswer);
      } else if (request.type === 'redrive') {
        const slots = new Uint8Array(request.slots);
        for (let at = 0; at < slots.byteLength; at += COMMAND_SLOT_BYTES) runner.redrive(slots.subarray(at, at + COMMAND_SLOT_BYTES));
        port.postMessage({ type: 'redriven', commands: slots.byteLength / COMMAND_SLOT_BYTES, sequence: engine.sequence } satisfies RecoveryAnswer);
      } else {
        port.close();
        setImmediate(runLoop);
      }
    } catch (error) {
      port.postMessage({ type: 'failed', message: (error as Error).message } satisfies RecoveryAnswer);
    }
  });
}
