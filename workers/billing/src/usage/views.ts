import type { Database } from "@edge-platform/shared/db/client";
import { listUsageAggregates } from "./aggregates-storage.ts";

/** The tenant's aggregated usage (its events: usage/log/service.ts). */
export class UsageViewService {
  constructor(private readonly db: Database) {}

  async aggregates(
    tenantId: string,
    filter: { feature?: string; periodKey?: string; subscriptionId?: string },
  ) {
    const rows = await listUsageAggregates(this.db, tenantId, filter);
    return {
      data: rows.map((row) => ({
        subscriptionId: row.subscriptionId,
        feature: row.featureLookupKey,
        periodKey: row.periodKey,
        periodStart: row.periodStart,
        periodEnd: row.periodEnd,
        amount: row.amount,
        lastEventAt: row.lastEventAt,
        updatedAt: row.updatedAt,
      })),
    };
  }
}
