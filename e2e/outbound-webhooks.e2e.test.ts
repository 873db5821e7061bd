import { readFileSync } from "node:fs";
import { createServer, type IncomingHttpHeaders, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { Webhook } from "standardwebhooks";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { type RunningStack, startStack } from "../scripts/lib/stack.ts";
import {
  type Caller,
  createApiKey,
  createFeature,
  createPlanWithPrice,
  createTenant,
  grantEntitlement,
  loginDevAdmin,
  ok,
  type SendOptions,
  sendTo,
  subscribe,
} from "./lib/billing-api.ts";
import { eventually } from "./lib/eventually.ts";
import { verifyEdgeSignature } from "./lib/verify-edge-signature.ts";

/** What a receiver hands the standard verifier: the request's headers as strings. */
function headersOf(request: Received): Record<string, string> {
  return Object.fromEntries(
    Object.entries(request.headers).map(([name, value]) => [name, String(value)]),
  );
}

/** The body if the standardwebhooks package verifies it with `secret`; the package's error otherwise. */
function standardVerify(secret: string, request: Received): unknown {
  try {
    return new Webhook(secret).verify(request.body, headersOf(request));
  } catch (error) {
    return (error as Error).message;
  }
}

// Outbound webhooks against a running stack: a local receiver
// started here (the development setting allows http://127.0.0.1), a billing
// period closed by the Cron Trigger's own handler at the period's end, a
// receiver that always fails, the delivery log's dead-letter record, and
// the EntitlementCounter's usage.threshold_reached and quota.exhausted.
// The stack is this file's own: running the cron a month ahead closes every
// tenant's period, which must not move the shared stack's demo tenant.

const suffix = `${Date.now().toString(36)}${Math.random().toString(36).slice(2, 6)}`;

interface Received {
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
  at: number;
}

/** A local HTTP receiver: every request recorded; `/fail/*` answers 500, the rest 204. */
class Receiver {
  readonly received: Received[] = [];
  private server: Server | undefined;
  port = 0;

  async start() {
    const server = createServer((request, response) => {
      const chunks: Buffer[] = [];
      request.on("data", (chunk: Buffer) => chunks.push(chunk));
      request.on("end", () => {
        this.received.push({
          path: request.url ?? "",
          headers: request.headers,
          body: Buffer.concat(chunks).toString("utf8"),
          at: Date.now(),
        });
        response.statusCode = request.url?.startsWith("/fail") ? 500 : 204;
        response.end();
      });
    });
    this.server = server;
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    this.port = (server.address() as AddressInfo).port;
  }

  url(path: string) {
    return `http://127.0.0.1:${this.port}${path}`;
  }

  on(path: string) {
    return this.received.filter((request) => request.path === path);
  }

  async stop() {
    const server = this.server;
    if (!server) return;
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
}

/** How long a delivery or a counted usage event may take to show up. */
const DELIVERY_WAIT_MS = 30_000;

const receiver = new Receiver();
let stack: RunningStack | undefined;
let admin: string;

/** This file's stack's billing API. */
function apiUrl() {
  if (!stack) throw new Error("stack not started");
  return `${stack.billingUrl}/api/v1`;
}

function send(path: string, options: SendOptions = {}) {
  return sendTo(apiUrl(), path, options);
}

/** The platform administrator on this file's stack, acting on the tenant `actingOn` when given. */
function platform(actingOn?: string): Caller {
  return { token: admin, apiUrl: apiUrl(), ...(actingOn ? { tenantId: actingOn } : {}) };
}

let tenantId: string;
let subscription: { id: string; currentPeriodEnd: string };

beforeAll(async () => {
  // Free ports are picked, then bound by wrangler: on a busy machine another
  // process can take one in between, so a failed start is tried once more.
  stack = await startStack({ logLevel: "warn", timeoutMs: 150_000 });
  await receiver.start();
  admin = await loginDevAdmin(apiUrl());
  tenantId = (await createTenant(platform(), `Webhooks ${suffix}`)).id;
  const { plan, price } = await createPlanWithPrice(
    platform(),
    { name: "Hooks", slug: `e2e-hooks-${suffix}` },
    { interval: "MONTHLY", amount: 2900 },
  );
  subscription = await subscribe(platform(tenantId), { planId: plan.id, priceId: price.id });
});

afterAll(async () => {
  await receiver.stop();
  await stack?.stop();
});

async function endpoint(path: string, eventTypes: string[]) {
  return ok(
    await send("/webhook-endpoints", {
      token: admin,
      tenant: tenantId,
      body: { url: receiver.url(path), eventTypes, description: `e2e ${path}` },
    }),
    201,
    "endpoint",
  ) as { id: string; secret: string };
}

/** The newest entry of the endpoint's delivery log, once it has `status`. */
function newestDelivery(
  endpointId: string,
  status: string,
  what: string,
  timeoutMs = DELIVERY_WAIT_MS,
) {
  return eventually(
    async () => {
      const log = await send(`/webhook-endpoints/${endpointId}/deliveries`, {
        token: admin,
        tenant: tenantId,
      });
      const [delivery] = log.body.data ?? [];
      return delivery?.status === status ? delivery : undefined;
    },
    what,
    timeoutMs,
  );
}

describe("outbound webhooks", () => {
  it("the documented receiver snippet is the code this receiver runs", () => {
    const readme = readFileSync(new URL("../docs/billing.md", import.meta.url), "utf8");
    const snippet = readFileSync(
      new URL("./lib/verify-edge-signature.ts", import.meta.url),
      "utf8",
    );
    const code = snippet.slice(snippet.indexOf("/** True when"));
    expect(code.length).toBeGreaterThan(200);
    expect(readme).toContain(code);
    expect(readme).toContain('import { createHmac, timingSafeEqual } from "node:crypto";');
  });

  it("the cycle closing a period sends a signed invoice.finalized the documented snippet verifies", async () => {
    const hook = await endpoint("/ok/invoices", ["invoice.finalized"]);
    // The Cron Trigger's handler, run by the local runtime at the period's end.
    const periodEnd = Date.parse(subscription.currentPeriodEnd);
    const cron = await fetch(
      `${stack?.billingUrl}/cdn-cgi/local/scheduled?cron=${encodeURIComponent("* * * * *")}&time=${periodEnd + 60_000}`,
    );
    expect(cron.status, await cron.text()).toBe(200);

    const [delivery] = await eventually(
      () => (receiver.on("/ok/invoices").length > 0 ? receiver.on("/ok/invoices") : undefined),
      "invoice.finalized at the receiver",
      DELIVERY_WAIT_MS,
    );
    if (!delivery) throw new Error("no delivery");
    expect(delivery.headers["content-type"]).toBe("application/json");
    expect(delivery.headers["user-agent"]).toMatch(/^edge-platform-webhooks\//);
    // The signature's timestamp is the delivery's wall clock, so the usual tolerance applies.
    expect(
      verifyEdgeSignature(hook.secret, delivery.headers["edge-signature"] as string, delivery.body),
    ).toBe(true);
    expect(
      verifyEdgeSignature(
        `${hook.secret}x`,
        delivery.headers["edge-signature"] as string,
        delivery.body,
      ),
    ).toBe(false);
    expect(
      verifyEdgeSignature(
        hook.secret,
        delivery.headers["edge-signature"] as string,
        `${delivery.body} `,
      ),
    ).toBe(false);
    const event = JSON.parse(delivery.body);
    // The standard verifier, unchanged, as a receiver runs it.
    expect(standardVerify(hook.secret, delivery)).toEqual(event);
    expect(standardVerify(hook.secret, { ...delivery, body: `${delivery.body} ` })).toBe(
      "No matching signature found",
    );
    expect(Object.keys(event)).toEqual(["id", "type", "createdAt", "tenantId", "data"]);
    expect(event).toMatchObject({
      type: "invoice.finalized",
      tenantId,
      data: { status: "OPEN", subscriptionId: subscription.id, total: 2900, currency: "usd" },
    });
    expect(event.data.invoiceNumber).toMatch(/^INV-\d{4}-\d{6}$/);
    expect(delivery.headers["edge-event-id"]).toBe(event.id);

    const invoices = ok(
      await send("/invoices", { token: admin, tenant: tenantId }),
      200,
      "invoices",
    );
    expect(invoices.data.map((invoice: { id: string }) => invoice.id)).toContain(event.data.id);
    const log = ok(
      await send(`/webhook-endpoints/${hook.id}/deliveries`, { token: admin, tenant: tenantId }),
      200,
      "deliveries",
    );
    expect(log.data[0]).toMatchObject({
      eventId: event.id,
      status: "DELIVERED",
      attempts: [{ attemptNumber: 1, statusCode: 204 }],
    });
  });

  it("a failing receiver sees retries with growing gaps, then the dead-letter record in the delivery log; a resend after the fix delivers", async () => {
    const hook = await endpoint("/fail/subscriptions", ["subscription.changed"]);
    ok(
      await send(`/subscriptions/${subscription.id}/pause`, {
        method: "POST",
        token: admin,
        tenant: tenantId,
      }),
      201,
      "pause",
    );
    const failed = await newestDelivery(hook.id, "FAILED", "the dead-letter record", 90_000);
    expect(failed.lastError).toMatch(/^dead-lettered after \d+ attempts: HTTP 500/);
    expect(failed.attempts.length).toBe(failed.attemptCount);
    expect(failed.attemptCount).toBeGreaterThanOrEqual(3);
    expect(failed.attempts.every((a: { statusCode: number }) => a.statusCode === 500)).toBe(true);

    const calls = receiver.on("/fail/subscriptions");
    expect(calls).toHaveLength(failed.attemptCount);
    // Every retry carries the same event id (the receiver's dedup key) and a valid signature.
    expect(new Set(calls.map((call) => call.headers["edge-event-id"]))).toEqual(
      new Set([failed.eventId]),
    );
    expect(new Set(calls.map((call) => call.headers["webhook-id"]))).toEqual(new Set([failed.id]));
    for (const call of calls) {
      expect(
        verifyEdgeSignature(hook.secret, call.headers["edge-signature"] as string, call.body),
      ).toBe(true);
      expect(standardVerify(hook.secret, call)).toEqual(JSON.parse(call.body));
    }
    const gaps = calls.slice(1).map((call, index) => call.at - (calls[index]?.at ?? call.at));
    console.log(
      `[e2e] failing receiver: ${calls.length} attempts, gaps ${gaps.map((gap) => `${(gap / 1000).toFixed(1)} s`).join(", ")}`,
    );
    // Backoff (1 s, then 2 s capped, in .dev.vars.example): no retry came back at once.
    expect(Math.min(...gaps)).toBeGreaterThanOrEqual(900);

    // The endpoint is still enabled (failing for seconds, not days) and shows since when it fails.
    const current = ok(
      await send(`/webhook-endpoints/${hook.id}`, { token: admin, tenant: tenantId }),
      200,
      "endpoint",
    );
    expect(current).toMatchObject({ enabled: true, disabledReason: null });
    expect(current.failingSince).toBe(failed.attempts[failed.attempts.length - 1].attemptedAt);

    // The receiver is fixed (PATCH url): a manual resend delivers the same event, signed.
    ok(
      await send(`/webhook-endpoints/${hook.id}`, {
        method: "PATCH",
        token: admin,
        tenant: tenantId,
        body: { url: receiver.url("/ok/fixed") },
      }),
      200,
      "patch url",
    );
    ok(
      await send(`/webhook-endpoints/${hook.id}/deliveries/${failed.id}/resend`, {
        method: "POST",
        token: admin,
        tenant: tenantId,
      }),
      202,
      "resend",
    );
    const [fixed] = await eventually(
      () => (receiver.on("/ok/fixed").length > 0 ? receiver.on("/ok/fixed") : undefined),
      "the resent delivery",
      DELIVERY_WAIT_MS,
    );
    expect(fixed?.headers["edge-event-id"]).toBe(failed.eventId);
    // A resend: the same webhook-id (the receiver's dedup key), a timestamp of its own, verified.
    if (!fixed) throw new Error("no resent delivery");
    expect(fixed.headers["webhook-id"]).toBe(failed.id);
    const lastRetry = calls[calls.length - 1];
    expect(Number(fixed.headers["webhook-timestamp"])).toBeGreaterThan(
      Number(lastRetry?.headers["webhook-timestamp"]),
    );
    expect(standardVerify(hook.secret, fixed)).toEqual(JSON.parse(fixed.body));
    expect(
      verifyEdgeSignature(
        hook.secret,
        fixed?.headers["edge-signature"] as string,
        fixed?.body ?? "",
      ),
    ).toBe(true);
    const resent = await newestDelivery(hook.id, "DELIVERED", "the resent delivery in the log");
    expect(resent.attempts[0]).toMatchObject({
      attemptNumber: failed.attemptCount + 1,
      statusCode: 204,
      manual: true,
    });
    const healthy = ok(
      await send(`/webhook-endpoints/${hook.id}`, { token: admin, tenant: tenantId }),
      200,
      "endpoint",
    );
    expect(healthy.failingSince).toBeNull();
  }, 120_000);
});

describe("Standard Webhooks: rotation and replay", () => {
  it("during a rotation either secret verifies; after it only the new one; an old timestamp is refused", async () => {
    const hook = await endpoint("/ok/rotation", ["invoice.paid"]);
    const example = async (path: string) => {
      const before = receiver.on(path).length;
      ok(
        await send(`/webhook-endpoints/${hook.id}/send-example`, {
          method: "POST",
          token: admin,
          tenant: tenantId,
        }),
        202,
        "send-example",
      );
      const [delivery] = await eventually(
        () => (receiver.on(path).length > before ? receiver.on(path).slice(before) : undefined),
        "the example delivery",
        DELIVERY_WAIT_MS,
      );
      if (!delivery) throw new Error("no example delivery");
      return delivery;
    };

    const plain = await example("/ok/rotation");
    expect(JSON.parse(plain.body)).toMatchObject({ type: "webhook.test", tenantId });
    expect(standardVerify(hook.secret, plain)).toEqual(JSON.parse(plain.body));

    const rotated = ok(
      await send(`/webhook-endpoints/${hook.id}/rotate-secret`, {
        token: admin,
        tenant: tenantId,
        body: { previousSecretExpiresInHours: 1 },
      }),
      200,
      "rotate",
    ) as { secret: string; previousSecretExpiresAt: string };
    const during = await example("/ok/rotation");
    expect(standardVerify(rotated.secret, during)).toEqual(JSON.parse(during.body));
    expect(standardVerify(hook.secret, during)).toEqual(JSON.parse(during.body));
    expect(standardVerify(`whsec_${btoa("someone else's key, 32 bytes..")}`, during)).toBe(
      "No matching signature found",
    );

    // A captured delivery replayed six minutes later is refused by the receiver's verifier.
    vi.useFakeTimers({ now: Date.now() + 6 * 60_000, toFake: ["Date"] });
    try {
      expect(standardVerify(rotated.secret, during)).toBe("Message timestamp too old");
    } finally {
      vi.useRealTimers();
    }

    const third = ok(
      await send(`/webhook-endpoints/${hook.id}/rotate-secret`, {
        token: admin,
        tenant: tenantId,
        body: { previousSecretExpiresInHours: 0 },
      }),
      200,
      "rotate with no overlap",
    ) as { secret: string };
    const after = await example("/ok/rotation");
    expect(standardVerify(third.secret, after)).toEqual(JSON.parse(after.body));
    expect(after.headers["webhook-signature"]?.toString().split(" ")).toHaveLength(1);
    expect(standardVerify(rotated.secret, after)).toBe("No matching signature found");
  }, 120_000);
});

describe("usage alerts and quotas (the EntitlementCounter's events)", () => {
  it("ingested usage crossing 80% sends a signed usage.threshold_reached; the first refused consume a quota.exhausted", async () => {
    // A tenant made after the month-ahead cron run: its period starts now.
    const tenant = (await createTenant(platform(), `Quota ${suffix}`)).id as string;
    const lookupKey = `e2e_quota_${suffix}`;
    const feature = await createFeature(platform(), {
      name: "quota",
      lookupKey,
      type: "QUOTA",
      unit: "unit",
    });
    const { plan, price } = await createPlanWithPrice(
      platform(),
      { name: "Quota", slug: `e2e-quota-${suffix}` },
      { interval: "MONTHLY", amount: 1000 },
    );
    await grantEntitlement(platform(), plan.id, feature.id, {
      limit: 10,
      limitBehavior: "HARD",
      resetPeriod: "MONTHLY",
    });
    await subscribe(platform(tenant), { planId: plan.id, priceId: price.id });
    const apiKey = await createApiKey(platform(tenant), "e2e quota");
    const hook = ok(
      await send("/webhook-endpoints", {
        token: admin,
        tenant,
        body: {
          url: receiver.url("/ok/usage"),
          eventTypes: ["usage.threshold_reached", "quota.exhausted"],
        },
      }),
      201,
      "endpoint",
    ) as { id: string; secret: string };
    ok(
      await send("/usage-alerts", {
        token: admin,
        tenant,
        body: { featureLookupKey: lookupKey, threshold: { type: "percent", value: 80 } },
      }),
      201,
      "usage alert",
    );
    const byType = (type: string) =>
      receiver.on("/ok/usage").filter((call) => JSON.parse(call.body).type === type);

    // 7 units through the pipeline: below 80% of 10, no alert.
    const usage = (amounts: number[]) =>
      send("/usage/events", {
        token: apiKey,
        body: {
          events: amounts.map((amount) => ({
            eventId: crypto.randomUUID(),
            feature: lookupKey,
            amount,
            timestamp: new Date().toISOString(),
          })),
        },
      });
    ok(await usage([3, 4]), 202, "usage below the threshold");
    await eventually(
      async () => {
        const check = await send(`/entitlements/${lookupKey}/check`, { token: apiKey });
        return check.body.used === 7 ? true : undefined;
      },
      "7 units counted",
      DELIVERY_WAIT_MS,
    );
    expect(byType("usage.threshold_reached")).toEqual([]);

    // One more unit: 8 of 10 = 80%.
    ok(await usage([1]), 202, "usage crossing 80%");
    const [reached] = await eventually(
      () =>
        byType("usage.threshold_reached").length > 0
          ? byType("usage.threshold_reached")
          : undefined,
      "usage.threshold_reached at the receiver",
      DELIVERY_WAIT_MS,
    );
    if (!reached) throw new Error("no alert");
    expect(
      verifyEdgeSignature(hook.secret, reached.headers["edge-signature"] as string, reached.body),
    ).toBe(true);
    const alert = JSON.parse(reached.body);
    expect(reached.headers["edge-event-id"]).toBe(alert.id);
    expect(alert).toMatchObject({
      type: "usage.threshold_reached",
      tenantId: tenant,
      data: {
        featureKey: lookupKey,
        threshold: { type: "percent", value: 80 },
        thresholdUnits: 8,
        limit: 10,
      },
    });
    expect(alert.data.used).toBeGreaterThanOrEqual(8);

    // Up to the limit, then the first refusal.
    const consume = (amount: number) =>
      send(`/entitlements/${lookupKey}/consume`, { token: apiKey, body: { amount } });
    expect((await consume(2)).status).toBe(200);
    expect(byType("quota.exhausted")).toEqual([]);
    expect((await consume(1)).status).toBe(403);
    const [exhausted] = await eventually(
      () => (byType("quota.exhausted").length > 0 ? byType("quota.exhausted") : undefined),
      "quota.exhausted at the receiver",
      DELIVERY_WAIT_MS,
    );
    if (!exhausted) throw new Error("no quota event");
    expect(
      verifyEdgeSignature(
        hook.secret,
        exhausted.headers["edge-signature"] as string,
        exhausted.body,
      ),
    ).toBe(true);
    expect(JSON.parse(exhausted.body)).toMatchObject({
      type: "quota.exhausted",
      tenantId: tenant,
      data: { featureKey: lookupKey, limit: 10, used: 10, requested: 1 },
    });
    // Later refusals in the window and more usage send nothing new (once per window).
    expect((await consume(1)).status).toBe(403);
    await new Promise((resolve) => setTimeout(resolve, 3000));
    expect(byType("quota.exhausted")).toHaveLength(1);
    expect(byType("usage.threshold_reached")).toHaveLength(1);
    const log = ok(
      await send(`/webhook-endpoints/${hook.id}/deliveries`, { token: admin, tenant }),
      200,
      "deliveries",
    );
    expect(
      log.data.map((delivery: { eventType: string; status: string }) => [
        delivery.eventType,
        delivery.status,
      ]),
    ).toEqual([
      ["quota.exhausted", "DELIVERED"],
      ["usage.threshold_reached", "DELIVERED"],
    ]);
  }, 120_000);
});
