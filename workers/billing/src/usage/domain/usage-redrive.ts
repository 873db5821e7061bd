import type { EventProperties } from "@edge-platform/shared/billing/meter";
import {
  propertiesField,
  type RawUsageMessage,
  type ValidatedUsageMessage,
} from "@edge-platform/shared/queues/usage";

/*
 * Re-driving stranded usage events. An accepted event is finished only when
 * it is AGGREGATED or REJECTED; one that has stayed PENDING or VALIDATED
 * longer than the re-drive bound lost its message somewhere (a local stack
 * stopped with messages in memory, a purge, a discarded dead letter, a bug)
 * and is sent again from the usage log. Repeats are harmless: validation moves a
 * row only from PENDING, and the EntitlementCounter counts each event id
 * once and its flush claims only VALIDATED rows.
 */

/** Production default; `USAGE_REDRIVE_AFTER_SECONDS` overrides it. */
export const DEFAULT_REDRIVE_AFTER_SECONDS = 300;
const MIN_REDRIVE_AFTER_SECONDS = 5;

/** What the re-drive reads of an unfinished event in the usage log. */
export interface UnfinishedEventRow {
  id: string;
  tenantId: string;
  eventId: string;
  feature: string;
  amount: number;
  timestamp: string;
  receivedAt: string;
  status: "PENDING" | "VALIDATED";
  subscriptionId: string | null;
  periodKey: string | null;
  periodStart: string | null;
  periodEnd: string | null;
  validatedAt: string | null;
  properties: EventProperties;
}

export type Redrive =
  | { queue: "raw"; message: RawUsageMessage }
  | { queue: "validated"; message: ValidatedUsageMessage };

/**
 * Where a stranded event goes again: a VALIDATED one straight to
 * aggregation with the window validation stored on its row (one hop
 * fewer); a PENDING one, or a VALIDATED row missing its window, to
 * validation, which forwards an already validated row by itself.
 */
export function redriveOf(row: UnfinishedEventRow): Redrive {
  if (
    row.status === "VALIDATED" &&
    row.subscriptionId &&
    row.periodKey &&
    row.periodStart &&
    row.validatedAt
  ) {
    return {
      queue: "validated",
      message: {
        id: row.id,
        tenantId: row.tenantId,
        eventId: row.eventId,
        subscriptionId: row.subscriptionId,
        feature: row.feature,
        amount: row.amount,
        timestamp: new Date(row.timestamp).toISOString(),
        receivedAt: row.receivedAt,
        window: { key: row.periodKey, start: row.periodStart, end: row.periodEnd },
        validatedAt: row.validatedAt,
        ...propertiesField(row.properties),
      },
    };
  }
  return {
    queue: "raw",
    message: {
      id: row.id,
      tenantId: row.tenantId,
      eventId: row.eventId,
      feature: row.feature,
      amount: row.amount,
      timestamp: row.timestamp,
      receivedAt: row.receivedAt,
      ...propertiesField(row.properties),
    },
  };
}

/** The configured bound in seconds; anything unusable falls back to the default. */
export function redriveAfterSeconds(configured: string | undefined): number {
  const value = Number(configured);
  if (configured === undefined || configured.trim() === "" || !Number.isFinite(value)) {
    return DEFAULT_REDRIVE_AFTER_SECONDS;
  }
  return Math.max(MIN_REDRIVE_AFTER_SECONDS, Math.floor(value));
}
