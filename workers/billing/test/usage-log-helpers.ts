import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { usageLogName } from "@edge-platform/shared/usage-log/client";
import type { UsageLog } from "../src/usage/log/usage-log.ts";

/** A tenant shard's UsageLog object. */
export function usageLogObject(tenantId: string, shard = 0): DurableObjectStub<UsageLog> {
  return env.USAGE_LOG.get(env.USAGE_LOG.idFromName(usageLogName(tenantId, shard)));
}

export interface LoggedEvent {
  id: string;
  eventId: string;
  status: string;
  amount: number;
  /** Whether the event still waits in the outbox (not sent to usage-raw yet). */
  unsent: boolean;
}

/** The hot events of a tenant shard, by eventId. */
export async function loggedEvents(tenantId: string, shard = 0): Promise<LoggedEvent[]> {
  return runInDurableObject(usageLogObject(tenantId, shard), (_instance: UsageLog, state) =>
    state.storage.sql
      .exec<{ id: string; eventId: string; status: string; amount: number; unsent: number }>(
        `SELECT e.id, e.event_id AS eventId, e.status, e.amount, o.id IS NOT NULL AS unsent
           FROM events e LEFT JOIN outbox o ON o.id = e.id ORDER BY e.event_id`,
      )
      .toArray()
      .map((row) => ({ ...row, unsent: row.unsent === 1 })),
  );
}

/** Runs SQL in a tenant shard's storage (tests that set up or inspect a state). */
export async function inUsageLog<T>(
  tenantId: string,
  shard: number,
  run: (sql: SqlStorage, instance: UsageLog) => T | Promise<T>,
): Promise<T> {
  return runInDurableObject(usageLogObject(tenantId, shard), (instance: UsageLog, state) =>
    run(state.storage.sql, instance),
  );
}
