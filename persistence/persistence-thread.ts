// Worker entry of the persistence thread: wires the journal writer (tier 1), the projector
// (tier 2) and the request handlers, loads storage, says loaded, then runs the pipeline.

import { parentPort, workerData } from 'node:worker_threads';
import pino from 'pino';
import { loggerOptions } from '../core/log-format.ts';
import { Doorbell } from '../core/doorbell.ts';
import { DB_UP, PersistenceControl } from '../core/persistence-control.ts';
import { QueueMarks, QUEUE_SLOTS } from '../core/queue-marks.ts';
import { PersistenceCounters } from '../core/venue-metrics.ts';
import { JournalWriter } from './journal-writer.ts';
import { MarketViews } from './market-views.ts';
import { OpenOrdersCheckpoint } from './open-orders-checkpoint.ts';
import { OperatorRequests } from './operator-requests.ts';
import { OwnReadAnswers } from './own-read-answers.ts';
import { StorageConnections } from './persistence-connections.ts';
import type { PersistenceLoaded, PersistenceSave, PersistenceSaved, PersistenceThreadData } from './persistence-messages.ts';
import { PersistencePipeline } from './persistence-pipeline.ts';
import { loadStorage } from './persistence-start.ts';
import { FlushLoop } from './projection-flush-loop.ts';
import { Projector } from './projector.ts';

const data = workerData as PersistenceThreadData;
const logger = pino(loggerOptions('persistence', data.logLevel));
const log = (level: 'info' | 'warn' | 'error', message: string, fields: object = {}) => logger[level](fields, message);
const control = new PersistenceControl(data.control);
const queueMarks = new QueueMarks(data.queueMarks);
const connections = new StorageConnections(data.databaseUrl);
const views = new MarketViews(data.shardCount, data.depthView, data.tapeView, log, data.marketStream);

const projector = new Projector({
  control,
  shardCount: data.shardCount,
  principalIds: data.principalIds,
  sessionNames: connections.sessionNames,
  log,
  ownReadsWindow: data.ownReadsWindow,
  onSealed: (groups) => queueMarks.note(QUEUE_SLOTS.sealedGroups, groups),
  onTapeStored: views.tapeStored,
});

const flusher = new FlushLoop(projector, connections, control, data.projectionGroupMs, log);
const ownReads = new OwnReadAnswers(projector, control, data.shardCount);
const pipeline = new PersistencePipeline(
  projector,
  flusher,
  connections,
  views,
  ownReads,
  queueMarks,
  new Doorbell(data.doorbell),
  data.gatewayDoorbells.map((buffer) => new Doorbell(buffer)),
  data.heldBytesMax,
);
const operator = new OperatorRequests(projector, pipeline, connections, views, control, data.shardCount, data.rebuildLockTimeoutMs, log);
const checkpoint = data.openOrdersDir === null ? null : new OpenOrdersCheckpoint(data.openOrdersDir, projector, data.shardCount, connections.connect, log);

for (const port of data.ownReadPorts) ownReads.listen(port);
for (const port of data.adminPorts) operator.listen(port);

let stopped = false;
parentPort!.on('message', (message: { type: string } | PersistenceSave) => {
  if (message.type === 'stop') {
    pipeline.stop();
  } else if (message.type === 'venue-ready') {
    // After the venue's ready, not this thread's: the write's slices and I/O would compete with the rest of the start.
    if (checkpoint !== null && !pipeline.stopping) void checkpoint.writeLoaded();
  } else if (message.type === 'save' && 'file' in message) {
    try {
      if (!stopped) throw new Error('the persistence thread has not stopped');
      const { count, bytes } = projector.saveOpenOrders(message.file, message.token);
      parentPort!.postMessage({ type: 'saved', count, bytes } satisfies PersistenceSaved);
    } catch (error) {
      parentPort!.postMessage({ type: 'save-failed', message: (error as Error).message } satisfies PersistenceSaved);
    }
  }
});

/** Waits for the main thread's { type: 'journal', journalDurable }: the last sequence per shard its replay reached. */
function journalDurable(): Promise<number[]> {
  return new Promise<number[]>((resolve) => {
    const onMessage = (message: { type: string; journalDurable?: number[] }) => {
      if (message.type !== 'journal') return;
      parentPort!.off('message', onMessage);
      resolve(message.journalDurable!);
    };
    parentPort!.on('message', onMessage);
  });
}

async function main(): Promise<void> {
  const start = await loadStorage({ projector, views, connections, checkpoint, savedOpenOrders: data.openOrders, shardCount: data.shardCount, log });
  const { redrive, projectedBatches, pendingIds } = start;
  parentPort!.postMessage(
    { type: 'loaded', redrive, projectedBatches, pendingIds } satisfies PersistenceLoaded,
    redrive.map((shard) => shard.slots),
  );
  const durable = await journalDurable();
  pipeline.writer = new JournalWriter({
    intakeRings: data.intakeRings,
    bodyRings: data.bodyRings,
    journalRings: data.journalRings,
    control,
    limits: data.limits,
    journalDurable: durable,
    lastCommitNo: start.lastCommitNo,
    log,
    counters: new PersistenceCounters(data.metrics),
  });
  ownReads.ready = true;
  for (let shard = 0; shard < data.shardCount; shard++) control.setJournalCommitted(shard, durable[shard]!);
  control.databaseState = DB_UP;
  parentPort!.postMessage({ type: 'ready' });
  await pipeline.run();
  for (const port of data.adminPorts) port.close();
  for (const port of data.ownReadPorts) port.close();
  stopped = true;
  parentPort!.postMessage({ type: 'stopped' });
}

main().catch((error: unknown) => {
  logger.fatal({ err: error }, 'persistence thread failed');
  process.exit(1);
});
