// Small writes into byte arrays by plain stores, shared by the hot paths that fill
// records and COPY rows (core/intake-record.ts, persistence/copy-binary.ts): for a few
// bytes at a time these beat Buffer's checked writers, a subarray per copy and a native
// call's overhead (each measured where it is used).

/** A 32-bit big-endian integer (its low 32 bits: signed and unsigned values alike). */
export function putInt32(bytes: Uint8Array, at: number, value: number): void {
  bytes[at] = value >>> 24;
  bytes[at + 1] = value >>> 16;
  bytes[at + 2] = value >>> 8;
  bytes[at + 3] = value;
}

/** source[start..start+length) to bytes[at..]: byte by byte up to 64 bytes (ids, digests, keys), else one set(). */
export function copyRange(bytes: Uint8Array, at: number, source: Uint8Array, start: number, length: number): void {
  if (length <= 64) {
    for (let k = 0; k < length; k++) bytes[at + k] = source[start + k]!;
  } else {
    bytes.set(source.subarray(start, start + length), at);
  }
}

/**
 * Stores `text` at `at`, one byte per character, if it is all ASCII, and returns its
 * length; at the first other character returns -1 (the bytes before it are written:
 * the caller writes the whole text again as UTF-8).
 */
export function asciiInto(bytes: Uint8Array, at: number, text: string): number {
  const length = text.length;
  for (let k = 0; k < length; k++) {
    const code = text.charCodeAt(k);
    if (code >= 0x80) return -1;
    bytes[at + k] = code;
  }
  return length;
}
