import type { Database } from "@edge-platform/shared/db/client";
import { usageAlerts } from "@edge-platform/shared/db/schema/usage-alerts";
import { and, asc, count, desc, eq } from "drizzle-orm";
import type { UsageAlertTerms } from "./domain/usage-alerts.ts";

export type UsageAlertRow = typeof usageAlerts.$inferSelect;

/** Every alert of the tenant, as its counter object checks them. */
export async function tenantAlertTerms(db: Database, tenantId: string): Promise<UsageAlertTerms[]> {
  const rows = await db
    .select()
    .from(usageAlerts)
    .where(eq(usageAlerts.tenantId, tenantId))
    .orderBy(asc(usageAlerts.createdAt), asc(usageAlerts.id))
    .all();
  return rows.map((row) => ({
    id: row.id,
    featureLookupKey: row.featureLookupKey,
    threshold: { type: row.thresholdType, value: row.thresholdValue },
  }));
}

export async function listUsageAlerts(
  db: Database,
  tenantId: string,
  filter: { featureLookupKey?: string | undefined },
  offset: number,
  limit: number,
) {
  const where = and(
    eq(usageAlerts.tenantId, tenantId),
    filter.featureLookupKey ? eq(usageAlerts.featureLookupKey, filter.featureLookupKey) : undefined,
  );
  const [rows, totals] = await db.batch([
    db
      .select()
      .from(usageAlerts)
      .where(where)
      .orderBy(desc(usageAlerts.createdAt), desc(usageAlerts.id))
      .limit(limit)
      .offset(offset),
    db.select({ total: count() }).from(usageAlerts).where(where),
  ]);
  return { rows, total: totals[0]?.total ?? 0 };
}

export function findUsageAlert(db: Database, tenantId: string, id: string) {
  return db
    .select()
    .from(usageAlerts)
    .where(and(eq(usageAlerts.tenantId, tenantId), eq(usageAlerts.id, id)))
    .get();
}

export function findUsageAlertByThreshold(
  db: Database,
  tenantId: string,
  alert: Pick<UsageAlertRow, "featureLookupKey" | "thresholdType" | "thresholdValue">,
) {
  return db
    .select()
    .from(usageAlerts)
    .where(
      and(
        eq(usageAlerts.tenantId, tenantId),
        eq(usageAlerts.featureLookupKey, alert.featureLookupKey),
        eq(usageAlerts.thresholdType, alert.thresholdType),
        eq(usageAlerts.thresholdValue, alert.thresholdValue),
      ),
    )
    .get();
}

/**
 * Inserts the alert unless the tenant already has `maxPerTenant` alerts or
 * the same threshold on the feature (nothing is written then: the audit
 * row that follows in the batch checks `changes()`).
 */
export function insertUsageAlertStatement(
  d1: D1Database,
  row: UsageAlertRow,
  maxPerTenant: number,
) {
  return d1
    .prepare(
      `INSERT INTO usage_alerts (id, tenant_id, feature_lookup_key, threshold_type, threshold_value, created_at)
       SELECT ?1, ?2, ?3, ?4, ?5, ?6
       WHERE (SELECT count(*) FROM usage_alerts WHERE tenant_id = ?2) < ?7
       ON CONFLICT DO NOTHING`,
    )
    .bind(
      row.id,
      row.tenantId,
      row.featureLookupKey,
      row.thresholdType,
      row.thresholdValue,
      row.createdAt,
      maxPerTenant,
    );
}

export function deleteUsageAlertStatement(d1: D1Database, tenantId: string, id: string) {
  return d1.prepare("DELETE FROM usage_alerts WHERE tenant_id = ? AND id = ?").bind(tenantId, id);
}
