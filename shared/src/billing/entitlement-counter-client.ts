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
  UsageEntry,
} from "./entitlement-counter-protocol.ts";

/** Over RPC every method answers with a promise, whatever the object returns. */
type RemoteCounter = {
  [Method in keyof EntitlementCounterRpc]: (
    ...args: Parameters<EntitlementCounterRpc[Method]>
  ) => Promise<Awaited<ReturnType<EntitlementCounterRpc[Method]>>>;
};

/** The tenant's counter object: one per tenant, addressed by the tenant id. */
export function entitlementCounter<T extends Rpc.DurableObjectBranded | undefined>(
  namespace: DurableObjectNamespace<T>,
  tenantId: string,
) {
  // The binding may be typed loosely (a script_name binding from another
  // worker); the object behind it implements EntitlementCounterRpc.
  const stub = namespace.get(namespace.idFromName(tenantId)) as unknown as RemoteCounter;
  return {
    check: (featureKey: string, nowMs?: number): Promise<CheckResult> =>
      stub.check({ tenantId, featureKey, nowMs }),
    /** A repeated `requestId` answers the first result and takes no units. */
    consume: (
      featureKey: string,
      amount: number,
      nowMs?: number,
      requestId?: string,
      properties?: ConsumeInput["properties"],
    ): Promise<ConsumeResult> =>
      stub.consume({ tenantId, featureKey, amount, nowMs, requestId, properties }),
    /** A consume with an Idempotency-Key: its record lives in the object (see the protocol). */
    consumeKeyed: (
      featureKey: string,
      amount: number,
      keyed: Omit<KeyedConsumeInput, "tenantId" | "featureKey" | "amount">,
    ): Promise<KeyedConsumeResult> => stub.consumeKeyed({ tenantId, featureKey, amount, ...keyed }),
    /** The usage pipeline's way in (see "the single path" in entitlement-counter.ts). */
    record: (entries: UsageEntry[]): Promise<RecordResult> => stub.record({ tenantId, entries }),
    /** Call after any change to the tenant's subscriptions. */
    refresh: (): Promise<void> => stub.refreshEntitlements(),
    flush: (): Promise<FlushResult> => stub.flush({ tenantId }),
    /** Call after any change to the tenant's credit grants in D1. */
    refreshCredits: (): Promise<void> => stub.refreshCredits(),
    credits: (nowMs?: number): Promise<CreditsResult> => stub.credits({ tenantId, nowMs }),
    settleCreditGrant: (grantId: string, status: "VOIDED" | "EXPIRED"): Promise<number | null> =>
      stub.settleCreditGrant({ tenantId, grantId, status }),
  };
}

export type EntitlementCounterClient = ReturnType<typeof entitlementCounter>;
