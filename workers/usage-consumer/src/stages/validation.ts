import { byCounterShard } from "@edge-platform/shared/billing/counter-shards";
import { entitlementCounter } from "@edge-platform/shared/billing/entitlement-counter-client";
import { database } from "@edge-platform/shared/db/client";
import {
  loadTenantEntitlementState,
  type TenantEntitlementState,
} from "@edge-platform/shared/db/entitlement-state";
import {
  type DuplicateUsageMessage,
  deadLetterIdFor,
  envelopeItems,
  envelopesOf,
  propertiesField,
  QUEUE_SEND_BATCH_MAX,
  type RawUsageMessage,
  sendBatches,
  USAGE_QUEUES,
  type ValidatedUsageMessage,
} from "@edge-platform/shared/queues/usage";
import type {
  RejectedUpdate,
  UsageLogRow,
  ValidatedUpdate,
} from "@edge-platform/shared/usage-log/client";
import {
  type DeadLetterInsert,
  loadTenantStatuses,
  resolveDeadLettersStatement,
  upsertDeadLettersStatement,
} from "../db/usage-events.ts";
import { loadLogRows, markRejectedInLog, markValidatedInLog } from "../db/usage-log.ts";
import { judgeRawMessage, type Verdict } from "../domain/usage-validation.ts";
import { entryOf, RECORD_MAX_ENTRIES } from "./aggregation.ts";
import { Settlement } from "./settle.ts";

const STAGE = "validation";

function rawId(body: unknown): string | undefined {
  if (typeof body !== "object" || body === null) return undefined;
  const id = (body as Record<string, unknown>).id;
  return typeof id === "string" && /^[0-9a-f-]{36}$/i.test(id) ? id : undefined;
}

function rawTenantId(body: unknown): string | undefined {
  if (typeof body !== "object" || body === null) return undefined;
  const id = (body as Record<string, unknown>).tenantId;
  return typeof id === "string" && /^[0-9a-f-]{36}$/i.test(id) ? id : undefined;
}

function forwardFromRow(
  row: UsageLogRow,
  retryOf: string | undefined,
): ValidatedUsageMessage | undefined {
  if (!row.subscriptionId || !row.periodKey || !row.periodStart || !row.validatedAt)
    return undefined;
  return {
    id: row.id,
    tenantId: row.tenantId,
    eventId: row.eventId,
    subscriptionId: row.subscriptionId,
    feature: row.feature,
    amount: row.amount,
    timestamp: row.timestamp,
    receivedAt: row.receivedAt,
    window: { key: row.periodKey, start: row.periodStart, end: row.periodEnd },
    validatedAt: row.validatedAt,
    ...propertiesField(row.properties),
    ...(retryOf ? { retryOf } : {}),
  };
}

async function sendChunks<T>(queue: Queue, bodies: T[]): Promise<void> {
  for (let start = 0; start < bodies.length; start += QUEUE_SEND_BATCH_MAX) {
    await queue.sendBatch(
      bodies
        .slice(start, start + QUEUE_SEND_BATCH_MAX)
        .map((body) => ({ body, contentType: "json" as const })),
    );
  }
}

/** One event of a queue message (a message carries one event, or an envelope of them). */
interface Item {
  message: Message<unknown>;
  body: unknown;
  /** Its place in an envelope; a single-event message has none. */
  index: number | undefined;
}

function itemsOf(batch: MessageBatch<unknown>): Item[] {
  return batch.messages.flatMap((message) => {
    const bodies = envelopeItems(message.body);
    return bodies.map((body, index) => ({
      message,
      body,
      index: bodies.length === 1 && bodies[0] === message.body ? undefined : index,
    }));
  });
}

/**
 * usage-raw -> validation. Messages carry one event or an envelope of a
 * tenant's events (shared/src/queues/usage.ts); each event is judged by
 * itself, and a message is acked when all its events are done. Loads what
 * the checks need for the whole batch (event rows, tenants, each tenant's
 * subscription and snapshots: one read round), judges each event
 * (domain/usage-validation.ts), writes the rejections in one D1 batch
 * (REJECTED, conditional on PENDING, with their dead letters), then counts
 * the valid events through their tenants' counters right away (one call per
 * tenant; the counter's flush makes them AGGREGATED), marks VALIDATED and
 * forwards to usage-validated only what the counter did not take, and
 * reports repeats to usage-duplicates.
 * Each message is acked or retried by itself; a poison event is rejected
 * and dead-lettered, never retried.
 */
export async function runValidationStage(batch: MessageBatch<unknown>, env: Env): Promise<void> {
  const settlement = new Settlement(batch.messages);
  try {
    await validate(batch, env, settlement);
  } catch (error) {
    // Infrastructure (D1) failed for the whole batch: each message backs off and comes again.
    settlement.retryRest(error, STAGE);
  }
}

async function validate(
  batch: MessageBatch<unknown>,
  env: Env,
  settlement: Settlement<unknown>,
): Promise<void> {
  const now = new Date();
  const at = now.toISOString();
  const items = itemsOf(batch);
  const keys = new Map<string, { tenantId: string; id: string }>();
  const tenantIds = new Set<string>();
  for (const item of items) {
    const id = rawId(item.body);
    const tenantId = rawTenantId(item.body);
    if (id && tenantId) keys.set(id, { tenantId, id });
    if (tenantId) tenantIds.add(tenantId);
  }
  // Everything the checks need, read in parallel (the judge compares each
  // row's tenant with the message's).
  const db = database(env.DB);
  const [{ rows, waiting }, tenants, entitlements] = await Promise.all([
    loadLogRows(env, [...keys.values()]),
    loadTenantStatuses(env.DB, [...tenantIds]),
    Promise.all(
      [...tenantIds].map(async (id) => [id, await loadTenantEntitlementState(db, id)] as const),
    ).then((states) => new Map<string, TenantEntitlementState>(states)),
  ]);

  const validated: { message: Message<unknown>; body: ValidatedUsageMessage }[] = [];
  const rejected: (RejectedUpdate & { tenantId: string })[] = [];
  const deadLetters: DeadLetterInsert[] = [];
  const resolved: string[] = [];
  const forwards: { message: Message<unknown>; body: ValidatedUsageMessage }[] = [];
  const duplicates: DuplicateUsageMessage[] = [];

  for (const { message, body, index } of items) {
    const id = rawId(body);
    if (id && waiting.has(id)) {
      // Still in the D1 log of an earlier release: judged once it is moved in.
      settlement.retry(message, new Error("usage event not moved from the D1 log yet"), STAGE);
      continue;
    }
    let verdict: Verdict;
    try {
      verdict = judgeRawMessage(body, (parsed) => ({
        row: rows.get(parsed.id),
        tenant: tenants.get(parsed.tenantId),
        entitlements: entitlements.get(parsed.tenantId),
        now,
      }));
    } catch (error) {
      settlement.retry(message, error, STAGE);
      continue;
    }
    switch (verdict.kind) {
      case "valid": {
        validated.push({
          message,
          body: validatedBody(verdict.message, verdict.subscriptionId, verdict.window, at),
        });
        if (verdict.message.retryOf) resolved.push(verdict.message.retryOf);
        break;
      }
      case "rejected": {
        const eventKey =
          verdict.message && verdict.hasRow
            ? verdict.message.id
            : `message:${message.id}${index === undefined ? "" : `:${index}`}`;
        if (verdict.message && verdict.hasRow) {
          rejected.push({
            id: verdict.message.id,
            tenantId: verdict.message.tenantId,
            code: verdict.code,
            reason: verdict.reason,
          });
        }
        deadLetters.push({
          id: await deadLetterIdFor(`VALIDATION:${eventKey}`),
          sourceEventId: verdict.message?.eventId ?? null,
          tenantId: verdict.message?.tenantId ?? null,
          topic: USAGE_QUEUES.raw,
          failureStage: "VALIDATION",
          failureReason: `${verdict.code}: ${verdict.reason}`.slice(0, 1000),
          originalPayload: body ?? null,
          errorDetails: null,
          retryCount: 0,
        });
        break;
      }
      case "duplicate": {
        const row = rows.get(verdict.message.id);
        duplicates.push({
          id: verdict.message.id,
          tenantId: verdict.message.tenantId,
          eventId: verdict.message.eventId,
          status: verdict.status,
          stage: "VALIDATION",
          seenAt: at,
        });
        const forward =
          verdict.status === "VALIDATED" && row
            ? forwardFromRow(row, verdict.message.retryOf)
            : undefined;
        if (forward) forwards.push({ message, body: forward });
        else if (verdict.message.retryOf) resolved.push(verdict.message.retryOf);
        break;
      }
    }
  }

  // The dead letters first (one D1 batch; their ids are derived, so a
  // redelivery stores nothing twice), then the rejections in the usage log:
  // if the log write fails the message comes again, is judged again and
  // rejected then. The valid events get no status write here: the
  // counter's flush moves them from PENDING to AGGREGATED with their window
  // (usage-log/flush-claims.ts in the billing worker).
  const statements: D1PreparedStatement[] = [];
  if (deadLetters.length > 0) statements.push(upsertDeadLettersStatement(env.DB, deadLetters, at));
  if (resolved.length > 0) statements.push(resolveDeadLettersStatement(env.DB, resolved, at));
  if (statements.length > 0) await env.DB.batch(statements);
  if (rejected.length > 0) await markRejectedInLog(env, rejected, at);

  // Fast path: count each tenant's validated events through its counter
  // now, one call per tenant (per 1,000 events), as the aggregation stage
  // would (aggregation.ts). What the counter does not take is marked
  // VALIDATED (so a re-drive sends it on with its window) and goes to
  // usage-validated (the slow path, retried there with backoff).
  const notCounted = await recordDirectly(env, [...validated, ...forwards]);
  const toForward = await markValidated(env, notCounted, validated, at, settlement);
  // Forward in envelopes: a failed send retries the messages it came from;
  // their rows are VALIDATED by then, so the redelivery takes the "already
  // validated, forward again" path.
  const sourceOf = new Map(toForward.map((item) => [item.body.id, item.message]));
  await Promise.all(
    sendBatches(envelopesOf(toForward.map((item) => item.body))).map(async (envelopes) => {
      try {
        await env.USAGE_VALIDATED_QUEUE.sendBatch(
          envelopes.map((body) => ({ body, contentType: "json" as const })),
        );
      } catch (error) {
        for (const envelope of envelopes) {
          for (const event of envelope.events) {
            const source = sourceOf.get(event.id);
            if (source) settlement.retry(source, error, STAGE);
          }
        }
      }
    }),
  );
  if (duplicates.length > 0) {
    try {
      await sendChunks(env.USAGE_DUPLICATES_QUEUE, duplicates);
    } catch (error) {
      // Monitoring only: losing a report does not warrant redoing the event.
      console.error(
        JSON.stringify({ level: "warn", msg: "duplicate report not sent", error: String(error) }),
      );
    }
  }
  settlement.ackRest();
}

/**
 * PENDING -> VALIDATED for the valid events the counter did not take, in
 * one D1 batch; returns what to forward. If the write fails, their messages
 * are retried (they come back PENDING and are judged again) and nothing of
 * them is forwarded.
 */
async function markValidated(
  env: Env,
  notCounted: Counted[],
  validated: { body: ValidatedUsageMessage }[],
  at: string,
  settlement: Settlement<unknown>,
): Promise<Counted[]> {
  const fresh = new Set(validated.map((item) => item.body.id));
  const updates: (ValidatedUpdate & { tenantId: string })[] = notCounted
    .filter((item) => fresh.has(item.body.id))
    .map(({ body }) => ({
      id: body.id,
      tenantId: body.tenantId,
      subscriptionId: body.subscriptionId,
      periodKey: body.window.key,
      periodStart: body.window.start,
      periodEnd: body.window.end,
    }));
  if (updates.length === 0) return notCounted;
  try {
    await markValidatedInLog(env, updates, at);
    return notCounted;
  } catch (error) {
    const failed = new Set(updates.map((update) => update.id));
    const left: Counted[] = [];
    for (const item of notCounted) {
      if (failed.has(item.body.id)) settlement.retry(item.message, error, STAGE);
      else left.push(item);
    }
    return left;
  }
}

interface Counted {
  message: Message<unknown>;
  body: ValidatedUsageMessage;
}

/** Records the events with their tenants' counters; returns those it could not. */
async function recordDirectly(env: Env, items: Counted[]): Promise<Counted[]> {
  const byTenant = new Map<string, Counted[]>();
  for (const item of items) {
    const group = byTenant.get(item.body.tenantId) ?? [];
    group.push(item);
    byTenant.set(item.body.tenantId, group);
  }
  const left: Counted[] = [];
  await Promise.all(
    [...byTenant.entries()].map(async ([tenantId, group]) => {
      await Promise.all(
        [...byCounterShard(group, (item) => item.body.counterShard)].map(([shard, shardItems]) =>
          recordOnShard(env, tenantId, shard, shardItems, left),
        ),
      );
    }),
  );
  return left;
}

/** Records the events with one counter shard; those it could not go to `left`. */
async function recordOnShard(
  env: Env,
  tenantId: string,
  shard: number,
  group: Counted[],
  left: Counted[],
): Promise<void> {
  const counter = entitlementCounter(env.ENTITLEMENT_COUNTER, tenantId, shard);
  for (let start = 0; start < group.length; start += RECORD_MAX_ENTRIES) {
    const chunk = group.slice(start, start + RECORD_MAX_ENTRIES);
    try {
      await counter.record(chunk.map((item) => entryOf(item.body)));
    } catch (error) {
      console.error(
        JSON.stringify({
          level: "warn",
          msg: "direct count failed; forwarding to usage-validated",
          events: chunk.length,
          error: String(error),
        }),
      );
      left.push(...chunk);
    }
  }
}

function validatedBody(
  message: RawUsageMessage,
  subscriptionId: string,
  window: ValidatedUsageMessage["window"],
  validatedAt: string,
): ValidatedUsageMessage {
  return {
    id: message.id,
    tenantId: message.tenantId,
    eventId: message.eventId,
    subscriptionId,
    feature: message.feature,
    amount: message.amount,
    timestamp: new Date(message.timestamp).toISOString(),
    receivedAt: message.receivedAt,
    window,
    validatedAt,
    ...propertiesField(message.properties),
    ...(message.retryOf ? { retryOf: message.retryOf } : {}),
    ...(message.counterShard ? { counterShard: message.counterShard } : {}),
  };
}
