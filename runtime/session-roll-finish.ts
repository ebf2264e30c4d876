// A session roll the venue stopped in the middle of (or before its expiry began) is
// finished before ready: each shard expires the DAY orders of the sessions that ended.

import type { MessagePort } from 'node:worker_threads';
import type { PersistenceControl } from '../core/persistence-control.ts';
import type { NumberedSession } from '../gateway/sessions.ts';
import { ask, untilDurable } from './thread-messages.ts';
import { logger } from './venue.ts';

/** `journalDurable` (each shard's last journaled sequence) is moved past the expiries. */
export async function finishSessionRoll(active: NumberedSession, recovery: readonly MessagePort[], journalDurable: number[], control: PersistenceControl): Promise<void> {
  const expiries = await Promise.all(recovery.map((port) => ask(port, { type: 'expire', floor: active.sessionNo })));
  if (expiries.some((answer) => answer.type !== 'expired')) throw new Error('a shard answered the expiry with something else');
  if (expiries.some((answer) => answer.commands > 0)) {
    expiries.forEach((answer, shard) => {
      if (answer.commands > 0) journalDurable[shard] = answer.sequence;
    });
    await untilDurable(journalDurable, control, "the ended session's expiry did not become durable");
    logger.info({ orders: expiries.map((answer) => (answer.type === 'expired' ? answer.orders : 0)), session: active }, 'the DAY orders of ended sessions expired (a roll the venue stopped during)');
  }
}
