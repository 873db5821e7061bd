import type { Database } from "@edge-platform/shared/db/client";
import { usageAggregates } from "@edge-platform/shared/db/schema/usage-aggregates";
import { usageEvents } from "@edge-platform/shared/db/schema/usage-events";
import { USAGE_QUEUES } from "@edge-platform/shared/queues/usage";
import { and, asc, desc, eq } from "drizzle-orm";
import type { IncomingUsageEvent } from "../domain/usage-events.ts";

export type UsageEventRow = typeof usageEvents.$inferSelect;

export interface EventToStore extends IncomingUsageEvent {
  /** Our id for the row (usage_events.id), minted before the insert. */
  id: string;
}

// Both statements take the whole batch as one JSON parameter (D1 allows at
// most 100 bound parameters per statement, so one row per bind would take
// dozens of statements for a 1000-event batch).
const INSERT_EVENTS = `
INSERT INTO usage_events
  (id, tenant_id, event_id, feature_lookup_key, amount, timestamp, received_at, metadata)
SELECT json_extract(item.value, '$.id'), ?1, json_extract(item.value, '$.eventId'),
       json_extract(item.value, '$.feature'), json_extract(item.value, '$.amount'),
       json_extract(item.value, '$.timestamp'), ?2, json_extract(item.value, '$.metadata')
  FROM json_each(?3) AS item
 WHERE true
ON CONFLICT (tenant_id, event_id) DO NOTHING
RETURNING id`;

// Only rows this batch inserted carry the ids it minted, so events that hit
// the unique (tenant, eventId) get no outbox row.
const INSERT_OUTBOX = `
INSERT INTO usage_outbox (id, tenant_id, topic, next_attempt_at)
SELECT e.id, e.tenant_id, '${USAGE_QUEUES.raw}', ?2
  FROM usage_events e
 WHERE e.id IN (SELECT value FROM json_each(?1))`;

/**
 * Stores the events and their outbox rows in one D1 batch (a transaction):
 * either both or neither. Events whose (tenant, eventId) already exists are
 * skipped by the unique index (the second layer of duplicate protection).
 * Returns the ids of the rows inserted.
 */
export async function insertEventsWithOutbox(
  d1: D1Database,
  input: {
    tenantId: string;
    receivedAt: string;
    /** When the publisher may first pick a row up if the immediate send has not. */
    firstSweepAt: string;
    events: EventToStore[];
  },
): Promise<Set<string>> {
  const items = JSON.stringify(
    input.events.map((event) => ({
      id: event.id,
      eventId: event.eventId,
      feature: event.feature,
      amount: event.amount,
      timestamp: event.timestamp,
      metadata: JSON.stringify(event.metadata),
    })),
  );
  const ids = JSON.stringify(input.events.map((event) => event.id));
  const [inserted] = await d1.batch<{ id: string }>([
    d1.prepare(INSERT_EVENTS).bind(input.tenantId, input.receivedAt, items),
    d1.prepare(INSERT_OUTBOX).bind(ids, input.firstSweepAt),
  ]);
  return new Set((inserted?.results ?? []).map((row) => row.id));
}

export function findUsageEvent(db: Database, tenantId: string, eventId: string) {
  return db
    .select()
    .from(usageEvents)
    .where(and(eq(usageEvents.tenantId, tenantId), eq(usageEvents.eventId, eventId)))
    .get();
}

/** Newest received first; the received-at index keeps this a short backward walk. */
export function listLatestUsageEvents(db: Database, tenantId: string, limit: number) {
  return db
    .select()
    .from(usageEvents)
    .where(eq(usageEvents.tenantId, tenantId))
    .orderBy(desc(usageEvents.receivedAt), desc(usageEvents.id))
    .limit(limit)
    .all();
}

export function findUsageEventById(db: Database, id: string) {
  return db.select().from(usageEvents).where(eq(usageEvents.id, id)).get();
}

/** Sets a REJECTED event back to PENDING so that validation judges it again (dead-letter retry). */
export function reopenRejectedEvent(db: Database, id: string) {
  return db
    .update(usageEvents)
    .set({
      status: "PENDING",
      rejectionCode: null,
      rejectionReason: null,
      updatedAt: new Date().toISOString(),
    })
    .where(and(eq(usageEvents.id, id), eq(usageEvents.status, "REJECTED")));
}

export function listUsageAggregates(
  db: Database,
  tenantId: string,
  filter: { feature?: string; periodKey?: string; subscriptionId?: string },
) {
  const conditions = [eq(usageAggregates.tenantId, tenantId)];
  if (filter.feature) conditions.push(eq(usageAggregates.featureLookupKey, filter.feature));
  if (filter.periodKey) conditions.push(eq(usageAggregates.periodKey, filter.periodKey));
  if (filter.subscriptionId) {
    conditions.push(eq(usageAggregates.subscriptionId, filter.subscriptionId));
  }
  return db
    .select()
    .from(usageAggregates)
    .where(and(...conditions))
    .orderBy(
      asc(usageAggregates.featureLookupKey),
      desc(usageAggregates.periodStart),
      asc(usageAggregates.subscriptionId),
    )
    .all();
}
