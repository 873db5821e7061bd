import type { TenantEntitlementState } from "@edge-platform/shared/db/entitlement-state";

/*
 * The tenant a counter serves and which of its counter shards this object
 * is (stored in `meta` by the first call, so a call for another tenant or
 * shard is refused), and that tenant's subscription state (current
 * subscription and entitlement snapshots), cached between calls.
 */

/** Subscription state is re-read at least this often even without a refresh call. */
const ENTITLEMENTS_TTL_MS = 30_000;

interface CachedEntitlements {
  state: TenantEntitlementState;
  loadedAt: number;
}

export class CounterTenant {
  private tenantId: string | undefined;
  private shardIndex: number | undefined;
  private cached: CachedEntitlements | null = null;
  private loading: Promise<TenantEntitlementState> | null = null;
  /** Bumped by `refresh`, so a load that started earlier is not cached. */
  private generation = 0;

  constructor(
    private readonly sql: SqlStorage,
    private readonly load: (tenantId: string) => Promise<TenantEntitlementState>,
  ) {}

  /** Remembers which tenant and shard this object serves and refuses calls for any other. */
  bind(tenantId: string, shard = 0): void {
    const stored = this.id();
    if (stored === undefined) {
      this.sql.exec("INSERT INTO meta (key, value) VALUES ('tenant_id', ?)", tenantId);
      if (shard !== 0) this.sql.exec("INSERT INTO meta (key, value) VALUES ('shard', ?)", shard);
      this.tenantId = tenantId;
      this.shardIndex = shard;
    } else if (stored !== tenantId) {
      throw new Error("EntitlementCounter called for a tenant it does not serve");
    } else if (this.shard() !== shard) {
      throw new Error("EntitlementCounter called as another counter shard");
    }
  }

  /** Which of the tenant's counter shards this object is (0: the one that owns limits). */
  shard(): number {
    this.shardIndex ??= Number(
      this.sql.exec<{ value: string }>("SELECT value FROM meta WHERE key = 'shard'").toArray()[0]
        ?.value ?? 0,
    );
    return this.shardIndex;
  }

  /** Whether this object is shard 0, the one that owns limits, credits and alerts. */
  owns(): boolean {
    return this.shard() === 0;
  }

  /** The tenant this object serves; undefined before its first call. */
  id(): string | undefined {
    this.tenantId ??= this.sql
      .exec<{ value: string }>("SELECT value FROM meta WHERE key = 'tenant_id'")
      .toArray()[0]?.value;
    return this.tenantId;
  }

  /** The tenant's subscription and snapshots: cached, re-read after a refresh or the TTL. */
  entitlements(): TenantEntitlementState | Promise<TenantEntitlementState> {
    const cached = this.cached;
    if (cached && Date.now() - cached.loadedAt < ENTITLEMENTS_TTL_MS) return cached.state;
    if (this.loading) return this.loading;
    const tenantId = this.id();
    if (!tenantId) throw new Error("EntitlementCounter has no tenant yet");
    const generation = this.generation;
    const loading = this.load(tenantId)
      .then((state) => {
        if (generation === this.generation) this.cached = { state, loadedAt: Date.now() };
        return state;
      })
      .finally(() => {
        if (this.loading === loading) this.loading = null;
      });
    this.loading = loading;
    return loading;
  }

  /** Drops the cached state, and any load already under way from the cache. */
  refresh(): void {
    this.generation++;
    this.cached = null;
    this.loading = null;
  }
}
