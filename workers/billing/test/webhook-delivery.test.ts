import { createExecutionContext, createMessageBatch, getQueueResult } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { addMonthsClamped, MS_PER_DAY } from "@edge-platform/shared/billing/billing-period";
import { Webhook } from "standardwebhooks";
import { beforeAll, describe, expect, it, vi } from "vitest";
import type { TenantEvent } from "../src/notifications/domain/tenant-events.ts";
import {
  DEFAULT_DELIVERY_SETTINGS,
  type WebhookDeliverySettings,
} from "../src/notifications/domain/webhook-delivery.ts";
import { relayTenantEvents } from "../src/notifications/tenant-events.ts";
import {
  type DeliveryEnv,
  deadLetterWebhookBatch,
  deliverWebhookBatch,
  type Fetcher,
  fanOutTenantEvents,
  PARKED_EVENT_RETRY_MS,
  parkTenantEvents,
} from "../src/notifications/webhook-delivery.ts";
import type { WebhookDeliveryMessage } from "../src/notifications/webhook-endpoint-service.ts";
import { pruneWebhookHistory } from "../src/notifications/webhook-retention-job.ts";
import { verifyWebhookSignature } from "../src/platform/domain/webhook-signature.ts";
import { onlyAuditRow } from "./audit-helpers.ts";
import { buildMoneyPlan, type MoneyPlan, runCycle, steerableProvider } from "./billing-helpers.ts";
import { platformAdmin, subscribe } from "./catalog-helpers.ts";
import { type Account, call, expectError, register } from "./helpers.ts";

// The outbound webhook consumers driven directly (injected fetch and clock,
// a recording queue so the real consumers do not race the test), and the
// events the billing code writes into the outbox.

const settings: WebhookDeliverySettings = {
  ...DEFAULT_DELIVERY_SETTINGS,
  retryBaseSeconds: 2,
  retryMaxSeconds: 10,
};
const HOUR = 3600_000;

function recordingQueue() {
  const sent: unknown[] = [];
  const queue = {
    send: async (body: unknown) => {
      sent.push(body);
    },
    sendBatch: async (messages: Iterable<{ body: unknown }>) => {
      for (const message of messages) sent.push(message.body);
    },
  };
  return { sent, queue: queue as unknown as Queue<never> };
}

function deliveryEnv(queue: Queue<never>): DeliveryEnv {
  return {
    DB: env.DB,
    WEBHOOK_DELIVERIES_QUEUE: queue,
    WEBHOOK_SECRET_KEY: env.WEBHOOK_SECRET_KEY,
  };
}

let messageCounter = 0;
function batchOf<T>(queue: string, body: T, attempts = 1) {
  messageCounter += 1;
  return createMessageBatch<T>(queue, [
    { id: `msg-${messageCounter}-${crypto.randomUUID()}`, timestamp: new Date(), attempts, body },
  ]);
}

function event(tenantId: string, type: TenantEvent["type"] = "invoice.finalized"): TenantEvent {
  return {
    id: `evt_${crypto.randomUUID()}`,
    type,
    createdAt: new Date().toISOString(),
    tenantId,
    data: { id: crypto.randomUUID(), total: 2900 },
  };
}

async function endpoint(owner: Account, body: Record<string, unknown> = {}) {
  const result = await call("/api/v1/webhook-endpoints", {
    token: owner.accessToken,
    tenant: owner.tenant.id,
    body: { url: "https://hooks.example.com/in", eventTypes: ["*"], ...body },
  });
  expect(result.status, JSON.stringify(result.body)).toBe(201);
  return result.body as { id: string; secret: string };
}

/** Fans `evt` out with a recording queue; returns the delivery ids it queued. */
async function fanOut(evt: TenantEvent, attempts = 1) {
  const { sent, queue } = recordingQueue();
  const batch = batchOf("tenant-events", evt as unknown, attempts);
  const ctx = createExecutionContext();
  await fanOutTenantEvents(batch, deliveryEnv(queue));
  const result = await getQueueResult(batch, ctx);
  return { sent: sent as WebhookDeliveryMessage[], result };
}

interface Captured {
  url: string;
  init: RequestInit;
}

function answering(status: number, headers: Record<string, string> = {}) {
  const captured: Captured[] = [];
  const fetcher: Fetcher = async (url, init) => {
    captured.push({ url, init });
    return new Response(status === 204 ? null : "ok", { status, headers });
  };
  return { captured, fetcher };
}

async function deliver(
  message: WebhookDeliveryMessage,
  options: { attempts?: number; fetcher: Fetcher; now?: () => Date },
) {
  const { queue } = recordingQueue();
  const batch = batchOf("webhook-deliveries", message, options.attempts ?? 1);
  // The test pool records retries but not their delay: watch the calls instead.
  const retries = batch.messages.map((queued) => vi.spyOn(queued, "retry"));
  const ctx = createExecutionContext();
  const outcomes = await deliverWebhookBatch(batch, deliveryEnv(queue), {
    settings,
    fetcher: options.fetcher,
    ...(options.now ? { now: options.now } : {}),
  });
  const delays = retries.flatMap((spy) =>
    spy.mock.calls.map((args) => (args[0] as QueueRetryOptions | undefined)?.delaySeconds),
  );
  return { outcomes, delays, result: await getQueueResult(batch, ctx) };
}

async function deliveryRow(id: string) {
  return env.DB.prepare("SELECT * FROM webhook_deliveries WHERE id = ?").bind(id).first<{
    status: string;
    attempt_count: number;
    last_error: string | null;
    event_id: string;
  }>();
}

function log(owner: Account, endpointId: string) {
  return call(`/api/v1/webhook-endpoints/${endpointId}/deliveries`, {
    token: owner.accessToken,
    tenant: owner.tenant.id,
  });
}

describe("fan-out (tenant-events consumer)", () => {
  it("makes one delivery per subscribed, enabled endpoint; a redelivered event makes none", async () => {
    const owner = await register();
    const finalized = await endpoint(owner, { eventTypes: ["invoice.finalized"] });
    const everything = await endpoint(owner, { eventTypes: ["*"] });
    await endpoint(owner, { eventTypes: ["invoice.paid"] });
    await endpoint(owner, { eventTypes: ["*"], enabled: false });
    const stranger = await register();
    await endpoint(stranger, { eventTypes: ["*"] });

    const evt = event(owner.tenant.id);
    const first = await fanOut(evt);
    expect(first.result.ackAll || first.result.explicitAcks.length === 1).toBe(true);
    expect(first.sent).toHaveLength(2);
    const rows = await env.DB.prepare(
      "SELECT endpoint_id, status, payload FROM webhook_deliveries WHERE event_id = ? ORDER BY endpoint_id",
    )
      .bind(evt.id)
      .all<{ endpoint_id: string; status: string; payload: string }>();
    expect(rows.results.map((row) => row.endpoint_id).sort()).toEqual(
      [finalized.id, everything.id].sort(),
    );
    expect(JSON.parse(rows.results[0]?.payload ?? "{}")).toEqual(evt);

    const again = await fanOut(evt, 2);
    expect(again.sent).toEqual([]);
    const count = await env.DB.prepare(
      "SELECT count(*) AS n FROM webhook_deliveries WHERE event_id = ?",
    )
      .bind(evt.id)
      .first<{ n: number }>();
    expect(count?.n).toBe(2);

    // A crash between the insert and the send leaves queued_at empty: the redelivery sends it.
    await env.DB.prepare(
      "UPDATE webhook_deliveries SET queued_at = NULL WHERE event_id = ? AND endpoint_id = ?",
    )
      .bind(evt.id, finalized.id)
      .run();
    const stranded = await fanOut(evt, 3);
    expect(stranded.sent).toHaveLength(1);
  });

  it("a fan-out that cannot queue retries; a dead-lettered event is parked in the outbox and relayed again", async () => {
    const owner = await register();
    await endpoint(owner);
    const evt = event(owner.tenant.id, "quota.exhausted");
    const broken = {
      DB: env.DB,
      WEBHOOK_DELIVERIES_QUEUE: {
        sendBatch: async () => {
          throw new Error("queue unavailable");
        },
      } as unknown as Queue<never>,
    };
    const batch = batchOf("tenant-events", evt as unknown, 3);
    const retries = batch.messages.map((queued) => vi.spyOn(queued, "retry"));
    await fanOutTenantEvents(batch, broken);
    expect(retries[0]?.mock.calls[0]?.[0]).toEqual({ delaySeconds: 15 });

    const dlq = batchOf("tenant-events-dlq", evt as unknown, 11);
    const ctx = createExecutionContext();
    const parkedAt = new Date();
    await parkTenantEvents(dlq, { DB: env.DB }, () => parkedAt);
    expect((await getQueueResult(dlq, ctx)).explicitAcks).toHaveLength(1);
    const { sent, queue } = recordingQueue();
    const relayEnv = { DB: env.DB, TENANT_EVENTS_QUEUE: queue as Queue<TenantEvent> };
    await relayTenantEvents(relayEnv, new Date(parkedAt.getTime() + 60_000));
    expect((sent as TenantEvent[]).filter((e) => e.id === evt.id)).toEqual([]);
    await relayTenantEvents(relayEnv, new Date(parkedAt.getTime() + PARKED_EVENT_RETRY_MS));
    expect((sent as TenantEvent[]).filter((e) => e.id === evt.id)).toEqual([evt]);
    // The second fan-out of the same event makes its one delivery.
    expect((await fanOut(evt)).sent).toHaveLength(1);
    expect((await fanOut(evt, 2)).sent).toHaveLength(0);
  });

  it("acknowledges a malformed message without writing anything", async () => {
    const { sent, queue } = recordingQueue();
    const batch = batchOf("tenant-events", { type: "invoice.finalized" } as unknown);
    const ctx = createExecutionContext();
    await fanOutTenantEvents(batch, deliveryEnv(queue));
    const result = await getQueueResult(batch, ctx);
    expect(result.explicitAcks).toHaveLength(1);
    expect(sent).toEqual([]);
  });
});

describe("delivery (webhook-deliveries consumer)", () => {
  it("POSTs the event signed with the endpoint's secret, with its id, and logs the attempt", async () => {
    const owner = await register();
    const target = await endpoint(owner);
    const evt = event(owner.tenant.id);
    const { sent } = await fanOut(evt);
    const [message] = sent;
    if (!message) throw new Error("no delivery queued");
    const { captured, fetcher } = answering(204);
    const { outcomes, result } = await deliver(message, { fetcher });
    expect(outcomes).toEqual(["delivered"]);
    expect(result.explicitAcks).toHaveLength(1);

    expect(captured).toHaveLength(1);
    const [request] = captured;
    expect(request?.url).toBe("https://hooks.example.com/in");
    expect(request?.init.method).toBe("POST");
    expect(request?.init.redirect).toBe("manual");
    const headers = new Headers(request?.init.headers);
    expect(headers.get("content-type")).toBe("application/json");
    expect(headers.get("edge-event-id")).toBe(evt.id);
    expect(headers.get("edge-event-type")).toBe("invoice.finalized");
    expect(headers.get("user-agent")).toMatch(/^edge-platform-webhooks\//);
    const body = String(request?.init.body);
    expect(JSON.parse(body)).toEqual(evt);
    const verified = await verifyWebhookSignature(
      target.secret,
      headers.get("edge-signature"),
      body,
      Math.floor(Date.now() / 1000),
    );
    expect(verified.ok).toBe(true);
    expect(
      (
        await verifyWebhookSignature(
          `${target.secret}x`,
          headers.get("edge-signature"),
          body,
          Math.floor(Date.now() / 1000),
        )
      ).ok,
    ).toBe(false);

    // The Standard Webhooks headers, checked as a receiver would with the standard verifier.
    expect(headers.get("webhook-id")).toBe(message.deliveryId);
    expect(new Webhook(target.secret).verify(body, Object.fromEntries(headers))).toEqual(evt);

    const page = await log(owner, target.id);
    expect(page.status).toBe(200);
    expect(page.body.data).toHaveLength(1);
    expect(page.body.data[0]).toMatchObject({
      id: message.deliveryId,
      eventId: evt.id,
      eventType: "invoice.finalized",
      status: "DELIVERED",
      attemptCount: 1,
      lastStatusCode: 204,
      attempts: [{ attemptNumber: 1, statusCode: 204, error: null, manual: false }],
    });
    expect(page.body.data[0].attempts[0].durationMs).toBeGreaterThanOrEqual(0);
    // A stale duplicate of a delivered message changes nothing.
    expect((await deliver(message, { fetcher })).outcomes).toEqual(["already-finished"]);
    expect(captured).toHaveLength(1);
  });

  it("retries failures with exponential backoff; the dead-letter consumer then marks it FAILED", async () => {
    const owner = await register();
    const target = await endpoint(owner);
    const { sent } = await fanOut(event(owner.tenant.id, "payment.failed"));
    const [message] = sent;
    if (!message) throw new Error("no delivery queued");
    const failing = answering(500);
    const delays: Array<number | undefined> = [];
    for (let attempts = 1; attempts <= 4; attempts++) {
      const {
        outcomes,
        delays: used,
        result,
      } = await deliver(message, {
        attempts,
        fetcher: failing.fetcher,
      });
      expect(outcomes).toEqual(["retry"]);
      expect(result.retryMessages).toHaveLength(1);
      delays.push(...used);
    }
    expect(delays).toEqual([2, 4, 8, 10]);
    // A redirect is a failed attempt and is not followed.
    const redirecting = answering(302, { location: "https://elsewhere.example.net/" });
    expect(
      (await deliver(message, { attempts: 5, fetcher: redirecting.fetcher })).outcomes,
    ).toEqual(["retry"]);
    expect(redirecting.captured).toHaveLength(1);
    expect((await deliveryRow(message.deliveryId))?.status).toBe("RETRYING");

    const dlq = batchOf("webhook-deliveries-dlq", message, 6);
    const ctx = createExecutionContext();
    await deadLetterWebhookBatch(dlq, deliveryEnv(recordingQueue().queue));
    expect((await getQueueResult(dlq, ctx)).explicitAcks).toHaveLength(1);

    const page = await log(owner, target.id);
    const [delivery] = page.body.data;
    expect(delivery).toMatchObject({ status: "FAILED", attemptCount: 5, lastStatusCode: 302 });
    expect(delivery.lastError).toMatch(
      /^dead-lettered after 5 attempts: redirect to https:\/\/elsewhere/,
    );
    expect(delivery.attempts.map((a: { attemptNumber: number }) => a.attemptNumber)).toEqual([
      5, 4, 3, 2, 1,
    ]);
    expect(delivery.attempts[1]).toMatchObject({ statusCode: 500, error: "HTTP 500" });
    // The endpoint has been failing since the first attempt, and is still enabled.
    const current = await call(`/api/v1/webhook-endpoints/${target.id}`, {
      token: owner.accessToken,
      tenant: owner.tenant.id,
    });
    expect(current.body.enabled).toBe(true);
    expect(current.body.failingSince).toBe(delivery.attempts[4].attemptedAt);
  });

  it("a timeout or connection error is a failed attempt with the reason", async () => {
    const owner = await register();
    await endpoint(owner);
    const { sent } = await fanOut(event(owner.tenant.id));
    const [message] = sent;
    if (!message) throw new Error("no delivery queued");
    const timingOut: Fetcher = async () => {
      throw new DOMException("The operation timed out", "TimeoutError");
    };
    expect((await deliver(message, { fetcher: timingOut })).outcomes).toEqual(["retry"]);
    expect((await deliveryRow(message.deliveryId))?.last_error).toBe(
      `no answer within ${settings.timeoutMs} ms`,
    );
  });

  it("disables an endpoint failing for longer than the setting (injected clock); a success resets the streak", async () => {
    const owner = await register();
    const target = await endpoint(owner);
    const t0 = new Date("2030-03-01T00:00:00.000Z");
    const failing = answering(503);
    const at = (ms: number) => () => new Date(t0.getTime() + ms);

    const first = (await fanOut(event(owner.tenant.id))).sent[0];
    if (!first) throw new Error("no delivery queued");
    await deliver(first, { fetcher: failing.fetcher, now: at(0) });
    // A success in between ends the streak...
    const healthy = answering(200);
    const second = (await fanOut(event(owner.tenant.id))).sent[0];
    if (!second) throw new Error("no delivery queued");
    await deliver(second, { fetcher: healthy.fetcher, now: at(HOUR) });
    const reset = await env.DB.prepare("SELECT failing_since FROM webhook_endpoints WHERE id = ?")
      .bind(target.id)
      .first<{ failing_since: string | null }>();
    expect(reset?.failing_since).toBeNull();

    // ...so the streak starts again at 2 h; 71 h later it is still on, past 72 h it is off.
    expect(
      (await deliver(first, { attempts: 2, fetcher: failing.fetcher, now: at(2 * HOUR) })).outcomes,
    ).toEqual(["retry"]);
    expect(
      (await deliver(first, { attempts: 3, fetcher: failing.fetcher, now: at(73 * HOUR) }))
        .outcomes,
    ).toEqual(["retry"]);
    const third = (await fanOut(event(owner.tenant.id))).sent[0];
    if (!third) throw new Error("no delivery queued");
    const { outcomes, result } = await deliver(third, {
      fetcher: failing.fetcher,
      now: at(74 * HOUR + 1),
    });
    expect(outcomes).toEqual(["disabled"]);
    expect(result.explicitAcks).toHaveLength(1);

    const current = await call(`/api/v1/webhook-endpoints/${target.id}`, {
      token: owner.accessToken,
      tenant: owner.tenant.id,
    });
    expect(current.body).toMatchObject({
      enabled: false,
      failingSince: new Date(t0.getTime() + 2 * HOUR).toISOString(),
    });
    expect(current.body.disabledReason).toMatch(/longer than 72 hours/);
    expect((await deliveryRow(third.deliveryId))?.status).toBe("FAILED");
    const audit = await onlyAuditRow(target.id, "webhook_endpoint.disabled");
    expect(audit.actor_type).toBe("system");

    // Messages still queued for it are skipped, not sent.
    const skipped = await deliver(first, {
      attempts: 4,
      fetcher: failing.fetcher,
      now: at(75 * HOUR),
    });
    expect(skipped.outcomes).toEqual(["skipped"]);
    expect((await deliveryRow(first.deliveryId))?.status).toBe("SKIPPED");
    // No new deliveries while disabled; PATCH enabled: true turns it back on with a clean slate.
    expect((await fanOut(event(owner.tenant.id))).sent).toEqual([]);
    const enabled = await call(`/api/v1/webhook-endpoints/${target.id}`, {
      method: "PATCH",
      token: owner.accessToken,
      tenant: owner.tenant.id,
      body: { enabled: true },
    });
    expect(enabled.body).toMatchObject({ enabled: true, failingSince: null, disabledReason: null });
    expect((await fanOut(event(owner.tenant.id))).sent).toHaveLength(1);
  });

  it("a message for a deleted endpoint is acknowledged and recorded as skipped", async () => {
    const owner = await register();
    const target = await endpoint(owner);
    const [message] = (await fanOut(event(owner.tenant.id))).sent;
    if (!message) throw new Error("no delivery queued");
    const removed = await call(`/api/v1/webhook-endpoints/${target.id}`, {
      method: "DELETE",
      token: owner.accessToken,
      tenant: owner.tenant.id,
    });
    expect(removed.status).toBe(204);
    const never = answering(200);
    const { outcomes, result } = await deliver(message, { fetcher: never.fetcher });
    expect(outcomes).toEqual(["skipped"]);
    expect(result.explicitAcks).toHaveLength(1);
    expect(never.captured).toHaveLength(0);
    expect(await deliveryRow(message.deliveryId)).toMatchObject({
      status: "SKIPPED",
      last_error: "endpoint deleted",
    });
  });
});

describe("retention", () => {
  it("the cron prunes finished deliveries, sent events and deleted endpoints after 30 days, nothing in flight", async () => {
    const owner = await register();
    const live = await endpoint(owner);
    const [done] = (await fanOut(event(owner.tenant.id))).sent;
    const [inFlight] = (await fanOut(event(owner.tenant.id))).sent;
    if (!done || !inFlight) throw new Error("no deliveries queued");
    await deliver(done, { fetcher: answering(200).fetcher });
    await deliver(inFlight, { fetcher: answering(500).fetcher });
    const old = new Date(Date.now() - 31 * MS_PER_DAY).toISOString();
    await env.DB.prepare("UPDATE webhook_deliveries SET updated_at = ? WHERE id IN (?, ?)")
      .bind(old, done.deliveryId, inFlight.deliveryId)
      .run();
    const gone = await endpoint(owner);
    await env.DB.prepare("UPDATE webhook_endpoints SET deleted_at = ? WHERE id = ?")
      .bind(old, gone.id)
      .run();
    const sentId = `evt_${crypto.randomUUID()}`;
    const unsentId = `evt_${crypto.randomUUID()}`;
    await env.DB.batch([
      env.DB.prepare(
        "INSERT INTO tenant_events (id, tenant_id, type, data, created_at, sent_at) VALUES (?, ?, 'invoice.paid', '{}', ?, ?)",
      ).bind(sentId, owner.tenant.id, old, old),
      env.DB.prepare(
        "INSERT INTO tenant_events (id, tenant_id, type, data, created_at) VALUES (?, ?, 'invoice.paid', '{}', ?)",
      ).bind(unsentId, owner.tenant.id, old),
    ]);

    const pruned = await pruneWebhookHistory(env.DB, new Date());
    expect(pruned?.deliveries).toBeGreaterThanOrEqual(1);
    expect(await deliveryRow(done.deliveryId)).toBeNull();
    expect(
      await env.DB.prepare(
        "SELECT count(*) AS n FROM webhook_delivery_attempts WHERE delivery_id = ?",
      )
        .bind(done.deliveryId)
        .first<{ n: number }>(),
    ).toEqual({ n: 0 });
    expect((await deliveryRow(inFlight.deliveryId))?.status).toBe("RETRYING");
    const events = await env.DB.prepare("SELECT id FROM tenant_events WHERE id IN (?, ?)")
      .bind(sentId, unsentId)
      .all<{ id: string }>();
    expect(events.results.map((row) => row.id)).toEqual([unsentId]);
    const endpoints = await env.DB.prepare("SELECT id FROM webhook_endpoints WHERE id IN (?, ?)")
      .bind(live.id, gone.id)
      .all<{ id: string }>();
    expect(endpoints.results.map((row) => row.id)).toEqual([live.id]);
  });
});

describe("secret rotation", () => {
  it("both secrets sign during the overlap; afterwards only the new one", async () => {
    const owner = await register();
    const target = await endpoint(owner);
    const rotated = await call(`/api/v1/webhook-endpoints/${target.id}/rotate-secret`, {
      token: owner.accessToken,
      tenant: owner.tenant.id,
      body: { previousSecretExpiresInHours: 1 },
    });
    expect(rotated.status, JSON.stringify(rotated.body)).toBe(200);
    const newSecret = rotated.body.secret as string;

    const during = event(owner.tenant.id);
    const [first] = (await fanOut(during)).sent;
    if (!first) throw new Error("no delivery queued");
    const { captured, fetcher } = answering(204);
    await deliver(first, { fetcher });
    const headers = Object.fromEntries(new Headers(captured[0]?.init.headers));
    const body = String(captured[0]?.init.body);
    expect(headers["webhook-signature"]?.split(" ")).toHaveLength(2);
    expect(new Webhook(newSecret).verify(body, headers)).toEqual(during);
    expect(new Webhook(target.secret).verify(body, headers)).toEqual(during);

    // An hour later (the attempt's clock), the old secret no longer signs.
    const after = event(owner.tenant.id);
    const [second] = (await fanOut(after)).sent;
    if (!second) throw new Error("no delivery queued");
    const later = answering(204);
    const inAnHour = new Date(Date.now() + HOUR + 60_000);
    await deliver(second, { fetcher: later.fetcher, now: () => inAnHour });
    const laterHeaders = Object.fromEntries(new Headers(later.captured[0]?.init.headers));
    expect(laterHeaders["webhook-signature"]?.split(" ")).toHaveLength(1);
    expect(Number(laterHeaders["webhook-timestamp"])).toBe(Math.floor(inAnHour.getTime() / 1000));
  });
});

describe("manual resend", () => {
  it("queues a finished delivery again: same event id, the next attempt number, marked manual", async () => {
    const owner = await register();
    const target = await endpoint(owner);
    const evt = event(owner.tenant.id);
    const [message] = (await fanOut(evt)).sent;
    if (!message) throw new Error("no delivery queued");
    const path = `/api/v1/webhook-endpoints/${target.id}/deliveries/${message.deliveryId}/resend`;
    const api = (options: Parameters<typeof call>[1] = {}) =>
      call(path, { token: owner.accessToken, tenant: owner.tenant.id, method: "POST", ...options });

    expectError(await api(), 409, /still being delivered/);
    await deliver(message, { fetcher: answering(200).fetcher });

    const resent = await api();
    expect(resent.status, JSON.stringify(resent.body)).toBe(202);
    expect(resent.body).toMatchObject({
      id: message.deliveryId,
      status: "PENDING",
      eventId: evt.id,
    });
    const audit = await onlyAuditRow(message.deliveryId, "webhook_delivery.resent");
    expect(audit.changes.status).toEqual({ before: "DELIVERED", after: "PENDING" });

    // The resend's own message (on the real queue) is what the consumer gets; here it is replayed directly.
    const { captured, fetcher } = answering(200);
    await deliver({ deliveryId: message.deliveryId, manual: true }, { fetcher });
    const row = await deliveryRow(message.deliveryId);
    expect(row?.status).toBe("DELIVERED");
    // The resend carries the delivery's id again: receivers deduplicate on webhook-id.
    const resentHeaders = new Headers(captured[0]?.init.headers);
    expect(resentHeaders.get("edge-event-id")).toBe(evt.id);
    expect(resentHeaders.get("webhook-id")).toBe(message.deliveryId);
    const page = await log(owner, target.id);
    const attempts = page.body.data[0].attempts;
    expect(attempts[0]).toMatchObject({ attemptNumber: 2, manual: true });
    expect(attempts[attempts.length - 1]).toMatchObject({ attemptNumber: 1, manual: false });

    const stranger = await register();
    expectError(
      await call(path, { token: stranger.accessToken, tenant: stranger.tenant.id, method: "POST" }),
      404,
    );
    const unknown = `/api/v1/webhook-endpoints/${target.id}/deliveries/${crypto.randomUUID()}/resend`;
    expectError(
      await call(unknown, { token: owner.accessToken, tenant: owner.tenant.id, method: "POST" }),
      404,
    );
  });
});

describe("events from the billing code (outbox)", () => {
  let admin: Account;
  let plan: MoneyPlan;
  beforeAll(async () => {
    admin = await platformAdmin();
    plan = await buildMoneyPlan(admin, 2900);
  });

  async function eventsOf(tenantId: string) {
    const rows = await env.DB.prepare(
      "SELECT id, type, data, sent_at FROM tenant_events WHERE tenant_id = ? ORDER BY created_at, rowid",
    )
      .bind(tenantId)
      .all<{ id: string; type: string; data: string; sent_at: string | null }>();
    return rows.results.map((row) => ({ ...row, data: JSON.parse(row.data) }));
  }

  it("subscription changes, the cycle's finalize, failed payments and PAST_DUE are written with the change", async () => {
    const owner = await register();
    const tenantId = owner.tenant.id;
    const api = (path: string, options: Parameters<typeof call>[1] = {}) =>
      call(`/api/v1${path}`, { token: owner.accessToken, tenant: tenantId, ...options });
    const subscription = await subscribe(owner, plan.planId, plan.priceId);
    expect(
      (await api(`/subscriptions/${subscription.id}/pause`, { method: "POST" })).status,
    ).toBeLessThan(300);
    // A refused change (already paused) writes no event.
    expect((await api(`/subscriptions/${subscription.id}/pause`, { method: "POST" })).status).toBe(
      409,
    );
    const resumed = (await api(`/subscriptions/${subscription.id}/resume`, { method: "POST" }))
      .body;
    expect(resumed.status).toBe("ACTIVE");
    let events = await eventsOf(tenantId);
    const changes = events.filter((e) => e.type === "subscription.changed");
    expect(changes.map((e) => [e.type, e.data.change])).toEqual([
      ["subscription.changed", "created"],
      ["subscription.changed", "paused"],
      ["subscription.changed", "resumed"],
    ]);
    expect(changes[1]?.data).toMatchObject({ id: subscription.id, status: "PAUSED" });
    expect(changes[2]?.data).toMatchObject({ id: subscription.id, status: "ACTIVE" });
    // Resuming bills the period cut at the pause first: its invoice is finalized.
    expect(events.filter((e) => e.type === "invoice.finalized")).toHaveLength(1);

    const { provider, state } = steerableProvider("failed");
    let at = new Date(addMonthsClamped(new Date(resumed.currentPeriodStart), 1).getTime() + 60_000);
    await runCycle(at, provider, [tenantId]);
    events = await eventsOf(tenantId);
    const finalized = events.filter((e) => e.type === "invoice.finalized")[1];
    expect(finalized?.data).toMatchObject({
      status: "OPEN",
      tenantId,
      subscriptionId: subscription.id,
    });
    expect(finalized?.data.invoiceNumber).toMatch(/^INV-\d{4}-\d{6}$/);
    expect(events.filter((e) => e.type === "payment.failed")).toHaveLength(1);

    for (const days of [1, 3, 5]) {
      at = new Date(at.getTime() + days * MS_PER_DAY);
      await runCycle(at, provider, [tenantId]);
    }
    events = await eventsOf(tenantId);
    const failures = events.filter((e) => e.type === "payment.failed");
    expect(failures.map((e) => e.data.attemptNumber)).toEqual([1, 2, 3, 4]);
    expect(failures[3]?.data).toMatchObject({ lastAttempt: true, nextRetryAt: null });
    const pastDue = events.filter((e) => e.type === "subscription.past_due");
    expect(pastDue).toHaveLength(1);
    expect(pastDue[0]?.data).toMatchObject({ id: subscription.id, invoiceId: finalized?.data.id });
    state.outcome = "succeeded";
  });

  it("settlement writes invoice.voided and invoice.paid; the relay sends each event once", async () => {
    const owner = await register();
    const tenantId = owner.tenant.id;
    await subscribe(owner, plan.planId, plan.priceId);
    const platform = (path: string, options: Parameters<typeof call>[1] = {}) =>
      call(`/api/v1${path}`, {
        token: admin.accessToken,
        tenant: tenantId,
        method: "POST",
        ...options,
      });
    const draft = (await platform("/invoices/generate")).body;
    expect((await platform(`/invoices/${draft.id}/void`)).status).toBeLessThan(300);
    const second = (await platform("/invoices/generate")).body;
    expect((await platform(`/invoices/${second.id}/finalize`)).status).toBeLessThan(300);
    const paid = await platform(`/invoices/${second.id}/mark-paid`);
    expect(paid.status, JSON.stringify(paid.body)).toBeLessThan(300);
    const events = await eventsOf(tenantId);
    expect(events.map((e) => e.type).filter((type) => type.startsWith("invoice."))).toEqual([
      "invoice.voided",
      "invoice.finalized",
      "invoice.paid",
    ]);
    expect(events.find((e) => e.type === "invoice.paid")?.data).toMatchObject({
      id: second.id,
      status: "PAID",
    });

    // Whatever the background relay has not sent yet goes now, once.
    await env.DB.prepare(
      "UPDATE tenant_events SET sent_at = NULL, relay_after = NULL WHERE tenant_id = ?",
    )
      .bind(tenantId)
      .run();
    const { sent, queue } = recordingQueue();
    const relayEnv = { DB: env.DB, TENANT_EVENTS_QUEUE: queue as Queue<TenantEvent> };
    await relayTenantEvents(relayEnv);
    const mine = (sent as TenantEvent[]).filter((e) => e.tenantId === tenantId);
    expect(mine.map((e) => e.id).sort()).toEqual(events.map((e) => e.id).sort());
    expect(mine.find((e) => e.type === "invoice.paid")).toMatchObject({
      tenantId,
      createdAt: expect.any(String),
      data: { id: second.id },
    });
    const before = sent.length;
    await relayTenantEvents(relayEnv);
    expect((sent as TenantEvent[]).slice(before).filter((e) => e.tenantId === tenantId)).toEqual(
      [],
    );

    // A relay that claimed events and died (lease taken, never marked sent): re-sent after the lease.
    await env.DB.prepare(
      "UPDATE tenant_events SET sent_at = NULL, relay_after = ? WHERE tenant_id = ?",
    )
      .bind(new Date(Date.now() + 30_000).toISOString(), tenantId)
      .run();
    const early = sent.length;
    await relayTenantEvents(relayEnv);
    expect((sent as TenantEvent[]).slice(early).filter((e) => e.tenantId === tenantId)).toEqual([]);
    await relayTenantEvents(relayEnv, new Date(Date.now() + 61_000));
    expect(
      (sent as TenantEvent[]).slice(early).filter((e) => e.tenantId === tenantId),
    ).toHaveLength(events.length);
  });

  it("through the real queues: a write's events reach the tenant's endpoint as a delivery", async () => {
    const owner = await register();
    const target = await endpoint(owner, { eventTypes: ["subscription.changed"] });
    const subscription = await subscribe(owner, plan.planId, plan.priceId);
    const deadline = Date.now() + 15_000;
    let delivery: { event_type: string; payload: string } | null = null;
    while (!delivery && Date.now() < deadline) {
      delivery = await env.DB.prepare(
        "SELECT event_type, payload FROM webhook_deliveries WHERE endpoint_id = ?",
      )
        .bind(target.id)
        .first<{ event_type: string; payload: string }>();
      if (!delivery) await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect(delivery?.event_type).toBe("subscription.changed");
    expect(JSON.parse(delivery?.payload ?? "{}")).toMatchObject({
      type: "subscription.changed",
      tenantId: owner.tenant.id,
      data: { id: subscription.id, change: "created" },
    });
  });
});
