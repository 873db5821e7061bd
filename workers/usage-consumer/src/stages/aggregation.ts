import { entitlementCounter } from "@edge-platform/shared/billing/entitlement-counter-client";
import {
  type UsageEntry,
  usageEntry,
} from "@edge-platform/shared/billing/entitlement-counter-protocol";
import {
  deadLetterIdFor,
  envelopeItems,
  USAGE_QUEUES,
  type ValidatedUsageMessage,
  validatedUsageMessage,
} from "@edge-platform/shared/queues/usage";
import {
  type DeadLetterInsert,
  resolveDeadLettersStatement,
  upsertDeadLettersStatement,
} from "../db/usage-events.ts";
import { Settlement } from "./settle.ts";

const STAGE = "aggregation";
/** `record` takes at most this many entries per call. */
export const RECORD_MAX_ENTRIES = 1000;

/** The counter entry of a validated event (its row is what the counter's flush claims). */
export function entryOf(message: ValidatedUsageMessage): UsageEntry {
  return {
    eventId: message.id,
    usageEventId: message.id,
    subscriptionId: message.subscriptionId,
    featureKey: message.feature,
    periodKey: message.window.key,
    periodStart: message.window.start,
    periodEnd: message.window.end,
    amount: message.amount,
    occurredAt: message.timestamp,
  };
}

/**
 * usage-validated -> aggregation, through the single path. Messages carry
 * one event or an envelope of a tenant's events; each tenant's
 * events go to its EntitlementCounter in one `record` call, which counts
 * each event once (by id) and durably; the counter's flush then claims the
 * event rows (VALIDATED -> AGGREGATED) in the same D1 batch as the
 * aggregate increment. A message is acked once `record` returned for all
 * its events; the messages of a tenant whose call failed are retried with
 * backoff, the others are not affected. An event that does not parse is
 * poison: dead-lettered at once with its reason.
 */
export async function runAggregationStage(batch: MessageBatch<unknown>, env: Env): Promise<void> {
  const settlement = new Settlement(batch.messages);
  const counters = env.ENTITLEMENT_COUNTER;
  const byTenant = new Map<string, { message: Message<unknown>; body: ValidatedUsageMessage }[]>();
  const poison: DeadLetterInsert[] = [];
  const poisonMessages: Message<unknown>[] = [];

  const items = batch.messages.flatMap((message) => {
    const bodies = envelopeItems(message.body);
    const single = bodies.length === 1 && bodies[0] === message.body;
    return bodies.map((body, index) => ({ message, body, key: single ? "" : `:${index}` }));
  });
  for (const { message, body, key } of items) {
    const parsed = validatedUsageMessage.safeParse(body);
    const entry = parsed.success ? usageEntry.safeParse(entryOf(parsed.data)) : undefined;
    if (!parsed.success || !entry?.success) {
      const issues = (parsed.success ? entry?.error?.issues : parsed.error.issues) ?? [];
      const fields = [
        ...new Set(issues.map((issue) => issue.path.map(String).join(".") || "body")),
      ];
      poison.push({
        id: await deadLetterIdFor(`AGGREGATION:message:${message.id}${key}`),
        sourceEventId: parsed.success ? parsed.data.eventId : null,
        tenantId: parsed.success ? parsed.data.tenantId : null,
        topic: USAGE_QUEUES.validated,
        failureStage: "AGGREGATION",
        failureReason: `INVALID_MESSAGE: malformed fields: ${fields.join(", ")}`.slice(0, 1000),
        originalPayload: body ?? null,
        errorDetails: null,
        retryCount: 0,
      });
      poisonMessages.push(message);
      continue;
    }
    const group = byTenant.get(parsed.data.tenantId) ?? [];
    group.push({ message, body: parsed.data });
    byTenant.set(parsed.data.tenantId, group);
  }

  // A message is acked only after all its events are done, so failures
  // are collected first and settled at the end.
  const failed = new Map<Message<unknown>, unknown>();
  const now = new Date().toISOString();
  if (poison.length > 0) {
    try {
      await env.DB.batch([upsertDeadLettersStatement(env.DB, poison, now)]);
    } catch (error) {
      for (const message of poisonMessages) failed.set(message, error);
    }
  }

  const resolved: string[] = [];
  await Promise.all(
    [...byTenant.entries()].map(async ([tenantId, items]) => {
      const counter = entitlementCounter(counters, tenantId);
      for (let start = 0; start < items.length; start += RECORD_MAX_ENTRIES) {
        const chunk = items.slice(start, start + RECORD_MAX_ENTRIES);
        try {
          await counter.record(chunk.map((item) => entryOf(item.body)));
          for (const item of chunk) {
            if (item.body.retryOf) resolved.push(item.body.retryOf);
          }
        } catch (error) {
          for (const item of chunk) failed.set(item.message, error);
        }
      }
    }),
  );
  for (const [message, error] of failed) settlement.retry(message, error, STAGE);
  settlement.ackRest();
  if (resolved.length > 0) {
    await env.DB.batch([resolveDeadLettersStatement(env.DB, resolved, now)]).catch(
      (error: unknown) =>
        console.error(
          JSON.stringify({ level: "warn", msg: "dead letters not resolved", error: String(error) }),
        ),
    );
  }
}
