// Gateway side of a result ring: turns result records back into one group per
// command (header + events). Releases records as it reads them, so a command whose
// results outgrow the ring streams through it; an incomplete group waits for the
// next poll.

import { readEvent, readHeader, RESULT_HEADER, RESULT_KIND_BYTE, RESULT_RECORD_BYTES, type ResultEvent, type ResultHeader } from './result-slot.ts';
import { RingConsumer } from './ring.ts';

export type ResultHandler = (header: ResultHeader, events: ResultEvent[]) => void;

export class ResultReader {
  readonly ring: RingConsumer;
  private header: ResultHeader | null = null;
  private events: ResultEvent[] = [];

  constructor(buffer: SharedArrayBuffer) {
    this.ring = new RingConsumer(buffer, RESULT_RECORD_BYTES);
  }

  /** Reads what is available; calls `handler` once per complete command. Returns records read. */
  poll(handler: ResultHandler): number {
    const ring = this.ring;
    const available = ring.available();
    for (let k = 0; k < available; k++) {
      const at = ring.slotOffset(ring.nextIndex + k);
      if (this.header === null) {
        if (ring.bytes[at + RESULT_KIND_BYTE] !== RESULT_HEADER) throw new Error('result ring out of step: expected a header');
        this.header = readHeader(ring, at);
      } else {
        this.events.push(readEvent(ring, at));
      }
      if (this.header.eventCount === this.events.length) {
        const header = this.header;
        const events = this.events;
        this.header = null;
        this.events = [];
        handler(header, events);
      }
    }
    if (available > 0) ring.release(available);
    return available;
  }
}
