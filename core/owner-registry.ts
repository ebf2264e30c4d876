// Interns (participantId, accountId) pairs to small owner numbers, per shard.
// An order record then carries one 32-bit owner instead of 32 bytes of ids, which
// keeps the record in one cache line. Owners are numbered in order of first
// appearance, so a replay numbers them identically; they are never removed
// (bounded by the capacity: an order from a new pair past it is rejected).

import { assert, fail } from './assert.ts';
import type { StateReader, StateWriter } from './engine-state.ts';
import { hashWords, powerOfTwoAtLeast } from './hash.ts';

export const OWNER_WORDS = 8;

export class OwnerRegistry {
  readonly capacity: number;
  /** participantId words then accountId words, OWNER_WORDS per owner. */
  readonly words: Int32Array;
  private ownerCount = 0;
  private lastOwner = 0;
  private readonly table: Int32Array;
  private readonly mask: number;

  private readonly seed: number;

  constructor(capacity: number, seed = 0) {
    this.seed = seed | 0;
    this.capacity = capacity;
    this.words = new Int32Array(capacity * OWNER_WORDS);
    const size = powerOfTwoAtLeast(capacity * 2);
    this.table = new Int32Array(size);
    this.mask = size - 1;
  }

  get count(): number {
    return this.ownerCount;
  }

  get isFull(): boolean {
    return this.ownerCount === this.capacity;
  }

  /** Owner number of the pair at source[participantAt..+3], source[accountAt..+3], or -1. */
  find(source: Int32Array, participantAt: number, accountAt: number): number {
    // Consecutive orders mostly come from the same account: try the last one first.
    if (this.lastOwner < this.ownerCount && this.matches(this.lastOwner, source, participantAt, accountAt)) {
      return this.lastOwner;
    }
    const table = this.table;
    const mask = this.mask;
    let bucket = this.hash(source, participantAt, accountAt) & mask;
    for (;;) {
      const entry = table[bucket]!;
      if (entry === 0) return -1;
      if (this.matches(entry - 1, source, participantAt, accountAt)) {
        this.lastOwner = entry - 1;
        return entry - 1;
      }
      bucket = (bucket + 1) & mask;
    }
  }

  /** Adds a pair known to be absent; the caller checked isFull. */
  add(source: Int32Array, participantAt: number, accountAt: number): number {
    if (this.ownerCount === this.capacity) throw new Error('owner registry is full');
    const owner = this.ownerCount++;
    const at = owner * OWNER_WORDS;
    for (let k = 0; k < 4; k++) {
      this.words[at + k] = source[participantAt + k]!;
      this.words[at + 4 + k] = source[accountAt + k]!;
    }
    let bucket = this.hash(source, participantAt, accountAt) & this.mask;
    while (this.table[bucket] !== 0) bucket = (bucket + 1) & this.mask;
    this.table[bucket] = owner + 1;
    return owner;
  }

  /** The registry's state (persistence/engine-snapshot.ts): the pairs in owner order and the index as laid out. */
  saveState(out: StateWriter): void {
    out.number('owners.count', this.ownerCount);
    out.array('owners.words', this.words.subarray(0, this.ownerCount * OWNER_WORDS));
    out.array('owners.table', this.table);
  }

  /** Takes the state saveState wrote into this registry, which must be fresh and of the same capacity and seed. */
  loadState(input: StateReader): void {
    assert(this.ownerCount === 0, 'loadState() needs a fresh owner registry');
    const count = input.number('owners.count');
    assert(Number.isInteger(count) && count >= 0 && count <= this.capacity, `owner state holds ${count} owners of ${this.capacity}`);
    input.into('owners.words', this.words.subarray(0, count * OWNER_WORDS));
    input.into('owners.table', this.table);
    this.checkLoaded(count);
    this.ownerCount = count;
    this.lastOwner = 0;
  }

  /**
   * What a loaded state must satisfy, checked once at load: the index holds each owner
   * once, where a probe for its pair reaches it, and no other owner of the same pair before it.
   */
  private checkLoaded(count: number): void {
    const table = this.table;
    const mask = this.mask;
    const seen = new Uint8Array(count);
    let indexed = 0;
    for (let bucket = 0; bucket <= mask; bucket++) {
      const entry = table[bucket]!;
      if (entry === 0) continue;
      const owner = entry - 1;
      if (owner < 0 || owner >= count) fail(`owner state: index bucket ${bucket} names owner ${owner} of ${count}`);
      if (seen[owner] !== 0) fail(`owner state: owner ${owner} is indexed twice`);
      seen[owner] = 1;
      indexed++;
      const at = owner * OWNER_WORDS;
      for (let probe = this.hash(this.words, at, at + 4) & mask; probe !== bucket; probe = (probe + 1) & mask) {
        const other = table[probe]!;
        if (other === 0) fail(`owner state: owner ${owner} lies past an empty bucket of its probe`);
        if (other - 1 < count && this.matches(other - 1, this.words, at, at + 4)) fail(`owner state: owners ${other - 1} and ${owner} are the same pair`);
      }
    }
    assert(indexed === count, `owner state: ${indexed} owners indexed of ${count}`);
  }

  /** True when owner's pair equals the pair in source. */
  matches(owner: number, source: Int32Array, participantAt: number, accountAt: number): boolean {
    const words = this.words;
    const at = owner * OWNER_WORDS;
    return (
      words[at] === source[participantAt] &&
      words[at + 1] === source[participantAt + 1] &&
      words[at + 2] === source[participantAt + 2] &&
      words[at + 3] === source[participantAt + 3] &&
      words[at + 4] === source[accountAt] &&
      words[at + 5] === source[accountAt + 1] &&
      words[at + 6] === source[accountAt + 2] &&
      words[at + 7] === source[accountAt + 3]
    );
  }

  private hash(source: Int32Array, participantAt: number, accountAt: number): number {
    return hashWords(
      source[participantAt]! ^ source[accountAt]! ^ this.seed,
      source[participantAt + 1]! ^ source[accountAt + 1]!,
      source[participantAt + 2]! ^ Math.imul(source[accountAt + 2]!, 0x9e3779b1),
      source[participantAt + 3]! ^ Math.imul(source[accountAt + 3]!, 0x85ebca77),
    );
  }
}
