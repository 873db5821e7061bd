import type { EntitlementCounter } from "./entitlement-counter.ts";
import type {
  CheckResult,
  ConsumeResult,
  FlushResult,
  RecordResult,
  UsageEntry,
} from "./entitlement-counter-protocol.ts";

/** The tenant's counter object: one per tenant, addressed by the tenant id. */
export function entitlementCounter(
  namespace: DurableObjectNamespace<EntitlementCounter>,
  tenantId: string,
) {
  const stub = namespace.get(namespace.idFromName(tenantId));
  return {
    check: (featureKey: string, nowMs?: number): Promise<CheckResult> =>
      stub.check({ tenantId, featureKey, nowMs }),
    consume: (featureKey: string, amount: number, nowMs?: number): Promise<ConsumeResult> =>
      stub.consume({ tenantId, featureKey, amount, nowMs }),
    /** The usage pipeline's way in (see "the single path" in entitlement-counter.ts). */
    record: (entries: UsageEntry[]): Promise<RecordResult> => stub.record({ tenantId, entries }),
    /** Call after any change to the tenant's subscriptions. */
    refresh: (): Promise<void> => stub.refreshEntitlements(),
    flush: (): Promise<FlushResult> => stub.flush({ tenantId }),
  };
}

export type EntitlementCounterClient = ReturnType<typeof entitlementCounter>;
