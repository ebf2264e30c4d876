// Request and answer over a MessagePort, with bounds (time per request, requests
// waiting at once): how a gateway asks the read thread (reads, status and replays from
// storage) and the persistence thread (operator requests). Off the order hot path.

import type { MessagePort } from 'node:worker_threads';
import type { StorageFailure } from '../core/storage-protocol.ts';
import { serverErrorBody } from './error-catalog.ts';

/** Omit over each member of a union (a request without its id). */
export type WithoutId<T> = T extends unknown ? Omit<T, 'id'> : never;

interface Waiting<T> {
  resolve: (answer: T) => void;
  reject: (error: Error) => void;
  timer: NodeJS.Timeout;
}

/** Thrown when `maxWaiting` requests already wait: the route answers 503 OVERLOADED. */
export class PortFullError extends Error {}

/** A storage thread's failure answer, thrown: its message is the venue's own, its cause goes to the log. */
export class StorageFailed extends Error {
  constructor(readonly failure: StorageFailure) {
    super(failure.message);
  }
}

/** The 503 body for a read that storage did not answer: OVERLOADED when too many wait already, else UNAVAILABLE (its cause logged). */
export function storageError(error: Error): string {
  if (error instanceof PortFullError) return serverErrorBody('OVERLOADED', `too many reads are waiting (${error.message}); retry later`);
  if (error instanceof StorageFailed) return serverErrorBody('UNAVAILABLE', error.failure.message, error.failure.cause);
  return serverErrorBody('UNAVAILABLE', 'storage did not answer; retry shortly', error);
}

export class PortClient<Request extends { id: number }, Answer extends { id: number }> {
  private nextId = 1;
  private readonly waiting = new Map<number, Waiting<Answer>>();

  /** `onDepth` hears the number of waiting requests whenever it changes (the queue's high-water mark). */
  constructor(
    private readonly port: MessagePort,
    private readonly timeoutMs: number,
    readonly maxWaiting: number,
    private readonly onDepth: (depth: number) => void = () => undefined,
  ) {
    port.on('message', (answer: Answer) => {
      const waiting = this.waiting.get(answer.id);
      if (waiting === undefined) return;
      this.waiting.delete(answer.id);
      this.onDepth(this.waiting.size);
      clearTimeout(waiting.timer);
      waiting.resolve(answer);
    });
  }

  /** `timeoutMs`: this request's bound, when it is not the client's. */
  request(request: WithoutId<Request>, timeoutMs = this.timeoutMs): Promise<Answer> {
    if (this.waiting.size >= this.maxWaiting) return Promise.reject(new PortFullError(`${this.maxWaiting} requests are waiting already`));
    const id = this.nextId++;
    return new Promise<Answer>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.waiting.delete(id);
        this.onDepth(this.waiting.size);
        reject(new Error('storage did not answer in time'));
      }, timeoutMs);
      this.waiting.set(id, { resolve, reject, timer });
      this.onDepth(this.waiting.size);
      this.port.postMessage({ ...request, id });
    });
  }

  close(): void {
    for (const waiting of this.waiting.values()) {
      clearTimeout(waiting.timer);
      waiting.reject(new Error('closing'));
    }
    this.waiting.clear();
    this.port.close();
  }
}
