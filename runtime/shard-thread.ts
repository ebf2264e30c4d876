// Worker entry of a matching shard: builds the engine (from the snapshot saved at the
// last graceful stop, or from the last checkpoint, when the main thread names one,
// persistence/engine-snapshot.ts; else empty), faults its memory in, says ready, then takes
// recovery work over its recovery port (journal payloads to replay, captured commands
// to re-drive) until told to start. From then on it runs the shard loop until the stop
// word is set. The loop blocks this thread (Atomics.wait), so control travels through
// shared memory, not messages; the one message it sends while running is a checkpoint
// of its engine (a copy, transferred) every `checkpointCommands` commands, which the
// main thread writes (persistence/engine-checkpoints.ts). Once stopped, a venue's shard
// can be asked to save its engine for the next start.

import { parentPort, receiveMessageOnPort, workerData } from 'node:worker_threads';
import { COMMAND_SLOT_BYTES } from '../core/command-slot.ts';
import { EVENT_ACCEPTED, EXPIRY_SCAN_SLOTS } from '../core/codes.ts';
import { expiryProgress, expirySlot } from '../core/session-expiry.ts';
import { captureEngine, engineStateBytes, readEngineSnapshot, writeEngineSnapshot } from '../persistence/engine-snapshot.ts';
import { INSTRUMENT_CAPACITY_DEFAULT, MatchingEngine, OWNER_CAPACITY_DEFAULT } from '../core/matching-engine.ts';
import { SHARD_COMMANDS_WORD, ShardRunner } from '../core/shard-runner.ts';
import {
  type ShardThreadData,
  CHECKPOINT_BUFFER_WAIT_MS,
  type ShardReady,
  type ShardSave,
  type ShardSaved,
  type ShardHalted,
  type ShardCheckpoint,
  type RecoveryRequest,
  type RecoveryAnswer,
} from '../core/shard-messages.ts';

const data = workerData as ShardThreadData;

function freshEngine(): MatchingEngine {
  const engine = new MatchingEngine({ orderCapacity: data.orderCapacity, hashSeed: data.hashSeed, orderMemory: data.orderMemory });
  engine.prefault();
  return engine;
}

const loadStarted = performance.now();
let why: string | null = null;
let engine: MatchingEngine;
/** Where checkpoints are copied: reused while big enough (its pages faulted in once). */
let copies: SharedArrayBuffer | null = null;
const receive = () => (data.checkpointBuffers === null ? undefined : receiveMessageOnPort(data.checkpointBuffers));
let batch = 0;
/** When a due checkpoint began to wait for a buffer (performance.now()), 0 if none waits. */
let bufferAwaitedSince = 0;
if (data.snapshot === null) engine = freshEngine();
else {
  const restored = readEngineSnapshot(
    data.snapshot.file,
    { token: data.snapshot.token, shard: data.shardId, sequence: data.snapshot.sequence },
    { orderCapacity: data.orderCapacity, instrumentCapacity: INSTRUMENT_CAPACITY_DEFAULT, ownerCapacity: OWNER_CAPACITY_DEFAULT },
    data.orderMemory,
  );
  if (typeof restored === 'string') {
    why = restored;
    engine = freshEngine();
  } else ({ engine, batch } = restored);
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
  batch,
  onHalt: (error) => parentPort!.postMessage({ type: 'halted', shardId: data.shardId, message: error instanceof Error ? (error.stack ?? error.message) : String(error) } satisfies ShardHalted),
  checkpoint:
    data.checkpointCommands > 0
      ? {
          commands: data.checkpointCommands,
          take: (lastBatch) => {
            const started = performance.now();
            let received = false;
            for (let m = receive(); m !== undefined; m = receive()) {
              copies = m.message as SharedArrayBuffer;
              received = true;
            }
            // Asked again after every batch while it waits: the state's size is measured only when a buffer came.
            const waitMs = data.checkpointBufferWaitMs ?? CHECKPOINT_BUFFER_WAIT_MS;
            if (bufferAwaitedSince !== 0 && !received && started - bufferAwaitedSince < waitMs) return false;
            if (data.checkpointBuffers !== null && (copies === null || copies.byteLength < engineStateBytes(engine))) {
              if (bufferAwaitedSince === 0) bufferAwaitedSince = started;
              if (started - bufferAwaitedSince < waitMs) return false;
            }
            bufferAwaitedSince = 0;
            const capture = captureEngine(engine, '', data.shardId, lastBatch, (bytes) =>
              copies !== null && copies.byteLength >= bytes ? copies : (copies = new SharedArrayBuffer(Math.ceil(bytes * 1.5))),
            );
            const message: ShardCheckpoint = { type: 'checkpoint', shardId: data.shardId, capture, pauseMs: Math.round((performance.now() - started) * 10) / 10 };
            parentPort!.postMessage(message);
            return true;
          },
        }
      : null,
});

function runLoop(): void {
  runner.run();
  // A venue's shard (which the venue terminates) stays to be asked for its engine.
  if (data.recoveryPort !== null) parentPort!.on('message', save);
  parentPort!.postMessage({ type: 'stopped', shardId: data.shardId, commands: Atomics.load(new Int32Array(data.control), SHARD_COMMANDS_WORD) });
}

function save(request: ShardSave): void {
  if (request.type !== 'save') return;
  if (runner.halted) {
    parentPort!.postMessage({ type: 'save-failed', message: 'the shard halted after an internal check failed: its engine is not saved (the next start replays the journal)' } satisfies ShardSaved);
    return;
  }
  try {
    const { bytes, sequence } = writeEngineSnapshot(request.file, engine, request.token, data.shardId, runner.lastBatch);
    parentPort!.postMessage({ type: 'saved', sequence, bytes } satisfies ShardSaved);
  } catch (error) {
    parentPort!.postMessage({ type: 'save-failed', message: (error as Error).message } satisfies ShardSaved);
  }
}

/**
 * At start: if the engine still holds a resting DAY order of a session before the open
 * one (the venue stopped during a roll's expiry, or before it), the whole expiry runs
 * again, sequenced and journaled like any command (re-driven: no gateway waits); else
 * nothing is sequenced.
 */
function finishExpiry(floor: number): { commands: number; orders: number } {
  if (engine.restingDayOrdersBefore(floor) === 0) return { commands: 0, orders: 0 };
  let commands = 0;
  let orders = 0;
  for (let first = 0; ; first += EXPIRY_SCAN_SLOTS) {
    runner.redrive(expirySlot(floor, data.shardId, first));
    commands++;
    const events = engine.events;
    if (events.kind(0) !== EVENT_ACCEPTED) throw new Error(`the engine refused the expiry of sessions before ${floor}`);
    const progress = expiryProgress({ quantity: events.quantity(0), code: events.code(0) });
    orders += progress.expired;
    if (progress.slotsLeft === 0) return { commands, orders };
  }
}

parentPort!.postMessage({
  type: 'ready',
  shardId: data.shardId,
  restored: data.snapshot !== null && why === null ? data.snapshot.source : null,
  sequence: engine.sequence,
  why,
  loadMs: Math.round(performance.now() - loadStarted),
  stateBytes: engineStateBytes(engine),
} satisfies ShardReady);
const port = data.recoveryPort;
if (port === null) {
  runLoop();
} else {
  port.on('message', (request: RecoveryRequest) => {
    try {
      if (request.type === 'replay') {
        const commands = runner.replay(new Uint8Array(request.payload, 0, request.bytes));
        port.postMessage({ type: 'replayed', commands, sequence: engine.sequence, payload: request.payload } satisfies RecoveryAnswer, [request.payload]);
      } else if (request.type === 'redrive') {
        const slots = new Uint8Array(request.slots);
        for (let at = 0; at < slots.byteLength; at += COMMAND_SLOT_BYTES) runner.redrive(slots.subarray(at, at + COMMAND_SLOT_BYTES));
        port.postMessage({ type: 'redriven', commands: slots.byteLength / COMMAND_SLOT_BYTES, sequence: engine.sequence } satisfies RecoveryAnswer);
      } else if (request.type === 'expire') {
        port.postMessage({ type: 'expired', ...finishExpiry(request.floor), sequence: engine.sequence } satisfies RecoveryAnswer);
      } else {
        port.close();
        // A file refused (a damaged checkpoint, or a stop's save that is then not adopted): the
        // next checkpoint is due as if from the journal's start.
        const from = why !== null ? 0 : data.checkpointFrom;
        runner.countTowardCheckpoint(engine.sequence - from);
        setImmediate(runLoop);
      }
    } catch (error) {
      port.postMessage({ type: 'failed', message: (error as Error).message } satisfies RecoveryAnswer);
    }
  });
}
