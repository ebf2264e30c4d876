// The session roll's expiry on the shards: EXPIRE commands on every shard's stream, each
// from where the last one's scan ended, resolved once they are on the durable journal.

import { packHeader } from '../core/command-slot.ts';
import { EVENT_ACCEPTED, EXPIRY_SCAN_SLOTS, OPCODE_EXPIRE, rejectName } from '../core/codes.ts';
import { expiryCommandId, expiryProgress } from '../core/session-expiry.ts';
import type { CommandDispatch } from './command-dispatch.ts';
import type { DurabilityGate } from './durability.ts';
import { ownPending, ZERO_UUID } from './flow-records.ts';

/**
 * The session roll's expiry (gateway/session-roll.ts): on every shard at once, EXPIRE
 * commands (core/session-expiry.ts) one at a time, each from where the last one's scan
 * ended, until the shard reports no order slot left; resolves with the orders expired
 * once every one of those commands is on the durable journal. Rejects at `deadlineMs`
 * (a shard or storage that does not keep up) or on a shard's refusal; what was sent is
 * sequenced all the same, and a start finishes an expiry left unfinished.
 */
export function expireSession(dispatch: CommandDispatch, durability: DurabilityGate, floor: number, deadlineMs: number): Promise<number> {
  return new Promise((resolve, reject) => {
    let expired = 0;
    let shardsLeft = dispatch.shardCount;
    let settled = false;
    const timer = setTimeout(() => fail('the shards or storage did not finish it in time'), Math.max(0, deadlineMs - Date.now()));
    const fail = (why: string) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      reject(new Error(`the expiry of the ended session's DAY orders did not complete: ${why}`));
    };
    const send = (shard: number, first: number) => {
      if (settled) return;
      if (dispatch.ringFull(shard)) {
        setTimeout(() => send(shard, first), 1); // the ring is full: the order flow's commands go first
        return;
      }
      const pending = ownPending(shard, deadlineMs, {
        onResult: (_header, events) => {
          const leading = events[0]!;
          if (leading.kind !== EVENT_ACCEPTED) return fail(`shard ${shard} refused it (${rejectName(leading.code)})`);
          const progress = expiryProgress(leading);
          expired += progress.expired;
          if (progress.slotsLeft > 0) return send(shard, first + EXPIRY_SCAN_SLOTS);
          durability.wait(
            0,
            shard,
            events[events.length - 1]!.sequence,
            deadlineMs,
            () => {
              if (--shardsLeft > 0 || settled) return;
              settled = true;
              clearTimeout(timer);
              resolve(expired);
            },
            () => fail('storage did not confirm it in time'),
          );
        },
      });
      dispatch.writeOwn(pending, {
        opcode: OPCODE_EXPIRE,
        header: packHeader(OPCODE_EXPIRE, 0, 0, 0),
        runNo: 0,
        sessionNo: floor,
        commandId: expiryCommandId(floor, shard, first),
        orderId: ZERO_UUID,
        instrumentId: ZERO_UUID,
        participantId: ZERO_UUID,
        accountId: ZERO_UUID,
        currency: 0,
        priceNanos: 0,
        quantityUnits: 0,
        argument: first,
      });
    };
    for (let shard = 0; shard < dispatch.shardCount; shard++) send(shard, 0);
  });
}
