/*
 * A blocked Bloom filter over the 8-byte eventId hashes of one segment of
 * the archived-id index (id-index.ts): "certainly not here" for almost
 * every new eventId without reading the segment's table, so the duplicate
 * guard's cost does not grow with the number of ids a shard keeps.
 *
 * Each hash sets BITS_PER_KEY bits inside one 512-bit block (one cache
 * line), chosen by the low half; the high half spreads the bits. The filter
 * grows with its segment: once it holds more than its size is meant for
 * (BITS_PER_ID bits per id), the index rebuilds it at twice the size from
 * the segment's table, so a shard's filters take about 2 bytes per id
 * whether its segments are full or nearly empty.
 */

const WORDS_PER_BLOCK = 16;
const BITS_PER_KEY = 8;
/** Bits of filter per id held: a false hit for about one new id in 1,000 per segment. */
export const BITS_PER_ID = 16;
const MIN_BLOCKS = 16;

export class IdFilter {
  private readonly words: Uint32Array;
  private readonly blockMask: number;

  /** An empty filter sized for `ids` ids, or one read back from its bytes. */
  constructor(source: { ids: number } | { bytes: Uint8Array }) {
    if ("bytes" in source) {
      const copy = new Uint8Array(source.bytes);
      this.words = new Uint32Array(copy.buffer, 0, copy.byteLength >>> 2);
    } else {
      this.words = new Uint32Array(blocksFor(source.ids) * WORDS_PER_BLOCK);
    }
    const blocks = this.words.length / WORDS_PER_BLOCK;
    if (blocks < 1 || (blocks & (blocks - 1)) !== 0)
      throw new Error("filter size must be 2^n blocks");
    this.blockMask = blocks - 1;
  }

  /** The ids this filter is sized for. */
  get capacity(): number {
    return (this.words.length * 32) / BITS_PER_ID;
  }

  add(hi: number, lo: number): void {
    const base = (lo & this.blockMask) * WORDS_PER_BLOCK;
    const step = (lo >>> 23) | 1;
    for (let index = 0; index < BITS_PER_KEY; index++) {
      const bit = (hi + Math.imul(index, step)) & 511;
      const word = base + (bit >>> 5);
      this.words[word] = (this.words[word] as number) | (1 << (bit & 31));
    }
  }

  /** False: the id is certainly not in the segment. True: it may be. */
  mayHold(hi: number, lo: number): boolean {
    const base = (lo & this.blockMask) * WORDS_PER_BLOCK;
    const step = (lo >>> 23) | 1;
    for (let index = 0; index < BITS_PER_KEY; index++) {
      const bit = (hi + Math.imul(index, step)) & 511;
      if (((this.words[base + (bit >>> 5)] as number) & (1 << (bit & 31))) === 0) return false;
    }
    return true;
  }

  /** The filter's bytes, as stored. */
  bytes(): Uint8Array {
    return new Uint8Array(this.words.buffer, this.words.byteOffset, this.words.byteLength);
  }
}

/** The power-of-two block count that gives `ids` ids BITS_PER_ID bits each. */
export function blocksFor(ids: number): number {
  const wanted = Math.ceil((Math.max(ids, 1) * BITS_PER_ID) / (WORDS_PER_BLOCK * 32));
  let blocks = MIN_BLOCKS;
  while (blocks < wanted) blocks *= 2;
  return blocks;
}
