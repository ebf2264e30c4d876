// The matching shards' threads (each running runtime/shard-thread.ts): spawned from their
// restore point with an order store, a recovery port and, when checkpointing, a buffer port.

import { randomInt } from 'node:crypto';
import { MessageChannel, type MessagePort, type Worker } from 'node:worker_threads';
import { orderStoreBytes } from '../core/order-store.ts';
import type { ShardHalted, ShardThreadData } from '../core/shard-messages.ts';
import type { VenueConfig } from '../core/config.ts';
import type { VenueMemory } from '../gateway/venue-memory.ts';
import type { RestorePoint } from './restore-point.ts';
import { logger, type ThreadEntry } from './venue.ts';
import { spawnWorker } from './worker-spawn.ts';

export interface ShardThreads {
  /** Each shard's order store, which the main thread faults in after ready (runtime/go-live.ts). */
  orderMemory: SharedArrayBuffer[];
  /** The main thread's end of each shard's recovery port. */
  recovery: MessagePort[];
  /** Engine checkpoints while running: DATA_DIR set and ENGINE_CHECKPOINT_COMMANDS above 0. */
  checkpointing: boolean;
  /** The main thread's end of each shard's port for checkpoint buffers; none without checkpointing. */
  bufferPorts: MessagePort[];
}

/** Spawns MATCHING_SHARDS shards into `shards` (each as it starts, so that a failed start stops those already running). */
export function spawnShards(config: VenueConfig, memory: VenueMemory, entry: ThreadEntry, restore: RestorePoint, shards: Worker[]): ShardThreads {
  // Allocated here, faulted in by this thread after ready: the shard fills only what its restored engine holds.
  const orderMemory = Array.from({ length: config.matchingShards }, () => new SharedArrayBuffer(orderStoreBytes(config.orderCapacity)));
  const recoveryChannels = Array.from({ length: config.matchingShards }, () => new MessageChannel());
  const checkpointing = config.dataDir !== '' && config.engineCheckpointCommands > 0;
  const bufferChannels = Array.from({ length: checkpointing ? config.matchingShards : 0 }, () => new MessageChannel());
  for (let shardId = 0; shardId < config.matchingShards; shardId++) {
    const data: ShardThreadData = {
      shardId,
      orderCapacity: config.orderCapacity,
      orderMemory: orderMemory[shardId]!,
      hashSeed: randomInt(0x7fffffff),
      batchMax: config.shardBatchMax,
      commandRings: memory.commandRings.map((perShard) => perShard[shardId]!),
      resultRings: memory.resultRings[shardId]!,
      doorbell: memory.shardDoorbells[shardId]!,
      gatewayDoorbells: memory.gatewayDoorbells,
      journalRing: memory.journalRings[shardId]!,
      journalDoorbell: memory.persistenceDoorbell,
      control: memory.shardControls[shardId]!,
      recoveryPort: recoveryChannels[shardId]!.port2,
      snapshot: restore.snapshot(shardId),
      checkpointCommands: checkpointing ? config.engineCheckpointCommands : 0,
      checkpointFrom: restore.checkpointFrom(shardId),
      checkpointBuffers: checkpointing ? bufferChannels[shardId]!.port2 : null,
    };
    const transferList = data.checkpointBuffers === null ? [data.recoveryPort!] : [data.recoveryPort!, data.checkpointBuffers];
    const shard = spawnWorker(entry('shard'), { ...data }, { transferList }, `shard-${shardId}`);
    shard.on('message', (message: { type: string }) => {
      if (message.type === 'halted')
        logger.fatal({ shard: shardId, err: (message as ShardHalted).message }, 'an internal check failed in a shard: it halted; its commands fail SHARD_HALTED until the venue is restarted');
    });
    shards.push(shard);
  }
  return {
    orderMemory,
    recovery: recoveryChannels.map((channel) => channel.port1),
    checkpointing,
    bufferPorts: bufferChannels.map((channel) => channel.port1),
  };
}
