// What text storage must hold (API contract, "Text that storage must hold"): the checks
// the edge makes before anything is parsed further, recorded or hashed.
//   identifier-like text  printable only: no C0/C1 control (U+0000-U+001F, U+007F-U+009F),
//                         no lone surrogate
//   free text             no U+0000 and no lone surrogate; anything else is kept exactly
//   JSON bodies           at most JSON_DEPTH_MAX levels of nesting, checked on the raw text
//                         (no recursion), before JSON.parse and anything recursive sees it
// PostgreSQL's text and jsonb refuse U+0000, and a lone surrogate has no UTF-8 form (it
// would be stored as U+FFFD): either would be cut or refused after the acknowledgement.

/** The deepest nesting of arrays and objects a body may have. */
export const JSON_DEPTH_MAX = 32;

/** Printable text: no C0 or C1 control character, every surrogate paired. */
export function isIdentifierText(value: string): boolean {
  for (let k = 0; k < value.length; k++) {
    const unit = value.charCodeAt(k);
    if (unit < 0x20 || (unit >= 0x7f && unit <= 0x9f)) return false;
    if (unit >= 0xd800 && unit <= 0xdfff) {
      if (unit > 0xdbff || k + 1 >= value.length) return false;
      const low = value.charCodeAt(++k);
      if (low < 0xdc00 || low > 0xdfff) return false;
    }
  }
  return true;
}

/** Text storage holds exactly: no U+0000, every surrogate paired. */
export function isFreeText(value: string): boolean {
  for (let k = 0; k < value.length; k++) {
    const unit = value.charCodeAt(k);
    if (unit === 0) return false;
    if (unit >= 0xd800 && unit <= 0xdfff) {
      if (unit > 0xdbff || k + 1 >= value.length) return false;
      const low = value.charCodeAt(++k);
      if (low < 0xdc00 || low > 0xdfff) return false;
    }
  }
  return true;
}

/**
 * Whether JSON text nests arrays and objects deeper than `max`: one pass over the
 * characters, brackets inside strings skipped. Order bodies hold no bracket but the
 * outer brace, so they take the native indexOf scans only.
 */
export function jsonNestingExceeds(raw: string, max = JSON_DEPTH_MAX): boolean {
  const first = raw.indexOf('{');
  if (raw.indexOf('[') < 0 && (first < 0 || raw.indexOf('{', first + 1) < 0)) return false;
  let depth = 0;
  let inString = false;
  for (let k = 0; k < raw.length; k++) {
    const c = raw.charCodeAt(k);
    if (inString) {
      if (c === 0x5c)
        k++; // backslash: the next character is escaped
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x7b || c === 0x5b) {
      if (++depth > max) return true;
    } else if (c === 0x7d || c === 0x5d) depth--;
  }
  return false;
}

/** A JSON body parsed, or the 400's message; nesting is checked before JSON.parse runs. */
export function parseJsonBody(raw: string): { ok: true; value: unknown } | { ok: false; message: string } {
  if (jsonNestingExceeds(raw)) return { ok: false, message: `the body nests arrays and objects deeper than ${JSON_DEPTH_MAX} levels` };
  try {
    return { ok: true, value: JSON.parse(raw) };
  } catch {
    return { ok: false, message: 'the body is not valid JSON' };
  }
}

/**
 * The path of the first key or string in a parsed JSON value that is not free text, or
 * null. The value comes from parseJsonBody, so its depth is bounded and recursion is safe.
 */
export function badFreeTextIn(value: unknown, path: string): string | null {
  if (typeof value === 'string') return isFreeText(value) ? null : path;
  if (value === null || typeof value !== 'object') return null;
  if (Array.isArray(value)) {
    for (let k = 0; k < value.length; k++) {
      const found = badFreeTextIn(value[k], `${path}.${k}`);
      if (found !== null) return found;
    }
    return null;
  }
  for (const key in value) {
    if (!isFreeText(key)) return `${path} (a key)`;
    const found = badFreeTextIn((value as Record<string, unknown>)[key], `${path}.${key}`);
    if (found !== null) return found;
  }
  return null;
}
