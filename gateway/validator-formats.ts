// The string formats the request schemas use, in one place: gateway/validators-build.ts
// compiles the schemas with these, and gateway/validation.ts hands the same ones to the
// compiled code, which requires them as FORMATS_MODULE. date-time is checked by isDateTime,
// which accepts exactly what ajv-formats' full date-time accepts (test/gateway/date-time.test.ts)
// without the split and regular expressions that allocated on every order.

import { isUuid } from '../core/uuid.ts';
import { isFreeText, isIdentifierText } from './text-rules.ts';

/** The module name the compiled validators require their formats by (never a real package). */
export const FORMATS_MODULE = 'venue:request-formats';

export interface FormatDefinition {
  type: 'string';
  validate: (value: string) => boolean;
}

/** Each format by name, as ajv's addFormat takes it. */
export function requestFormats(): Record<'date-time' | 'uuid' | 'identifier' | 'free-text', FormatDefinition> {
  return {
    'date-time': { type: 'string', validate: isDateTime },
    uuid: { type: 'string', validate: isUuid },
    // API contract, "Text that storage must hold" (gateway/text-rules.ts)
    identifier: { type: 'string', validate: isIdentifierText },
    'free-text': { type: 'string', validate: isFreeText },
  };
}

const DAYS_IN_MONTH = [0, 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];

/** A character JavaScript's \\s matches (ECMAScript WhiteSpace and LineTerminator). */
function isRegExpSpace(c: number): boolean {
  return (
    c === 0x20 || (c >= 9 && c <= 13) || c === 0xa0 || c === 0x1680 || (c >= 0x2000 && c <= 0x200a) || c === 0x2028 || c === 0x2029 || c === 0x202f || c === 0x205f || c === 0x3000 || c === 0xfeff
  );
}

/** The value of two ASCII digits at `at`, or -1. */
function twoDigits(text: string, at: number): number {
  const a = text.charCodeAt(at) - 48;
  const b = text.charCodeAt(at + 1) - 48;
  return a >= 0 && a <= 9 && b >= 0 && b <= 9 ? a * 10 + b : -1;
}

/**
 * RFC 3339 date-time with a required offset, by character codes: "YYYY-MM-DD", then "T",
 * "t" or a space, then "hh:mm:ss[.frac]" and "Z" or "±hh[[:]mm]"; a leap second only at
 * 23:59 UTC. The same rules and edge cases as ajv-formats' full date-time.
 */
export function isDateTime(text: string): boolean {
  const n = text.length;
  if (n < 20) return false; // the shortest: "2026-01-01T00:00:00Z"
  const y1 = twoDigits(text, 0);
  const y2 = twoDigits(text, 2);
  const month = twoDigits(text, 5);
  const day = twoDigits(text, 8);
  if (y1 < 0 || y2 < 0 || month < 0 || day < 0 || text.charCodeAt(4) !== 45 || text.charCodeAt(7) !== 45) return false;
  const year = y1 * 100 + y2;
  const leap = year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0);
  if (month < 1 || month > 12 || day < 1 || day > (month === 2 && leap ? 29 : DAYS_IN_MONTH[month]!)) return false;
  const separator = text.charCodeAt(10);
  if (separator !== 84 && separator !== 116 && !isRegExpSpace(separator)) return false;
  const hour = twoDigits(text, 11);
  const minute = twoDigits(text, 14);
  const second = twoDigits(text, 17);
  if (hour < 0 || minute < 0 || second < 0 || text.charCodeAt(13) !== 58 || text.charCodeAt(16) !== 58) return false;
  let at = 19;
  let fractionStart = -1;
  if (text.charCodeAt(at) === 46) {
    fractionStart = ++at;
    while (at < n && text.charCodeAt(at) >= 48 && text.charCodeAt(at) <= 57) at++;
    if (at === fractionStart) return false;
  }
  const secondsEnd = at;
  let sign = 0;
  let offsetHours = 0;
  let offsetMinutes = 0;
  const zone = text.charCodeAt(at);
  if (zone === 90 || zone === 122) {
    if (at + 1 !== n) return false;
  } else if (zone === 43 || zone === 45) {
    sign = zone === 45 ? -1 : 1;
    offsetHours = twoDigits(text, at + 1);
    if (offsetHours < 0) return false;
    at += 3;
    if (at < n) {
      if (text.charCodeAt(at) === 58) at++;
      offsetMinutes = twoDigits(text, at);
      if (offsetMinutes < 0 || at + 2 !== n) return false;
    }
  } else return false;
  if (offsetHours > 23 || offsetMinutes > 59) return false;
  // The seconds as ajv reads them, a float: a long fraction of 59.999... rounds up to 60.
  const seconds = fractionStart > 0 && second >= 59 ? Number(text.slice(17, secondsEnd)) : second;
  if (hour <= 23 && minute <= 59 && seconds < 60) return true;
  const utcMinute = minute - offsetMinutes * sign;
  const utcHour = hour - offsetHours * sign - (utcMinute < 0 ? 1 : 0);
  return (utcHour === 23 || utcHour === -1) && (utcMinute === 59 || utcMinute === -1) && seconds < 61;
}
