// Worker entry of a matching shard: builds the engine, faults its memory in, says
// ready, then takes recovery work over its recovery port (journal payloads to replay,
// captured commands to re-drive) until told to start. From then on it runs the shard
// loop until the stop word is set. The loop blocks this thread (Atomics.wait), so
// control travels through shared memory, not messages.

import { parentPort, workerData, type MessagePort } from 'node:worker_threads';
import { COMMAND_SLOT_BYTES } from './command-slot.ts';
import { MatchingEngine } from './matching-engine.ts';
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
}

export type RecoveryRequest =
  | { type: 'replay'; payload: ArrayBuffer }
  | { type: 'redrive'; slots: ArrayBuffer }
  | { type: 'start' };

export type RecoveryAnswer = { type: 'replayed'; commands: number; sequence: number } | { type: 'redriven'; commands: number; sequence: number } | { type: 'failed'; message: string };

const data = workerData as ShardThreadData;
const engine = new MatchingEngine({ orderCapacity: data.orderCapacity, hashSeed: data.hashSeed });
engine.prefault();
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
  parentPort!.postMessage({ type: 'stopped', shardId: data.shardId, commands: Atomics.load(new Int32Array(data.control), SHARD_COMMANDS_WORD) });
}

parentPort!.postMessage({ type: 'ready', shardId: data.shardId });
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
