import type { Database } from "@edge-platform/shared/db/client";
import { ApiError } from "@edge-platform/shared/http/api-error";
import {
  findUsageEvent,
  listLatestUsageEvents,
  listUsageAggregates,
  type UsageEventRow,
} from "../db/usage-events.ts";
import type { ArchivedUsageEvent } from "../domain/usage-archive.ts";
import type { ArchiveLookup } from "./usage-archive-lookup.ts";

export const USAGE_EVENT_NOT_FOUND = "Usage event not found";

export function usageEventView(row: UsageEventRow | ArchivedUsageEvent) {
  return {
    id: row.id,
    eventId: row.eventId,
    feature: "featureLookupKey" in row ? row.featureLookupKey : row.feature,
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
  constructor(
    private readonly db: Database,
    /** Where events past the D1 retention window are found (services/usage-archive-lookup.ts). */
    private readonly archive?: (tenantId: string, eventId: string) => Promise<ArchiveLookup>,
  ) {}

  /** From D1, or for an event past the retention window from its R2 archive part. */
  async event(tenantId: string, eventId: string) {
    const row = await findUsageEvent(this.db, tenantId, eventId);
    if (row) return usageEventView(row);
    const archived = this.archive ? await this.archive(tenantId, eventId) : undefined;
    if (!archived || archived.kind === "not_archived") {
      throw new ApiError(404, USAGE_EVENT_NOT_FOUND);
    }
    if (archived.kind === "unreadable") {
      throw new ApiError(
        503,
        `Usage event ${eventId} is archived in R2 bucket ${archived.bucket} at ${archived.key}, which cannot be read right now`,
      );
    }
    return { ...usageEventView(archived.event), archive: archived.archive };
  }

  /** The tenant's latest events in D1 (those past retention are in the archive). */
  async latest(tenantId: string, limit: number) {
    const rows = await listLatestUsageEvents(this.db, tenantId, limit);
    return { data: rows.map(usageEventView) };
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
