import { env } from "cloudflare:workers";
import { database } from "@edge-platform/shared/db/client";
import { beforeAll, describe, expect, it } from "vitest";
import { createApp } from "../src/app.ts";
import { PaymentService } from "../src/payments/index.ts";
import { consumeWebhookBatch } from "../src/payments/provider-webhook-job.ts";
import { signWebhook } from "../src/platform/domain/webhook-signature.ts";
import {
  asTenant,
  buildMoneyPlan,
  type MoneyPlan,
  paymentIntentEvent,
  signedWebhook,
  WEBHOOK_SECRET,
  waitForWebhook,
} from "./billing-helpers.ts";
import { platformAdmin, subscribe } from "./catalog-helpers.ts";
import { type Account, call, expectError, register, request } from "./helpers.ts";

let admin: Account;
let plan: MoneyPlan;
let other: MoneyPlan;

beforeAll(async () => {
  admin = await platformAdmin();
  plan = await buildMoneyPlan(admin, 2900);
  other = await buildMoneyPlan(admin, 4900);
});

/** A tenant with a finalized invoice and its PENDING first attempt. */
async function openInvoice() {
  const owner = await register();
  const subscription = await subscribe(owner, plan.planId, plan.priceId);
  // The platform administrator settles; the tenant only reads.
  const api = asTenant(admin, owner.tenant.id);
  const draft = (await api("/api/v1/invoices/generate", { method: "POST" })).body;
  const invoice = (await api(`/api/v1/invoices/${draft.id}/finalize`, { method: "POST" })).body;
  const attempt = (await api("/api/v1/billing/payments")).body.data[0];
  expect(attempt).toMatchObject({ status: "PENDING", invoiceId: invoice.id });
  return { owner, subscription, api, invoice, attempt };
}

async function storedEvents(providerEventId: string) {
  const rows = await env.DB.prepare("SELECT status FROM webhook_events WHERE provider_event_id = ?")
    .bind(providerEventId)
    .all();
  return rows.results.length;
}

describe("POST /webhooks/payprovider", () => {
  it("a valid event is stored, answered 200 and processed from the queue", async () => {
    const { api, invoice, attempt } = await openInvoice();
    const event = paymentIntentEvent("payment_intent.succeeded", attempt.providerPaymentId, {
      amount: invoice.total,
      currency: "usd",
    });
    const result = await signedWebhook(event);
    expect(result.status, JSON.stringify(result.body)).toBe(200);
    expect(result.body).toEqual({ received: true, eventId: event.id, duplicate: false });
    const row = await waitForWebhook(event.id);
    expect(row.status).toBe("PROCESSED");
    expect((await api(`/api/v1/invoices/${invoice.id}`)).body.status).toBe("PAID");
    const detail = (await api(`/api/v1/billing/payments/${attempt.id}`)).body;
    expect(detail.status).toBe("SUCCEEDED");
    expect(detail.providerResponse).toMatchObject({
      id: event.id,
      type: "payment_intent.succeeded",
    });
    const payment = (await api("/api/v1/billing/ledger?type=PAYMENT")).body.data[0];
    expect(payment).toMatchObject({
      credit: invoice.total,
      externalReference: attempt.providerPaymentId,
    });
  });

  it("a tampered body, a wrong secret, a stale or future timestamp and a bad header are 400 and store nothing", async () => {
    const { api, invoice, attempt } = await openInvoice();
    const event = paymentIntentEvent("payment_intent.succeeded", attempt.providerPaymentId);
    const tampered = await signedWebhook(event, {
      tamper: (raw) => raw.replace("payment_intent.succeeded", "payment_intent.payment_failed"),
    });
    expectError(tampered, 400, "Webhook signature does not match the payload");
    expectError(
      await signedWebhook(event, { secret: "not-the-secret" }),
      400,
      "Webhook signature does not match the payload",
    );
    const now = Math.floor(Date.now() / 1000);
    expectError(await signedWebhook(event, { timestamp: now - 301 }), 400, /300-second tolerance/);
    expectError(await signedWebhook(event, { timestamp: now + 301 }), 400, /300-second tolerance/);
    // Inside the tolerance is fine.
    const raw = JSON.stringify(event);
    for (const header of [
      undefined,
      "",
      "t=abc,v1=00",
      `v1=${"a".repeat(64)}`,
      `t=${now}`,
      `t=${now},v1=zz`,
    ]) {
      const result = await call("/api/v1/webhooks/payprovider", {
        rawBody: raw,
        headers: header === undefined ? {} : { "payprovider-signature": header },
      });
      expectError(result, 400, /missing or malformed/);
    }
    expect(await storedEvents(event.id)).toBe(0);
    expect((await api(`/api/v1/invoices/${invoice.id}`)).body.status).toBe("OPEN");
    const late = await signedWebhook(event, { timestamp: now - 299 });
    expect(late.status).toBe(200);
  });

  it("a replayed event id is answered but processed once", async () => {
    const { api, invoice, attempt } = await openInvoice();
    const event = paymentIntentEvent("payment_intent.succeeded", attempt.providerPaymentId);
    expect((await signedWebhook(event)).body.duplicate).toBe(false);
    await waitForWebhook(event.id);
    const replays = await Promise.all([1, 2, 3].map(() => signedWebhook(event)));
    for (const replay of replays) {
      expect(replay.status).toBe(200);
      expect(replay.body).toEqual({ received: true, eventId: event.id, duplicate: true });
    }
    expect(await storedEvents(event.id)).toBe(1);
    const payments = (await api("/api/v1/billing/ledger?type=PAYMENT")).body;
    expect(payments.meta.total).toBe(1);
    expect((await api("/api/v1/billing/balance")).body.balance).toBe(0);
    expect((await api(`/api/v1/invoices/${invoice.id}`)).body.status).toBe("PAID");
  });

  it("a valid signature over something that is not an event is a 400", async () => {
    const raw = "not json";
    const header = await signWebhook(WEBHOOK_SECRET, raw, Math.floor(Date.now() / 1000));
    expectError(
      await call("/api/v1/webhooks/payprovider", {
        rawBody: raw,
        headers: { "payprovider-signature": header },
      }),
      400,
      "Webhook body is not JSON",
    );
    expectError(
      await signedWebhook({ type: "payment_intent.succeeded" }),
      400,
      "Webhook event needs a string id and type",
    );
  });

  it("unknown event types are recorded as SKIPPED", async () => {
    const event = {
      id: `evt_${crypto.randomUUID()}`,
      type: "customer.created",
      data: { object: { id: "cus_1" } },
    };
    expect((await signedWebhook(event)).status).toBe(200);
    const row = await waitForWebhook(event.id);
    expect(row.status).toBe("SKIPPED");
    expect(row.outcome).toMatch(/customer\.created is not handled/);
  });
});

describe("handlers check the current state", () => {
  it("a payment for a VOID invoice becomes a CREDIT with the provider reference, once", async () => {
    const { api, invoice, attempt } = await openInvoice();
    await api(`/api/v1/invoices/${invoice.id}/void`, { method: "POST" });
    const event = paymentIntentEvent("payment_intent.succeeded", attempt.providerPaymentId, {
      amount: invoice.total,
    });
    await signedWebhook(event);
    const row = await waitForWebhook(event.id);
    expect(row.status).toBe("PROCESSED");
    expect(row.outcome).toMatch(/VOID; 2900 credited/);
    expect((await api(`/api/v1/invoices/${invoice.id}`)).body.status).toBe("VOID");
    expect((await api("/api/v1/billing/ledger?type=PAYMENT")).body.meta.total).toBe(0);
    const credits = (await api("/api/v1/billing/ledger?type=CREDIT")).body.data;
    // The void's reversal of the CHARGE, and the money received.
    expect(credits).toHaveLength(2);
    expect(credits).toContainEqual(
      expect.objectContaining({ credit: 2900, externalReference: attempt.providerPaymentId }),
    );
    expect((await api(`/api/v1/billing/payments/${attempt.id}`)).body.status).toBe("SUCCEEDED");
    // The tenant is owed 2,900: a negative balance (its credit).
    expect((await api("/api/v1/billing/balance")).body.balance).toBe(-2900);
    const replay = { ...event, id: `evt_${crypto.randomUUID()}` };
    await signedWebhook(replay);
    expect((await waitForWebhook(replay.id)).outcome).toMatch(/already credited/);
    expect((await api("/api/v1/billing/ledger?type=CREDIT")).body.meta.total).toBe(2);
  });

  it("failures schedule a retry; the last one makes the subscription PAST_DUE, unless it was replaced", async () => {
    const { owner, api, invoice, attempt } = await openInvoice();
    const failed = paymentIntentEvent("payment_intent.payment_failed", attempt.providerPaymentId, {
      last_payment_error: { message: "Insufficient funds" },
    });
    await signedWebhook(failed);
    await waitForWebhook(failed.id);
    const detail = (await api(`/api/v1/billing/payments/${attempt.id}`)).body;
    expect(detail).toMatchObject({ status: "FAILED", failureReason: "Insufficient funds" });
    expect(Date.parse(detail.nextRetryAt) - Date.parse(detail.updatedAt)).toBe(86_400_000);
    // A second failure report for the same attempt changes nothing.
    const again = { ...failed, id: `evt_${crypto.randomUUID()}` };
    await signedWebhook(again);
    expect((await waitForWebhook(again.id)).outcome).toMatch(/already FAILED/);

    // The plan is changed, then attempt 4 of the old invoice fails: nothing happens to the new subscription.
    await subscribe(owner, other.planId, other.priceId);
    await env.DB.prepare(
      "INSERT INTO payment_attempts (id, invoice_id, tenant_id, provider, provider_payment_id, status, amount, currency, attempt_number) VALUES (?, ?, ?, 'development', ?, 'PENDING', ?, 'usd', 4)",
    )
      .bind(
        crypto.randomUUID(),
        invoice.id,
        owner.tenant.id,
        `dev_pi_last_${crypto.randomUUID()}`,
        invoice.total,
      )
      .run();
    const lastAttempt = (await api("/api/v1/billing/payments?status=PENDING")).body.data[0];
    const lastFailure = paymentIntentEvent(
      "payment_intent.payment_failed",
      lastAttempt.providerPaymentId,
    );
    await signedWebhook(lastFailure);
    const row = await waitForWebhook(lastFailure.id);
    expect(row.outcome).toMatch(/no longer ACTIVE/);
    expect(
      (await asTenant(owner, owner.tenant.id)("/api/v1/subscriptions/active")).body.status,
    ).toBe("ACTIVE");
  });

  it("charge.refunded writes a REFUND once, up to what was paid", async () => {
    const { api, invoice, attempt } = await openInvoice();
    const paid = paymentIntentEvent("payment_intent.succeeded", attempt.providerPaymentId);
    await signedWebhook(paid);
    await waitForWebhook(paid.id);
    const refund = (cumulative: number) => ({
      id: `evt_${crypto.randomUUID()}`,
      type: "charge.refunded",
      data: {
        object: {
          id: "ch_1",
          object: "charge",
          payment_intent: attempt.providerPaymentId,
          amount_refunded: cumulative,
        },
      },
    });
    // Sent one after another, processed in order from the queue.
    const events = [1000, 1000, 2900, 99_999].map(refund);
    for (const event of events) expect((await signedWebhook(event)).status).toBe(200);
    for (const event of events) await waitForWebhook(event.id);
    const refunds = (await api("/api/v1/billing/ledger?type=REFUND")).body.data;
    expect(refunds.map((entry: { debit: number }) => entry.debit).sort()).toEqual([1000, 1900]);
    expect((await api("/api/v1/billing/balance")).body).toMatchObject({
      balance: invoice.total,
      totalCharged: 2 * invoice.total,
      totalPaid: invoice.total,
    });
  });
});

describe("POST /webhooks/fake", () => {
  it("runs the same processing path without a signature", async () => {
    const { api, invoice, attempt } = await openInvoice();
    const result = await call("/api/v1/webhooks/fake", {
      body: {
        type: "payment.succeeded",
        providerPaymentId: attempt.providerPaymentId,
        amount: invoice.total,
        currency: "USD",
      },
    });
    expect(result.status).toBe(200);
    await waitForWebhook(result.body.eventId, "fake");
    expect((await api(`/api/v1/invoices/${invoice.id}`)).body.status).toBe("PAID");
    expectError(await call("/api/v1/webhooks/fake", { body: { type: "payment.succeeded" } }), 400);
    expectError(
      await call("/api/v1/webhooks/fake", {
        body: { type: "payment.succeeded", providerPaymentId: "x", amount: 1.5, currency: "usd" },
      }),
      400,
    );
  });

  it("is a 404 outside development and test", async () => {
    const app = createApp();
    for (const environment of ["production", "staging", ""]) {
      const response = await app.fetch(
        request("/api/v1/webhooks/fake", {
          body: { type: "payment.succeeded", providerPaymentId: "x", amount: 1, currency: "usd" },
        }),
        { ...env, ENVIRONMENT: environment },
      );
      expect(response.status).toBe(404);
    }
  });
});

describe("the webhook queue", () => {
  it("a message that keeps failing is retried, then dead-lettered and marked FAILED", async () => {
    const event = {
      id: `evt_${crypto.randomUUID()}`,
      type: "payment_intent.succeeded",
      data: { object: { id: "pi_x" } },
    };
    const id = crypto.randomUUID();
    await env.DB.prepare(
      "INSERT INTO webhook_events (id, provider, provider_event_id, event_type, status, raw_payload) VALUES (?, 'payprovider', ?, ?, 'PENDING', ?)",
    )
      .bind(id, event.id, event.type, JSON.stringify(event))
      .run();
    const calls: string[] = [];
    const message = (queue: string) => ({
      queue,
      messages: [
        {
          id: "m1",
          timestamp: new Date(),
          attempts: 2,
          body: { webhookEventId: id },
          ack: () => calls.push(`${queue}:ack`),
          retry: (options?: { delaySeconds?: number }) =>
            calls.push(`${queue}:retry:${options?.delaySeconds}`),
        },
      ],
      retryAll: () => undefined,
      ackAll: () => undefined,
    });
    const broken = {
      name: "broken",
      createCustomer: () => Promise.reject(new Error("unused")),
      createPayment: () => Promise.reject(new Error("unused")),
      retrievePayment: () => Promise.reject(new Error("unused")),
      createRefund: () => Promise.reject(new Error("unused")),
    };
    // Processing throws (the database refuses): the message is retried with backoff.
    const failingDb = new Proxy(env, {
      get: (target, key) =>
        key === "DB"
          ? new Proxy(target.DB, {
              get: (db, name) =>
                name === "batch"
                  ? () => Promise.reject(new Error("D1 unavailable"))
                  : (Reflect.get(db, name).bind?.(db) ?? Reflect.get(db, name)),
            })
          : Reflect.get(target, key),
    });
    const { owner, attempt } = await openInvoice();
    void owner;
    await env.DB.prepare("UPDATE webhook_events SET raw_payload = ? WHERE id = ?")
      .bind(JSON.stringify({ ...event, data: { object: { id: attempt.providerPaymentId } } }), id)
      .run();
    await consumeWebhookBatch(
      message("payprovider-webhooks") as never,
      failingDb as Env,
      new PaymentService(database(failingDb.DB), failingDb.DB, broken),
    );
    expect(calls).toEqual(["payprovider-webhooks:retry:10"]);
    const failed = await env.DB.prepare(
      "SELECT status, processing_error FROM webhook_events WHERE id = ?",
    )
      .bind(id)
      .first<{ status: string; processing_error: string }>();
    expect(failed?.status).toBe("FAILED");
    expect(failed?.processing_error).toMatch(/D1 unavailable/);
    // After the last retry the runtime moves it to the dead-letter queue, whose consumer records it.
    await consumeWebhookBatch(
      message("payprovider-webhooks-dlq") as never,
      env,
      new PaymentService(database(env.DB), env.DB, broken),
    );
    expect(calls.at(-1)).toBe("payprovider-webhooks-dlq:ack");
    const dead = await env.DB.prepare(
      "SELECT status, processing_error FROM webhook_events WHERE id = ?",
    )
      .bind(id)
      .first<{ status: string; processing_error: string }>();
    expect(dead).toMatchObject({
      status: "FAILED",
      processing_error: expect.stringMatching(/dead-lettered/),
    });
    // A redelivery of a FAILED event by the provider queues it again, and it is processed.
    const redelivered = await signedWebhook({
      ...event,
      data: { object: { id: attempt.providerPaymentId } },
    });
    expect(redelivered.body.duplicate).toBe(true);
    expect((await waitForWebhook(event.id)).status).toBe("PROCESSED");
  });
});
