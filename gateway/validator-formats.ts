// The string formats the request schemas use, in one place: gateway/validators-build.ts
// compiles the schemas with these, and gateway/validation.ts hands the same ones to the
// compiled code, which requires them as FORMATS_MODULE. ajv-formats' date-time check is
// loaded from its formats file alone (not its plugin, which loads ajv's compiler).

import { createRequire } from 'node:module';
import { isUuid } from '../core/uuid.ts';
import { isFreeText, isIdentifierText } from './text-rules.ts';

const require = createRequire(import.meta.url);

/** The module name the compiled validators require their formats by (never a real package). */
export const FORMATS_MODULE = 'venue:request-formats';

export interface FormatDefinition {
  type: 'string';
  validate: (value: string) => boolean;
}

/** Each format by name, as ajv's addFormat takes it. */
export function requestFormats(): Record<'date-time' | 'uuid' | 'identifier' | 'free-text', FormatDefinition> {
  const { fullFormats } = require('ajv-formats/dist/formats') as { fullFormats: Record<string, { validate: (value: string) => boolean }> };
  return {
    'date-time': { type: 'string', validate: fullFormats['date-time']!.validate },
    uuid: { type: 'string', validate: isUuid },
    // API contract, "Text that storage must hold" (gateway/text-rules.ts)
    identifier: { type: 'string', validate: isIdentifierText },
    'free-text': { type: 'string', validate: isFreeText },
  };
}
