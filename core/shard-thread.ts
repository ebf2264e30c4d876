// Worker entry of a matching shard: builds the engine, faults its memory in, says
// ready, then runs the shard loop until the stop word is set. The loop blocks this
// thread (Atomics.wait), so control travels through shared memory, not messages.

import { parentPort, workerData } from 'node:worker_threads';
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
  control: SharedArrayBuffer;
}

const data = workerData as ShardThreadData;
const engine = new MatchingEngine({ orderCapacity: data.orderCapacity, hashSeed: data.hashSeed });
engine.prefault();
const runner = new ShardRunner({
  engine,
  commandRings: data.commandRings,
  resultRings: data.resultRings,
  doorbell: data.doorbell,
  gatewayDoorbells: data.gatewayDoorbells,
  control: data.control,
  batchMax: data.batchMax,
  clockUs: () => Math.round((performance.timeOrigin + performance.now()) * 1000),
});
parentPort!.postMessage({ type: 'ready', shardId: data.shardId });
runner.run();
parentPort!.postMessage({ type: 'stopped', shardId: data.shardId, commands: Atomics.load(new Int32Array(data.control), SHARD_COMMANDS_WORD) });
