// Takes an order command after it was authenticated, validated and authorized: claims its
// idempotency scope and commandId in the tables all gateways share, then hands it to its route.

import { DB_DOWN, type PersistenceControl } from '../core/persistence-control.ts';
import { NOT_FOUND, type SharedKeyTable } from '../core/shared-key-table.ts';
import type { KeyFilter } from '../core/key-filter.ts';
import { formatUuid, uuidWords } from '../core/uuid.ts';
import { fail, storageFailed, storageSilent, type Reply } from './answers.ts';
import type { CommandStore } from './command-store.ts';
import { PROCESSING_MODES } from '../core/config.ts';
import { sameWords, snapshotOf, type ClaimTables, type IntakeInfo, type OrderRequest, type ReadClient } from './flow-records.ts';
import { payloadDigest, scopeDigest, wordsInto, wordsOf } from './keys.ts';
import type { OrderRouting } from './order-routing.ts';
import type { Replays } from './replays.ts';
import { ROUTE_CANCEL_BY_CLIENT_ORDER, ROUTE_SUBMIT } from './status-view.ts';
import type { SubmitBody } from './validation.ts';
import { recordRef, STORAGE_REF } from './venue-memory.ts';

/** The 409 of a commandId another command holds (the code's own message is for a reused Idempotency-Key). */
const COMMAND_ID_TAKEN = 'this commandId is already used by another command';

/**
 * The path of a command:
 *
 *   claim the idempotency scope and the commandId (shared tables, all gateways)
 *     -> replay the original answer (or wait for it), or 409 for another payload
 *   resolve what the route needs (order directory, clientOrderId claims: order-routing.ts)
 *   write one 128-byte slot on the ring to the shard; ring full -> undo, 503 (command-dispatch.ts)
 *   async modes answer 202 once captured; sync-result and stream-ack on the result (result-delivery.ts)
 */
export class CommandIntake {
  private readonly gatewayId: number;
  private readonly control: PersistenceControl;
  private readonly store: CommandStore;
  private readonly stores: CommandStore[];
  private readonly idempotency: SharedKeyTable;
  private readonly commandIds: SharedKeyTable;
  private readonly forgottenScopes: KeyFilter;
  private readonly forgottenCommandIds: KeyFilter;
  private readonly reads: ReadClient;
  private readonly replays: Replays;
  private readonly routing: OrderRouting;
  /** Words used only within one call (the payload digest's, and the payload a claim already holds): made once. */
  private readonly payloadWords = new Int32Array(4);
  private readonly existingPayload = new Int32Array(4);

  constructor(gatewayId: number, control: PersistenceControl, stores: CommandStore[], tables: ClaimTables, reads: ReadClient, replays: Replays, routing: OrderRouting) {
    this.gatewayId = gatewayId;
    this.control = control;
    this.store = stores[gatewayId]!;
    this.stores = stores;
    this.idempotency = tables.idempotency;
    this.commandIds = tables.commandIds;
    this.forgottenScopes = tables.forgottenScopes;
    this.forgottenCommandIds = tables.forgottenCommandIds;
    this.reads = reads;
    this.replays = replays;
    this.routing = routing;
  }

  handle(request: OrderRequest): void {
    const { body, route, reply } = request;
    if (this.control.databaseState === DB_DOWN) {
      fail(reply, 'UNAVAILABLE', 'storage is unavailable: nothing was accepted; retry with the same Idempotency-Key');
      return;
    }
    const payload = payloadDigest(route, body as unknown as Record<string, unknown>);
    const payloadWords = wordsInto(payload, this.payloadWords);
    const scopeBytes = scopeDigest(request.principal.principalId, request.clientId, request.idempotencyKey);
    const scope = wordsOf(scopeBytes);
    const commandId = uuidWords(body.commandId);
    const receivedAtUs = request.receivedAtUs;
    const intake: IntakeInfo = {
      route,
      mode: PROCESSING_MODES.indexOf(request.mode),
      principal: request.principal.index,
      scopeDigest: scopeBytes,
      payloadHash: payload,
      clientId: request.clientId,
      idempotencyKey: request.idempotencyKey,
      clientOrderId: route === ROUTE_SUBMIT ? ((body as SubmitBody).clientOrderId ?? null) : null,
      receivedAtUs,
      raw: request.raw,
      rawBytes: request.rawBytes,
    };
    const index = this.store.create(intake, body.commandId, 'orderId' in body ? body.orderId : null, 'instrumentId' in body ? body.instrumentId : null);
    const ref = recordRef(this.gatewayId, index);
    const existingPayload = this.existingPayload;
    const existing = this.idempotency.insertIfAbsent(scope, 0, ref, payloadWords, existingPayload);
    if (existing !== NOT_FOUND) {
      this.store.void(index);
      if (!sameWords(existingPayload, payloadWords)) {
        fail(reply, 'IDEMPOTENCY_CONFLICT');
        return;
      }
      if (existing === STORAGE_REF) this.replays.replayFromStorage(reply, scopeBytes, payload);
      else this.replays.replayOrWait(reply, existing, commandId, scopeBytes, payload);
      return;
    }
    const holderRef = this.commandIds.insertIfAbsent(commandId, 0, ref);
    if (holderRef !== NOT_FOUND) {
      this.idempotency.remove(scope, 0, ref);
      this.store.void(index);
      this.sameCommandOrConflict(request, holderRef, commandId, scopeBytes, payload);
      return;
    }
    const undoClaims = () => {
      this.idempotency.remove(scope, 0, ref);
      this.commandIds.remove(commandId, 0, ref);
      this.store.void(index);
    };
    if (this.forgottenScopes.mightContain(scope, 0) || this.forgottenCommandIds.mightContain(commandId, 0)) {
      this.checkStoredClaims(reply, scopeBytes, body.commandId, payload, undoClaims, () => this.route(request, intake, index, ref, commandId, undoClaims));
    } else this.route(request, intake, index, ref, commandId, undoClaims);
  }

  /** Hands the claimed command to its route's resolution (order-routing.ts). */
  private route(request: OrderRequest, intake: IntakeInfo, index: number, ref: number, commandId: Int32Array, undoClaims: () => void): void {
    if (request.route === ROUTE_SUBMIT) this.routing.submit(request, intake, index, ref, commandId, undoClaims);
    else if (request.route === ROUTE_CANCEL_BY_CLIENT_ORDER) this.routing.cancelByClientOrder(request, intake, index, commandId, undoClaims);
    else this.routing.target(request, intake, index, commandId, undoClaims);
  }

  /**
   * The commandId is taken. Usually by another command (409); but the tables forget
   * entries independently, so it may be this very command, retried after its scope
   * entry was forgotten while its commandId entry was not: then it is a replay. The
   * record the commandId points to tells, else storage does.
   */
  private sameCommandOrConflict(request: OrderRequest, holderRef: number, commandId: Int32Array, scope: Uint8Array, payload: Uint8Array): void {
    const { reply, principal } = request;
    const holder = holderRef === STORAGE_REF ? null : snapshotOf(this.stores, holderRef, commandId);
    if (holder !== null) {
      if (holder.principal !== principal.index || holder.clientId !== request.clientId || holder.idempotencyKey !== request.idempotencyKey) {
        return fail(reply, 'IDEMPOTENCY_CONFLICT', COMMAND_ID_TAKEN);
      }
      if (holder.payloadHash !== Buffer.from(payload).toString('hex')) return fail(reply, 'IDEMPOTENCY_CONFLICT');
      return this.replays.replayOrWait(reply, holderRef, commandId, scope, payload);
    }
    // Its scope was not in the table: new, or forgotten (then the filter has it).
    if (!this.forgottenScopes.mightContain(wordsOf(scope), 0)) return fail(reply, 'IDEMPOTENCY_CONFLICT', COMMAND_ID_TAKEN);
    this.reads.request({ type: 'claims', scopeDigest: Buffer.from(scope.subarray(0, 16)).toString('hex'), commandId: formatUuid(commandId, 0) }).then(
      (answer) => {
        if (!answer.ok) return storageFailed(reply, answer);
        if (answer.command !== null && answer.match === 'scope') return this.replays.answerStoredReplay(reply, answer.command, payload);
        fail(reply, 'IDEMPOTENCY_CONFLICT', COMMAND_ID_TAKEN);
      },
      (error: unknown) => storageSilent(reply, error),
    );
  }

  /**
   * The shared tables are bounded: they forget their oldest entries, and a restart
   * reloads only the most recent. A miss in a table is proof that a key is new only
   * when the filter of forgotten keys does not hold it either; otherwise storage (the
   * command log, with its unique constraints) decides, at the cost of a read.
   */
  private checkStoredClaims(reply: Reply, scope: Uint8Array, commandIdText: string, payload: Uint8Array, undoClaims: () => void, proceed: () => void): void {
    const scopeHex = Buffer.from(scope.subarray(0, 16)).toString('hex'); // the command log keeps 16 bytes
    this.reads.request({ type: 'claims', scopeDigest: scopeHex, commandId: commandIdText.toLowerCase() }).then(
      (answer) => {
        if (!answer.ok) {
          undoClaims();
          return storageFailed(reply, answer);
        }
        if (answer.command === null) return proceed();
        undoClaims();
        if (answer.match === 'commandId') return fail(reply, 'IDEMPOTENCY_CONFLICT', COMMAND_ID_TAKEN);
        this.replays.answerStoredReplay(reply, answer.command, payload);
      },
      (error: unknown) => {
        undoClaims();
        storageSilent(reply, error);
      },
    );
  }
}
