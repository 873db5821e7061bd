import {
  type TenantShards,
  tenantShardSetting,
} from "@edge-platform/shared/billing/tenant-shard-setting";
import {
  MAX_USAGE_LOG_SHARDS,
  shardOfEventId,
  shardOfId,
  usageLogName,
} from "@edge-platform/shared/usage-log/client";
import type { UsageLog } from "./usage-log.ts";

/*
 * How many shards (UsageLog objects) a tenant's log has.
 *
 *   USAGE_LOG_SHARDS          the default for every tenant ("1").
 *   USAGE_LOG_TENANT_SHARDS   JSON overrides per tenant id: a count
 *                             (`{"<tenant>": 8}`) or, after a change,
 *                             `{"<tenant>": {"shards": 8, "previous": 1}}`.
 *
 * One object takes one writer's worth of events (storage writes are
 * serialised per object), so a tenant whose traffic outgrows it gets more
 * shards. The count decides where a new eventId goes; events already stored
 * stay where they are and are still found by their id. An eventId's
 * duplicate guard lives in its shard under the count in force when it
 * arrived, so for the 7 days after a change `previous` names the old count:
 * ingestion then also asks the old shard whether it holds the id.
 */

export type { TenantShards };

export function tenantShards(
  env: Pick<Env, "USAGE_LOG_SHARDS" | "USAGE_LOG_TENANT_SHARDS">,
  tenantId: string,
): TenantShards {
  return tenantShardSetting(
    {
      defaultCount: env.USAGE_LOG_SHARDS,
      overrides: env.USAGE_LOG_TENANT_SHARDS,
      overridesName: "USAGE_LOG_TENANT_SHARDS",
      max: MAX_USAGE_LOG_SHARDS,
    },
    tenantId,
  );
}

export function usageLogStub(
  namespace: DurableObjectNamespace<UsageLog>,
  tenantId: string,
  shard: number,
): DurableObjectStub<UsageLog> {
  return namespace.get(namespace.idFromName(usageLogName(tenantId, shard)));
}

/** The object holding our id `id` (its shard is written in the id). */
export function usageLogOfId(
  namespace: DurableObjectNamespace<UsageLog>,
  tenantId: string,
  id: string,
): DurableObjectStub<UsageLog> {
  return usageLogStub(namespace, tenantId, shardOfId(id));
}

export { shardOfEventId };
