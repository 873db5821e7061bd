import type { Database } from "@edge-platform/shared/db/client";
import type { tenantStatuses } from "@edge-platform/shared/db/schema/identity";
import {
  type ApiKeyRow,
  findApiKeyByHash,
  listApiKeyHashesOfTenant,
  touchApiKey,
} from "./access-storage.ts";
import { FreshnessBoundCache } from "./domain/freshness-bound-cache.ts";

/**
 * How long a verified API key may be answered from a cache after it was
 * read from D1: a revocation, an expiry date change or a tenant suspension
 * made elsewhere reaches every isolate within this time. The isolate that
 * revokes a key (or cancels its tenant) forgets it at once.
 */
export const API_KEY_CACHE_BOUND_MS = 30_000;
/** Past this age a cached key is still used, and re-read from D1 in the background. */
export const API_KEY_REFRESH_AFTER_MS = 20_000;
/** `lastUsedAt` is written at most this often per key (per isolate, and by the write's own condition). */
export const LAST_USED_INTERVAL_MS = 60_000;
const MAX_CACHED_KEYS = 10_000;
/** Cache API entries live under this origin, which is never routed anywhere. */
const SHARED_CACHE_ORIGIN = "https://api-key-cache.billing.internal";

export interface VerifiedApiKey {
  key: ApiKeyRow;
  tenantStatus: (typeof tenantStatuses)[number];
}

export type Background = (work: Promise<unknown>) => void;

export interface ApiKeyVerifierOptions {
  /** Epoch milliseconds; tests move it to walk past the bound. */
  clock?: () => number;
  /**
   * The data center's shared cache (Cloudflare's Cache API), between this
   * isolate's memory and D1; `null` to use none.
   */
  sharedCache?: () => Cache | null;
}

function defaultSharedCache(): Cache | null {
  return typeof caches === "undefined" ? null : caches.default;
}

/**
 * API-key lookups off the hot path: by the key's SHA-256 hash, first in
 * this isolate's memory, then in the data center's Cache API, then in D1.
 * Every tier serves a key only until API_KEY_CACHE_BOUND_MS after it was
 * read from D1 (the read time travels with the entry), and a key that is
 * in use is re-read in the background before that, so busy keys never wait
 * for D1. One verifier per isolate (module state), so every request of the
 * isolate shares it.
 */
export class ApiKeyVerifier {
  private readonly cache: FreshnessBoundCache<VerifiedApiKey>;
  private readonly refreshing = new Set<string>();
  private readonly lastTouched = new FreshnessBoundCache<true>({
    boundMs: LAST_USED_INTERVAL_MS,
    refreshAfterMs: LAST_USED_INTERVAL_MS,
    maxEntries: MAX_CACHED_KEYS,
    clock: () => this.now(),
  });
  private readonly clock: () => number;
  private readonly sharedCache: () => Cache | null;

  constructor(options: ApiKeyVerifierOptions = {}) {
    this.clock = options.clock ?? Date.now;
    this.sharedCache = options.sharedCache ?? defaultSharedCache;
    this.cache = new FreshnessBoundCache<VerifiedApiKey>({
      boundMs: API_KEY_CACHE_BOUND_MS,
      refreshAfterMs: API_KEY_REFRESH_AFTER_MS,
      maxEntries: MAX_CACHED_KEYS,
      clock: this.clock,
    });
  }

  now(): number {
    return this.clock();
  }

  /** The key with this hash and its tenant's status, or undefined when no key has it. */
  async lookup(
    db: Database,
    keyHash: string,
    background: Background,
  ): Promise<VerifiedApiKey | undefined> {
    const cached = this.cache.get(keyHash);
    if (cached) {
      if (cached.stale) this.refreshInBackground(db, keyHash, background);
      return cached.value;
    }
    const shared = await this.readShared(keyHash);
    if (shared && this.cache.put(keyHash, shared.value, shared.readAtMs)) return shared.value;
    return this.readSource(db, keyHash, background);
  }

  /**
   * Records that the key was used: at most one D1 write per key per
   * LAST_USED_INTERVAL_MS from this isolate (the write's own condition
   * keeps other isolates from writing more often than that too).
   */
  recordUse(db: Database, key: ApiKeyRow, background: Background): void {
    if (this.lastTouched.get(key.id)) return;
    const now = this.now();
    this.lastTouched.put(key.id, true, now);
    background(
      touchApiKey(db, key.id, new Date(now)).then(
        () => undefined,
        (error: unknown) => {
          // Let the next request try again.
          this.lastTouched.delete(key.id);
          console.error(
            JSON.stringify({ level: "warn", msg: "api key touch failed", error: String(error) }),
          );
        },
      ),
    );
  }

  /** After a revocation: this isolate and this data center's cache forget the keys at once. */
  async forgetKeys(keyHashes: string[]): Promise<void> {
    for (const hash of keyHashes) this.cache.evict(hash);
    await Promise.all(keyHashes.map((hash) => this.deleteShared(hash)));
  }

  /** After a tenant stops being ACTIVE: every key of the tenant, in every tier this isolate reaches. */
  async forgetTenant(db: Database, tenantId: string): Promise<void> {
    this.cache.evictWhere((verified) => verified.key.tenantId === tenantId);
    const hashes = await listApiKeyHashesOfTenant(db, tenantId);
    await Promise.all(hashes.map((hash) => this.deleteShared(hash)));
  }

  private async readSource(
    db: Database,
    keyHash: string,
    background: Background,
    afterEviction = false,
  ): Promise<VerifiedApiKey | undefined> {
    // The read's start time: what it returns is at least this fresh.
    const readAtMs = this.now();
    const found = await findApiKeyByHash(db, keyHash);
    if (!found) {
      this.cache.delete(keyHash);
      return undefined;
    }
    const verified: VerifiedApiKey = { key: found.key, tenantStatus: found.tenantStatus };
    if (!this.cache.put(keyHash, verified, readAtMs)) {
      // A revocation came in while this read was under way, so what D1
      // answered may predate it: ask again. That second read started after
      // the eviction, so its answer stands (uncached when the clock has
      // not moved since).
      return afterEviction ? verified : this.readSource(db, keyHash, background, true);
    }
    background(this.writeShared(keyHash, verified, readAtMs));
    return verified;
  }

  private refreshInBackground(db: Database, keyHash: string, background: Background): void {
    if (this.refreshing.has(keyHash)) return;
    this.refreshing.add(keyHash);
    background(
      this.readSource(db, keyHash, background)
        .catch((error: unknown) =>
          console.error(
            JSON.stringify({ level: "warn", msg: "api key refresh failed", error: String(error) }),
          ),
        )
        .finally(() => this.refreshing.delete(keyHash)),
    );
  }

  private sharedUrl(keyHash: string): string {
    return `${SHARED_CACHE_ORIGIN}/keys/${keyHash}`;
  }

  /** The shared tier is an optimisation: when it fails, D1 answers. */
  private async readShared(
    keyHash: string,
  ): Promise<{ value: VerifiedApiKey; readAtMs: number } | undefined> {
    const cache = this.sharedCache();
    if (!cache) return undefined;
    try {
      const response = await cache.match(this.sharedUrl(keyHash));
      if (!response) return undefined;
      const entry = (await response.json()) as { value: VerifiedApiKey; readAtMs: number };
      if (entry.value?.key?.keyHash !== keyHash || !this.cache.servable(entry.readAtMs)) {
        return undefined;
      }
      return entry;
    } catch (error) {
      console.error(
        JSON.stringify({ level: "warn", msg: "api key cache read failed", error: String(error) }),
      );
      return undefined;
    }
  }

  private async writeShared(
    keyHash: string,
    value: VerifiedApiKey,
    readAtMs: number,
  ): Promise<void> {
    const cache = this.sharedCache();
    const seconds = Math.floor(this.cache.remainingMs(readAtMs) / 1000);
    if (!cache || seconds < 1) return;
    try {
      await cache.put(
        this.sharedUrl(keyHash),
        new Response(JSON.stringify({ value, readAtMs }), {
          headers: {
            "content-type": "application/json",
            "cache-control": `max-age=${seconds}`,
          },
        }),
      );
    } catch (error) {
      console.error(
        JSON.stringify({ level: "warn", msg: "api key cache write failed", error: String(error) }),
      );
    }
  }

  private async deleteShared(keyHash: string): Promise<void> {
    const cache = this.sharedCache();
    if (!cache) return;
    try {
      await cache.delete(this.sharedUrl(keyHash));
    } catch (error) {
      console.error(
        JSON.stringify({ level: "warn", msg: "api key cache delete failed", error: String(error) }),
      );
    }
  }
}

/** The isolate's verifier: module state lives as long as the isolate. */
export const isolateApiKeys = new ApiKeyVerifier();
