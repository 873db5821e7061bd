import { counterShardName } from "./counter-shards.ts";
import type {
  CheckResult,
  ConsumeInput,
  ConsumeResult,
  CreditsResult,
  EntitlementCounterRpc,
  FlushResult,
  KeyedConsumeInput,
  KeyedConsumeResult,
  RecordResult,
  ReturnLeasesInput,
  ShardReport,
  ShardSyncInput,
  ShardSyncResult,
  UsageEntry,
} from "./entitlement-counter-protocol.ts";

/** Over RPC every method answers with a promise, whatever the object returns. */
type RemoteCounter = {
  [Method in keyof EntitlementCounterRpc]: (
    ...args: Parameters<EntitlementCounterRpc[Method]>
  ) => Promise<Awaited<ReturnType<EntitlementCounterRpc[Method]>>>;
};

/**
 * One of the tenant's counter objects: shard 0 (the default) is addressed by
 * the tenant id alone, the others by counterShardName (counter-shards.ts).
 */
export function entitlementCounter<T extends Rpc.DurableObjectBranded | undefined>(
  namespace: DurableObjectNamespace<T>,
  tenantId: string,
  shardIndex = 0,
) {
  // The binding may be typed loosely (a script_name binding from another
  // worker); the object behind it implements EntitlementCounterRpc.
  const stub = namespace.get(
    namespace.idFromName(counterShardName(tenantId, shardIndex)),
  ) as unknown as RemoteCounter;
  const shard = shardIndex === 0 ? undefined : shardIndex;
  return {
    check: (featureKey: string, nowMs?: number): Promise<CheckResult> =>
      stub.check({ tenantId, featureKey, nowMs, shard }),
    /** A repeated `requestId` answers the first result and takes no units. */
    consume: (
      featureKey: string,
      amount: number,
      nowMs?: number,
      requestId?: string,
      properties?: ConsumeInput["properties"],
    ): Promise<ConsumeResult> =>
      stub.consume({ tenantId, featureKey, amount, nowMs, requestId, properties, shard }),
    /** A consume with an Idempotency-Key: its record lives in the object (see the protocol). */
    consumeKeyed: (
      featureKey: string,
      amount: number,
      keyed: Omit<KeyedConsumeInput, "tenantId" | "featureKey" | "amount">,
    ): Promise<KeyedConsumeResult> =>
      stub.consumeKeyed({ tenantId, featureKey, amount, ...keyed, shard }),
    /** The usage pipeline's way in (see "the single path" in entitlement-counter.ts). */
    record: (entries: UsageEntry[]): Promise<RecordResult> =>
      stub.record({ tenantId, entries, shard }),
    /** Call after any change to the tenant's subscriptions. */
    refresh: (): Promise<void> => stub.refreshEntitlements(),
    flush: (): Promise<FlushResult> => stub.flush({ tenantId, shard }),
    /** Call after any change to the tenant's credit grants in D1. */
    refreshCredits: (): Promise<void> => stub.refreshCredits(),
    credits: (nowMs?: number): Promise<CreditsResult> => stub.credits({ tenantId, nowMs }),
    settleCreditGrant: (grantId: string, status: "VOIDED" | "EXPIRED"): Promise<number | null> =>
      stub.settleCreditGrant({ tenantId, grantId, status }),
    /** Shard 0 only: a shard's report (see the protocol). */
    syncShard: (input: Omit<ShardSyncInput, "tenantId">): Promise<ShardSyncResult> =>
      stub.syncShard({ tenantId, ...input }),
    /** Shards other than 0: give back unused lease units. */
    returnLeases: (input: Omit<ReturnLeasesInput, "tenantId">): Promise<ShardReport[]> =>
      stub.returnLeases({ tenantId, ...input }),
  };
}

export type EntitlementCounterClient = ReturnType<typeof entitlementCounter>;
