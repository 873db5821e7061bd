import { env } from "cloudflare:workers";
import { addMonthsClamped, MS_PER_DAY } from "@edge-platform/shared/billing/billing-period";
import { beforeAll, describe, expect, inject, it } from "vitest";
import { PayProviderPaymentProvider } from "../src/payments/providers/payprovider.ts";
import {
  asTenant,
  buildMoneyPlan,
  type MoneyPlan,
  moneySnapshot,
  runCycle,
} from "./billing-helpers.ts";
import { platformAdmin, subscribe } from "./catalog-helpers.ts";
import { type Account, register } from "./helpers.ts";
import { FAKE_PAYPROVIDER_API_KEY } from "./support/payprovider-key.ts";

// The Stripe-compatible adapter charging through a local HTTP server that
// speaks the provider's wire format (test/support/fake-payprovider.ts,
// started by the global setup): form-encoded requests, Idempotency-Key,
// customers, off-session PaymentIntents, 402 declines, 503 outages,
// retrieve. The billing cycle drives it as in production.

const MINUTE = 60_000;
let admin: Account;
let plan: MoneyPlan;

beforeAll(async () => {
  admin = await platformAdmin();
  plan = await buildMoneyPlan(admin, 2900);
});

const baseUrl = () => inject("payproviderUrl");
const provider = () =>
  new PayProviderPaymentProvider({ apiKey: FAKE_PAYPROVIDER_API_KEY, baseUrl: baseUrl() });

async function control(path: string, body?: unknown) {
  const response = await fetch(`${baseUrl()}/__control${path}`, {
    method: body === undefined ? "GET" : "POST",
    ...(body === undefined
      ? {}
      : { body: JSON.stringify(body), headers: { "content-type": "application/json" } }),
  });
  expect(response.status).toBe(200);
  return response.json() as Promise<
    // biome-ignore lint/suspicious/noExplicitAny: the fake's JSON, asserted field by field
    any
  >;
}

async function seenBy(tenantId: string) {
  return control(`/requests?tenantId=${tenantId}`);
}

async function attempts(tenantId: string) {
  const rows = await env.DB.prepare(
    "SELECT attempt_number, status, failure_reason, next_retry_at, provider_payment_id FROM payment_attempts WHERE tenant_id = ? ORDER BY attempt_number",
  )
    .bind(tenantId)
    .all<{
      attempt_number: number;
      status: string;
      failure_reason: string | null;
      next_retry_at: string | null;
      provider_payment_id: string | null;
    }>();
  return rows.results;
}

async function tenantOnPlan() {
  const owner = await register();
  const subscription = await subscribe(owner, plan.planId, plan.priceId);
  return { owner, subscription, tenantId: owner.tenant.id };
}

describe("the payprovider adapter over HTTP", () => {
  it("charges the tenant's provider customer (created once, stored) off-session with its default payment method", async () => {
    const { owner, subscription, tenantId } = await tenantOnPlan();
    const t0 = new Date(subscription.startedAt);
    await runCycle(new Date(addMonthsClamped(t0, 1).getTime() + MINUTE), provider(), [tenantId]);
    await runCycle(new Date(addMonthsClamped(t0, 2).getTime() + MINUTE), provider(), [tenantId]);

    const invoices = (await asTenant(owner, tenantId)("/api/v1/invoices")).body.data;
    expect(
      invoices.map((invoice: { status: string; total: number }) => [invoice.status, invoice.total]),
    ).toEqual([
      ["PAID", 2900],
      ["PAID", 2900],
    ]);
    const { requests, customers } = await seenBy(tenantId);
    // One customer, created with an idempotency key per tenant, stored and reused.
    expect(customers).toHaveLength(1);
    const customer = customers[0];
    const creates = requests.filter(
      (request: { method: string; path: string }) =>
        request.method === "POST" && request.path === "/v1/customers",
    );
    expect(creates).toHaveLength(1);
    expect(creates[0]).toMatchObject({
      idempotencyKey: `tenant-customer-${tenantId}`,
      authorization: `Bearer ${FAKE_PAYPROVIDER_API_KEY}`,
      contentType: "application/x-www-form-urlencoded",
      form: { "metadata[tenantId]": tenantId },
    });
    const stored = await env.DB.prepare(
      "SELECT provider, provider_customer_id FROM payment_customers WHERE tenant_id = ?",
    )
      .bind(tenantId)
      .all();
    expect(stored.results).toEqual([
      { provider: "payprovider", provider_customer_id: customer.id },
    ]);

    // Each charge: the customer's default payment method, confirmed off-session, idempotent on the attempt.
    const intents = requests.filter(
      (request: { method: string; path: string }) =>
        request.method === "POST" && request.path === "/v1/payment_intents",
    );
    expect(intents).toHaveLength(2);
    const ours = await attempts(tenantId);
    for (const [index, intent] of intents.entries()) {
      expect(intent.form).toMatchObject({
        amount: "2900",
        currency: "usd",
        customer: customer.id,
        payment_method: customer.invoice_settings.default_payment_method,
        confirm: "true",
        off_session: "true",
        "metadata[tenantId]": tenantId,
      });
      expect(intent.idempotencyKey).toBe(intent.form["metadata[attemptId]"]);
      expect(ours[index]).toMatchObject({ status: "SUCCEEDED" });
      expect(ours[index]?.provider_payment_id).toMatch(/^pi_/);
    }
  });

  it("a decline fails the attempt into dunning; an outage leaves it FAILED with a retry the next sweep finishes", async () => {
    const { owner, subscription, tenantId } = await tenantOnPlan();
    const end = Date.parse(subscription.currentPeriodEnd);
    await control("/behaviour", { tenantId, charge: "decline" });
    let at = new Date(end + MINUTE);
    await runCycle(at, provider(), [tenantId]);
    expect(await attempts(tenantId)).toEqual([
      expect.objectContaining({
        attempt_number: 1,
        status: "FAILED",
        failure_reason: "Your card was declined.",
        next_retry_at: new Date(at.getTime() + MS_PER_DAY).toISOString(),
      }),
    ]);

    // The provider is down when the retry is due: FAILED, retried 15 minutes later, not a dunning step.
    await control("/behaviour", { tenantId, charge: "unavailable" });
    at = new Date(at.getTime() + MS_PER_DAY);
    await runCycle(at, provider(), [tenantId]);
    const afterOutage = await attempts(tenantId);
    expect(afterOutage[1]).toMatchObject({
      attempt_number: 2,
      status: "FAILED",
      provider_payment_id: null,
      next_retry_at: new Date(at.getTime() + 15 * MINUTE).toISOString(),
    });
    expect(afterOutage[1]?.failure_reason).toMatch(/^provider_unavailable: .*503/);
    expect((await asTenant(owner, tenantId)("/api/v1/subscriptions/active")).body.status).toBe(
      "ACTIVE",
    );

    // The provider is back: the next sweep after the retry time charges and settles it.
    await control("/behaviour", { tenantId, charge: "succeed" });
    await runCycle(new Date(at.getTime() + 15 * MINUTE), provider(), [tenantId]);
    const settled = await attempts(tenantId);
    expect(settled[2]).toMatchObject({ attempt_number: 3, status: "SUCCEEDED" });
    const invoice = (await asTenant(owner, tenantId)("/api/v1/invoices")).body.data[0];
    expect(invoice).toMatchObject({ status: "PAID", total: 2900 });
  });

  it("an attempt PENDING past the bound is reconciled by retrieving the payment, and settled either way", async () => {
    const paid = await tenantOnPlan();
    const stuck = await tenantOnPlan();
    for (const { tenantId } of [paid, stuck]) {
      await control("/behaviour", { tenantId, charge: "process" });
    }
    const closeAt = (subscription: { currentPeriodEnd: string }) =>
      new Date(Date.parse(subscription.currentPeriodEnd) + MINUTE);
    await runCycle(closeAt(paid.subscription), provider(), [paid.tenantId]);
    await runCycle(closeAt(stuck.subscription), provider(), [stuck.tenantId]);
    const [pending] = await attempts(paid.tenantId);
    expect(pending).toMatchObject({ status: "PENDING" });
    // No webhook comes; the provider settles one of them.
    await control(`/intents/${pending?.provider_payment_id}`, { status: "succeeded" });

    // Before the bound (30 minutes here) nothing is asked.
    const options = { pendingReconcileMinutes: 30 };
    await runCycle(
      new Date(closeAt(paid.subscription).getTime() + 29 * MINUTE),
      provider(),
      [paid.tenantId],
      options,
    );
    expect((await attempts(paid.tenantId))[0]?.status).toBe("PENDING");

    await runCycle(
      new Date(closeAt(paid.subscription).getTime() + 31 * MINUTE),
      provider(),
      [paid.tenantId],
      options,
    );
    expect((await attempts(paid.tenantId))[0]?.status).toBe("SUCCEEDED");
    expect(
      (await asTenant(paid.owner, paid.tenantId)("/api/v1/invoices")).body.data[0].status,
    ).toBe("PAID");
    const retrieved = (await seenBy(paid.tenantId)).requests;
    expect(
      (await control("/requests")).requests.some(
        (request: { method: string; path: string }) =>
          request.method === "GET" &&
          request.path === `/v1/payment_intents/${pending?.provider_payment_id}`,
      ),
    ).toBe(true);
    expect(retrieved.length).toBeGreaterThan(0);

    // Still processing at the provider after the bound: FAILED, into dunning (retry in a day).
    const reconcileAt = new Date(closeAt(stuck.subscription).getTime() + 31 * MINUTE);
    await runCycle(reconcileAt, provider(), [stuck.tenantId], options);
    expect((await attempts(stuck.tenantId))[0]).toMatchObject({
      status: "FAILED",
      failure_reason: "still pending at the provider after 30 minutes",
      next_retry_at: new Date(reconcileAt.getTime() + MS_PER_DAY).toISOString(),
    });
  });

  it("an attempt whose provider call never happened (the process died after writing it) is made by the reconcile sweep, once", async () => {
    const { owner, tenantId } = await tenantOnPlan();
    const platform = asTenant(admin, tenantId);
    const draft = (await platform("/api/v1/invoices/generate", { method: "POST" })).body;
    await platform(`/api/v1/invoices/${draft.id}/finalize`, { method: "POST" });
    // As if the worker died between writing attempt 1 and calling the provider.
    const wroteAt = new Date(Date.now() - 2 * 60 * MINUTE).toISOString();
    await env.DB.prepare(
      "UPDATE payment_attempts SET provider = 'payprovider', provider_payment_id = NULL, status = 'PENDING', updated_at = ? WHERE invoice_id = ?",
    )
      .bind(wroteAt, draft.id)
      .run();
    const attemptId = (
      await env.DB.prepare("SELECT id FROM payment_attempts WHERE invoice_id = ?")
        .bind(draft.id)
        .first<{ id: string }>()
    )?.id;
    await runCycle(new Date(), provider(), [tenantId]);
    const intents = (await seenBy(tenantId)).requests.filter(
      (request: { method: string; path: string }) =>
        request.method === "POST" && request.path === "/v1/payment_intents",
    );
    expect(intents.map((intent: { idempotencyKey: string }) => intent.idempotencyKey)).toEqual([
      attemptId,
    ]);
    expect(await attempts(tenantId)).toEqual([
      expect.objectContaining({ attempt_number: 1, status: "SUCCEEDED" }),
    ]);
    expect((await asTenant(owner, tenantId)(`/api/v1/invoices/${draft.id}`)).body.status).toBe(
      "PAID",
    );
  });

  it("a customer without a default payment method is a decline, not an outage", async () => {
    const { subscription, tenantId } = await tenantOnPlan();
    // The customer exists already (created on a first attempt) but has no card on file.
    const created = await provider().createCustomer({
      tenantId,
      idempotencyKey: `tenant-customer-${tenantId}`,
      name: "x",
    });
    await control(`/customers/${created.providerCustomerId}`, { defaultPaymentMethod: null });
    await runCycle(new Date(Date.parse(subscription.currentPeriodEnd) + MINUTE), provider(), [
      tenantId,
    ]);
    expect((await attempts(tenantId))[0]).toMatchObject({
      status: "FAILED",
      failure_reason: "The customer has no default payment method",
    });
  });

  it("two overlapping billing cycles charge the provider once", async () => {
    const { subscription, tenantId } = await tenantOnPlan();
    const at = new Date(Date.parse(subscription.currentPeriodEnd) + MINUTE);
    await Promise.all([runCycle(at, provider(), [tenantId]), runCycle(at, provider(), [tenantId])]);
    const intents = (await seenBy(tenantId)).requests.filter(
      (request: { method: string; path: string }) =>
        request.method === "POST" && request.path === "/v1/payment_intents",
    );
    expect(intents).toHaveLength(1);
    const money = await moneySnapshot(tenantId);
    expect(money.invoices).toHaveLength(1);
    expect(money.ledger?.map((entry) => entry.type).sort()).toEqual(["CHARGE", "PAYMENT"]);
    expect(money.attempts).toHaveLength(1);
  });
});
