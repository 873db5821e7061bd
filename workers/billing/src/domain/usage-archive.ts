import type { UsageEventStatus } from "@edge-platform/shared/db/schema/usage-events";

/*
 * The raw usage-event log has a horizon in D1: events received before the
 * retention window (whole UTC days) are archived to R2, one gzip-compressed
 * NDJSON object per part of a tenant's day, then deleted from D1
 * (jobs/usage-archive.ts). The default window is 35 days: past the 7-day
 * validation window (an older event can no longer be accepted, so the
 * D1 unique (tenant, eventId) index is not needed for it) and a billing
 * period.
 */

export const DEFAULT_RETENTION_DAYS = 35;
/** Never less than the validation window (7 days) plus a day. */
export const MIN_RETENTION_DAYS = 8;
export const ARCHIVE_KEY_PREFIX = "usage-events";

const DAY_MS = 86_400_000;

/** The configured retention in days; anything unusable falls back to the default. */
export function retentionDays(configured: string | undefined): number {
  const value = Number(configured);
  if (configured === undefined || configured.trim() === "" || !Number.isFinite(value)) {
    return DEFAULT_RETENTION_DAYS;
  }
  return Math.max(MIN_RETENTION_DAYS, Math.floor(value));
}

/**
 * Events received before this instant are archived: the start of the UTC
 * day `days` days back, so a tenant's day is archived whole (no event can
 * be received into a past day any more).
 */
export function archiveHorizon(nowMs: number, days: number): string {
  const start = Math.floor((nowMs - days * DAY_MS) / DAY_MS) * DAY_MS;
  return new Date(start).toISOString();
}

/** [start, end) of a UTC day given as YYYY-MM-DD. */
export function dayBounds(day: string): { start: string; end: string } {
  const start = Date.parse(`${day}T00:00:00.000Z`);
  if (!/^\d{4}-\d{2}-\d{2}$/.test(day) || Number.isNaN(start)) {
    throw new Error(`not a UTC day: ${day}`);
  }
  return { start: new Date(start).toISOString(), end: new Date(start + DAY_MS).toISOString() };
}

/** The object of one part: derived from what it holds, so a repeated upload overwrites it. */
export function archiveObjectKey(tenantId: string, day: string, part: number): string {
  return `${ARCHIVE_KEY_PREFIX}/${tenantId}/${day}/part-${String(part).padStart(5, "0")}.ndjson.gz`;
}

/** One archived event: every column of its usage_events row. */
export interface ArchivedUsageEvent {
  id: string;
  tenantId: string;
  eventId: string;
  subscriptionId: string | null;
  feature: string;
  amount: number;
  timestamp: string;
  receivedAt: string;
  status: UsageEventStatus;
  rejectionCode: string | null;
  rejectionReason: string | null;
  periodKey: string | null;
  periodStart: string | null;
  periodEnd: string | null;
  validatedAt: string | null;
  aggregatedAt: string | null;
  aggregationFlushId: string | null;
  metadata: Record<string, unknown>;
  createdAt: string;
  updatedAt: string;
}

/** One JSON object per line, each line ending in a newline. */
export function toNdjson(events: ArchivedUsageEvent[]): string {
  return events.map((event) => `${JSON.stringify(event)}\n`).join("");
}

/** The line of `eventId` in an archive part, parsed; undefined when the part does not hold it. */
export function findInNdjson(text: string, eventId: string): ArchivedUsageEvent | undefined {
  for (const line of text.split("\n")) {
    if (line.length === 0) continue;
    const event = JSON.parse(line) as ArchivedUsageEvent;
    if (event.eventId === eventId) return event;
  }
  return undefined;
}
