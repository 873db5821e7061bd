import { subscriptionAccess } from "@edge-platform/shared/billing/entitlement-decision";
import { database } from "@edge-platform/shared/db/client";
import { loadTenantEntitlementState } from "@edge-platform/shared/db/entitlement-state";
import { ApiError } from "@edge-platform/shared/http/api-error";
import { batchRefusal, type EventOutcome, planBatch, summarise } from "./domain/usage-events.ts";
import { storeUsageEvents } from "./log/service.ts";

export const NO_ACTIVE_SUBSCRIPTION = "No active subscription found for this tenant";

/**
 * POST /usage/events: judges each event, stores the good ones in the
 * tenant's usage log (usage/log/: one storage transaction per shard for the
 * events and their outbox entries; an eventId the log holds is a
 * duplicate), and answers 202. The usage log sends them on to usage-raw.
 * A batch with bad `properties` on any event is a 422 and stores nothing.
 * No D1 write: the one D1 read is whether the tenant may report usage.
 */
export class UsageIngestionService {
  constructor(private readonly env: Env) {}

  async ingest(tenantId: string, items: unknown[]) {
    // Judged before the read: a refused batch costs no D1 round trip.
    const plan = planBatch(items);
    const refusal = batchRefusal(plan.outcomes);
    if (refusal) throw new ApiError(422, refusal);
    // Whether the tenant may report usage at all: a display-grade read (the
    // pipeline decides each event again), so a read replica near the caller
    // may answer it.
    const replica = database(
      this.env.DB.withSession("first-unconstrained") as unknown as D1Database,
    );
    const state = await loadTenantEntitlementState(replica, tenantId);
    if (subscriptionAccess(state.subscription, new Date()) !== "granted") {
      throw new ApiError(403, NO_ACTIVE_SUBSCRIPTION, { code: "no_active_subscription" });
    }
    const outcomes: EventOutcome[] = plan.outcomes;
    if (plan.candidates.length === 0) return summarise(outcomes);

    let stored: Set<string>;
    try {
      stored = await storeUsageEvents(
        this.env,
        tenantId,
        plan.candidates.map((candidate) => candidate.event),
      );
    } catch (error) {
      console.error(
        JSON.stringify({
          level: "warn",
          msg: "usage ingestion write failed",
          error: String(error),
          tenantId,
          events: plan.candidates.length,
        }),
      );
      throw new ApiError(503, "Usage ingestion is temporarily unavailable, try again shortly");
    }
    for (const candidate of plan.candidates) {
      if (!stored.has(candidate.event.eventId)) {
        outcomes[candidate.index] = { eventId: candidate.event.eventId, status: "duplicate" };
      }
    }
    return summarise(outcomes);
  }
}
