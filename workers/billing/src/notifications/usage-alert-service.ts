import type { Database } from "@edge-platform/shared/db/client";
import { loadTenantEntitlementState } from "@edge-platform/shared/db/entitlement-state";
import { ApiError } from "@edge-platform/shared/http/api-error";
import { type AuditContext, auditStatement, SYSTEM_AUDIT } from "../audit/index.ts";
import { findFeatureByLookupKey } from "../catalog/index.ts";
import type { TenantScoped } from "../platform/index.ts";
import { type PageRequest, pageMeta, pageOffset } from "../platform/index.ts";
import {
  alertDefinitionProblem,
  MAX_ALERTS_PER_TENANT,
  thresholdUnits,
  type UsageThreshold,
} from "./domain/usage-alerts.ts";
import {
  deleteUsageAlertStatement,
  findUsageAlert,
  findUsageAlertByThreshold,
  insertUsageAlertStatement,
  listUsageAlerts,
  type UsageAlertRow,
} from "./usage-alert-storage.ts";

const CHANGED = { sql: "changes() > 0", params: [] };

export function usageAlertView(row: UsageAlertRow, currentThresholdUnits?: number | null) {
  return {
    id: row.id,
    featureLookupKey: row.featureLookupKey,
    threshold: { type: row.thresholdType, value: row.thresholdValue },
    ...(currentThresholdUnits === undefined ? {} : { thresholdUnits: currentThresholdUnits }),
    createdAt: row.createdAt,
  };
}

export class UsageAlertService {
  constructor(
    private readonly db: Database,
    private readonly d1: D1Database,
    private readonly counters: Env["ENTITLEMENT_COUNTER"],
    private readonly audit: AuditContext = SYSTEM_AUDIT,
  ) {}

  /**
   * 422 for a feature that does not exist or cannot carry the threshold;
   * 409 for the same threshold twice or past MAX_ALERTS_PER_TENANT. The row
   * and its audit row are one batch; the tenant's counter then re-reads its
   * alert set.
   */
  async create(
    context: TenantScoped,
    input: { featureLookupKey: string; threshold: UsageThreshold },
  ) {
    const tenantId = context.tenant.id;
    const feature = await findFeatureByLookupKey(this.db, input.featureLookupKey);
    if (!feature) {
      throw new ApiError(422, `Feature with lookup key "${input.featureLookupKey}" not found`);
    }
    const state = await loadTenantEntitlementState(this.db, tenantId);
    const snapshot = state.snapshots.get(feature.lookupKey);
    const problem = alertDefinitionProblem(feature, input.threshold, snapshot);
    if (problem) throw new ApiError(422, problem);

    const row: UsageAlertRow = {
      id: crypto.randomUUID(),
      tenantId,
      featureLookupKey: feature.lookupKey,
      thresholdType: input.threshold.type,
      thresholdValue: input.threshold.value,
      createdAt: new Date().toISOString(),
    };
    const [inserted] = await this.d1.batch([
      insertUsageAlertStatement(this.d1, row, MAX_ALERTS_PER_TENANT),
      auditStatement(
        this.d1,
        this.audit,
        {
          tenantId,
          action: "usage_alert.created",
          targetType: "usage_alert",
          targetId: row.id,
          changes: {
            featureLookupKey: { after: row.featureLookupKey },
            threshold: { after: input.threshold },
          },
        },
        { when: CHANGED },
      ),
    ]);
    if ((inserted?.meta.changes ?? 0) !== 1) {
      const same = await findUsageAlertByThreshold(this.db, tenantId, row);
      if (same) {
        throw new ApiError(
          409,
          `An alert for "${row.featureLookupKey}" at ${row.thresholdValue} ${row.thresholdType} already exists (${same.id})`,
        );
      }
      throw new ApiError(409, `A tenant may have at most ${MAX_ALERTS_PER_TENANT} usage alerts`);
    }
    await this.refreshCounter(tenantId);
    return usageAlertView(row, snapshot ? thresholdUnits(input.threshold, snapshot) : null);
  }

  async list(
    context: TenantScoped,
    page: PageRequest,
    filter: { featureLookupKey?: string | undefined },
  ) {
    const { rows, total } = await listUsageAlerts(
      this.db,
      context.tenant.id,
      filter,
      pageOffset(page),
      page.limit,
    );
    const { snapshots } = await loadTenantEntitlementState(this.db, context.tenant.id);
    return {
      data: rows.map((row) => {
        const snapshot = snapshots.get(row.featureLookupKey);
        const threshold = { type: row.thresholdType, value: row.thresholdValue };
        return usageAlertView(row, snapshot ? thresholdUnits(threshold, snapshot) : null);
      }),
      meta: pageMeta(page, total),
    };
  }

  async delete(context: TenantScoped, id: string) {
    const tenantId = context.tenant.id;
    const existing = await findUsageAlert(this.db, tenantId, id);
    if (!existing) throw alertNotFound(id);
    const [deleted] = await this.d1.batch([
      deleteUsageAlertStatement(this.d1, tenantId, id),
      auditStatement(
        this.d1,
        this.audit,
        {
          tenantId,
          action: "usage_alert.deleted",
          targetType: "usage_alert",
          targetId: id,
          changes: {
            featureLookupKey: { before: existing.featureLookupKey },
            threshold: { before: { type: existing.thresholdType, value: existing.thresholdValue } },
          },
        },
        { when: CHANGED },
      ),
    ]);
    if ((deleted?.meta.changes ?? 0) !== 1) throw alertNotFound(id);
    await this.refreshCounter(tenantId);
    return usageAlertView(existing);
  }

  /** The counter re-reads the set before its next count (and on its own within 30 s if this fails). */
  private async refreshCounter(tenantId: string) {
    try {
      await this.counters.get(this.counters.idFromName(tenantId)).refreshUsageAlerts();
    } catch (error) {
      console.error(
        JSON.stringify({
          level: "error",
          msg: "usage alerts changed but the counter was not told; it re-reads them within 30 s",
          tenantId,
          error: String(error),
        }),
      );
    }
  }
}

const alertNotFound = (id: string) =>
  new ApiError(404, `Usage alert with ID "${id}" not found in this tenant`);
