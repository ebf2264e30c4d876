// Request and answer over a MessagePort, with a bound: how a gateway asks the read
// thread (status and replays from storage) and the persistence thread (operator
// rebuilds). Off the order hot path.

import type { MessagePort } from 'node:worker_threads';

/** Omit over each member of a union (a request without its id). */
type WithoutId<T> = T extends unknown ? Omit<T, 'id'> : never;

interface Waiting<T> {
  resolve: (answer: T) => void;
  reject: (error: Error) => void;
  timer: NodeJS.Timeout;
}

export class PortClient<Request extends { id: number }, Answer extends { id: number }> {
  private nextId = 1;
  private readonly waiting = new Map<number, Waiting<Answer>>();

  constructor(
    private readonly port: MessagePort,
    private readonly timeoutMs: number,
  ) {
    port.on('message', (answer: Answer) => {
      const waiting = this.waiting.get(answer.id);
      if (waiting === undefined) return;
      this.waiting.delete(answer.id);
      clearTimeout(waiting.timer);
      waiting.resolve(answer);
    });
  }

  request(request: WithoutId<Request>): Promise<Answer> {
    const id = this.nextId++;
    return new Promise<Answer>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.waiting.delete(id);
        reject(new Error('storage did not answer in time'));
      }, this.timeoutMs);
      this.waiting.set(id, { resolve, reject, timer });
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
