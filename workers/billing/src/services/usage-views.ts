import type { Database } from "@edge-platform/shared/db/client";
import { ApiError } from "@edge-platform/shared/http/api-error";
import { findUsageEvent, listUsageAggregates, type UsageEventRow } from "../db/usage-events.ts";

export const USAGE_EVENT_NOT_FOUND = "Usage event not found";

export function usageEventView(row: UsageEventRow) {
  return {
    id: row.id,
    eventId: row.eventId,
    feature: row.featureLookupKey,
    amount: row.amount,
    timestamp: row.timestamp,
    receivedAt: row.receivedAt,
    status: row.status,
    reason: row.rejectionCode,
    message: row.rejectionReason,
    subscriptionId: row.subscriptionId,
    periodKey: row.periodKey,
    validatedAt: row.validatedAt,
    aggregatedAt: row.aggregatedAt,
    metadata: row.metadata,
  };
}

/** What a tenant can see of its own usage: one event's fate, and the aggregates. */
export class UsageViewService {
  constructor(private readonly db: Database) {}

  async event(tenantId: string, eventId: string) {
    const row = await findUsageEvent(this.db, tenantId, eventId);
    if (!row) throw new ApiError(404, USAGE_EVENT_NOT_FOUND);
    return usageEventView(row);
  }

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
