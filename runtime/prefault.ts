// Faulting fresh memory in ahead of its use. A new buffer is mapped lazily: the first
// write to each page traps into the kernel, which zeroes it (on these VMs also the
// host's first touch of it): about 3 ms a MiB measured here alone, huge pages or not,
// several times that on two busy cores. Taken during a start they cost the shards' order
// stores 1.6-1.9 s each and the gateways' command stores 0.6 s each in a start after a
// crash with a million resting orders, so the main thread takes them after ready
// (runtime/go-live.ts), a slice per turn of its event loop (docs/decisions/0012-page-faults-after-ready.md).

const PAGE_WORDS = 4096 / 4;
/**
 * What one turn of the event loop faults in: about 3 ms here alone, so that the thread's
 * other work waits little (at 4 MiB a turn, a test counting the main thread's saves of
 * the key filters right after its start saw fewer of them in 2 of 4 runs).
 */
export const PREFAULT_TURN_BYTES = 1 << 20;

/**
 * Faults in the pages of `words` between two word offsets for writing, and changes
 * nothing: an atomic compare-exchange of 0 with 0 on each page's first word leaves any
 * value another thread wrote there (before or meanwhile) as it is.
 */
export function faultPages(words: Int32Array, fromWord = 0, toWord = words.length): void {
  for (let i = fromWord - (fromWord % PAGE_WORDS); i < toWord; i += PAGE_WORDS) Atomics.compareExchange(words, i, 0, 0);
}

export interface Prefaulting {
  /** Settles when every page was faulted in, or the work was stopped: the milliseconds it ran. */
  done: Promise<number>;
  /** Stops after the current turn (a venue that stops: runtime/graceful-stop.ts). */
  stop(): void;
}

/**
 * Faults in every page of `buffers`, in their order, `turnBytes` per turn of the event
 * loop (setImmediate), beside whatever else the thread does. Safe while other threads
 * use the buffers (faultPages).
 */
export function prefaultInTurns(buffers: readonly SharedArrayBuffer[], turnBytes = PREFAULT_TURN_BYTES): Prefaulting {
  const started = performance.now();
  let stopped = false;
  const done = new Promise<number>((resolve) => {
    let index = 0;
    let at = 0;
    const turn = () => {
      let budget = turnBytes >> 2;
      while (!stopped && index < buffers.length && budget > 0) {
        const words = new Int32Array(buffers[index]!, 0, buffers[index]!.byteLength >> 2);
        const to = Math.min(words.length, at + budget);
        faultPages(words, at, to);
        budget -= to - at;
        at = to;
        if (at >= words.length) {
          index++;
          at = 0;
        }
      }
      if (stopped || index >= buffers.length) resolve(performance.now() - started);
      else setImmediate(turn);
    };
    setImmediate(turn);
  });
  return { done, stop: () => void (stopped = true) };
}
