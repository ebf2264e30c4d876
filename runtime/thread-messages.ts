// How the main thread waits on its threads during a start and a stop: one message of a
// worker, a shard's recovery port's answers, and the journal becoming durable and projected.

import type { MessagePort, Worker } from 'node:worker_threads';
import type { PersistenceControl } from '../core/persistence-control.ts';
import type { RecoveryAnswer, RecoveryRequest } from '../core/shard-messages.ts';

/** How long a step of the recovery may wait for the threads before the start fails. */
const RECOVERY_TIMEOUT_MS = 300_000;

export type RecoveryReply = Exclude<RecoveryAnswer, { type: 'failed' }>;

/** The first message of `worker` that `accept` takes; rejects if the thread fails or exits first. */
export function once<T>(worker: Worker, accept: (message: T) => boolean, what: string): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const onMessage = (message: T) => {
      if (!accept(message)) return;
      cleanup();
      resolve(message);
    };
    const onError = (error: Error) => {
      cleanup();
      reject(new Error(`${what}: ${error.message}`));
    };
    const onExit = (code: number) => {
      cleanup();
      reject(new Error(`${what}: the thread exited with code ${code}`));
    };
    const cleanup = () => {
      worker.off('message', onMessage);
      worker.off('error', onError);
      worker.off('exit', onExit);
    };
    worker.on('message', onMessage);
    worker.on('error', onError);
    worker.on('exit', onExit);
  });
}

/**
 * A shard's recovery port asked several requests at a time: answers come in the order of
 * the requests (the shard answers each before it reads the next), so each goes to the
 * oldest request waiting. `close` stops listening (ask() may then be used again).
 */
export function pipelinedAsker(port: MessagePort): { ask: (request: RecoveryRequest, transfer?: ArrayBuffer[]) => Promise<RecoveryReply>; close: () => void } {
  const waiting: { resolve: (answer: RecoveryReply) => void; reject: (error: Error) => void }[] = [];
  const onMessage = (answer: RecoveryAnswer) => {
    const waiter = waiting.shift();
    if (waiter === undefined) return;
    if (answer.type === 'failed') waiter.reject(new Error(answer.message));
    else waiter.resolve(answer);
  };
  port.on('message', onMessage);
  return {
    ask: (request, transfer = []) =>
      new Promise((resolve, reject) => {
        waiting.push({ resolve, reject });
        port.postMessage(request, transfer);
      }),
    close: () => port.off('message', onMessage),
  };
}

/** One request to a shard's recovery port, one answer. */
export function ask(port: MessagePort, request: RecoveryRequest, transfer: ArrayBuffer[] = []): Promise<RecoveryReply> {
  return new Promise((resolve, reject) => {
    port.once('message', (answer: RecoveryAnswer) => (answer.type === 'failed' ? reject(new Error(answer.message)) : resolve(answer)));
    port.postMessage(request, transfer);
  });
}

export async function until(condition: () => boolean, what: string): Promise<void> {
  const deadline = Date.now() + RECOVERY_TIMEOUT_MS;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`recovery timed out: ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

/** Until every shard's journal up to `journalDurable` is committed and projected. */
export function untilDurable(journalDurable: readonly number[], control: PersistenceControl, what: string): Promise<void> {
  return until(() => journalDurable.every((sequence, shard) => control.journalCommitted(shard) >= sequence && control.projected(shard) >= sequence), what);
}
