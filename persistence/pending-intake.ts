// Intake records waiting for their command's outcome on the journal, by command id:
// added with each commit, reloaded at start, and what recovery re-drives and the audit
// trail shows of commands taken but not yet journaled.

import { crc32 } from 'node:zlib';
import type pg from 'pg';
import { COMMAND_SLOT_BYTES } from '../core/command-slot.ts';
import { INTAKE_COMMAND_ID_BYTE, INTAKE_FLAGS_WORD, INTAKE_HAS_ORDER_ID, INTAKE_ORDER_ID_BYTE, INTAKE_RECORD_BYTES, INTAKE_SHARD_WORD, INTAKE_SLOT_BYTE, storedIntake } from '../core/intake-record.ts';
import type { AuditRecord } from '../core/storage-protocol.ts';
import { formatUuid, idKey as keyOf, parseUuidInto } from '../core/uuid.ts';
import { auditOf } from './audit.ts';

/** An intake record waiting for its command's outcome. */
export interface PendingIntake {
  commitNo: number;
  /** The gateway whose intake batch of that commit holds it, and its place there: where the audit trail finds its text. */
  gateway: number;
  index: number;
  /** The batch's records are `stride` bytes each; `bodies` their JSON texts (null: a batch stored before texts were kept). */
  stride: number;
  bodies: Uint8Array | null;
  bytes: Uint8Array;
  words: Int32Array;
  floats: Float64Array;
  at: number;
}

/** Re-driving: per shard, the slots of commands taken but never sequenced, in the order taken. */
export interface RedriveShard {
  shard: number;
  count: number;
  slots: ArrayBuffer;
}

const SCRATCH = new Int32Array(4);

/** The four words of 16 big-endian bytes (an intake record's ids), for keyOf. */
export function wordsOfBytes(bytes: Uint8Array, at: number, target: Int32Array): Int32Array {
  for (let k = 0; k < 4; k++) {
    const b = at + k * 4;
    target[k] = (bytes[b]! << 24) | (bytes[b + 1]! << 16) | (bytes[b + 2]! << 8) | bytes[b + 3]!;
  }
  return target;
}

export class PendingIntakes {
  /** By keyOf(commandId), in the order taken (a Map keeps insertion order: the oldest first). */
  private readonly byCommand = new Map<string, PendingIntake>();

  get size(): number {
    return this.byCommand.size;
  }

  /** The commit of the oldest record still waiting, or null when none waits. */
  oldestCommit(): number | null {
    const oldest = this.byCommand.values().next();
    return oldest.done ? null : oldest.value.commitNo;
  }

  /** The record of the command with this key, no longer pending; undefined when none waits. */
  take(key: string): PendingIntake | undefined {
    const intake = this.byCommand.get(key);
    if (intake !== undefined) this.byCommand.delete(key);
    return intake;
  }

  /** The records of one gateway's intake batch of a commit, each waiting for its outcome. */
  add(commitNo: number, gateway: number, payload: Buffer, bodies: Uint8Array | null): void {
    const bytes = payload;
    const words = new Int32Array(bytes.buffer, bytes.byteOffset, bytes.byteLength >> 2);
    const floats = new Float64Array(bytes.buffer, bytes.byteOffset, bytes.byteLength >> 3);
    for (let at = 0, index = 0; at < bytes.byteLength; at += INTAKE_RECORD_BYTES, index++) {
      this.byCommand.set(keyOf(wordsOfBytes(bytes, at + INTAKE_COMMAND_ID_BYTE, SCRATCH), 0), {
        commitNo,
        gateway,
        index,
        stride: INTAKE_RECORD_BYTES,
        bodies,
        bytes,
        words,
        floats,
        at,
      });
    }
  }

  /**
   * Start-up: the intake records beyond the intake watermark (`after`) whose commands have
   * no command_log row yet become pending again (their outcomes are on the journal beyond
   * the journal watermarks, or nowhere: then they are re-driven). Returns how many.
   */
  async load(client: pg.ClientBase, after: number): Promise<number> {
    this.byCommand.clear();
    for (;;) {
      const page = await client.query<{ commit_no: string; gateway_id: number; checksum: string; record_count: number; payload: Buffer; bodies: Buffer | null; layout: number | null }>(
        'SELECT commit_no, gateway_id, checksum, record_count, payload, bodies, layout FROM runtime.intake_batches WHERE commit_no > $1 ORDER BY commit_no, gateway_id LIMIT 64',
        [after],
      );
      if (page.rows.length === 0) break;
      // A page ends on a whole commit: the next one starts after the last commit seen in full.
      const lastCommit = Number(page.rows[page.rows.length - 1]!.commit_no);
      const rows = page.rows.length === 64 ? page.rows.filter((row) => Number(row.commit_no) < lastCommit) : page.rows;
      if (rows.length === 0) throw new Error(`an intake commit has more than 63 gateway rows (commit ${lastCommit})`);
      const found: PendingIntake[] = [];
      for (const row of rows) {
        if (crc32(row.payload) !== Number(row.checksum)) throw new Error(`the intake batch of commit ${row.commit_no} fails its checksum`);
        const records = storedIntake(row.payload, row.record_count, row.layout);
        const bytes = new Uint8Array(records.bytes); // a copy, aligned for the word and float views
        const words = new Int32Array(bytes.buffer, 0, bytes.byteLength >> 2);
        const floats = new Float64Array(bytes.buffer, 0, bytes.byteLength >> 3);
        const stride = records.stride;
        for (let at = 0; at < bytes.byteLength; at += stride) {
          found.push({ commitNo: Number(row.commit_no), gateway: row.gateway_id, index: at / stride, stride, bodies: row.bodies, bytes, words, floats, at });
        }
      }
      const ids = found.map((entry) => formatUuid(wordsOfBytes(entry.bytes, entry.at + INTAKE_COMMAND_ID_BYTE, SCRATCH), 0));
      const done = new Set((await client.query<{ id: string }>('SELECT command_id AS id FROM runtime.command_log WHERE command_id = ANY($1::uuid[])', [ids])).rows.map((row) => row.id));
      found.forEach((entry, k) => {
        if (!done.has(ids[k]!)) this.byCommand.set(keyOf(wordsOfBytes(entry.bytes, entry.at + INTAKE_COMMAND_ID_BYTE, SCRATCH), 0), entry);
      });
      after = Number(rows[rows.length - 1]!.commit_no);
    }
    return this.byCommand.size;
  }

  /**
   * The commandIds of the commands still pending (taken, not in the command log), and their
   * orderIds: what the start puts in storage after it read storage (the projections' catch-up,
   * then the re-drive), for the gateways' tables to learn by id.
   */
  ids(): { commandIds: string[]; orderIds: string[] } {
    const commandIds: string[] = [];
    const orderIds: string[] = [];
    for (const entry of this.byCommand.values()) {
      commandIds.push(formatUuid(wordsOfBytes(entry.bytes, entry.at + INTAKE_COMMAND_ID_BYTE, SCRATCH), 0));
      if ((entry.words[(entry.at >> 2) + INTAKE_FLAGS_WORD]! & INTAKE_HAS_ORDER_ID) !== 0) orderIds.push(formatUuid(wordsOfBytes(entry.bytes, entry.at + INTAKE_ORDER_ID_BYTE, SCRATCH), 0));
    }
    return { commandIds, orderIds };
  }

  /** What is still pending, per shard in the order taken: to be re-driven (recovery). */
  redrivePlan(): RedriveShard[] {
    const byShard = new Map<number, PendingIntake[]>();
    for (const entry of this.byCommand.values()) {
      const shard = entry.words[(entry.at >> 2) + INTAKE_SHARD_WORD]!;
      const list = byShard.get(shard) ?? [];
      list.push(entry);
      byShard.set(shard, list);
    }
    return [...byShard].map(([shard, entries]) => {
      const slots = new Uint8Array(entries.length * COMMAND_SLOT_BYTES);
      entries.forEach((entry, k) => slots.set(entry.bytes.subarray(entry.at + INTAKE_SLOT_BYTE, entry.at + INTAKE_SLOT_BYTE + COMMAND_SLOT_BYTES), k * COMMAND_SLOT_BYTES));
      return { shard, count: entries.length, slots: slots.buffer };
    });
  }

  /** The audit record of a command taken but not yet on the journal, or null (none such pending). */
  audit(commandId: string): AuditRecord | null {
    const words = new Int32Array(4);
    if (!parseUuidInto(commandId, words, 0)) return null;
    const entry = this.byCommand.get(keyOf(words, 0));
    return entry === undefined ? null : auditOf(entry.bytes, entry.stride, entry.bodies, entry.index);
  }
}
