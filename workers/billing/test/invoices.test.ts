import { env } from "cloudflare:workers";
import { addMonthsClamped, MS_PER_DAY } from "@edge-platform/shared/billing/billing-period";
import { beforeAll, describe, expect, it } from "vitest";
import {
  asTenant,
  buildMoneyPlan,
  consumeAt,
  type MoneyPlan,
  runCycle,
  steerableProvider,
} from "./billing-helpers.ts";
import { platformAdmin, subscribe } from "./catalog-helpers.ts";
import { type Account, addMember, call, expectError, register } from "./helpers.ts";

let admin: Account;
let plan: MoneyPlan;
let trialPlan: MoneyPlan;

beforeAll(async () => {
  admin = await platformAdmin();
  plan = await buildMoneyPlan(admin, 2900);
  trialPlan = await buildMoneyPlan(admin, 2900, { trialDays: 14 });
});

/**
 * A tenant on the plan. `api` is a platform administrator acting on the
 * tenant (settlement is the platform's); `own` is the tenant's OWNER.
 */
async function subscribedOwner() {
  const owner = await register();
  const subscription = await subscribe(owner, plan.planId, plan.priceId);
  return {
    owner,
    subscription,
    api: asTenant(admin, owner.tenant.id),
    own: asTenant(owner, owner.tenant.id),
  };
}

async function generated(api: ReturnType<typeof asTenant>) {
  const result = await api("/api/v1/invoices/generate", { method: "POST" });
  expect(result.status, JSON.stringify(result.body)).toBe(201);
  return result.body;
}

describe("POST /invoices/generate", () => {
  it("creates a DRAFT for the current period from the usage so far; a second one is a 409", async () => {
    const { owner, subscription, api } = await subscribedOwner();
    await consumeAt(owner.tenant.id, plan.keys.calls, 1200, new Date());
    const invoice = await generated(api);
    expect(invoice).toMatchObject({
      status: "DRAFT",
      kind: "PERIOD",
      invoiceNumber: null,
      subscriptionId: subscription.id,
      periodStart: subscription.currentPeriodStart,
      periodEnd: subscription.currentPeriodEnd,
      // 2,900 + 200 calls x 15 micro-cents = 3,000 micro-cents = 30 cents
      total: 2930,
    });
    expect(invoice.lineItems.map((line: { amount: number }) => line.amount)).toEqual([2900, 30]);
    expectError(await api("/api/v1/invoices/generate", { method: "POST" }), 409, /already exists/);
    const lines = await api(`/api/v1/invoices/${invoice.id}/line-items`);
    expect(lines.body.data).toHaveLength(2);
    expect(lines.body.data[0]).toMatchObject({ kind: "BASE", sortOrder: 0, invoiceId: invoice.id });
  });

  it("404 without a subscription; 409 during a trial (trials are not billed)", async () => {
    const lonely = await register();
    expectError(
      await asTenant(admin, lonely.tenant.id)("/api/v1/invoices/generate", { method: "POST" }),
      404,
      "No active subscription found for this tenant",
    );
    const trialing = await register();
    await subscribe(trialing, trialPlan.planId, trialPlan.priceId);
    expectError(
      await asTenant(admin, trialing.tenant.id)("/api/v1/invoices/generate", { method: "POST" }),
      409,
      /trial/,
    );
  });

  it("the period close rebuilds a manual DRAFT with the whole period's usage, then finalizes it", async () => {
    const { owner, subscription, api } = await subscribedOwner();
    const draft = await generated(api);
    expect(draft.total).toBe(2900);
    const end = new Date(subscription.currentPeriodEnd);
    await consumeAt(owner.tenant.id, plan.keys.seats, 7, new Date(end.getTime() - MS_PER_DAY));
    const { provider } = steerableProvider();
    await runCycle(new Date(end.getTime() + 60_000), provider, [owner.tenant.id]);
    const closed = (await api(`/api/v1/invoices/${draft.id}`)).body;
    // 2 seats beyond the limit of 5, at $5.00
    expect(closed).toMatchObject({ status: "OPEN", total: 3900 });
    expect((await api("/api/v1/invoices")).body.meta.total).toBe(1);
  });
});

describe("invoice lifecycle", () => {
  it("finalize numbers the invoice and writes one CHARGE; a second finalize is a 400", async () => {
    const { api } = await subscribedOwner();
    const draft = await generated(api);
    const finalized = await api(`/api/v1/invoices/${draft.id}/finalize`, { method: "POST" });
    expect(finalized.status, JSON.stringify(finalized.body)).toBe(201);
    expect(finalized.body).toMatchObject({ status: "OPEN", total: 2900 });
    expect(finalized.body.invoiceNumber).toMatch(/^INV-\d{4}-\d{6}$/);
    expect(finalized.body.finalizedAt).not.toBeNull();
    expect(finalized.body.dueDate).not.toBeNull();
    expectError(
      await api(`/api/v1/invoices/${draft.id}/finalize`, { method: "POST" }),
      400,
      "Cannot transition invoice from OPEN to OPEN",
    );
    const ledger = (await api("/api/v1/billing/ledger")).body;
    expect(ledger.data).toEqual([
      expect.objectContaining({
        type: "CHARGE",
        invoiceId: draft.id,
        debit: 2900,
        credit: 0,
        currency: "usd",
        description: `Invoice ${finalized.body.invoiceNumber} finalized`,
      }),
    ]);
    // The first payment attempt was made (the development provider leaves it PENDING).
    const payments = (await api("/api/v1/billing/payments")).body;
    expect(payments.data).toEqual([
      expect.objectContaining({ invoiceId: draft.id, status: "PENDING", attemptNumber: 1 }),
    ]);
  });

  it("void of an OPEN invoice writes a CREDIT; mark-paid writes a PAYMENT; finished invoices refuse transitions", async () => {
    const { owner, subscription, api } = await subscribedOwner();
    const first = await generated(api);
    await api(`/api/v1/invoices/${first.id}/finalize`, { method: "POST" });
    const voided = await api(`/api/v1/invoices/${first.id}/void`, { method: "POST" });
    expect(voided.status).toBe(201);
    expect(voided.body).toMatchObject({ status: "VOID" });
    expect(voided.body.voidedAt).not.toBeNull();
    for (const action of ["finalize", "void", "mark-paid"]) {
      expectError(
        await api(`/api/v1/invoices/${first.id}/${action}`, { method: "POST" }),
        400,
        /^Cannot transition invoice from VOID/,
      );
    }
    expect((await api("/api/v1/billing/balance")).body.balance).toBe(0);

    // The voided period is not billed again when it closes (voiding forgave it); the
    // next period's invoice is paid by bank transfer.
    const { provider } = steerableProvider();
    await runCycle(new Date(Date.parse(subscription.currentPeriodEnd) + 60_000), provider, [
      owner.tenant.id,
    ]);
    expect((await api("/api/v1/invoices")).body.meta.total).toBe(1);
    const secondEnd = addMonthsClamped(new Date(subscription.startedAt), 2);
    await runCycle(new Date(secondEnd.getTime() + 60_000), provider, [owner.tenant.id]);
    const second = (await api("/api/v1/invoices?status=OPEN")).body.data[0];
    expect(second).toBeDefined();
    const paid = await api(`/api/v1/invoices/${second.id}/mark-paid`, { method: "POST" });
    expect(paid.status).toBe(201);
    expect(paid.body.status).toBe("PAID");
    expectError(
      await api(`/api/v1/invoices/${second.id}/mark-paid`, { method: "POST" }),
      400,
      "Cannot transition invoice from PAID to PAID",
    );
    expectError(
      await api(`/api/v1/invoices/${second.id}/void`, { method: "POST" }),
      400,
      "Cannot transition invoice from PAID to VOID",
    );
    const types = (await api("/api/v1/billing/ledger")).body.data.map(
      (entry: { type: string }) => entry.type,
    );
    // (The cycle wrote its CHARGE at a simulated future instant, so compare as a set.)
    expect([...types].sort()).toEqual(["CHARGE", "CHARGE", "CREDIT", "PAYMENT"]);
    expect((await api("/api/v1/billing/balance")).body).toMatchObject({
      balance: 0,
      totalCharged: 2 * 2900,
      totalPaid: 2 * 2900,
    });
    // A DRAFT voids without any ledger entry.
    const draft = await generated(api);
    await api(`/api/v1/invoices/${draft.id}/void`, { method: "POST" });
    expect((await api("/api/v1/billing/ledger")).body.meta.total).toBe(4);
  });

  it("finalizes concurrently without gaps or double charges", async () => {
    const owners = await Promise.all([1, 2, 3, 4, 5].map(() => subscribedOwner()));
    const drafts = await Promise.all(owners.map(({ api }) => generated(api)));
    // Every invoice finalized three times at once.
    const results = await Promise.all(
      owners.flatMap(({ api }, index) =>
        [1, 2, 3].map(() =>
          api(`/api/v1/invoices/${drafts[index].id}/finalize`, { method: "POST" }),
        ),
      ),
    );
    expect(results.filter((result) => result.status === 201)).toHaveLength(5);
    expect(results.filter((result) => result.status === 400)).toHaveLength(10);
    const numbers = await Promise.all(
      owners.map(
        async ({ api }, index) =>
          (await api(`/api/v1/invoices/${drafts[index].id}`)).body.invoiceNumber as string,
      ),
    );
    const sequence = numbers.map((number) => Number(number.slice(-6))).sort((a, b) => a - b);
    for (let index = 1; index < sequence.length; index++) {
      expect(sequence[index]).toBe((sequence[index - 1] as number) + 1);
    }
    const charges = await env.DB.prepare(
      `SELECT invoice_id, count(*) AS n FROM ledger_entries WHERE type = 'CHARGE' AND invoice_id IN (${drafts.map(() => "?").join(",")}) GROUP BY invoice_id`,
    )
      .bind(...drafts.map((draft) => draft.id))
      .all<{ n: number }>();
    expect(charges.results.map((row) => row.n)).toEqual([1, 1, 1, 1, 1]);
  });

  it("the database refuses a second CHARGE and any edit of a ledger entry", async () => {
    const { api, owner } = await subscribedOwner();
    const draft = await generated(api);
    await api(`/api/v1/invoices/${draft.id}/finalize`, { method: "POST" });
    await expect(
      env.DB.prepare(
        "INSERT INTO ledger_entries (id, tenant_id, invoice_id, type, description, debit, credit, currency) VALUES (?, ?, ?, 'CHARGE', 'again', 1, 0, 'usd')",
      )
        .bind(crypto.randomUUID(), owner.tenant.id, draft.id)
        .run(),
    ).rejects.toThrow(/UNIQUE/);
    await expect(
      env.DB.prepare("UPDATE ledger_entries SET debit = 0 WHERE invoice_id = ?")
        .bind(draft.id)
        .run(),
    ).rejects.toThrow(/append-only/);
    await expect(
      env.DB.prepare("DELETE FROM ledger_entries WHERE invoice_id = ?").bind(draft.id).run(),
    ).rejects.toThrow(/append-only/);
  });
});

describe("access and validation", () => {
  it("OWNER, ADMIN and BILLING read money; no tenant role settles (403); DEVELOPER reads nothing; a platform admin acts on any tenant; other tenants get 404", async () => {
    const { owner, api, own } = await subscribedOwner();
    const draft = await generated(api);
    const billing = await addMember(owner, "BILLING");
    const developer = await addMember(owner, "DEVELOPER");
    const adminMember = await addMember(owner, "ADMIN");
    const asBilling = asTenant(billing, owner.tenant.id);
    expect((await asBilling("/api/v1/invoices")).status).toBe(200);
    expect((await asBilling(`/api/v1/invoices/${draft.id}`)).status).toBe(200);
    expect((await asBilling("/api/v1/billing/ledger")).status).toBe(200);
    const asDeveloper = asTenant(developer, owner.tenant.id);
    expectError(await asDeveloper("/api/v1/invoices"), 403);
    expectError(await asDeveloper("/api/v1/billing/balance"), 403);
    expectError(await asDeveloper("/api/v1/billing/payments"), 403);
    // Tenants are the customers: none of their roles generates, finalizes, voids or marks paid.
    const asAdmin = asTenant(adminMember, owner.tenant.id);
    for (const caller of [own, asAdmin, asBilling, asDeveloper]) {
      for (const path of [
        "/api/v1/invoices/generate",
        `/api/v1/invoices/${draft.id}/finalize`,
        `/api/v1/invoices/${draft.id}/void`,
        `/api/v1/invoices/${draft.id}/mark-paid`,
      ]) {
        expectError(
          await caller(path, { method: "POST" }),
          403,
          "Only platform administrators and the billing cycle generate, finalize, void or mark invoices paid",
        );
      }
    }
    expect((await own(`/api/v1/invoices/${draft.id}`)).body.status).toBe("DRAFT");
    // The platform administrator (not a member) settles through the same routes and shapes.
    const finalized = await api(`/api/v1/invoices/${draft.id}/finalize`, { method: "POST" });
    expect(finalized.status).toBe(201);
    expect((await own(`/api/v1/invoices/${draft.id}`)).body.status).toBe("OPEN");
    expect((await api("/api/v1/billing/balance")).body.balance).toBe(2900);
    expect((await api("/api/v1/billing/payments")).body.data).toHaveLength(1);
    expectError(await call("/api/v1/invoices"), 401);
    expectError(
      await asTenant(admin, crypto.randomUUID())("/api/v1/invoices"),
      404,
      /^Tenant with ID/,
    );

    const stranger = await subscribedOwner();
    expectError(
      await stranger.own(`/api/v1/invoices/${draft.id}`),
      404,
      "Invoice not found or does not belong to this tenant",
    );
    expectError(await stranger.own(`/api/v1/invoices/${draft.id}/line-items`), 404);
    expectError(await stranger.api(`/api/v1/invoices/${draft.id}/void`, { method: "POST" }), 404);
  });

  it("rejects bad ids and filters with 400", async () => {
    const { api } = await subscribedOwner();
    expectError(await api("/api/v1/invoices/not-a-uuid"), 400);
    expectError(await api("/api/v1/invoices?status=FINALIZED"), 400);
    expectError(await api("/api/v1/invoices?limit=101"), 400);
    expectError(await api("/api/v1/invoices?page=0"), 400);
    expectError(await api("/api/v1/billing/ledger?type=BOGUS"), 400);
    expectError(await api("/api/v1/billing/payments?status=DONE"), 400);
    expectError(await api("/api/v1/billing/balance?currency=dollars"), 400);
    expectError(
      await api(`/api/v1/billing/payments/${crypto.randomUUID()}`),
      404,
      "Payment attempt not found or does not belong to this tenant",
    );
    expectError(
      await api(`/api/v1/invoices/${crypto.randomUUID()}/finalize`, { method: "POST" }),
      404,
    );
  });

  it("limits manual generation to 5 a minute per tenant", async () => {
    const { api } = await subscribedOwner();
    await generated(api);
    const statuses: number[] = [];
    for (let index = 0; index < 5; index++) {
      statuses.push((await api("/api/v1/invoices/generate", { method: "POST" })).status);
    }
    expect(statuses).toEqual([409, 409, 409, 409, 429]);
  });
});

describe("trials and grace", () => {
  it("a trial is never invoiced; the first billable period is", async () => {
    const owner = await register();
    const subscription = await subscribe(owner, trialPlan.planId, trialPlan.priceId);
    const trialEnd = new Date(subscription.trialEndsAt);
    // Usage during the trial, far beyond every limit: not billed.
    await consumeAt(
      owner.tenant.id,
      trialPlan.keys.seats,
      50,
      new Date(Date.parse(subscription.startedAt) + MS_PER_DAY),
    );
    const { provider } = steerableProvider("succeeded");
    const report = await runCycle(new Date(trialEnd.getTime() + 60_000), provider, [
      owner.tenant.id,
    ]);
    expect(report.activated).toBe(1);
    const api = asTenant(owner, owner.tenant.id);
    expect((await api("/api/v1/invoices")).body.meta.total).toBe(0);
    const active = (await api("/api/v1/subscriptions/active")).body;
    expect(active).toMatchObject({ status: "ACTIVE", currentPeriodStart: trialEnd.toISOString() });
    const periodEnd = addMonthsClamped(trialEnd, 1);
    await runCycle(new Date(periodEnd.getTime() + 60_000), provider, [owner.tenant.id]);
    const invoices = (await api("/api/v1/invoices")).body.data;
    expect(invoices).toHaveLength(1);
    expect(invoices[0]).toMatchObject({
      periodStart: trialEnd.toISOString(),
      total: 2900,
      status: "PAID",
    });
  });

  it("after the grace period an unpaid invoice becomes UNCOLLECTIBLE and the PAST_DUE subscription CANCELLED", async () => {
    const { owner, subscription, api, own } = await subscribedOwner();
    const { provider } = steerableProvider("failed");
    let at = new Date(Date.parse(subscription.currentPeriodEnd) + 60_000);
    await runCycle(at, provider, [owner.tenant.id]);
    for (const days of [1, 3, 5]) {
      at = new Date(at.getTime() + days * MS_PER_DAY);
      await runCycle(at, provider, [owner.tenant.id]);
    }
    expect((await own("/api/v1/subscriptions/active")).body.status).toBe("PAST_DUE");
    await runCycle(new Date(at.getTime() + 7 * MS_PER_DAY - 60_000), provider, [owner.tenant.id]);
    expect((await own("/api/v1/subscriptions/active")).body.status).toBe("PAST_DUE");
    await runCycle(new Date(at.getTime() + 7 * MS_PER_DAY), provider, [owner.tenant.id]);
    const row = await env.DB.prepare("SELECT status FROM subscriptions WHERE id = ?")
      .bind(subscription.id)
      .first<{ status: string }>();
    expect(row?.status).toBe("CANCELLED");
    const first = (await api("/api/v1/invoices?limit=100")).body.data.find(
      (invoice: { periodStart: string; kind: string }) =>
        invoice.kind === "PERIOD" && invoice.periodStart === subscription.currentPeriodStart,
    );
    expect(first.status).toBe("UNCOLLECTIBLE");
    // Still owed: the CHARGE stands.
    expect((await api("/api/v1/billing/balance")).body.balance).toBeGreaterThanOrEqual(2900);
    // A late payment still settles it.
    const paid = await api(`/api/v1/invoices/${first.id}/mark-paid`, { method: "POST" });
    expect(paid.body.status).toBe("PAID");
  });
});
