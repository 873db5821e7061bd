import { SignJWT } from "jose";
import { describe, expect, it } from "vitest";
import {
  createApiKey,
  createFeature,
  createPlanWithPrice,
  createTenant,
  devVars,
  grantEntitlement,
  loginDevAdmin,
  ok,
  registerTenantOwner,
  send,
  subscribe,
} from "./lib/billing-api.ts";
import { eventually } from "./lib/eventually.ts";

// The billing money rules against the running stack, as a client sees
// them: who may settle, trials from the catalog, usage that survives plan
// changes, pause and resume, void and reissue, money received that no
// invoice needs, and the small holes (exp, price PATCH bodies, unknown
// features). Amounts are cents; the figures are printed for the record.

const suffix = `${Date.now().toString(36)}${Math.random().toString(36).slice(2, 6)}`;
const figures: Record<string, unknown> = {};

let adminSession: Promise<string> | undefined;

/** The demo administrator, signed in once for the file (logins are limited per address and e-mail). */
function adminToken(): Promise<string> {
  adminSession ??= loginDevAdmin();
  return adminSession;
}

async function newTenant(label: string) {
  const body = await registerTenantOwner({
    email: `e2e-${label}-${suffix}@example.com`,
    password: "E2ePassw0rd",
    firstName: "Money",
    lastName: "Rules",
    tenantName: `Money ${label}`,
  });
  return { token: body.accessToken as string, tenantId: body.tenant.id as string };
}

let catalogs = 0;

/**
 * A tenant owned by the demo administrator (POST /tenants): sign-ups are
 * limited to 5 a minute per client address and the other suites sign up
 * too, so only the scenario that needs a plain customer registers one.
 */
async function adminTenant(admin: string, label: string) {
  const body = await createTenant({ token: admin }, `Money ${label} ${suffix}`);
  return { token: admin, tenantId: body.id as string };
}

/** Two plans granting the same features: HARD 100/month, NEVER 10, METERED 1,000 included at 15 micro-cents. */
async function catalog(admin: string, trialDays?: number) {
  const n = ++catalogs;
  const platform = { token: admin };
  const feature = (name: string, type: string) =>
    createFeature(platform, { name, lookupKey: `e2e_${name}_${n}_${suffix}`, type, unit: "unit" });
  const hard = await feature("hard", "QUOTA");
  const lifetime = await feature("lifetime", "QUOTA");
  const calls = await feature("calls", "METERED");
  const plan = async (name: string, amount: number) => {
    const created = await createPlanWithPrice(
      platform,
      { name, slug: `e2e-${name}-${suffix}` },
      { interval: "MONTHLY", amount, ...(trialDays ? { trialDays } : {}) },
    );
    const planId = created.plan.id as string;
    await grantEntitlement(platform, planId, hard.id, {
      limit: 100,
      limitBehavior: "HARD",
      resetPeriod: "MONTHLY",
    });
    await grantEntitlement(platform, planId, lifetime.id, {
      limit: 10,
      limitBehavior: "HARD",
      resetPeriod: "NEVER",
    });
    await grantEntitlement(platform, planId, calls.id, {
      includedAmount: 1000,
      overagePrice: 15,
      resetPeriod: "MONTHLY",
    });
    return {
      planId,
      priceId: created.price.id as string,
      trialDays: created.price.trialDays as number | null,
    };
  };
  const suffixName = `${n}`;
  return {
    keys: { hard: hard.lookupKey, lifetime: lifetime.lookupKey, calls: calls.lookupKey },
    a: await plan(`alpha-${suffixName}`, 2900),
    b: await plan(`beta-${suffixName}`, 4900),
  };
}

describe("billing money rules against the running stack", () => {
  it("only the platform settles; tenants read; a platform admin acts on any tenant via x-tenant-id", async () => {
    const admin = await adminToken();
    const { a } = await catalog(admin);
    const tenant = await newTenant("settle");
    const own = (path: string, options: Parameters<typeof send>[1] = {}) =>
      send(path, { token: tenant.token, tenant: tenant.tenantId, ...options });
    const platform = (path: string, options: Parameters<typeof send>[1] = {}) =>
      send(path, { token: admin, tenant: tenant.tenantId, ...options });
    await subscribe(tenant, a);

    const refused = await own("/invoices/generate", { method: "POST" });
    expect(refused.status).toBe(403);
    expect(refused.body).toMatchObject({ statusCode: 403, error: "Forbidden" });
    const draft = ok(await platform("/invoices/generate", { method: "POST" }), 201, "generate");
    for (const action of ["finalize", "void", "mark-paid"]) {
      expect((await own(`/invoices/${draft.id}/${action}`, { method: "POST" })).status).toBe(403);
    }
    const open = ok(
      await platform(`/invoices/${draft.id}/finalize`, { method: "POST" }),
      201,
      "finalize",
    );
    // The tenant reads its money.
    expect(ok(await own(`/invoices/${draft.id}`), 200, "read").status).toBe("OPEN");
    expect(ok(await own("/billing/balance"), 200, "balance").balance).toBe(open.total);
    expect(ok(await own("/billing/ledger"), 200, "ledger").data).toHaveLength(1);
    expect(ok(await own("/billing/payments"), 200, "payments").data).toHaveLength(1);
    // The tenant cannot mark its own invoice paid: still OPEN, still owed.
    expect((await own(`/invoices/${draft.id}/mark-paid`, { method: "POST" })).status).toBe(403);
    expect(ok(await own("/billing/balance"), 200, "balance").balance).toBe(open.total);
    figures.settlement = { invoice: open.invoiceNumber, total: open.total, tenantMarkPaid: 403 };
  });

  it("trials come from the catalog, once per tenant; a plan change never starts one", async () => {
    const admin = await adminToken();
    const { a, b } = await catalog(admin, 14);
    expect(a.trialDays).toBe(14);
    const tenant = await adminTenant(admin, "trial");
    const trySubscribe = (target: { planId: string; priceId: string }, extra = {}) =>
      send("/subscriptions", {
        token: tenant.token,
        tenant: tenant.tenantId,
        body: { planId: target.planId, priceId: target.priceId, ...extra },
      });
    expect((await trySubscribe(a, { trialDays: 90 })).status).toBe(400);
    const first = ok(await trySubscribe(a), 201, "subscribe");
    expect(first.status).toBe("TRIALING");
    expect(Date.parse(first.trialEndsAt) - Date.parse(first.startedAt)).toBe(14 * 86_400_000);
    const again = ok(await trySubscribe(a), 201, "same plan again");
    expect(again).toMatchObject({ status: "ACTIVE", trialEndsAt: null });
    const other = ok(await trySubscribe(b), 201, "another trial price");
    expect(other).toMatchObject({ status: "ACTIVE", trialEndsAt: null });
    figures.trials = { first: first.status, again: again.status, other: other.status };
  });

  it("usage belongs to the tenant: A -> B -> A keeps a HARD limit of 100 and a NEVER quota of 10", async () => {
    const admin = await adminToken();
    const { a, b, keys } = await catalog(admin);
    const tenant = await adminTenant(admin, "usage");
    await subscribe(tenant, a);
    const key = await createApiKey(tenant, "srv");
    await eventually(async () => {
      const check = await send(`/entitlements/${keys.hard}/check`, { token: key });
      return check.body.allowed ? true : undefined;
    }, "the subscription");
    const consume = (feature: string, amount: number) =>
      send(`/entitlements/${feature}/consume`, { token: key, body: { amount } });
    const check = async (feature: string) =>
      (await send(`/entitlements/${feature}/check`, { token: key })).body;
    expect((await consume(keys.hard, 60)).status).toBe(200);
    expect((await consume(keys.lifetime, 10)).status).toBe(200);
    await subscribe(tenant, b);
    await eventually(async () => ((await check(keys.hard)).limit === 100 ? true : undefined), "B");
    expect(await check(keys.hard)).toMatchObject({ used: 60, remaining: 40 });
    expect((await consume(keys.hard, 40)).status).toBe(200);
    expect((await consume(keys.hard, 1)).status).toBe(403);
    expect((await consume(keys.lifetime, 1)).status).toBe(403);
    await subscribe(tenant, a);
    const back = await check(keys.hard);
    expect(back).toMatchObject({ used: 100, remaining: 0, allowed: false });
    expect((await consume(keys.hard, 1)).status).toBe(403);
    figures.usageAcrossPlanChanges = { hardUsed: back.used, hardLimit: back.limit };
  });

  it("void and reissue: a new number, the period's usage once; money for a VOID invoice becomes a credit the reissue uses", async () => {
    const admin = await adminToken();
    const { a, keys } = await catalog(admin);
    const tenant = await adminTenant(admin, "void");
    const platform = (path: string, options: Parameters<typeof send>[1] = {}) =>
      send(path, { token: admin, tenant: tenant.tenantId, ...options });
    await subscribe(tenant, a);
    const key = await createApiKey(tenant, "srv");
    ok(
      await send(`/entitlements/${keys.calls}/consume`, { token: key, body: { amount: 1200 } }),
      200,
      "calls",
    );

    const draft = ok(await platform("/invoices/generate", { method: "POST" }), 201, "generate");
    // 2,900 + 200 calls x 15 micro-cents = 30 cents
    expect(draft.total).toBe(2930);
    const first = ok(
      await platform(`/invoices/${draft.id}/finalize`, { method: "POST" }),
      201,
      "finalize",
    );
    const attempt = ok(await platform("/billing/payments"), 200, "payments").data[0];
    ok(await platform(`/invoices/${draft.id}/void`, { method: "POST" }), 201, "void");
    expect((await platform("/invoices/generate", { method: "POST" })).status).toBe(201);
    // (The current period had no live invoice after the void, so generate made one; void it too.)
    const extra = ok(await platform("/invoices?status=DRAFT"), 200, "drafts").data[0];
    ok(await platform(`/invoices/${extra.id}/void`, { method: "POST" }), 201, "void extra");

    // The provider's charge for the VOID invoice succeeds after all: a CREDIT with its reference.
    ok(
      await send("/webhooks/fake", {
        body: {
          type: "payment.succeeded",
          providerPaymentId: attempt.providerPaymentId,
          amount: first.total,
          currency: "usd",
        },
      }),
      200,
      "webhook",
    );
    const credit = await eventually(async () => {
      const entries = ok(await platform("/billing/ledger?type=CREDIT"), 200, "ledger").data;
      return entries.find((entry: { externalReference: string | null }) => entry.externalReference);
    }, "the credit");
    expect(credit).toMatchObject({ credit: 2930, externalReference: attempt.providerPaymentId });
    const balanceAfterCredit = ok(await platform("/billing/balance"), 200, "balance").balance;
    expect(balanceAfterCredit).toBe(-2930);

    const reissued = ok(
      await platform("/invoices/generate", { body: { replacesInvoiceId: draft.id } }),
      201,
      "reissue",
    );
    expect(reissued).toMatchObject({ periodStart: first.periodStart, total: 2930 });
    expect(reissued.lineItems.filter((line: { kind: string }) => line.kind === "USAGE")).toEqual([
      expect.objectContaining({ quantity: 200, amount: 30 }),
    ]);
    const second = ok(
      await platform(`/invoices/${reissued.id}/finalize`, { method: "POST" }),
      201,
      "finalize",
    );
    expect(second.invoiceNumber).not.toBe(first.invoiceNumber);
    // The credit pays it entirely: total 0, PAID with nothing to collect.
    expect(second).toMatchObject({ subtotal: 2930, total: 0, status: "PAID" });
    expect(second.lineItems.at(-1)).toMatchObject({ kind: "CREDIT_APPLIED", amount: -2930 });
    const balance = ok(await platform("/billing/balance"), 200, "balance").balance;
    expect(balance).toBe(0);
    figures.voidAndReissue = {
      voided: { number: first.invoiceNumber, total: first.total },
      credit: credit.credit,
      balanceAfterCredit,
      reissued: { number: second.invoiceNumber, subtotal: second.subtotal, total: second.total },
      balance,
    };
  });

  it("pause bills up to the pause; resume starts a new period on the resume date", async () => {
    const admin = await adminToken();
    const { a } = await catalog(admin);
    const tenant = await adminTenant(admin, "pause");
    const own = (path: string, options: Parameters<typeof send>[1] = {}) =>
      send(path, { token: tenant.token, tenant: tenant.tenantId, ...options });
    const subscription = await subscribe(tenant, a);
    const paused = ok(
      await own(`/subscriptions/${subscription.id}/pause`, { body: {} }),
      201,
      "pause",
    );
    expect(paused.status).toBe("PAUSED");
    expect(Date.parse(paused.currentPeriodEnd)).toBeLessThan(
      Date.parse(subscription.currentPeriodEnd),
    );
    const resumed = ok(
      await own(`/subscriptions/${subscription.id}/resume`, { body: {} }),
      201,
      "resume",
    );
    expect(resumed.status).toBe("ACTIVE");
    expect(Date.parse(resumed.currentPeriodStart)).toBeGreaterThanOrEqual(
      Date.parse(paused.currentPeriodEnd),
    );
    const invoices = ok(await own("/invoices"), 200, "invoices").data;
    // The seconds before the pause, prorated: 2,900 x (seconds / month) rounds to 0 cents.
    expect(invoices).toEqual([
      expect.objectContaining({
        periodStart: subscription.currentPeriodStart,
        periodEnd: paused.currentPeriodEnd,
        total: 0,
      }),
    ]);
    figures.pause = {
      billedUntil: paused.currentPeriodEnd,
      billedTotal: invoices[0].total,
      newPeriod: [resumed.currentPeriodStart, resumed.currentPeriodEnd],
    };
  });

  it("refuses a JWT without exp, malformed price PATCH bodies, and answers 404 for an unknown feature", async () => {
    const admin = await adminToken();
    const me = ok(await send("/auth/me", { token: admin }), 200, "me");
    const sign = (withExp: boolean) => {
      const jwt = new SignJWT({ email: me.email, ver: 0 })
        .setProtectedHeader({ alg: "HS256", typ: "JWT" })
        .setSubject(me.id)
        .setJti("b".repeat(32))
        .setIssuer("billing")
        .setIssuedAt();
      return (withExp ? jwt.setExpirationTime("5m") : jwt).sign(
        new TextEncoder().encode(devVars().JWT_SECRET ?? ""),
      );
    };
    // The same token with exp is accepted: the 401 is about the missing exp alone.
    expect((await send("/auth/me", { token: await sign(true) })).status).toBe(200);
    expect((await send("/auth/me", { token: await sign(false) })).status).toBe(401);

    const { a, keys } = await catalog(admin);
    const path = `/plans/${a.planId}/prices/${a.priceId}`;
    for (const raw of [
      "{",
      "x".repeat(1024 * 1024),
      JSON.stringify({ isActive: false, extra: 1 }),
    ]) {
      expect((await send(path, { method: "PATCH", token: admin, raw })).status).toBe(400);
    }
    expect(ok(await send(`/plans/${a.planId}/prices`), 200, "prices").data[0].isActive).toBe(true);

    // The demo tenant (Pro): an unknown feature is a 404, a catalog feature Pro lacks is allowed false.
    const tenants = ok(await send("/tenants?limit=100", { token: admin }), 200, "tenants").data;
    const acme = tenants.find((tenant: { slug: string }) => tenant.slug === "acme");
    const check = await send("/entitlements/no_such_feature_e2e/check", {
      token: admin,
      tenant: acme.id,
    });
    expect(check.status).toBe(404);
    expect(check.body).toMatchObject({ statusCode: 404, error: "Not Found" });
    const notGranted = await send(`/entitlements/${keys.hard}/check`, {
      token: admin,
      tenant: acme.id,
    });
    expect(notGranted.status).toBe(200);
    expect(notGranted.body.allowed).toBe(false);
    console.log(`[e2e] billing money rules, figures in cents: ${JSON.stringify(figures)}`);
  });
});
