import { anyCounterShard, counterShardOfKey } from "@edge-platform/shared/billing/counter-shards";
import { entitlementCounter } from "@edge-platform/shared/billing/entitlement-counter-client";
import type {
  CheckResult,
  ConsumeResult,
} from "@edge-platform/shared/billing/entitlement-counter-protocol";
import {
  deniedCheck,
  quotaExceededMessage,
} from "@edge-platform/shared/billing/entitlement-decision";
import type { EventProperties } from "@edge-platform/shared/billing/meter";
import type { TenantShards } from "@edge-platform/shared/billing/tenant-shard-setting";
import type { Database } from "@edge-platform/shared/db/client";
import { ApiError } from "@edge-platform/shared/http/api-error";
import { findFeatureByLookupKey } from "../catalog/index.ts";
import { CREDITS_EXHAUSTED } from "../credits/index.ts";
import type { CallerTenant, CounterIdempotency } from "../platform/index.ts";
import {
  IDEMPOTENCY_IN_FLIGHT,
  IDEMPOTENCY_KEY_REUSED,
  IDEMPOTENT_REPLAYED_HEADER,
} from "../platform/index.ts";

export const BOOLEAN_NOT_CONSUMABLE =
  "Boolean features cannot be consumed. Use the check endpoint instead.";

/** A consume with an Idempotency-Key: what the counter records, and the request's correlation id. */
export interface KeyedConsume extends CounterIdempotency {
  correlationId: string;
}

/** A successful consume's body: the counter's figures, and `allowed`. */
export type ConsumeAnswer = Omit<Extract<ConsumeResult, { status: "consumed" }>, "status"> & {
  allowed: true;
};

/**
 * Entitlement check and consume for a tenant. The decisions are taken by the
 * tenant's EntitlementCounter objects (its counter shards: a check or an
 * unkeyed consume goes to any of them, a keyed consume to its key's);
 * this maps them to HTTP.
 */
export class EntitlementService {
  constructor(
    private readonly counters: Env["ENTITLEMENT_COUNTER"],
    /** The catalog, opened only when a refusal needs it (most checks never read it). */
    private readonly catalog: () => Database,
    /** The tenant's counter shards (USAGE_COUNTER_SHARDS, USAGE_COUNTER_TENANT_SHARDS). */
    private readonly shardsOf: (tenantId: string) => TenantShards = () => ({ shards: 1 }),
  ) {}

  /**
   * The tenant's entitlement to a feature. A feature that does not exist in
   * the catalog is a 404 (looked up only when the answer is a denial, so
   * allowed checks cost no extra read).
   */
  async check(tenant: CallerTenant, featureKey: string): Promise<CheckResult> {
    if (tenant.status !== "ACTIVE") {
      await this.requireFeature(featureKey);
      return deniedCheck(featureKey, `Tenant is ${tenant.status.toLowerCase()}`);
    }
    const shard = anyCounterShard(this.shardsOf(tenant.id));
    const result = await this.reach(() =>
      entitlementCounter(this.counters, tenant.id, shard).check(featureKey),
    );
    if (!result.allowed) await this.requireFeature(featureKey);
    return result;
  }

  private async requireFeature(featureKey: string): Promise<void> {
    if (!(await findFeatureByLookupKey(this.catalog(), featureKey))) {
      throw new ApiError(404, `Feature with lookup key "${featureKey}" not found`);
    }
  }

  /**
   * Takes `amount` units. With an Idempotency-Key the tenant's counter
   * records the key with the count (see keyedConsumeInput): a repeat gets
   * the first answer back (`replayed`), errors included, with the first
   * request's correlation id and time.
   */
  async consume(
    tenant: CallerTenant,
    featureKey: string,
    amount: number,
    keyed?: KeyedConsume,
    properties?: EventProperties,
  ): Promise<{ answer: ConsumeAnswer; replayed: boolean }> {
    if (tenant.status !== "ACTIVE") {
      throw new ApiError(403, `Tenant is ${tenant.status.toLowerCase()}`);
    }
    const shards = this.shardsOf(tenant.id);
    if (!keyed) {
      const counter = entitlementCounter(this.counters, tenant.id, anyCounterShard(shards));
      const result = await this.reach(() =>
        counter.consume(featureKey, amount, undefined, undefined, properties),
      );
      return { answer: await this.answer(result, featureKey, amount), replayed: false };
    }
    const { correlationId, ...record } = keyed;
    const shard = counterShardOfKey(keyed.requestId, shards);
    const counter = entitlementCounter(this.counters, tenant.id, shard);
    const outcome = await this.reach(() =>
      counter.consumeKeyed(featureKey, amount, { ...record, correlationId, properties }),
    );
    if (outcome.kind === "in_flight") {
      throw new ApiError(409, IDEMPOTENCY_IN_FLIGHT, { code: "idempotency_in_flight" });
    }
    if (outcome.kind === "key_reused") {
      throw new ApiError(422, IDEMPOTENCY_KEY_REUSED, { code: "idempotency_key_reused" });
    }
    try {
      return {
        answer: await this.answer(outcome.result, featureKey, amount),
        replayed: outcome.replayed,
      };
    } catch (error) {
      if (!(error instanceof ApiError)) throw error;
      throw new ApiError(error.status, error.message, {
        code: error.code,
        details: error.details,
        ...(error.fields ? { fields: error.fields } : {}),
        headers: {
          ...error.headers,
          ...(outcome.replayed ? { [IDEMPOTENT_REPLAYED_HEADER]: "true" } : {}),
        },
        firstAnswer: {
          correlationId: outcome.correlationId,
          timestamp: new Date(outcome.atMs).toISOString(),
        },
      });
    }
  }

  /** The counter's decision as the HTTP answer: the body of a success, or the refusal thrown. */
  private async answer(
    result: ConsumeResult,
    featureKey: string,
    amount: number,
  ): Promise<ConsumeAnswer> {
    switch (result.status) {
      case "consumed":
        return {
          allowed: true as const,
          feature: result.feature,
          type: result.type,
          consumed: result.consumed,
          used: result.used,
          limit: result.limit,
          remaining: result.remaining,
          overage: result.overage,
          resetAt: result.resetAt,
        };
      case "denied":
        await this.requireFeature(featureKey);
        throw new ApiError(403, result.reason, { code: "not_entitled" });
      case "not_consumable":
        throw new ApiError(400, BOOLEAN_NOT_CONSUMABLE, { code: "not_consumable" });
      case "quota_exceeded":
        throw new ApiError(
          403,
          quotaExceededMessage(result.feature, result.limit, result.used, result.requested),
          { code: "quota_exceeded" },
        );
      case "credits_exhausted":
        throw new ApiError(
          402,
          `The credit balance cannot pay for ${amount} more of "${result.feature}": they cost ${result.cost} cents, the balance that applies is ${result.creditBalance}`,
          {
            code: CREDITS_EXHAUSTED,
            fields: { code: CREDITS_EXHAUSTED, creditBalance: result.creditBalance },
          },
        );
      case "counter_overflow":
        throw new ApiError(
          409,
          `Consuming ${amount} more of "${result.feature}" would pass the largest countable usage`,
          { code: "counter_overflow" },
        );
      case "invalid_properties":
        throw new ApiError(422, `properties: ${result.message}`, { code: "invalid_properties" });
    }
  }

  /** The counter object is infrastructure: if it cannot answer, say so (503), never guess. */
  private async reach<T>(call: () => Promise<T>): Promise<T> {
    try {
      return await call();
    } catch (error) {
      console.error(
        JSON.stringify({
          level: "error",
          msg: "entitlement counter unavailable",
          error: String(error),
        }),
      );
      throw new ApiError(503, "Entitlements are temporarily unavailable, try again shortly");
    }
  }
}
