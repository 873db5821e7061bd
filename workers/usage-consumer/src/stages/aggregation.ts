import { entitlementCounter } from "@edge-platform/shared/billing/entitlement-counter-client";
import {
  type UsageEntry,
  usageEntry,
} from "@edge-platform/shared/billing/entitlement-counter-protocol";
import {
  deadLetterIdFor,
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
const RECORD_MAX_ENTRIES = 1000;

function entryOf(message: ValidatedUsageMessage): UsageEntry {
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
 * usage-validated -> aggregation, through the single path: each tenant's
 * events go to its EntitlementCounter in one `record` call, which counts
 * each event once (by id) and durably; the counter's flush then claims the
 * event rows (VALIDATED -> AGGREGATED) in the same D1 batch as the
 * aggregate increment. A message is acked once `record` returned for it;
 * the messages of a tenant whose call failed are retried with backoff, the
 * others are not affected. A message that does not parse is a poison
 * message: dead-lettered at once with its reason.
 */
export async function runAggregationStage(batch: MessageBatch<unknown>, env: Env): Promise<void> {
  const settlement = new Settlement(batch.messages);
  const counters = env.ENTITLEMENT_COUNTER;
  const byTenant = new Map<string, { message: Message<unknown>; body: ValidatedUsageMessage }[]>();
  const poison: DeadLetterInsert[] = [];
  const poisonMessages: Message<unknown>[] = [];

  for (const message of batch.messages) {
    const parsed = validatedUsageMessage.safeParse(message.body);
    const entry = parsed.success ? usageEntry.safeParse(entryOf(parsed.data)) : undefined;
    if (!parsed.success || !entry?.success) {
      const issues = (parsed.success ? entry?.error?.issues : parsed.error.issues) ?? [];
      const fields = [
        ...new Set(issues.map((issue) => issue.path.map(String).join(".") || "body")),
      ];
      poison.push({
        id: await deadLetterIdFor(`AGGREGATION:message:${message.id}`),
        sourceEventId: parsed.success ? parsed.data.eventId : null,
        tenantId: parsed.success ? parsed.data.tenantId : null,
        topic: USAGE_QUEUES.validated,
        failureStage: "AGGREGATION",
        failureReason: `INVALID_MESSAGE: malformed fields: ${fields.join(", ")}`.slice(0, 1000),
        originalPayload: message.body ?? null,
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

  const now = new Date().toISOString();
  if (poison.length > 0) {
    try {
      await env.DB.batch([upsertDeadLettersStatement(env.DB, poison, now)]);
      for (const message of poisonMessages) settlement.ack(message);
    } catch (error) {
      for (const message of poisonMessages) settlement.retry(message, error, STAGE);
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
            settlement.ack(item.message);
            if (item.body.retryOf) resolved.push(item.body.retryOf);
          }
        } catch (error) {
          for (const item of chunk) settlement.retry(item.message, error, STAGE);
        }
      }
    }),
  );
  if (resolved.length > 0) {
    await env.DB.batch([resolveDeadLettersStatement(env.DB, resolved, now)]).catch(
      (error: unknown) =>
        console.error(
          JSON.stringify({ level: "warn", msg: "dead letters not resolved", error: String(error) }),
        ),
    );
  }
}
