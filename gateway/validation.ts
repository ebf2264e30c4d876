// Request validation: the request schemas schemas.ts lists, compiled ahead of time by ajv
// (gateway/validators-build.ts writes validators.generated.ts; a test keeps it equal to the
// schemas), then the checks a schema cannot express (exact price and quantity ranges
// through the fixed-point parser). Every failure becomes a 400 with field-level details.

import { createRequire } from 'node:module';
import type { ErrorObject, ValidateFunction } from 'ajv';
import { parseErrorReason, parsePriceNanos, parseQuantityUnits } from '../core/fixed-point.ts';
import type { ErrorDetail } from './error-catalog.ts';
import { QUERY_SCHEMAS, type QueryName } from './read-schemas.ts';
import { SETTLEMENT_BODY_SCHEMAS, type SettlementBodyName } from './settlement-schemas.ts';
import { FORMATS_MODULE, requestFormats } from './validator-formats.ts';
import { createValidators } from './validators.generated.ts';

const require = createRequire(import.meta.url);

/**
 * The compiled validators, by export name (schemas.ts validatorSchemas). Their
 * code requires ajv's small runtime helpers (ucs2length) and FORMATS_MODULE, given here
 * the same formats the compiler was given.
 */
export function loadValidators(): Record<string, ValidateFunction> {
  const formats = requestFormats();
  return createValidators((id: string) => (id === FORMATS_MODULE ? formats : require(id))) as Record<string, ValidateFunction>;
}

export type OrderRoute = 'submit' | 'cancel' | 'modify' | 'cancel-by-client-order';

/** The common fields of every order command (specification: "Order command common fields"). */
export interface CommonFields {
  commandId: string;
  traceId: string;
  causationId: string;
  correlationId: string;
  actorId: string;
  occurredAt: string;
}

export interface SubmitBody extends CommonFields {
  orderId: string;
  instrumentId: string;
  participantId: string;
  accountId: string;
  side: 'BUY' | 'SELL';
  orderType: 'LIMIT' | 'LIMIT_HIDDEN';
  quantityUnits: string;
  limitPrice: string;
  currency: string;
  timeInForce: 'DAY' | 'IOC';
  clientOrderId?: string;
}

export interface TargetBody extends CommonFields {
  orderId: string;
  runId: string;
  venueSessionId: string;
  instrumentId: string;
  participantId: string;
  accountId: string;
  quantityUnits?: string;
  limitPrice?: string;
  reason?: string;
}

export interface CancelByClientOrderBody extends CommonFields {
  participantId: string;
  clientOrderId: string;
  reason: string;
}

export type ValidationResult<T> = { ok: true; body: T; priceNanos: number; quantityUnits: number } | { ok: false; details: ErrorDetail[] };

export class RequestValidator {
  private readonly validators: Record<OrderRoute, ValidateFunction>;
  private readonly queryValidators: Record<QueryName, ValidateFunction>;
  private readonly bodyValidators: Record<SettlementBodyName, ValidateFunction>;
  private readonly sessionRollValidator: ValidateFunction;

  constructor() {
    const all = loadValidators();
    const pick = (name: string): ValidateFunction => {
      const validator = all[name];
      if (validator === undefined) throw new Error(`validators.generated.ts has no validator ${name}: run node --import tsx gateway/validators-build.ts`);
      return validator;
    };
    this.validators = { submit: pick('submit'), cancel: pick('cancel'), modify: pick('modify'), 'cancel-by-client-order': pick('cancel-by-client-order') };
    this.queryValidators = Object.fromEntries((Object.keys(QUERY_SCHEMAS) as QueryName[]).map((name) => [name, pick(`query:${name}`)])) as Record<QueryName, ValidateFunction>;
    this.bodyValidators = Object.fromEntries((Object.keys(SETTLEMENT_BODY_SCHEMAS) as SettlementBodyName[]).map((name) => [name, pick(`body:${name}`)])) as Record<
      SettlementBodyName,
      ValidateFunction
    >;
    this.sessionRollValidator = pick('body:session-roll');
  }

  /** The JSON body of POST /admin/v1/venue/sessions. */
  validateSessionRoll(body: unknown): ErrorDetail[] {
    const validator = this.sessionRollValidator;
    return validator(body) ? [] : (validator.errors ?? []).map(toDetail);
  }

  /** The JSON body of an operator settlement route. */
  validateSettlementBody(name: SettlementBodyName, body: unknown): ErrorDetail[] {
    const validator = this.bodyValidators[name];
    return validator(body) ? [] : (validator.errors ?? []).map(toDetail);
  }

  /** Query parameters of a read route, as a flat object of strings. */
  validateQuery(name: QueryName, query: Record<string, string>): ErrorDetail[] {
    const validator = this.queryValidators[name];
    return validator(query) ? [] : (validator.errors ?? []).map(toDetail);
  }

  validate<T>(route: OrderRoute, body: unknown): ValidationResult<T> {
    const validator = this.validators[route];
    if (!validator(body)) return { ok: false, details: (validator.errors ?? []).map(toDetail) };
    const values = body as { quantityUnits?: string; limitPrice?: string };
    const details: ErrorDetail[] = [];
    let priceNanos = 0;
    let quantityUnits = 0;
    if (values.limitPrice !== undefined) {
      priceNanos = parsePriceNanos(values.limitPrice);
      if (priceNanos < 0) details.push({ field: 'limitPrice', message: `limitPrice ${parseErrorReason(priceNanos)}` });
    }
    if (values.quantityUnits !== undefined) {
      quantityUnits = parseQuantityUnits(values.quantityUnits);
      if (quantityUnits < 0) details.push({ field: 'quantityUnits', message: `quantityUnits ${parseErrorReason(quantityUnits)}` });
    }
    if (details.length > 0) return { ok: false, details };
    return { ok: true, body: body as T, priceNanos, quantityUnits };
  }
}

const FORMAT_MESSAGES: Record<string, string> = {
  uuid: 'must be a UUID',
  'date-time': 'must be an RFC 3339 date-time',
  identifier: 'must be printable text: no control character (U+0000-U+001F, U+007F-U+009F) and no lone surrogate',
  'free-text': 'must not contain U+0000 or a lone surrogate',
};

function toDetail(error: ErrorObject): ErrorDetail {
  const path = error.instancePath.replace(/^\//, '').replace(/\//g, '.');
  if (error.keyword === 'additionalProperties') {
    const extra = String((error.params as { additionalProperty: string }).additionalProperty);
    return { field: path === '' ? extra : `${path}.${extra}`, message: `unknown field ${extra}` };
  }
  if (error.keyword === 'required') {
    const missing = String((error.params as { missingProperty: string }).missingProperty);
    return { field: path === '' ? missing : `${path}.${missing}`, message: `${missing} is required` };
  }
  const field = path === '' ? '(body)' : path;
  if (error.keyword === 'format') return { field, message: `${field} ${FORMAT_MESSAGES[String(error.params.format)] ?? 'is invalid'}` };
  if (error.keyword === 'enum') {
    return { field, message: `${field} must be one of ${(error.params as { allowedValues: string[] }).allowedValues.join(', ')}` };
  }
  return { field, message: `${field} ${error.message ?? 'is invalid'}` };
}
