// The records the parts of the order flow hand one another: the request as routed, the
// slot command it becomes, the Pending wait for its shard's result, the shared tables.

import type { KeyFilter } from '../core/key-filter.ts';
import type { ResultEvent, ResultHeader } from '../core/result-slot.ts';
import type { SharedKeyTable } from '../core/shared-key-table.ts';
import type { AdminAnswer, AdminRequest, OwnReadAnswer, OwnReadRequest, ReadAnswer, ReadRequest } from '../core/storage-protocol.ts';
import { formatUuid } from '../core/uuid.ts';
import type { Reply } from './answers.ts';
import type { CommandSnapshot, CommandStore } from './command-store.ts';
import type { ProcessingMode } from '../core/config.ts';
import type { Principal } from './principals.ts';
import type { PortClient } from './storage-client.ts';
import type { CancelByClientOrderBody, SubmitBody, TargetBody } from './validation.ts';
import { attachForgotten, attachTable, refGateway, refIndex, type VenueMemory } from './venue-memory.ts';

export interface OrderRequest {
  route: number;
  principal: Principal;
  clientId: string;
  idempotencyKey: string;
  mode: ProcessingMode;
  body: SubmitBody | TargetBody | CancelByClientOrderBody;
  /** The body's JSON text as it arrived and was validated (the audit trail keeps it), and its bytes of UTF-8. */
  raw: string;
  rawBytes: number;
  priceNanos: number;
  quantityUnits: number;
  /** When the command arrived whole (its body read), µs since the epoch: its intake record's and its duration's start. */
  receivedAtUs: number;
  reply: Reply;
}

/** Everything needed to write one command slot. `opcode` wins over the opcode packed in `header`. */
export interface SlotCommand {
  opcode: number;
  header: number;
  runNo: number;
  sessionNo: number;
  commandId: Int32Array;
  orderId: Int32Array;
  instrumentId: Int32Array;
  participantId: Int32Array;
  accountId: Int32Array;
  currency: number;
  priceNanos: number;
  quantityUnits: number;
  argument: number;
}

/** A command (or query) waiting for its shard's result: a class, so every Pending has one shape wherever it was made. */
export class Pending {
  token = 0;
  reply: Reply | null;
  recordIndex: number;
  mode: number;
  shard: number;
  instrumentId: string;
  currency: string;
  commandId: string;
  /** What to undo or keep when the result comes: the claims this command made. */
  orderDirectoryKey: Int32Array | null = null;
  clientOrderKey: Int32Array | null = null;
  rejectedOrderIdNull = false;
  /** Set for a state query: called with the order's state instead of rendering. */
  onQuery: ((state: number) => void) | null;
  /** Set for a command of the venue's own (the session roll's EXPIRE): called with its result instead of rendering. */
  onResult: ((header: ResultHeader, events: ResultEvent[]) => void) | null;
  /** What the command log records of it (null for queries), and its intake position once written. */
  intake: IntakeInfo | null;
  intakeCount = 0;
  /** When its answer stops waiting (503, the command goes on); whether the client was told so. */
  deadlineMs: number;
  late = false;

  constructor(
    reply: Reply | null,
    recordIndex: number,
    mode: number,
    shard: number,
    instrumentId: string,
    currency: string,
    commandId: string,
    intake: IntakeInfo | null,
    deadlineMs: number,
    onQuery: ((state: number) => void) | null,
    onResult: ((header: ResultHeader, events: ResultEvent[]) => void) | null,
  ) {
    this.reply = reply;
    this.recordIndex = recordIndex;
    this.mode = mode;
    this.shard = shard;
    this.instrumentId = instrumentId;
    this.currency = currency;
    this.commandId = commandId;
    this.intake = intake;
    this.deadlineMs = deadlineMs;
    this.onQuery = onQuery;
    this.onResult = onResult;
  }
}

/** The request-level facts the command log keeps. */
export interface IntakeInfo {
  route: number;
  mode: number;
  principal: number;
  scopeDigest: Uint8Array;
  payloadHash: Uint8Array;
  clientId: string;
  idempotencyKey: string;
  clientOrderId: string | null;
  receivedAtUs: number;
  /** The body's JSON text, and its length in bytes of UTF-8. */
  raw: string;
  rawBytes: number;
}

/** The order a cancel or modify names, and the context it quotes, as words and session numbers. */
export interface OrderContext {
  orderId: Int32Array;
  instrumentId: Int32Array;
  participantId: Int32Array;
  accountId: Int32Array;
  runNo: number;
  sessionNo: number;
}

/** The venue's shared claim tables as this gateway attached them, and the filters of the keys each forgot. */
export interface ClaimTables {
  idempotency: SharedKeyTable;
  commandIds: SharedKeyTable;
  orderDirectory: SharedKeyTable;
  clientOrders: SharedKeyTable;
  /** Keys the idempotency and commandId tables forgot, or that storage held at start. */
  forgottenScopes: KeyFilter;
  forgottenCommandIds: KeyFilter;
  /** OrderIds the order directory forgot, or that storage held at start. */
  forgottenOrders: KeyFilter;
  /** (participant, clientOrderId) claims the clientOrderId table forgot, or that storage held at start. */
  forgottenClientOrders: KeyFilter;
}

export function attachClaimTables(memory: VenueMemory): ClaimTables {
  return {
    idempotency: attachTable(memory, 'idempotency'),
    commandIds: attachTable(memory, 'commandIds'),
    orderDirectory: attachTable(memory, 'orderDirectory'),
    clientOrders: attachTable(memory, 'clientOrders'),
    forgottenScopes: attachForgotten(memory, 'idempotency'),
    forgottenCommandIds: attachForgotten(memory, 'commandIds'),
    forgottenOrders: attachForgotten(memory, 'orderDirectory'),
    forgottenClientOrders: attachForgotten(memory, 'clientOrders'),
  };
}

/** The ports to the storage threads: the read thread, the persistence thread's operator requests and its own-order model. */
export type ReadClient = PortClient<ReadRequest, ReadAnswer>;
export type AdminClient = PortClient<AdminRequest, AdminAnswer>;
export type OwnReadClient = PortClient<OwnReadRequest, OwnReadAnswer>;

export const ZERO_UUID = new Int32Array(4);

/** A state query's or a venue's own command's wait for its shard's result: no client command behind it (no reply, no record, no intake). */
export function ownPending(shard: number, deadlineMs: number, handlers: Pick<Partial<Pending>, 'onQuery' | 'onResult'>): Pending {
  return new Pending(null, -1, 0, shard, '', '', '', null, deadlineMs, handlers.onQuery ?? null, handlers.onResult ?? null);
}

/** A client command's wait for its shard's result, before its slot is written. */
export function newPending(request: OrderRequest, intake: IntakeInfo, index: number, shard: number, instrumentId: string, currency: string, commandId: string): Pending {
  return new Pending(request.reply, index, intake.mode, shard, instrumentId, currency, commandId, intake, 0, null, null);
}

/** The command record a reference names, while a gateway still holds it (null once it left memory). */
export function snapshotOf(stores: CommandStore[], ref: number, commandId?: Int32Array): CommandSnapshot | null {
  const store = stores[refGateway(ref)];
  return store === undefined ? null : store.read(refIndex(ref), commandId);
}

export function sameWords(a: Int32Array, b: Int32Array): boolean {
  return a[0] === b[0] && a[1] === b[1] && a[2] === b[2] && a[3] === b[3];
}

export function formatWords(words: Int32Array): string {
  return formatUuid(words, 0);
}
