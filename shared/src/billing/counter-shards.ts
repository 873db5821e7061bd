import { fnv1a } from "../usage-log/client.ts";
import { type TenantShards, tenantShardSetting } from "./tenant-shard-setting.ts";

/*
 * A tenant's counting is spread over its counter shards (EntitlementCounter
 * objects): USAGE_COUNTER_SHARDS for every tenant ("1"), and
 * USAGE_COUNTER_TENANT_SHARDS with JSON overrides per tenant (a count, or
 * `{"shards": 4, "previous": 1}` after a change).
 *
 *   - Usage events of log shard s are recorded by counter shard
 *     s mod shards, so each shard's flush claims events only in its own
 *     log shards: the log shard names that counter shard in each message
 *     it sends (`counterShard`, shared/src/queues/usage.ts), so the usage
 *     consumer needs no setting of its own.
 *   - Checks and consumes without an Idempotency-Key go to any shard;
 *     a keyed consume goes to the shard of its key's hash (under
 *     `previous` while it is set, so a repeat finds the key's record).
 *   - Shard 0 (the object named by the tenant id alone, as before shards
 *     existed) owns HARD limits, prepaid credits, progressive billing,
 *     usage alerts and meters that need every event in one place; the
 *     others lease quota from it and report what they count.
 */

/** Counter shards per tenant are at most this many. */
export const MAX_COUNTER_SHARDS = 64;

type CounterShardSettings = {
  USAGE_COUNTER_SHARDS?: string;
  USAGE_COUNTER_TENANT_SHARDS?: string;
};

export function tenantCounterShards(env: CounterShardSettings, tenantId: string): TenantShards {
  return tenantShardSetting(
    {
      defaultCount: env.USAGE_COUNTER_SHARDS,
      overrides: env.USAGE_COUNTER_TENANT_SHARDS,
      overridesName: "USAGE_COUNTER_TENANT_SHARDS",
      max: MAX_COUNTER_SHARDS,
    },
    tenantId,
  );
}

/** The object name of a counter shard: shard 0 keeps the tenant id alone. */
export function counterShardName(tenantId: string, shard: number): string {
  return shard === 0 ? tenantId : `${tenantId}/counter/${shard}`;
}

/** The counter shard that records the events of a usage-log shard. */
export function counterShardOfLogShard(logShard: number, shards: TenantShards): number {
  return logShard % shards.shards;
}

/** The counter shard of a keyed consume: stable for the key while `previous` is set. */
export function counterShardOfKey(requestId: string, shards: TenantShards): number {
  return fnv1a(requestId) % (shards.previous ?? shards.shards);
}

/** Any counter shard, for a check or an unkeyed consume. */
export function anyCounterShard(shards: TenantShards): number {
  return shards.shards === 1 ? 0 : Math.floor(Math.random() * shards.shards);
}

/** Items grouped by the counter shard that counts them (the one their message names; absent: 0). */
export function byCounterShard<T>(
  items: readonly T[],
  counterShardOf: (item: T) => number | undefined,
): Map<number, T[]> {
  const groups = new Map<number, T[]>();
  for (const item of items) {
    const shard = counterShardOf(item) ?? 0;
    const group = groups.get(shard) ?? [];
    group.push(item);
    groups.set(shard, group);
  }
  return groups;
}
