// Integer hashing for the open-addressed tables of the engine. Deterministic
// (recovery by replay relies on it) and allocation-free.

/**
 * Mixes four 32-bit words (a UUID) into a well-spread 32-bit value: one multiply per
 * word, then murmur3's finaliser so that every input bit reaches the low bits that
 * pick a bucket (patterned ids, such as sequential ones, spread evenly too).
 */
export function hashWords(a: number, b: number, c: number, d: number): number {
  let h = Math.imul(a ^ 0x2545f491, 0x9e3779b1);
  h = Math.imul(h ^ b ^ (h >>> 15), 0x85ebca77);
  h = Math.imul(h ^ c ^ (h >>> 13), 0xc2b2ae3d);
  h = Math.imul(h ^ d ^ (h >>> 16), 0x27d4eb2f);
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  return h ^ (h >>> 16);
}

const TWO_POW_32 = 4_294_967_296;

/**
 * Mixes a non-negative integer below 2^53 (a price in nanos) and a small integer
 * (a book-side key) into a 32-bit value. `>>> 0` takes the integer modulo 2^32 and
 * dividing by 2^32 is an exact scaling, so both halves are exact. (A `%` on a
 * double compiles to a call to fmod: it cost ~30 ns here, measured with
 * --cpu-prof on the core benchmark.)
 */
export function hashPrice(value: number, key: number): number {
  const low = value >>> 0;
  const high = (value / TWO_POW_32) | 0;
  let h = Math.imul(low ^ 0x61c88647, 0x9e3779b1);
  h = Math.imul(h ^ high ^ (h >>> 15), 0x85ebca77);
  h = Math.imul(h ^ key ^ (h >>> 13), 0xc2b2ae3d);
  return h ^ (h >>> 16);
}

/** Smallest power of two >= value (value >= 1, < 2^30). */
export function powerOfTwoAtLeast(value: number): number {
  let size = 1;
  while (size < value) size *= 2;
  return size;
}
