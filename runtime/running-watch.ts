// What the main thread watches from the moment the gateways listen: the open connections
// against their bound, the key filters' load, and whether a save of the key filters is due.

import type { Worker } from 'node:worker_threads';
import { ratedLoadWatch } from '../core/key-filter.ts';
import { QUEUE_SLOTS, QueueMarks } from '../core/queue-marks.ts';
import type { VenueConfig } from '../core/config.ts';
import { ConnectionGuard, fileLimit, GUARD_INTERVAL_MS, openFiles } from '../gateway/connection-guard.ts';
import { namedKeyFilters, VENUE_CONNECTION_LIMIT_WORD, type VenueMemory } from '../gateway/venue-memory.ts';
import { logger, type Venue } from './venue.ts';

/**
 * The bound on open connections (gateway/connection-guard.ts): counted from the files open
 * now, before the gateways listen; the gateways stop and start accepting when it says.
 */
export function connectionGuard(config: VenueConfig, memory: VenueMemory, gateways: readonly Worker[]): ConnectionGuard {
  const marks = new QueueMarks(memory.queueMarks);
  const slot = QUEUE_SLOTS.connections(config.gatewayThreads);
  const guard = new ConnectionGuard(
    { maxConnections: config.maxConnections, fileLimit: fileLimit(), baseline: openFiles() },
    (accepting, connections) => {
      if (accepting) logger.info({ connections, limit: guard.limit }, 'open connections fell below the limit: accepting new connections again');
      else logger.warn({ connections, limit: guard.limit }, 'open connections reached the limit: new connections are refused until some close');
      for (const worker of gateways) worker.postMessage({ type: 'accepting', accepting });
    },
    (connections) => marks.note(slot, connections),
  );
  Atomics.store(new Int32Array(memory.venueControl), VENUE_CONNECTION_LIMIT_WORD, guard.limit);
  return guard;
}

/** Every GUARD_INTERVAL_MS until the venue drains (venue.guardTimer). */
export function watchWhileRunning(venue: Venue, guard: ConnectionGuard): NodeJS.Timeout {
  // Past its rated load a key filter's false positives grow (core/key-filter.ts), and each
  // sends a new command to a storage check: said once per filter, when it happens (at the
  // start's scan of storage or later, as the tables forget keys).
  const filterWatch = ratedLoadWatch(namedKeyFilters(venue.memory), (filter, added, ratedKeys) =>
    logger.warn(
      { filter, added, ratedKeys },
      'a key filter holds more keys than it is rated for: more new commands are checked in storage (each waits for the projections); the next start sizes the filters for the stored keys, up to KEY_FILTER_BITS_MAX',
    ),
  );
  return setInterval(() => {
    guard.update(openFiles());
    filterWatch();
    venue.keyFilterCheckpoints?.poll();
  }, GUARD_INTERVAL_MS);
}
