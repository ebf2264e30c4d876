// The pieces the API's schemas share: identifiers, text rules, timestamps, counts, the
// closed-object form, and the error answer every route gives.

import { ERROR_CODES } from '../core/error-codes.ts';

export const uuid = { type: 'string', format: 'uuid', description: 'canonical 8-4-4-4-12 hex UUID' } as const;
export const sessionString = {
  type: 'string',
  pattern: '^[A-Za-z0-9._:-]{1,64}$',
  description: 'as answered by GET /api/v1/venue/session',
} as const;
/** Identifier-like text: printable characters only (no C0/C1 control, no lone surrogate); lengths in code points. */
export const identifier = (maxLength: number) =>
  ({ type: 'string', format: 'identifier', minLength: 1, maxLength, description: `1 to ${maxLength} code points; no control characters or lone surrogates` }) as const;
/** Free text: kept exactly; no U+0000 and no lone surrogate; lengths in code points. */
export const freeText = (maxLength: number) => ({ type: 'string', format: 'free-text', minLength: 1, maxLength, description: `1 to ${maxLength} code points; no U+0000 or lone surrogates` }) as const;
export const timestamp = { type: 'string', format: 'date-time' } as const;
export const count = { type: 'integer', minimum: 0 } as const;

/** An object schema whose every property is required and nothing else is allowed. */
export function closed(properties: Record<string, unknown>) {
  return { type: 'object', additionalProperties: false, properties, required: Object.keys(properties) } as const;
}

/** Every route's error answer (gateway/error-catalog.ts writes it). */
export const errorSchema = {
  $id: 'Error',
  type: 'object',
  additionalProperties: false,
  properties: {
    error: { type: 'string' },
    code: { type: 'string', enum: ERROR_CODES, description: 'stable; a code always comes with the same HTTP status' },
    requestId: { type: 'string', description: '5xx only: the id the cause of the failure is logged under' },
    details: {
      type: 'array',
      items: {
        type: 'object',
        additionalProperties: false,
        properties: { field: { type: 'string' }, message: { type: 'string' } },
        required: ['field', 'message'],
      },
    },
  },
  required: ['error', 'code'],
} as const;
