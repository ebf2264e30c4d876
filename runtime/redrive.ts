// Re-drive of the commands captured (their intake committed, maybe acknowledged) but
// never journaled: each through its shard once, in the order taken, until durable and projected.

import type { MessagePort } from 'node:worker_threads';
import type { PersistenceControl } from '../core/persistence-control.ts';
import type { PersistenceLoaded } from '../persistence/persistence-messages.ts';
import { ask, untilDurable } from './thread-messages.ts';
import { logger } from './venue.ts';

/** `journalDurable` (each shard's last journaled sequence) is moved to each re-drive's last. */
export async function redriveCaptured(redrive: PersistenceLoaded['redrive'], recovery: readonly MessagePort[], journalDurable: number[], control: PersistenceControl): Promise<void> {
  let redriven = 0;
  for (const { shard, slots, count } of redrive) {
    const answer = await ask(recovery[shard]!, { type: 'redrive', slots }, [slots]);
    if (answer.commands !== count) throw new Error(`shard ${shard} re-drove ${answer.commands} of ${count} commands`);
    journalDurable[shard] = answer.sequence;
    redriven += count;
  }
  if (redriven > 0) {
    await untilDurable(journalDurable, control, 're-driven commands did not become durable');
    logger.info({ commands: redriven }, 'captured commands re-driven to a terminal status');
  }
}
