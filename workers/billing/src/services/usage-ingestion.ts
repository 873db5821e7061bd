import { subscriptionAccess } from "@edge-platform/shared/billing/entitlement-decision";
import { database } from "@edge-platform/shared/db/client";
import { loadTenantEntitlementState } from "@edge-platform/shared/db/entitlement-state";
import { ApiError } from "@edge-platform/shared/http/api-error";
import type { RawUsageMessage } from "@edge-platform/shared/queues/usage";
import { type EventToStore, insertEventsWithOutbox } from "../db/usage-events.ts";
import { markOutboxPublished, recordOutboxFailure } from "../db/usage-outbox.ts";
import { timeOrderedUuid } from "../domain/time-ordered-id.ts";
import { type EventOutcome, planBatch, summarise } from "../domain/usage-events.ts";
import { usageDedupWindow } from "../durable-objects/usage-dedup-window.ts";
import { usageOutboxPublisher } from "../durable-objects/usage-outbox-publisher-client.ts";
import { sendInChunks } from "./usage-publishing.ts";

/** Ingestion's own send has this long before the publisher's sweep may take a row. */
export const FIRST_SWEEP_DELAY_MS = 5_000;

export const NO_ACTIVE_SUBSCRIPTION = "No active subscription found for this tenant";

function logWarning(msg: string, error: unknown, extra: Record<string, unknown> = {}) {
  console.error(JSON.stringify({ level: "warn", msg, error: String(error), ...extra }));
}

/**
 * POST /usage/events: judges each event, drops duplicates (the tenant's
 * 24-hour window, then the unique (tenant, eventId) in D1), stores the rest
 * with their outbox rows in one D1 batch, and answers 202. The send to the
 * raw queue, marking the outbox rows published and remembering the ids in
 * the window happen after the answer (waitUntil); the outbox publisher
 * covers whatever that leaves behind.
 */
export class UsageIngestionService {
  constructor(
    private readonly env: Env,
    private readonly ctx: Pick<ExecutionContext, "waitUntil">,
  ) {}

  async ingest(tenantId: string, items: unknown[]) {
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
    const plan = planBatch(items);
    const outcomes: EventOutcome[] = plan.outcomes;
    if (plan.candidates.length === 0) return summarise(outcomes);

    const publisher = usageOutboxPublisher(this.env.USAGE_OUTBOX_PUBLISHER);
    // Armed before the commit: if this isolate dies between the commit and
    // the send, the sweep still comes.
    const armed = publisher
      .arm()
      .catch((error: unknown) => logWarning("outbox publisher arm failed", error));
    this.ctx.waitUntil(armed);

    const window = usageDedupWindow(this.env.USAGE_DEDUP_WINDOW, tenantId);
    let candidates = plan.candidates;
    try {
      const seen = new Set(await window.seen(candidates.map((c) => c.event.eventId)));
      if (seen.size > 0) {
        for (const candidate of candidates) {
          if (seen.has(candidate.event.eventId)) {
            outcomes[candidate.index] = { eventId: candidate.event.eventId, status: "duplicate" };
          }
        }
        candidates = candidates.filter((candidate) => !seen.has(candidate.event.eventId));
      }
    } catch (error) {
      // The window is a fast path only; D1's unique index still catches repeats.
      logWarning("usage dedup window unavailable", error, { tenantId });
    }
    if (candidates.length === 0) return summarise(outcomes);

    const now = Date.now();
    const receivedAt = new Date(now).toISOString();
    const toStore: EventToStore[] = candidates.map((candidate) => ({
      id: timeOrderedUuid(now),
      ...candidate.event,
    }));
    let inserted: Set<string>;
    try {
      inserted = await insertEventsWithOutbox(this.env.DB, {
        tenantId,
        receivedAt,
        firstSweepAt: new Date(now + FIRST_SWEEP_DELAY_MS).toISOString(),
        events: toStore,
      });
    } catch (error) {
      logWarning("usage ingestion write failed", error, { tenantId, events: toStore.length });
      throw new ApiError(503, "Usage ingestion is temporarily unavailable, try again shortly");
    }

    const messages: RawUsageMessage[] = [];
    toStore.forEach((event, position) => {
      const index = candidates[position]?.index ?? -1;
      if (inserted.has(event.id)) {
        messages.push({
          id: event.id,
          tenantId,
          eventId: event.eventId,
          feature: event.feature,
          amount: event.amount,
          timestamp: event.timestamp,
          receivedAt,
        });
      } else {
        outcomes[index] = { eventId: event.eventId, status: "duplicate" };
      }
    });
    if (messages.length > 0) this.ctx.waitUntil(this.afterCommit(tenantId, messages, window));
    return summarise(outcomes);
  }

  /** The send right after the commit; anything it cannot do is left to the publisher. */
  private async afterCommit(
    tenantId: string,
    messages: RawUsageMessage[],
    window: ReturnType<typeof usageDedupWindow>,
  ): Promise<void> {
    const remembered = window
      .remember(messages.map((message) => message.eventId))
      .catch((error: unknown) => logWarning("usage dedup window not updated", error, { tenantId }));
    const report = await sendInChunks(this.env.USAGE_RAW_QUEUE, messages);
    const now = new Date().toISOString();
    await Promise.all([
      markOutboxPublished(this.env.DB, report.sent, now).catch((error: unknown) =>
        // The rows stay PENDING and the publisher sends them again; the
        // validation stage's status check absorbs the repeat.
        logWarning("outbox rows not marked published", error, { events: report.sent.length }),
      ),
      ...report.failed.map((failure) =>
        recordOutboxFailure(this.env.DB, failure.ids, failure.error, now).catch((error: unknown) =>
          logWarning("outbox failure not recorded", error),
        ),
      ),
      remembered,
    ]);
    for (const failure of report.failed) {
      logWarning("raw queue send failed; the outbox publisher will retry", failure.error, {
        events: failure.ids.length,
      });
    }
  }
}
