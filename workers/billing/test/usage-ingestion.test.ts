import { runInDurableObject } from "cloudflare:test";
import { deadLetterIdFor } from "@edge-platform/shared/queues/usage";
import { describe, expect, it, vi } from "vitest";
import { rawQueueBinding, rawQueueCount } from "../src/usage/log/raw-queues.ts";
import type { UsageLog } from "../src/usage/log/usage-log.ts";
import { createApiKey, platformAdmin } from "./catalog-helpers.ts";
import { insertSubscription, snapshot } from "./entitlement-fixtures.ts";
import { type Account, call, db, expectError, register } from "./helpers.ts";
import { inUsageLog, loggedEvents, usageLogObject } from "./usage-log-helpers.ts";

const EVENTS = "/api/v1/usage/events";
/**
 * Waiting for Durable Object and queue work: a correctness bound, generous
 * for a loaded machine (vi.waitFor's default is 1 s); speed is bench/'s job.
 */
const SETTLED = { timeout: 15_000, interval: 50 };

interface Customer {
  owner: Account;
  key: string;
  tenantId: string;
}

async function customer(subscribed = true): Promise<Customer> {
  const owner = await register();
  if (subscribed) {
    await insertSubscription({
      tenantId: owner.tenant.id,
      snapshots: [snapshot.metered("api_calls", 100), snapshot.hard("projects", 10)],
    });
  }
  return { owner, key: await createApiKey(owner), tenantId: owner.tenant.id };
}

const event = (overrides: Record<string, unknown> = {}) => ({
  eventId: crypto.randomUUID(),
  feature: "api_calls",
  amount: 1,
  timestamp: new Date().toISOString(),
  ...overrides,
});

async function stored(tenantId: string) {
  return (await loggedEvents(tenantId)).map(({ eventId, status, amount, unsent }) => ({
    eventId,
    status,
    amount,
    outbox: unsent ? "PENDING" : "SENT",
  }));
}

describe("POST /usage/events: authentication and whole-batch errors", () => {
  it("takes only the tenant's API key", async () => {
    const { owner } = await customer();
    expectError(await call(EVENTS, { body: [event()] }), 401, "Authorization header is required");
    expectError(
      await call(EVENTS, { body: [event()], token: owner.accessToken, tenant: owner.tenant.id }),
      401,
      "Invalid API key format",
    );
  });

  it("refuses a tenant without a current subscription (403) and stores nothing", async () => {
    const { key, tenantId } = await customer(false);
    expectError(
      await call(EVENTS, { body: [event()], token: key }),
      403,
      "No active subscription found for this tenant",
    );
    expect(await stored(tenantId)).toEqual([]);
  });

  it("answers 400 and stores nothing for malformed, empty, oversized or over-1-MB batches", async () => {
    const { key, tenantId } = await customer();
    expectError(await call(EVENTS, { rawBody: '{"events": [', token: key }), 400);
    expectError(await call(EVENTS, { body: { events: [] }, token: key }), 400);
    expectError(await call(EVENTS, { body: [], token: key }), 400);
    expectError(await call(EVENTS, { body: { events: [event()], extra: 1 }, token: key }), 400);
    expectError(await call(EVENTS, { body: { items: [event()] }, token: key }), 400);
    expectError(await call(EVENTS, { body: "events", token: key }), 400);
    expectError(
      await call(EVENTS, {
        body: { events: Array.from({ length: 1001 }, () => event()) },
        token: key,
      }),
      400,
      (message) => expect(message).toContain("events must contain at most 1000 events"),
    );
    const big = Array.from({ length: 300 }, () => event({ metadata: { note: "x".repeat(3500) } }));
    expectError(
      await call(EVENTS, { body: { events: big }, token: key }),
      400,
      "Request body must be at most 1 MB",
    );
    expect(await stored(tenantId)).toEqual([]);
  });
});

describe("POST /usage/events: per-event outcomes, outbox and duplicates", () => {
  it("rejects bad events one by one, stores the rest with their outbox rows, and publishes them", async () => {
    const { key, tenantId } = await customer();
    const good = [event({ amount: 3 }), event({ feature: "projects", metadata: { region: "eu" } })];
    const result = await call(EVENTS, {
      token: key,
      body: [
        good[0],
        { eventId: crypto.randomUUID(), amount: 1, timestamp: new Date().toISOString() },
        event({ amount: 0 }),
        event({ amount: -2 }),
        event({ amount: 1.5 }),
        event({ amount: "3" }),
        event({ timestamp: "yesterday" }),
        event({ eventId: "x".repeat(256) }),
        event({ metadata: { blob: "y".repeat(5000) } }),
        event({ metadata: [1] }),
        event({ colour: "red" }),
        42,
        good[1],
      ],
    });
    expect(result.status, JSON.stringify(result.body)).toBe(202);
    expect(result.body.accepted).toBe(2);
    expect(result.body.rejected).toBe(11);
    expect(
      result.body.events.map((e: { status: string; reason?: string }) => e.reason ?? e.status),
    ).toEqual([
      "accepted",
      "MISSING_REQUIRED_FIELDS",
      "INVALID_AMOUNT",
      "INVALID_AMOUNT",
      "INVALID_AMOUNT",
      "INVALID_AMOUNT",
      "INVALID_TIMESTAMP",
      "INVALID_EVENT_ID",
      "METADATA_TOO_LARGE",
      "INVALID_METADATA",
      "UNKNOWN_FIELD",
      "INVALID_EVENT",
      "accepted",
    ]);
    expect(result.body.events[1].message).toBe("missing required field: feature");
    await vi.waitFor(
      async () =>
        expect(await stored(tenantId)).toEqual(
          good
            .map((e) => ({
              eventId: e.eventId,
              status: "PENDING",
              amount: e.amount,
              outbox: "SENT",
            }))
            .sort((a, b) => a.eventId.localeCompare(b.eventId)),
        ),
      SETTLED,
    );
    const view = await call(`/api/v1/usage/events/${good[1]?.eventId}`, { token: key });
    expect(view.status).toBe(200);
    expect(view.body).toMatchObject({
      eventId: good[1]?.eventId,
      feature: "projects",
      status: "PENDING",
      reason: null,
      metadata: { region: "eu" },
    });
  });

  it("counts an eventId once: repeats inside a batch and resubmissions", async () => {
    const { key, tenantId } = await customer();
    const a = event();
    const b = event();
    const first = await call(EVENTS, { token: key, body: { events: [a, b, a] } });
    expect(first.body).toMatchObject({ accepted: 3, rejected: 0, duplicates: 1 });
    expect(first.body.events.map((e: { status: string }) => e.status)).toEqual([
      "accepted",
      "accepted",
      "duplicate",
    ]);
    const again = await call(EVENTS, { token: key, body: [a, b] });
    expect(again.body.events.map((e: { status: string }) => e.status)).toEqual([
      "duplicate",
      "duplicate",
    ]);
    const past = await call(EVENTS, { token: key, body: [a, event()] });
    expect(past.body.events.map((e: { status: string }) => e.status)).toEqual([
      "duplicate",
      "accepted",
    ]);
    expect(await stored(tenantId)).toHaveLength(3);
  });

  it("lets a rejected event be sent again once corrected", async () => {
    const { key } = await customer();
    const id = crypto.randomUUID();
    const bad = await call(EVENTS, { token: key, body: [event({ eventId: id, amount: 0 })] });
    expect(bad.body.events[0].status).toBe("rejected");
    const fixed = await call(EVENTS, { token: key, body: [event({ eventId: id, amount: 2 })] });
    expect(fixed.body.events[0]).toEqual({ eventId: id, status: "accepted" });
  });
});

describe("usage reads", () => {
  it("serves an event and the aggregates to the tenant's key or a member, and 404s what is not theirs", async () => {
    const one = await customer();
    const other = await customer();
    const e = event();
    await call(EVENTS, { token: one.key, body: [e] });
    expect((await call(`/api/v1/usage/events/${e.eventId}`, { token: one.key })).status).toBe(200);
    const asMember = await call(`/api/v1/usage/events/${e.eventId}`, {
      token: one.owner.accessToken,
      tenant: one.tenantId,
    });
    expect(asMember.body.eventId).toBe(e.eventId);
    expectError(
      await call(`/api/v1/usage/events/${e.eventId}`, { token: other.key }),
      404,
      "Usage event not found",
    );
    expect((await call("/api/v1/usage/aggregates", { token: other.key })).body).toEqual({
      data: [],
    });
    expectError(
      await call("/api/v1/usage/aggregates?subscriptionId=nope", { token: one.key }),
      400,
    );
  });
});

describe("the usage log's outbox", () => {
  it("retries a failing send with exponential backoff and dead-letters the event after 5 failures", async () => {
    const { key, tenantId } = await customer();
    const e = event({ amount: 4 });
    await call(EVENTS, { token: key, body: [e] });
    await vi.waitFor(
      async () => expect(await stored(tenantId)).toMatchObject([{ outbox: "SENT" }]),
      SETTLED,
    );
    const [row] = await loggedEvents(tenantId);
    if (!row) throw new Error("event not stored");
    // As if ingestion's own send had never happened: an outbox entry, due now.
    const start = Date.now();
    await inUsageLog(tenantId, 0, (sql) => {
      sql.exec("INSERT INTO outbox (id, next_attempt_at) VALUES (?, ?)", row.id, start);
    });
    const outbox = () =>
      inUsageLog(
        tenantId,
        0,
        (sql) =>
          sql
            .exec<{ attempts: number; nextAttemptAt: number; lastError: string }>(
              "SELECT attempts, next_attempt_at AS nextAttemptAt, last_error AS lastError FROM outbox WHERE id = ?",
              row.id,
            )
            .toArray()[0],
      );
    await runInDurableObject(usageLogObject(tenantId), async (instance: UsageLog) => {
      const real = (instance as unknown as { env: Env }).env;
      const unavailable = {
        sendBatch: async () => Promise.reject(new Error("queue unavailable")),
      } as unknown as Queue;
      // Every raw queue fails, whichever the tenant's id hashes to.
      const rawQueues = Object.fromEntries(
        Array.from({ length: rawQueueCount(real.USAGE_RAW_QUEUES) }, (_, index) => [
          rawQueueBinding(index),
          unavailable,
        ]),
      );
      expect(Object.keys(rawQueues)).toContain("USAGE_RAW_QUEUE_7");
      (instance as unknown as { env: Env }).env = { ...real, ...rawQueues };
      let at = start;
      for (const [attempt, wait] of [2, 4, 8, 16].entries()) {
        await instance.publish(at);
        const state = await outbox();
        expect(state).toMatchObject({ attempts: attempt + 1, lastError: "queue unavailable" });
        expect((state?.nextAttemptAt ?? 0) - at).toBe(wait * 1000);
        // Not due before its backoff has passed.
        await instance.publish(at + wait * 1000 - 1);
        expect((await outbox())?.attempts).toBe(attempt + 1);
        at += wait * 1000;
      }
      await instance.publish(at);
      (instance as unknown as { env: Env }).env = real;
    });
    // Given up: the entry goes, the event is dead-lettered at the PUBLISHING stage.
    expect(await outbox()).toBeUndefined();
    const dead = await db()
      .prepare(
        "SELECT failure_stage, source_event_id, tenant_id, topic, failure_reason, status FROM dead_letter_events WHERE id = ?",
      )
      .bind(await deadLetterIdFor(`PUBLISHING:${row.id}`))
      .first();
    expect(dead).toEqual({
      failure_stage: "PUBLISHING",
      source_event_id: e.eventId,
      tenant_id: tenantId,
      topic: "usage-raw",
      failure_reason: "Outbox publish failed after 5 attempts: queue unavailable",
      status: "FAILED",
    });
  });
});

describe("admin dead-letter routes", () => {
  it("are for platform admins only and validate their input", async () => {
    const { owner } = await customer();
    const admin = await platformAdmin();
    expectError(await call("/api/v1/admin/dead-letter", { token: owner.accessToken }), 403);
    const page = await call("/api/v1/admin/dead-letter?limit=5&status=FAILED", {
      token: admin.accessToken,
    });
    expect(page.status).toBe(200);
    expect(page.body.meta).toMatchObject({ page: 1, limit: 5 });
    expectError(
      await call("/api/v1/admin/dead-letter?status=LOST", { token: admin.accessToken }),
      400,
    );
    expectError(
      await call("/api/v1/admin/dead-letter?limit=500", { token: admin.accessToken }),
      400,
    );
    expectError(
      await call("/api/v1/admin/dead-letter/not-a-uuid", { token: admin.accessToken }),
      400,
    );
    const missing = `/api/v1/admin/dead-letter/${crypto.randomUUID()}`;
    expectError(
      await call(missing, { token: admin.accessToken }),
      404,
      "Dead letter event not found",
    );
    expectError(await call(`${missing}/retry`, { method: "POST", token: admin.accessToken }), 404);
    expectError(
      await call(`${missing}/discard`, { method: "POST", token: admin.accessToken }),
      404,
    );
  });

  it("refuses to retry a payload the pipeline cannot take, and discards it once", async () => {
    const admin = await platformAdmin();
    const id = crypto.randomUUID();
    await db()
      .prepare(
        `INSERT INTO dead_letter_events (id, topic, failure_stage, failure_reason, original_payload)
         VALUES (?, 'usage-raw', 'VALIDATION', 'MISSING_REQUIRED_FIELDS: body', '"garbage"')`,
      )
      .bind(id)
      .run();
    const path = `/api/v1/admin/dead-letter/${id}`;
    expectError(
      await call(`${path}/retry`, { method: "POST", token: admin.accessToken }),
      400,
      /discard it instead/,
    );
    const discarded = await call(`${path}/discard`, { method: "POST", token: admin.accessToken });
    expect(discarded.status).toBe(201);
    expect(discarded.body).toMatchObject({
      status: "DISCARDED",
      resolvedBy: admin.user.id,
      originalPayload: "garbage",
    });
    expectError(
      await call(`${path}/discard`, { method: "POST", token: admin.accessToken }),
      400,
      "Event was already discarded",
    );
    expectError(
      await call(`${path}/retry`, { method: "POST", token: admin.accessToken }),
      400,
      "Event was discarded - cannot retry",
    );
  });
});
