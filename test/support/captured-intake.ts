// Commands "captured but never journaled": the intake records a gateway writes for
// submits, committed in an intake batch of their own commit while their journal batch
// never was (the process died in between). A start re-drives them.

import { crc32 } from 'node:zlib';
import { Opcode, OrderType, Side, TimeInForce } from '../../core/codes.ts';
import { COMMAND_SLOT_BYTES, encodeCommand, slotViews } from '../../core/command-slot.ts';
import { INTAKE_RECORD_BYTES, writeIntake } from '../../core/intake-record.ts';
import { shardOf } from '../../core/shard-map.ts';
import { uuidWords } from '../../core/uuid.ts';
import { DEFAULT_PRINCIPALS_FILE } from '../../gateway/principals.ts';
import { payloadDigest, scopeDigest } from '../../gateway/keys.ts';
import { Principals } from '../../gateway/principals.ts';
import { ROUTE_SUBMIT } from '../../gateway/status-view.ts';
import { startEmbeddedPostgres } from '../../persistence/embedded-postgres.ts';
import { withClient } from './database.ts';

export interface CapturedSubmit {
  /** The submit body as the client sent it (submitBody), its price and quantity whole numbers. */
  submit: Record<string, unknown>;
  token: string;
  clientId: string;
  idempotencyKey: string;
  /** The venue session numbers it was stamped with. */
  runNo?: number;
  sessionNo?: number;
  /** 0 sync-result, 1 captured-ack, 2 stream-ack, 3 accepted-async. */
  processingMode?: number;
  shards: number;
}

/** The intake record of a captured submit. */
export function capturedSubmitRecord(c: CapturedSubmit): Uint8Array {
  const { submit } = c;
  const instrument = submit.instrumentId as string;
  const principal = Principals.load(DEFAULT_PRINCIPALS_FILE).authenticate(`Bearer ${c.token}`)!;
  const slot = new ArrayBuffer(COMMAND_SLOT_BYTES);
  encodeCommand(
    {
      opcode: Opcode.SUBMIT,
      side: submit.side === 'SELL' ? Side.SELL : Side.BUY,
      orderType: OrderType.LIMIT,
      timeInForce: TimeInForce.DAY,
      runNo: c.runNo ?? 1,
      sessionNo: c.sessionNo ?? 1,
      commandId: submit.commandId as string,
      orderId: submit.orderId as string,
      instrumentId: instrument,
      participantId: submit.participantId as string,
      accountId: submit.accountId as string,
      currency: 'USD',
      priceNanos: Number(submit.limitPrice) * 1e9,
      quantityUnits: Number(submit.quantityUnits),
      timestampUs: 0,
    },
    slotViews(slot),
    0,
  );
  const record = new ArrayBuffer(INTAKE_RECORD_BYTES);
  writeIntake({ words: new Int32Array(record), floats: new Float64Array(record), bytes: new Uint8Array(record) }, 0, {
    processingMode: c.processingMode ?? 1,
    route: ROUTE_SUBMIT,
    shard: shardOf(uuidWords(instrument), 0, c.shards),
    principal: principal.index,
    receivedAtUs: Date.now() * 1000,
    commandId: uuidWords(submit.commandId as string),
    scopeDigest: scopeDigest(principal.principalId, c.clientId, c.idempotencyKey),
    payloadHash: payloadDigest(ROUTE_SUBMIT, submit),
    orderId: uuidWords(submit.orderId as string),
    instrumentId: uuidWords(instrument),
    slot: new Uint8Array(slot),
    clientId: c.clientId,
    idempotencyKey: c.idempotencyKey,
    clientOrderId: (submit.clientOrderId as string | undefined) ?? null,
    bodyLength: Buffer.byteLength(JSON.stringify(submit)),
  });
  return new Uint8Array(record);
}

/** Commits captured submits as gateway 0's batch of a commit after every stored one, into the (stopped) venue's storage on `dir`. */
export async function commitCaptured(dir: string, captured: CapturedSubmit[]): Promise<void> {
  const payload = Buffer.concat(captured.map(capturedSubmitRecord));
  const bodies = Buffer.concat(captured.map((c) => Buffer.from(JSON.stringify(c.submit))));
  const database = await startEmbeddedPostgres(dir, () => undefined);
  try {
    await withClient(database.url, (client) =>
      client.query(
        `INSERT INTO runtime.intake_batches (commit_no, gateway_id, record_count, checksum, payload, bodies, bodies_checksum)
         SELECT coalesce(greatest((SELECT max(commit_no) FROM runtime.intake_batches), (SELECT max(commit_no) FROM runtime.journal_batches)), 0) + 1, 0, $1, $2, $3, $4, $5`,
        [captured.length, crc32(payload), payload, bodies, crc32(bodies)],
      ),
    );
  } finally {
    await database.stop();
  }
}
