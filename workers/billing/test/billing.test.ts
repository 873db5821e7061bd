import { beforeAll, describe, expect, it } from "vitest";
import { asTenant } from "./billing-helpers.ts";
import { createPlan, createPrice, platformAdmin, subscribe } from "./catalog-helpers.ts";
import { type Account, register } from "./helpers.ts";

let admin: Account;

beforeAll(async () => {
  admin = await platformAdmin();
});

describe("GET /billing/ledger and /billing/balance", () => {
  it("pages newest first and keeps currencies apart", async () => {
    const plan = await createPlan(admin, { name: "Euro" });
    const price = await createPrice(admin, plan.id, {
      interval: "MONTHLY",
      amount: 1234,
      currency: "eur",
    });
    const owner = await register();
    await subscribe(owner, plan.id, price.id);
    // Settlement is the platform administrator's; the numbers read the same for the tenant.
    const api = asTenant(admin, owner.tenant.id);
    const draft = (await api("/api/v1/invoices/generate", { method: "POST" })).body;
    expect(draft.currency).toBe("eur");
    await api(`/api/v1/invoices/${draft.id}/finalize`, { method: "POST" });
    await api(`/api/v1/invoices/${draft.id}/mark-paid`, { method: "POST" });

    const page1 = (await api("/api/v1/billing/ledger?limit=1")).body;
    expect(page1.meta).toEqual({ total: 2, page: 1, limit: 1, totalPages: 2 });
    expect(page1.data[0]).toMatchObject({
      type: "PAYMENT",
      credit: 1234,
      debit: 0,
      currency: "eur",
    });
    const page2 = (await api("/api/v1/billing/ledger?limit=1&page=2")).body;
    expect(page2.data[0]).toMatchObject({ type: "CHARGE", debit: 1234 });
    expect((await api("/api/v1/billing/ledger?currency=USD")).body.meta.total).toBe(0);

    expect((await api("/api/v1/billing/balance?currency=EUR")).body).toMatchObject({
      currency: "eur",
      balance: 0,
      totalCharged: 1234,
      totalPaid: 1234,
      unit: "cents",
    });
    const usd = (await api("/api/v1/billing/balance")).body;
    expect(usd).toMatchObject({
      tenantId: owner.tenant.id,
      currency: "usd",
      balance: 0,
      totalCharged: 0,
    });
    expect(Date.parse(usd.asOf)).not.toBeNaN();

    const payments = (await api("/api/v1/billing/payments?status=PENDING")).body;
    expect(payments.data).toHaveLength(1);
    expect(payments.data[0]).toMatchObject({
      amount: 1234,
      currency: "eur",
      invoiceNumber: expect.stringMatching(/^INV-/),
    });
    expect(payments.data[0].providerResponse).toBeUndefined();
    const detail = (await api(`/api/v1/billing/payments/${payments.data[0].id}`)).body;
    expect(detail.providerResponse).toMatchObject({
      amount: 1234,
      currency: "eur",
      status: "pending",
    });
  });
});
