// What the matching engine's command handlers (core/engine-events.ts, core/matching-loop.ts,
// core/cancel-modify.ts, core/expire-orders.ts) work on: the engine's parts and its sequence.
// MatchingEngine is the one object ever passed, so every access stays monomorphic.

import type { EventBuffer } from './event-buffer.ts';
import type { OrderStore } from './order-store.ts';
import type { OwnerRegistry } from './owner-registry.ts';
import type { PriceLevels } from './price-levels.ts';

export interface EngineParts {
  readonly orders: OrderStore;
  readonly levels: PriceLevels;
  readonly owners: OwnerRegistry;
  readonly events: EventBuffer;
  /** instrumentId words per book. */
  readonly instrument: Int32Array;
  /** Sequence of the last event issued; every event takes the next one. */
  sequence: number;
  /** Orders stamped with a session below it belong to ended sessions (only ever raised). */
  sessionFloor: number;
}
