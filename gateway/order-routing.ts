// Resolves what an order route needs before its slot is written: the order directory and
// the clientOrderId claims (storage decides where the tables may have forgotten), the shard.

import { packCurrency, packHeader } from '../core/command-slot.ts';
import {
  OPCODE_CANCEL,
  OPCODE_MODIFY,
  OPCODE_REJECT,
  OPCODE_SUBMIT,
  ORDER_TYPE_LIMIT,
  ORDER_TYPE_LIMIT_HIDDEN,
  rejectCodeOf,
  SIDE_BUY,
  SIDE_SELL,
  STATE_OPEN,
  STATE_PARTIALLY_FILLED,
  TIME_IN_FORCE_DAY,
  TIME_IN_FORCE_IOC,
} from '../core/codes.ts';
import type { KeyFilter } from '../core/key-filter.ts';
import { shardOf } from '../core/shard-map.ts';
import { NOT_FOUND, type SharedKeyTable } from '../core/shared-key-table.ts';
import type { ReadAnswer, ReadRequest, StoredClientOrder } from '../core/storage-protocol.ts';
import { formatUuid, UuidWordsCache, uuidWords } from '../core/uuid.ts';
import { fail, storageFailed, storageSilent, type Reply } from './answers.ts';
import type { CommandDispatch } from './command-dispatch.ts';
import { RESULT, type CommandStore } from './command-store.ts';
import {
  formatWords,
  newPending,
  sameWords,
  ZERO_UUID,
  type ClaimTables,
  type IntakeInfo,
  type OrderContext,
  type OrderRequest,
  type Pending,
  type ReadClient,
  type SlotCommand,
} from './flow-records.ts';
import { clientOrderDigest, wordsOf } from './keys.ts';
import { mayActFor } from './principals.ts';
import type { SessionRegistry } from './sessions.ts';
import { ROUTE_MODIFY } from './status-view.ts';
import type { WithoutId } from './storage-client.ts';
import type { CancelByClientOrderBody, SubmitBody, TargetBody } from './validation.ts';
import { recordRef, refGateway, refIndex, STORAGE_REF } from './venue-memory.ts';

/**
 * Business rejections decided here (a duplicate clientOrderId, an unknown clientOrderId,
 * an orderId already used on another shard) are sent to a shard as a REJECT command, so
 * that they too are sequenced, canonical outcomes.
 */
export class OrderRouting {
  private readonly gatewayId: number;
  private readonly shardCount: number;
  private readonly sessions: SessionRegistry;
  private readonly orderDirectory: SharedKeyTable;
  private readonly clientOrders: SharedKeyTable;
  private readonly forgottenOrders: KeyFilter;
  private readonly forgottenClientOrders: KeyFilter;
  private readonly stores: CommandStore[];
  private readonly reads: ReadClient;
  private readonly commands: CommandDispatch;
  /** A submit's clientOrderId claim and the claim it met: written and read within one call (copied when a path waits). */
  private readonly claimExtra = new Int32Array(14);
  /** Participants', accounts' and instruments' words, parsed once each (shared arrays: only read). */
  private readonly ids = new UuidWordsCache(4096);
  private readonly holderExtra = new Int32Array(14);

  constructor(gatewayId: number, shardCount: number, sessions: SessionRegistry, tables: ClaimTables, stores: CommandStore[], reads: ReadClient, commands: CommandDispatch) {
    this.gatewayId = gatewayId;
    this.shardCount = shardCount;
    this.sessions = sessions;
    this.orderDirectory = tables.orderDirectory;
    this.clientOrders = tables.clientOrders;
    this.forgottenOrders = tables.forgottenOrders;
    this.forgottenClientOrders = tables.forgottenClientOrders;
    this.stores = stores;
    this.reads = reads;
    this.commands = commands;
  }

  submit(request: OrderRequest, intake: IntakeInfo, index: number, ref: number, commandId: Int32Array, undoClaims: () => void): void {
    const body = request.body as SubmitBody;
    const instrument = this.ids.words(body.instrumentId);
    const orderId = uuidWords(body.orderId);
    const shard = shardOf(instrument, 0, this.shardCount);
    const runNo = this.sessions.activeRunNo;
    const sessionNo = this.sessions.activeSessionNo;
    const command: SlotCommand = {
      opcode: OPCODE_SUBMIT,
      header: packHeader(
        OPCODE_SUBMIT,
        body.side === 'BUY' ? SIDE_BUY : SIDE_SELL,
        body.orderType === 'LIMIT' ? ORDER_TYPE_LIMIT : ORDER_TYPE_LIMIT_HIDDEN,
        body.timeInForce === 'DAY' ? TIME_IN_FORCE_DAY : TIME_IN_FORCE_IOC,
      ),
      runNo,
      sessionNo,
      commandId,
      orderId,
      instrumentId: instrument,
      participantId: this.ids.words(body.participantId),
      accountId: this.ids.words(body.accountId),
      currency: packCurrency(body.currency),
      priceNanos: request.priceNanos,
      quantityUnits: request.quantityUnits,
      argument: 0,
    };
    const pending = newPending(request, intake, index, shard, body.instrumentId, body.currency, body.commandId);
    if (body.clientOrderId === undefined) return this.placeOrder(request, pending, command, null, undoClaims);
    const key = wordsOf(clientOrderDigest(body.participantId, body.clientOrderId));
    const extra = this.claimExtra;
    extra.set(orderId, 0);
    extra.set(instrument, 4);
    extra.set(command.accountId, 8);
    extra[12] = runNo;
    extra[13] = sessionNo;
    const existing = this.clientOrders.insertIfAbsent(key, 0, ref, extra, this.holderExtra);
    // The usual case: a new claim no table or storage knows of. The others keep their own copies of the two arrays.
    if (existing === NOT_FOUND && !this.forgottenClientOrders.mightContain(key, 0)) return this.placeOrder(request, pending, command, key, undoClaims);
    this.contestedClientOrder(request, pending, command, key, ref, existing, extra.slice(), this.holderExtra.slice(), undoClaims);
  }

  /** Claims the orderId in the directory and writes the slot; a duplicate orderId is rejected. */
  private placeOrder(request: OrderRequest, pending: Pending, command: SlotCommand, clientOrderKey: Int32Array | null, undoClaims: () => void): void {
    pending.clientOrderKey = clientOrderKey;
    const orderId = command.orderId;
    const shard = pending.shard;
    // An orderId known anywhere on the venue is a duplicate even when its shard differs.
    if (this.orderDirectory.insertIfAbsent(orderId, 0, shard) !== NOT_FOUND) return this.rejectAs(pending, command, 'DUPLICATE_ORDER_ID', undoClaims);
    pending.orderDirectoryKey = orderId;
    if (!this.forgottenOrders.mightContain(orderId, 0)) return this.commands.dispatch(pending, command, undoClaims);
    // The directory may have forgotten it: storage says whether it is taken (on any shard).
    this.storedShardOf(
      orderId,
      request.reply,
      () => {
        this.orderDirectory.remove(orderId, 0, shard);
        if (pending.clientOrderKey !== null) this.clientOrders.remove(pending.clientOrderKey, 0, recordRef(this.gatewayId, pending.recordIndex));
        undoClaims();
      },
      (stored) => {
        if (stored === null) return this.commands.dispatch(pending, command, undoClaims);
        this.orderDirectory.remove(orderId, 0, shard);
        this.orderDirectory.put(orderId, 0, stored);
        pending.orderDirectoryKey = null;
        this.rejectAs(pending, command, 'DUPLICATE_ORDER_ID', undoClaims);
      },
    );
  }

  /** The command sent to its shard as a REJECT with this code (sequenced like any outcome). */
  private rejectAs(pending: Pending, command: SlotCommand, code: 'DUPLICATE_ORDER_ID' | 'DUPLICATE_CLIENT_ORDER_ID', undoClaims: () => void): void {
    this.commands.dispatch(pending, { ...command, opcode: OPCODE_REJECT, argument: rejectCodeOf(code) }, undoClaims);
  }

  /**
   * A clientOrderId another order holds (`existing`), or one the table may have forgotten:
   * a duplicate while that order is open, else the claim becomes this order's.
   */
  private contestedClientOrder(
    request: OrderRequest,
    pending: Pending,
    command: SlotCommand,
    key: Int32Array,
    ref: number,
    existing: number,
    extra: Int32Array,
    holderExtra: Int32Array,
    undoClaims: () => void,
  ): void {
    const body = request.body as SubmitBody & { clientOrderId: string };
    const proceed = (clientOrderKey: Int32Array | null) => this.placeOrder(request, pending, command, clientOrderKey, undoClaims);
    const duplicate = () => this.rejectAs(pending, command, 'DUPLICATE_CLIENT_ORDER_ID', undoClaims);
    // Another order holds the claim (`holder`): a duplicate while that order is open, else the claim is this order's.
    const settle = (holder: number) => {
      const replaceClaim = () => (this.clientOrders.replace(key, 0, holder, ref, extra) ? proceed(key) : duplicate());
      // Is the order holding this clientOrderId still open? Its record says so while it
      // has no result; afterwards only its shard knows.
      const heldOrder = holderExtra.subarray(0, 4);
      const held = this.stores[refGateway(holder)]?.read(refIndex(holder));
      if (held !== undefined && held !== null && held.orderId !== null && sameWords(uuidWords(held.orderId), heldOrder)) {
        if (held.resultStatus === RESULT.NONE) return duplicate();
        if (held.resultStatus === RESULT.REJECTED) return replaceClaim();
      }
      this.shardHolding(heldOrder, holderExtra.subarray(4, 8), request.reply, undoClaims, (shard) =>
        this.commands.query(shard, heldOrder, (state) => (state === STATE_OPEN || state === STATE_PARTIALLY_FILLED ? duplicate() : replaceClaim())),
      );
    };
    if (existing !== NOT_FOUND) return settle(existing);
    // The table may have forgotten the order that holds it: storage says which (the newest), if any.
    const undoAll = () => {
      this.clientOrders.remove(key, 0, ref);
      undoClaims();
    };
    this.storedClientOrder(body.participantId, body.clientOrderId, request.reply, undoAll, (stored) => {
      if (stored === null) return proceed(key);
      this.clientOrderExtra(stored, holderExtra);
      this.clientOrders.replace(key, 0, ref, STORAGE_REF, holderExtra); // the claim is the stored order's until settled
      settle(STORAGE_REF);
    });
  }

  target(request: OrderRequest, intake: IntakeInfo, index: number, commandId: Int32Array, undoClaims: () => void): void {
    const body = request.body as TargetBody;
    const session = this.sessions.sessionOf(body.runId, body.venueSessionId);
    this.targetOrder(request, intake, index, commandId, undoClaims, {
      orderId: uuidWords(body.orderId),
      instrumentId: this.ids.words(body.instrumentId),
      participantId: this.ids.words(body.participantId),
      accountId: this.ids.words(body.accountId),
      runNo: session === undefined ? -1 : session.runNo,
      sessionNo: session === undefined ? -1 : session.sessionNo,
    });
  }

  /**
   * The cancel or modify of an order named with its whole context, sent to the shard that
   * holds it: the one path of /cancel, /modify and the cancel a clientOrderId resolves to.
   */
  private targetOrder(request: OrderRequest, intake: IntakeInfo, index: number, commandId: Int32Array, undoClaims: () => void, target: OrderContext): void {
    const modify = request.route === ROUTE_MODIFY;
    const opcode = modify ? OPCODE_MODIFY : OPCODE_CANCEL;
    this.shardHolding(target.orderId, target.instrumentId, request.reply, undoClaims, (shard) =>
      this.commands.dispatch(
        newPending(request, intake, index, shard, formatWords(target.instrumentId), '', request.body.commandId),
        {
          opcode,
          header: packHeader(opcode, 0, 0, 0),
          runNo: target.runNo,
          sessionNo: target.sessionNo,
          commandId,
          orderId: target.orderId,
          instrumentId: target.instrumentId,
          participantId: target.participantId,
          accountId: target.accountId,
          currency: 0,
          priceNanos: modify ? request.priceNanos : 0,
          quantityUnits: modify ? request.quantityUnits : 0,
          argument: 0,
        },
        undoClaims,
      ),
    );
  }

  /** Resolves (participantId, clientOrderId) and sends a normal cancel for the order found. */
  cancelByClientOrder(request: OrderRequest, intake: IntakeInfo, index: number, commandId: Int32Array, undoClaims: () => void): void {
    const body = request.body as CancelByClientOrderBody;
    const participant = uuidWords(body.participantId);
    const extra = new Int32Array(14);
    const key = wordsOf(clientOrderDigest(body.participantId, body.clientOrderId));
    const notFound = () => {
      const pending = newPending(request, intake, index, shardOf(participant, 0, this.shardCount), '', '', body.commandId);
      pending.rejectedOrderIdNull = true;
      this.commands.dispatch(
        pending,
        {
          opcode: OPCODE_REJECT,
          header: packHeader(OPCODE_REJECT, 0, 0, 0),
          runNo: -1,
          sessionNo: -1,
          commandId,
          orderId: ZERO_UUID,
          instrumentId: ZERO_UUID,
          participantId: participant,
          accountId: ZERO_UUID,
          currency: 0,
          priceNanos: 0,
          quantityUnits: 0,
          argument: rejectCodeOf('ORDER_NOT_FOUND'),
        },
        undoClaims,
      );
    };
    if (this.clientOrders.get(key, 0, extra) !== NOT_FOUND) return this.cancelResolved(request, intake, index, commandId, undoClaims, extra);
    if (!this.forgottenClientOrders.mightContain(key, 0)) return notFound();
    // The table may have forgotten it: storage says which order holds it (the newest), if any.
    this.storedClientOrder(body.participantId, body.clientOrderId, request.reply, undoClaims, (stored) => {
      if (stored === null) return notFound();
      this.clientOrderExtra(stored, extra);
      // Kept for the next lookup; a claim that came meanwhile is newer, and the resolver follows the newest (its extra replaces ours).
      this.clientOrders.insertIfAbsent(key, 0, STORAGE_REF, extra, extra);
      this.cancelResolved(request, intake, index, commandId, undoClaims, extra);
    });
  }

  /** The cancel of the order a clientOrderId resolved to (`extra`: the claim's orderId, instrumentId, accountId, runNo, sessionNo). */
  private cancelResolved(request: OrderRequest, intake: IntakeInfo, index: number, commandId: Int32Array, undoClaims: () => void, extra: Int32Array): void {
    const body = request.body as CancelByClientOrderBody;
    const account = extra.slice(8, 12);
    if (!mayActFor(request.principal, body.participantId, formatWords(account))) {
      undoClaims();
      fail(request.reply, 'FORBIDDEN', 'the order of this clientOrderId belongs to an account you may not act for');
      return;
    }
    // The normal cancel of the resolved order, with its whole context (the specification's resolver).
    this.targetOrder(request, intake, index, commandId, undoClaims, {
      orderId: extra.slice(0, 4),
      instrumentId: extra.slice(4, 8),
      participantId: uuidWords(body.participantId),
      accountId: account,
      runNo: extra[12]!,
      sessionNo: extra[13]!,
    });
  }

  /** Asks storage for the newest order of a participant with a clientOrderId (null: none); a 503 (claims undone) if storage does not answer. */
  private storedClientOrder(participantId: string, clientOrderId: string, reply: Reply, undoClaims: () => void, then: (stored: StoredClientOrder | null) => void): void {
    this.askStorage({ type: 'client-order', participantId: participantId.toLowerCase(), clientOrderId }, reply, undoClaims, (answer) => then(answer.clientOrder ?? null));
  }

  /** A stored order as the clientOrderId table keeps it: orderId, instrumentId, accountId (words), runNo, sessionNo. */
  private clientOrderExtra(stored: StoredClientOrder, extra: Int32Array): void {
    extra.set(uuidWords(stored.orderId), 0);
    extra.set(uuidWords(stored.instrumentId), 4);
    extra.set(uuidWords(stored.accountId), 8);
    [extra[12], extra[13]] = this.sessions.numbersOf(stored.runId, stored.venueSessionId);
  }

  /**
   * The shard that holds an order: the directory's answer; else, if the directory may
   * have forgotten it, storage's; else its instrument's shard (where a new order goes).
   */
  private shardHolding(orderId: Int32Array, instrument: Int32Array, reply: Reply, undoClaims: () => void, then: (shard: number) => void): void {
    const known = this.orderDirectory.get(orderId, 0);
    if (known !== NOT_FOUND) return then(known);
    const byInstrument = shardOf(instrument, 0, this.shardCount);
    if (!this.forgottenOrders.mightContain(orderId, 0)) return then(byInstrument);
    this.storedShardOf(orderId, reply, undoClaims, (stored) => then(stored ?? byInstrument));
  }

  /** Asks storage which shard holds an order (null: none); a 503 (claims undone) if storage does not answer. */
  private storedShardOf(orderId: Int32Array, reply: Reply, undoClaims: () => void, then: (shard: number | null) => void): void {
    this.askStorage({ type: 'order-shard', orderId: formatUuid(orderId, 0) }, reply, undoClaims, (answer) => then(answer.shard ?? null));
  }

  /** A question for storage about a key the shared tables may have forgotten; a 503 (claims undone) if storage does not answer. */
  private askStorage(request: WithoutId<ReadRequest>, reply: Reply, undoClaims: () => void, then: (answer: Extract<ReadAnswer, { ok: true }>) => void): void {
    this.reads.request(request).then(
      (answer) => {
        if (!answer.ok) {
          undoClaims();
          return storageFailed(reply, answer);
        }
        then(answer);
      },
      (error: unknown) => {
        undoClaims();
        storageSilent(reply, error);
      },
    );
  }
}
