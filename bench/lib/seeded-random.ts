// sfc32: a small, fast, seedable PRNG (public domain, PractRand-tested). Benchmarks
// and property tests use it so every stream can be reproduced from its seed.

export class SeededRandom {
  private a: number;
  private b: number;
  private c: number;
  private d: number;

  constructor(seed: number) {
    this.a = 0x9e3779b9;
    this.b = 0x243f6a88;
    this.c = 0xb7e15162;
    this.d = seed | 0;
    for (let i = 0; i < 15; i++) this.nextUint32();
  }

  nextUint32(): number {
    const t = (((this.a + this.b) | 0) + this.d) | 0;
    this.d = (this.d + 1) | 0;
    this.a = this.b ^ (this.b >>> 9);
    this.b = (this.c + (this.c << 3)) | 0;
    this.c = (this.c << 21) | (this.c >>> 11);
    this.c = (this.c + t) | 0;
    return t >>> 0;
  }

  /** Integer in [0, bound). */
  below(bound: number): number {
    return Math.floor((this.nextUint32() / 4294967296) * bound);
  }

  /** Integer in [low, high]. */
  between(low: number, high: number): number {
    return low + this.below(high - low + 1);
  }

  /** True with probability p. */
  chance(p: number): boolean {
    return this.nextUint32() / 4294967296 < p;
  }

  pick<T>(items: readonly T[]): T {
    return items[this.below(items.length)]!;
  }
}
