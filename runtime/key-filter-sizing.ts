// The key filters' size, chosen at start before the venue's memory is allocated: big
// enough for every stored key with room for as many again (core/key-filter.ts).

import type pg from 'pg';
import { filterBitsFor } from '../core/key-filter.ts';
import type { VenueConfig } from '../core/config.ts';
import { savedFilterBits } from '../persistence/key-filter-snapshot.ts';
import { storedKeyEstimate } from '../persistence/recovery.ts';
import { logger } from './venue.ts';

/**
 * Sized for what storage holds now, at half their rated load, and never smaller than the
 * filters the last graceful stop saved (up to the maximum), so that an estimate a little
 * lower than the last start's does not cost a scan.
 */
export async function sizeKeyFilters(client: pg.ClientBase, config: VenueConfig): Promise<ReturnType<typeof filterBitsFor>> {
  const storedKeys = await storedKeyEstimate(client);
  const saved = config.dataDir === '' ? null : savedFilterBits(config.dataDir);
  const floorBits = Math.max(config.keyFilterBits, Math.min(saved ?? 0, config.keyFilterBitsMax));
  const filterBits = filterBitsFor(storedKeys, floorBits, config.keyFilterBitsMax);
  if (filterBits.bits !== config.keyFilterBits || filterBits.short) {
    logger[filterBits.short ? 'warn' : 'info'](
      { storedKeys, keyFilterBits: filterBits.bits, savedBits: saved, KEY_FILTER_BITS: config.keyFilterBits, KEY_FILTER_BITS_MAX: config.keyFilterBitsMax },
      filterBits.short
        ? 'the key filters are at KEY_FILTER_BITS_MAX and rated for less than twice the stored keys: past their rated load more new commands are checked in storage'
        : 'key filters sized for the stored keys at half their rated load (and no smaller than those the last stop saved)',
    );
  }
  return filterBits;
}
