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

export interface TenantShards {
  shards: number;
  previous?: number;
}

function clamp(value: unknown): number | undefined {
  const number = Number(value);
  if (!Number.isFinite(number) || number < 1) return undefined;
  return Math.min(MAX_USAGE_LOG_SHARDS, Math.floor(number));
}

export function tenantShards(
  env: Pick<Env, "USAGE_LOG_SHARDS" | "USAGE_LOG_TENANT_SHARDS">,
  tenantId: string,
): TenantShards {
  const fallback = clamp(env.USAGE_LOG_SHARDS) ?? 1;
  let overrides: Record<string, unknown> = {};
  try {
    const parsed: unknown = JSON.parse(env.USAGE_LOG_TENANT_SHARDS || "{}");
    if (parsed && typeof parsed === "object") overrides = parsed as Record<string, unknown>;
  } catch {
    console.error(
      JSON.stringify({ level: "error", msg: "USAGE_LOG_TENANT_SHARDS is not JSON; ignored" }),
    );
  }
  const entry = overrides[tenantId];
  if (entry && typeof entry === "object") {
    const { shards, previous } = entry as Record<string, unknown>;
    const count = clamp(shards) ?? fallback;
    const before = clamp(previous);
    return before !== undefined && before !== count
      ? { shards: count, previous: before }
      : { shards: count };
  }
  return { shards: clamp(entry) ?? fallback };
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
