/**
 * An in-memory cache whose entries carry the time their value was read
 * from the source of truth, and are never served once that read is
 * `boundMs` old, wherever the entry came from (the source itself, or a
 * shared cache that copied it). That age, not the time an entry was put
 * here, is what bounds how stale an answer can be: a value that travelled
 * through another cache tier keeps its original read time.
 *
 * Past `refreshAfterMs` an entry is still served but reported `stale`, so
 * the caller can re-read the source in the background before the bound
 * (stale-while-revalidate, inside the bound). The least recently used entry
 * goes first once `maxEntries` is reached.
 */
export interface FreshnessBoundCacheOptions {
  boundMs: number;
  refreshAfterMs: number;
  maxEntries: number;
  /** Epoch milliseconds; tests move it. */
  clock: () => number;
}

export interface CachedRead<V> {
  value: V;
  /** When the value was read from the source of truth. */
  readAtMs: number;
  /** Past the refresh age: serve it, and re-read the source in the background. */
  stale: boolean;
}

interface Entry<V> {
  value: V;
  readAtMs: number;
}

/** An eviction: reads that started before it must not bring the value back. */
interface Eviction<V> {
  matches: (id: string, value: V) => boolean;
  atMs: number;
}

export class FreshnessBoundCache<V> {
  private readonly entries = new Map<string, Entry<V>>();
  private evictions: Eviction<V>[] = [];

  constructor(private readonly options: FreshnessBoundCacheOptions) {}

  now(): number {
    return this.options.clock();
  }

  /** Whether a value read at `readAtMs` may still be served now. */
  servable(readAtMs: number): boolean {
    const age = this.now() - readAtMs;
    return age >= 0 && age < this.options.boundMs;
  }

  /** Milliseconds a value read at `readAtMs` may still be served (0 when it may not). */
  remainingMs(readAtMs: number): number {
    return this.servable(readAtMs) ? this.options.boundMs - (this.now() - readAtMs) : 0;
  }

  get(id: string): CachedRead<V> | undefined {
    const entry = this.entries.get(id);
    if (!entry) return undefined;
    if (!this.servable(entry.readAtMs)) {
      this.entries.delete(id);
      return undefined;
    }
    // Re-inserting keeps the Map in least-recently-used order.
    this.entries.delete(id);
    this.entries.set(id, entry);
    return {
      value: entry.value,
      readAtMs: entry.readAtMs,
      stale: this.now() - entry.readAtMs >= this.options.refreshAfterMs,
    };
  }

  /**
   * Keeps `value` as read at `readAtMs` (when the read started). Not kept:
   * a value already past the bound, one older than what is held, and one
   * whose read started before an eviction that covers it (a background
   * refresh racing a revocation must not undo it). Answers whether the
   * value may be served (false: the caller must not use it either).
   */
  put(id: string, value: V, readAtMs: number): boolean {
    this.forgetOldEvictions();
    if (this.evictions.some((e) => readAtMs <= e.atMs && e.matches(id, value))) {
      this.entries.delete(id);
      return false;
    }
    if (!this.servable(readAtMs)) {
      this.entries.delete(id);
      return false;
    }
    const current = this.entries.get(id);
    if (current && current.readAtMs > readAtMs) return true;
    this.entries.delete(id);
    this.entries.set(id, { value, readAtMs });
    while (this.entries.size > this.options.maxEntries) {
      const oldest = this.entries.keys().next().value;
      if (oldest === undefined) break;
      this.entries.delete(oldest);
    }
    return true;
  }

  /** Drops an entry; a read already under way may still bring it back (use `evict` for that). */
  delete(id: string): void {
    this.entries.delete(id);
  }

  /** Drops an entry for good: reads that started before now cannot bring it back. */
  evict(id: string): void {
    this.entries.delete(id);
    this.evictions.push({ matches: (other) => other === id, atMs: this.now() });
  }

  /** Evicts every entry whose value matches (e.g. all keys of one tenant). */
  evictWhere(matches: (value: V) => boolean): void {
    for (const [id, entry] of this.entries) {
      if (matches(entry.value)) this.entries.delete(id);
    }
    this.evictions.push({ matches: (_id, value) => matches(value), atMs: this.now() });
  }

  /** An eviction older than the bound covers only reads that could not be served anyway. */
  private forgetOldEvictions(): void {
    if (this.evictions.length === 0) return;
    this.evictions = this.evictions.filter((e) => this.servable(e.atMs));
  }

  get size(): number {
    return this.entries.size;
  }
}
