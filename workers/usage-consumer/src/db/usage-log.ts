import {
  byUsageLogObject,
  type RejectedUpdate,
  type UsageLogRow,
  usageLogOfId,
  type ValidatedUpdate,
} from "@edge-platform/shared/usage-log/client";

/*
 * The validation stage's reads and writes of event statuses, in the
 * tenants' usage-log shards (the billing worker's UsageLog objects): one
 * call per shard per batch, in parallel.
 */

type LogEnv = Pick<Env, "DB" | "USAGE_LOG">;

/**
 * The stored events of a batch, by id. `waiting` names ids no shard holds
 * yet but the D1 log of an earlier release still does (moved in shortly).
 */
export async function loadLogRows(
  env: LogEnv,
  keys: { tenantId: string; id: string }[],
): Promise<{ rows: Map<string, UsageLogRow>; waiting: Set<string> }> {
  const rows = new Map<string, UsageLogRow>();
  await Promise.all(
    [...byUsageLogObject(keys, (key) => key).values()].map(async (group) => {
      const found = await usageLogOfId(env.USAGE_LOG, group.tenantId, group.id).rows(
        group.items.map((item) => item.id),
      );
      for (const row of found) rows.set(row.id, row);
    }),
  );
  const absent = keys.map((key) => key.id).filter((id) => !rows.has(id));
  return { rows, waiting: new Set(await idsInD1Log(env.DB, absent)) };
}

async function idsInD1Log(d1: D1Database, ids: string[]): Promise<string[]> {
  if (ids.length === 0) return [];
  try {
    const { results } = await d1
      .prepare("SELECT id FROM usage_events WHERE id IN (SELECT value FROM json_each(?1))")
      .bind(JSON.stringify(ids))
      .all<{ id: string }>();
    return results.map((row) => row.id);
  } catch (error) {
    // Once the D1 log is dropped there is nothing left to wait for.
    if (String(error).includes("no such table")) return [];
    throw error;
  }
}

export async function markRejectedInLog(
  env: LogEnv,
  updates: (RejectedUpdate & { tenantId: string })[],
  at: string,
): Promise<void> {
  await Promise.all(
    [...byUsageLogObject(updates, (update) => update).values()].map((group) =>
      usageLogOfId(env.USAGE_LOG, group.tenantId, group.id).markRejected(
        group.items.map(({ id, code, reason }) => ({ id, code, reason })),
        at,
      ),
    ),
  );
}

export async function markValidatedInLog(
  env: LogEnv,
  updates: (ValidatedUpdate & { tenantId: string })[],
  at: string,
): Promise<void> {
  await Promise.all(
    [...byUsageLogObject(updates, (update) => update).values()].map((group) =>
      usageLogOfId(env.USAGE_LOG, group.tenantId, group.id).markValidated(
        group.items.map(({ tenantId: _tenant, ...update }) => update),
        at,
      ),
    ),
  );
}
