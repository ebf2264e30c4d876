// Read-side views straight from the books: top of book, depth and the resting
// orders in priority order. Only displayed (LIMIT) quantity and orders are shown
// in top of book and depth; a level holding hidden orders only does not appear.
// These allocate their answers: they serve reads and tests, not matching.

import type { MatchingEngine } from './matching-engine.ts';
import { ORDER_NEXT_WORD } from './order-store.ts';

export const DEPTH_LEVELS_MAX = 50;

export interface LevelView {
  priceNanos: number;
  quantityUnits: number;
  orderCount: number;
}

export interface TopOfBook {
  bid: LevelView | null;
  ask: LevelView | null;
}

/** Up to maxLevels visible levels of one side, best first. */
export function depth(engine: MatchingEngine, book: number, side: number, maxLevels: number): LevelView[] {
  if (!Number.isInteger(maxLevels) || maxLevels < 1 || maxLevels > DEPTH_LEVELS_MAX) {
    throw new RangeError(`levels must be an integer in [1, ${DEPTH_LEVELS_MAX}], got ${maxLevels}`);
  }
  const levels = engine.levels;
  const out: LevelView[] = [];
  levels.walkBestFirst(book * 2 + side, (level) => {
    const quantity = levels.quantity(level, 0);
    if (quantity > 0) {
      out.push({ priceNanos: levels.price(level), quantityUnits: quantity, orderCount: levels.count(level, 0) });
    }
    return out.length < maxLevels;
  });
  return out;
}

export function topOfBook(engine: MatchingEngine, book: number): TopOfBook {
  return { bid: depth(engine, book, 0, 1)[0] ?? null, ask: depth(engine, book, 1, 1)[0] ?? null };
}

/** Every resting order slot of one side in matching priority order. */
export function restingOrders(engine: MatchingEngine, book: number, side: number): number[] {
  const levels = engine.levels;
  const orders = engine.orders;
  const out: number[] = [];
  levels.walkBestFirst(book * 2 + side, (level) => {
    for (let queue = 0; queue <= 1; queue++) {
      for (let slot = levels.head(level, queue); slot >= 0; slot = orders.word(slot, ORDER_NEXT_WORD)) out.push(slot);
    }
    return true;
  });
  return out;
}
