// Runs a real shard thread and plays one gateway against it: writes command slots
// into its ring and collects the result groups. Used by the shard thread tests.

import type { MessagePort, Worker } from 'node:worker_threads';
import { COMMAND_SLOT_BYTES, encodeCommand, type CommandInput } from '../../core/command-slot.ts';
import { Doorbell } from '../../core/doorbell.ts';
import { ResultReader } from '../../core/result-reader.ts';
import type { ResultEvent, ResultHeader } from '../../core/result-slot.ts';
import { RESULT_RECORD_BYTES } from '../../core/result-slot.ts';
import { createRingBuffer, RingProducer } from '../../core/ring.ts';
import { SHARD_CONTROL_BYTES, SHARD_STOP_WORD } from '../../core/shard-runner.ts';
import type { ShardThreadData } from '../../core/shard-messages.ts';
import { spawnWorker } from '../../runtime/worker-spawn.ts';

export interface ResultGroup {
  header: ResultHeader;
  events: ResultEvent[];
}

export interface HarnessOptions {
  commandSlots?: number;
  resultSlots?: number;
  orderCapacity?: number;
  /** Checkpoints of the engine while running (the thread's 'checkpoint' messages), the buffers for them sent on `buffers`' other end. */
  checkpoint?: { commands: number; buffers: MessagePort; bufferWaitMs: number };
}

export class ShardHarness {
  readonly worker: Worker;
  readonly control: Int32Array;
  private readonly commands: RingProducer;
  private readonly results: ResultReader;
  private readonly shardBell: Doorbell;
  private readonly gatewayBell: Doorbell;
  private nextToken = 1;
  private readonly done = new Map<number, ResultGroup>();

  static async start(options: HarnessOptions = {}): Promise<ShardHarness> {
    const harness = new ShardHarness(options);
    await new Promise<void>((resolve, reject) => {
      harness.worker.once('message', () => resolve());
      harness.worker.once('error', reject);
    });
    return harness;
  }

  private constructor(options: HarnessOptions) {
    const commandRing = createRingBuffer(COMMAND_SLOT_BYTES, options.commandSlots ?? 64);
    const resultRing = createRingBuffer(RESULT_RECORD_BYTES, options.resultSlots ?? 256);
    const doorbell = Doorbell.create();
    const gatewayDoorbell = Doorbell.create();
    const control = new SharedArrayBuffer(SHARD_CONTROL_BYTES);
    const data: ShardThreadData = {
      shardId: 0,
      orderCapacity: options.orderCapacity ?? 4096,
      hashSeed: 1,
      batchMax: 32,
      commandRings: [commandRing],
      resultRings: [resultRing],
      doorbell,
      gatewayDoorbells: [gatewayDoorbell],
      journalRing: null,
      journalDoorbell: null,
      control,
      recoveryPort: null,
      snapshot: null,
      checkpointCommands: options.checkpoint?.commands ?? 0,
      checkpointFrom: 0,
      checkpointBuffers: options.checkpoint?.buffers ?? null,
      ...(options.checkpoint === undefined ? {} : { checkpointBufferWaitMs: options.checkpoint.bufferWaitMs }),
    };
    const transferList = data.checkpointBuffers === null ? [] : [data.checkpointBuffers];
    this.worker = spawnWorker(new URL('../../runtime/shard-thread.ts', import.meta.url), { ...data }, { transferList });
    this.control = new Int32Array(control);
    this.commands = new RingProducer(commandRing, COMMAND_SLOT_BYTES);
    this.results = new ResultReader(resultRing);
    this.shardBell = new Doorbell(doorbell);
    this.gatewayBell = new Doorbell(gatewayDoorbell);
  }

  /** Enqueues commands (waiting for ring room) and resolves with their result groups, in order. */
  async run(commands: Array<Omit<CommandInput, 'token' | 'timestampUs'>>): Promise<ResultGroup[]> {
    const tokens: number[] = [];
    for (const command of commands) {
      while (this.commands.freeSlots() === 0) await this.pump();
      const token = this.nextToken++;
      tokens.push(token);
      encodeCommand({ ...command, token, timestampUs: 0 }, this.commands, this.commands.slotOffset(this.commands.nextIndex));
      this.commands.publish(1);
      this.shardBell.ring();
    }
    while (tokens.some((token) => !this.done.has(token))) await this.pump();
    return tokens.map((token) => this.done.get(token)!);
  }

  async stop(): Promise<number> {
    Atomics.store(this.control, SHARD_STOP_WORD, 1);
    this.shardBell.ringAlways();
    return new Promise<number>((resolve) => {
      this.worker.on('message', (message: { type: string; commands: number }) => {
        if (message.type === 'stopped') resolve(message.commands);
      });
    });
  }

  private async pump(): Promise<void> {
    const read = this.results.poll((header, events) => this.done.set(header.token, { header, events }));
    if (read > 0) return;
    const seen = this.gatewayBell.prepareSleep();
    if (this.results.ring.available() > 0) return this.gatewayBell.wake();
    await this.gatewayBell.sleepAsync(seen, 20);
  }
}
