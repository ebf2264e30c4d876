// The session roll's commands to a shard (POST /admin/v1/venue/sessions): EXPIRE, which
// raises the shard's session floor and expires the resting DAY orders stamped with a
// session below it, over EXPIRY_SCAN_SLOTS order slots at a time (a bounded command:
// at most that many events), from slot `first` (core/expire-orders.ts, expire()).
// The sender goes on from first + EXPIRY_SCAN_SLOTS while the leading event says slots
// are left: the live roll from a gateway (gateway/session-roll.ts), and the start after a
// roll the venue stopped in the middle of (runtime/shard-thread.ts).
//
// An EXPIRE command is nobody's client command: it has no intake record and no
// command_log row; its commandId only marks it in the journal: the tag, the floor, the
// shard and the first slot.

import { COMMAND_ARGUMENT_WORD, COMMAND_HEADER_WORD, COMMAND_ID_WORD, COMMAND_SESSION_WORD, COMMAND_SLOT_BYTES, packHeader } from './command-slot.ts';
import { OPCODE_EXPIRE } from './codes.ts';
import type { ResultEvent } from './result-slot.ts';

/** The first word of an EXPIRE command's commandId ("EXPR"). */
const EXPIRY_COMMAND_TAG = 0x45585052;

export function expiryCommandId(floor: number, shard: number, first: number): Int32Array {
  return Int32Array.of(EXPIRY_COMMAND_TAG, floor, shard, first);
}

/** An EXPIRE command as a whole slot (the start's re-drive path runs slots). */
export function expirySlot(floor: number, shard: number, first: number): Uint8Array {
  const bytes = new Uint8Array(COMMAND_SLOT_BYTES);
  const words = new Int32Array(bytes.buffer);
  words[COMMAND_HEADER_WORD] = packHeader(OPCODE_EXPIRE, 0, 0, 0);
  words[COMMAND_SESSION_WORD] = floor;
  words[COMMAND_ARGUMENT_WORD] = first;
  words.set(expiryCommandId(floor, shard, first), COMMAND_ID_WORD);
  return bytes;
}

/** What an EXPIRE command's leading event reports: the orders it expired and the order slots left to scan after it. */
export function expiryProgress(leading: Pick<ResultEvent, 'quantity' | 'code'>): { expired: number; slotsLeft: number } {
  return { expired: leading.quantity, slotsLeft: leading.code };
}
