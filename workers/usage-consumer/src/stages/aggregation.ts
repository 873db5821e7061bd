import { byCounterShard } from "@edge-platform/shared/billing/counter-shards";
import { entitlementCounter } from "@edge-platform/shared/billing/entitlement-counter-client";
import {
  type UsageEntry,
  usageEntry,
} from "@edge-platform/shared/billing/entitlement-counter-protocol";
import {
  type DuplicateUsageMessage,
  deadLetterIdFor,
  envelopeItems,
  propertiesField,
  QUEUE_SEND_BATCH_MAX,
  USAGE_QUEUES,
  type ValidatedUsageMessage,
  validatedUsageMessage,
} from "@edge-platform/shared/queues/usage";
import {
  type DeadLetterInsert,
  resolveDeadLettersStatement,
  upsertDeadLettersStatement,
} from "../db/usage-events.ts";
import { loadLogRows } from "../db/usage-log.ts";
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
    ...propertiesField(message.properties),
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
 * poison: dead-lettered at once with its reason. An event its usage log has
 * finished already (a message that sat in a queue, a dead letter retried
 * days later) is not sent to the counter at all: it is reported to
 * usage-duplicates and acked (see finishedInLog).
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
  const repeats: DuplicateUsageMessage[] = [];
  await Promise.all(
    [...byTenant.entries()].map(async ([tenantId, group]) => {
      let items = group;
      try {
        const finished = await finishedInLog(
          env,
          group.map(({ body }) => ({ tenantId, id: body.id })),
        );
        items = group.filter(({ body }) => !finished.has(body.id));
        for (const { body } of group) {
          const status = finished.get(body.id);
          if (status === undefined) continue;
          repeats.push({
            id: body.id,
            tenantId,
            eventId: body.eventId,
            status,
            stage: "AGGREGATION",
            seenAt: now,
          });
          if (body.retryOf) resolved.push(body.retryOf);
        }
      } catch (error) {
        for (const item of group) failed.set(item.message, error);
        return;
      }
      const byShard = byCounterShard(items, (item) => item.body.counterShard);
      await Promise.all(
        [...byShard].map(async ([shard, shardItems]) => {
          const counter = entitlementCounter(counters, tenantId, shard);
          for (let start = 0; start < shardItems.length; start += RECORD_MAX_ENTRIES) {
            const chunk = shardItems.slice(start, start + RECORD_MAX_ENTRIES);
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
    }),
  );
  for (const [message, error] of failed) settlement.retry(message, error, STAGE);
  settlement.ackRest();
  await reportRepeats(env, repeats);
  if (resolved.length > 0) {
    await env.DB.batch([resolveDeadLettersStatement(env.DB, resolved, now)]).catch(
      (error: unknown) =>
        console.error(
          JSON.stringify({ level: "warn", msg: "dead letters not resolved", error: String(error) }),
        ),
    );
  }
}

/**
 * The events of these that their usage log has finished, with their status:
 * AGGREGATED or REJECTED, or no longer in their shard (archived, so
 * finished) and not waiting in the D1 log of an earlier release either.
 * Counting such an event again would be undone by the counter's flush (the
 * shard refuses to let it be claimed), but meanwhile the counter's total
 * and the alerts decided on it would be off: so it does not reach the
 * counter. This, not the counter's memory of ids, is what keeps a late
 * repeat out.
 */
async function finishedInLog(
  env: Env,
  keys: { tenantId: string; id: string }[],
): Promise<Map<string, string>> {
  const { rows, waiting } = await loadLogRows(env, keys);
  const finished = new Map<string, string>();
  for (const { id } of keys) {
    const row = rows.get(id);
    if (row && (row.status === "AGGREGATED" || row.status === "REJECTED")) {
      finished.set(id, row.status);
    } else if (!row && !waiting.has(id)) {
      finished.set(id, "ARCHIVED");
    }
  }
  return finished;
}

/** Monitoring only: a report that is not sent is logged, the events are done either way. */
async function reportRepeats(env: Env, repeats: DuplicateUsageMessage[]): Promise<void> {
  for (let start = 0; start < repeats.length; start += QUEUE_SEND_BATCH_MAX) {
    try {
      await env.USAGE_DUPLICATES_QUEUE.sendBatch(
        repeats
          .slice(start, start + QUEUE_SEND_BATCH_MAX)
          .map((body) => ({ body, contentType: "json" as const })),
      );
    } catch (error) {
      console.error(
        JSON.stringify({ level: "warn", msg: "duplicate report not sent", error: String(error) }),
      );
      return;
    }
  }
}
