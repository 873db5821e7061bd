import { createHmac } from "node:crypto";
import { describe, expect, it } from "vitest";
import { devAdminCredentials, devVars, send } from "./lib/billing-api.ts";
import { eventually } from "./lib/eventually.ts";

// The money side against the running stack (wrangler dev, real D1, the real
// webhook queue and its consumer): the demo tenant's invoice is generated,
// finalized (CHARGE, first payment attempt), paid through the fake webhook
// (processed from the queue), and the ledger and balance follow. A signed
// provider webhook with a tampered body is refused.

describe("billing money flow against the running stack", () => {
  it("generates, finalizes and pays the demo tenant's invoice; the ledger and balance follow", async () => {
    const login = await send("/auth/login", { body: devAdminCredentials() });
    expect(login.status).toBe(200);
    const token = login.body.accessToken as string;
    const tenants = await send("/tenants?limit=100", { token });
    const acme = tenants.body.data.find((tenant: { slug: string }) => tenant.slug === "acme");
    expect(acme, JSON.stringify(tenants.body)).toBeDefined();
    const as = (path: string, options: Parameters<typeof send>[1] = {}) =>
      send(path, { token, tenant: acme.id, ...options });

    const subscription = (await as("/subscriptions/active")).body;
    expect(subscription.plan.slug).toBe("pro");
    const before = (await as("/billing/balance")).body;
    expect(before).toMatchObject({ currency: "usd", unit: "cents" });

    // The current period's invoice (another run on the same state may have made it already).
    const generated = await as("/invoices/generate", { method: "POST" });
    let invoiceId: string;
    if (generated.status === 201) {
      expect(generated.body).toMatchObject({
        status: "DRAFT",
        invoiceNumber: null,
        currency: "usd",
      });
      expect(generated.body.lineItems[0]).toMatchObject({ kind: "BASE", amount: 2900 });
      invoiceId = generated.body.id;
    } else {
      expect(generated.status, JSON.stringify(generated.body)).toBe(409);
      invoiceId = (await as("/invoices?status=DRAFT")).body.data[0]?.id;
      expect(invoiceId, "a DRAFT for the current period").toBeDefined();
    }
    expect((await as("/invoices/generate", { method: "POST" })).status).toBe(409);

    const finalized = await as(`/invoices/${invoiceId}/finalize`, { method: "POST" });
    expect(finalized.status, JSON.stringify(finalized.body)).toBe(201);
    expect(finalized.body.status).toBe("OPEN");
    expect(finalized.body.invoiceNumber).toMatch(/^INV-\d{4}-\d{6}$/);
    const total = finalized.body.total as number;
    expect(total).toBeGreaterThanOrEqual(2900);
    expect((await as("/billing/balance")).body.balance).toBe(before.balance + total);

    const attempt = (await as("/billing/payments")).body.data.find(
      (payment: { invoiceId: string }) => payment.invoiceId === invoiceId,
    );
    expect(attempt).toMatchObject({ status: "PENDING", attemptNumber: 1, amount: total });

    // A provider webhook whose body was changed after signing: refused, nothing stored.
    const event = JSON.stringify({
      id: `evt_e2e_${Date.now()}`,
      type: "payment_intent.succeeded",
      data: { object: { id: attempt.providerPaymentId, amount: total, currency: "usd" } },
    });
    const t = Math.floor(Date.now() / 1000);
    const v1 = createHmac("sha256", devVars().PAYPROVIDER_WEBHOOK_SECRET ?? "")
      .update(`${t}.${event}`)
      .digest("hex");
    const tampered = await send("/webhooks/payprovider", {
      raw: event.replace(String(total), String(total + 1)),
      headers: { "payprovider-signature": `t=${t},v1=${v1}` },
    });
    expect(tampered.status).toBe(400);
    expect(tampered.body.message).toBe("Webhook signature does not match the payload");
    expect((await as(`/invoices/${invoiceId}`)).body.status).toBe("OPEN");

    // Paid through the fake webhook, processed from the queue.
    const paid = await send("/webhooks/fake", {
      body: {
        type: "payment.succeeded",
        providerPaymentId: attempt.providerPaymentId,
        amount: total,
        currency: "usd",
      },
    });
    expect(paid.status, JSON.stringify(paid.body)).toBe(200);
    expect(paid.body).toMatchObject({ received: true, duplicate: false });
    const settled = await eventually(async () => {
      const invoice = (await as(`/invoices/${invoiceId}`)).body;
      return invoice.status === "PAID" ? invoice : undefined;
    }, "the invoice to be PAID");
    expect(settled.paidAt).not.toBeNull();

    const ledger = (await as("/billing/ledger?limit=100")).body.data.filter(
      (entry: { invoiceId: string }) => entry.invoiceId === invoiceId,
    );
    expect(ledger.map((entry: { type: string }) => entry.type).sort()).toEqual([
      "CHARGE",
      "PAYMENT",
    ]);
    expect(ledger.find((entry: { type: string }) => entry.type === "PAYMENT")).toMatchObject({
      credit: total,
      externalReference: attempt.providerPaymentId,
    });
    expect((await as("/billing/balance")).body.balance).toBe(before.balance);
    const payment = (await as(`/billing/payments/${attempt.id}`)).body;
    expect(payment.status).toBe("SUCCEEDED");
  });
});
