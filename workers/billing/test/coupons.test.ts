import { env } from "cloudflare:workers";
import { addMonthsClamped, MS_PER_DAY } from "@edge-platform/shared/billing/billing-period";
import { database } from "@edge-platform/shared/db/client";
import { invoiceContent } from "@edge-platform/shared/testing/invoice-content";
import { beforeAll, describe, expect, it } from "vitest";
import { CouponService } from "../src/pricing/index.ts";
import { auditRowsFor } from "./audit-helpers.ts";
import {
  asTenant,
  buildMoneyPlan,
  consumeAt,
  type MoneyPlan,
  runCycle,
  steerableProvider,
} from "./billing-helpers.ts";
import {
  createFeature,
  createPlan,
  createPrice,
  grant,
  platformAdmin,
  subscribe,
  uniqueKey,
} from "./catalog-helpers.ts";
import { type Account, call, expectError, type Json, register } from "./helpers.ts";

// Coupons: created by platform administrators, redeemed by a tenant on its
// subscription, and a DISCOUNT line on each invoice of their duration.

const MINUTE = 60_000;
let admin: Account;
let growth: MoneyPlan;

beforeAll(async () => {
  admin = await platformAdmin();
  growth = await buildMoneyPlan(admin, 2900);
});

const code = (label: string) => uniqueKey(label).toUpperCase().slice(0, 40);

async function createCoupon(body: Record<string, unknown>, key?: string) {
  return call("/api/v1/coupons", {
    token: admin.accessToken,
    body,
    ...(key ? { headers: { "idempotency-key": key } } : {}),
  });
}

async function coupon(body: Record<string, unknown>) {
  const created = await createCoupon({ code: code("c"), ...body });
  expect(created.status, JSON.stringify(created.body)).toBe(201);
  return created.body;
}

const redeem = (owner: Account, subscriptionId: string, couponCode: string) =>
  asTenant(owner, owner.tenant.id)(`/api/v1/subscriptions/${subscriptionId}/coupon`, {
    body: { couponCode },
  });

const upcomingOf = async (owner: Account) => {
  const result = await asTenant(owner, owner.tenant.id)("/api/v1/invoices/upcoming");
  expect(result.status, JSON.stringify(result.body)).toBe(200);
  return result.body;
};

async function periodInvoice(owner: Account, periodStart: string) {
  const list = await asTenant(owner, owner.tenant.id)("/api/v1/invoices?limit=100");
  const found = list.body.data.filter(
    (invoice: Json) => invoice.kind === "PERIOD" && invoice.periodStart === periodStart,
  );
  expect(found).toHaveLength(1);
  return found[0];
}

const discountLines = (invoice: Json) =>
  invoice.lineItems.filter((line: Json) => line.kind === "DISCOUNT");

describe("coupons: create, list, archive", () => {
  it("creates one with an Idempotency-Key, lists it, archives it, and audits both", async () => {
    const body = { code: code("save").toLowerCase(), percentOff: 20, duration: "forever" };
    const created = await createCoupon(body, `coupon-${body.code}`);
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    expect(created.body).toMatchObject({
      code: body.code.toUpperCase(),
      percentOff: 20,
      amountOff: null,
      duration: "forever",
      timesRedeemed: 0,
      status: "ACTIVE",
    });
    const replay = await createCoupon(body, `coupon-${body.code}`);
    expect(replay.status).toBe(201);
    expect(replay.headers.get("idempotent-replayed")).toBe("true");
    expect(replay.body.id).toBe(created.body.id);
    expectError(await createCoupon(body), 409, /already exists/);

    const list = await call("/api/v1/coupons", { token: admin.accessToken });
    expect(list.body.data.map((row: Json) => row.id)).toContain(created.body.id);

    const archive = `/api/v1/coupons/${created.body.id}/archive`;
    const archived = await call(archive, { token: admin.accessToken, method: "POST" });
    expect(archived.status, JSON.stringify(archived.body)).toBe(201);
    expect(archived.body.status).toBe("ARCHIVED");
    expectError(await call(archive, { token: admin.accessToken, method: "POST" }), 409);
    expect((await auditRowsFor(created.body.id)).map((row) => [row.action, row.tenant_id])).toEqual(
      [
        ["coupon.created", null],
        ["coupon.archived", null],
      ],
    );

    // Archived: no new redemptions.
    const owner = await register();
    const subscription = await subscribe(owner, growth.planId, growth.priceId);
    expectError(await redeem(owner, subscription.id, created.body.code), 409, /archived/);
  });

  it("is for platform administrators, with clear 400s", async () => {
    const owner = await register();
    expectError(
      await call("/api/v1/coupons", {
        token: owner.accessToken,
        body: { code: code("x"), percentOff: 10, duration: "once" },
      }),
      403,
    );
    const bad = async (body: Record<string, unknown>, message: RegExp) => {
      const result = await createCoupon({ code: code("bad"), ...body });
      expectError(result, 400);
      expect(JSON.stringify(result.body.message)).toMatch(message);
    };
    await bad({ duration: "once" }, /exactly one of percentOff and amountOff/);
    await bad({ percentOff: 10, amountOff: 100, duration: "once" }, /exactly one/);
    await bad({ percentOff: 0, duration: "once" }, /percentOff must be an integer from 1 to 100/);
    await bad({ percentOff: 101, duration: "once" }, /from 1 to 100/);
    await bad({ amountOff: 500, duration: "once" }, /amountOff needs a currency/);
    await bad({ percentOff: 10, duration: "repeating" }, /needs durationInPeriods/);
    await bad({ percentOff: 10, duration: "once", durationInPeriods: 2 }, /repeating only/);
    await bad({ percentOff: 10, duration: "always" }, /once, repeating or forever/);
    await bad({ percentOff: 10, duration: "once", maxRedemptions: 0 }, /maxRedemptions/);
    await bad(
      { percentOff: 10, duration: "once", redeemBy: "2020-01-01T00:00:00Z" },
      /in the future/,
    );
    await bad({ code: "a", percentOff: 10, duration: "once" }, /couponCode must be 3-40/);
  });
});

describe("redeeming", () => {
  it("on subscribe or on the subscription, one at a time; unknown codes are 404", async () => {
    const first = await coupon({ percentOff: 10, duration: "once" });
    const second = await coupon({ percentOff: 15, duration: "once" });
    const owner = await register();
    const subscribed = await call("/api/v1/subscriptions", {
      token: owner.accessToken,
      tenant: owner.tenant.id,
      body: { planId: growth.planId, priceId: growth.priceId, couponCode: first.code },
    });
    expect(subscribed.status, JSON.stringify(subscribed.body)).toBe(201);
    expectError(await redeem(owner, subscribed.body.id, second.code), 409, /already has/);
    expectError(await redeem(owner, subscribed.body.id, "NO_SUCH_CODE"), 404);
    const redemptions = await env.DB.prepare(
      "SELECT id, subscription_id FROM coupon_redemptions WHERE tenant_id = ?",
    )
      .bind(owner.tenant.id)
      .all<{ id: string; subscription_id: string }>();
    expect(redemptions.results.map((row) => row.subscription_id)).toEqual([subscribed.body.id]);
    const [redeemedOnSubscribe] = redemptions.results;
    expect((await auditRowsFor(redeemedOnSubscribe?.id ?? "")).map((row) => row.action)).toEqual([
      "coupon.redeemed",
    ]);

    const other = await register();
    const subscription = await subscribe(other, growth.planId, growth.priceId);
    const redeemed = await redeem(other, subscription.id, second.code.toLowerCase());
    expect(redeemed.status, JSON.stringify(redeemed.body)).toBe(201);
    expect(redeemed.body).toMatchObject({
      code: second.code,
      subscriptionId: subscription.id,
      invoicesDiscounted: 0,
      endedAt: null,
    });
    expect((await auditRowsFor(redeemed.body.id)).map((row) => row.action)).toEqual([
      "coupon.redeemed",
    ]);
    const shown = await asTenant(
      other,
      other.tenant.id,
    )(`/api/v1/subscriptions/${subscription.id}/coupon`);
    expect(shown.status, JSON.stringify(shown.body)).toBe(200);
    expect(shown.body).toEqual(redeemed.body);
    const none = await register();
    const bare = await subscribe(none, growth.planId, growth.priceId);
    expectError(
      await asTenant(none, none.tenant.id)(`/api/v1/subscriptions/${bare.id}/coupon`),
      404,
      /no active coupon/,
    );
  });

  it("a refused coupon on subscribe leaves no subscription behind", async () => {
    const limited = await coupon({ percentOff: 10, duration: "once", maxRedemptions: 1 });
    const taker = await register();
    const taken = await subscribe(taker, growth.planId, growth.priceId);
    expect((await redeem(taker, taken.id, limited.code)).status).toBe(201);
    const owner = await register();
    const refused = await call("/api/v1/subscriptions", {
      token: owner.accessToken,
      tenant: owner.tenant.id,
      body: { planId: growth.planId, priceId: growth.priceId, couponCode: limited.code },
    });
    expectError(refused, 409, /maximum number of times \(1\)/);
    const list = await asTenant(owner, owner.tenant.id)("/api/v1/subscriptions");
    expect(list.body.data).toEqual([]);
  });

  it("holds maxRedemptions: 1 against concurrent redemptions by many tenants", async () => {
    const limited = await coupon({ percentOff: 50, duration: "forever", maxRedemptions: 1 });
    const tenants = await Promise.all(
      Array.from({ length: 8 }, async () => {
        const owner = await register();
        const subscription = await subscribe(owner, growth.planId, growth.priceId);
        return { owner, subscription };
      }),
    );
    const results = await Promise.all(
      tenants.map(({ owner, subscription }) => redeem(owner, subscription.id, limited.code)),
    );
    const statuses = results.map((result) => result.status).sort();
    expect(statuses).toEqual([201, 409, 409, 409, 409, 409, 409, 409]);
    for (const refused of results.filter((result) => result.status === 409)) {
      expectError(refused, 409, /maximum number of times/);
    }
    const row = await env.DB.prepare(
      `SELECT c.times_redeemed AS times, (SELECT count(*) FROM coupon_redemptions r WHERE r.coupon_id = c.id) AS rows
       FROM coupons c WHERE c.id = ?`,
    )
      .bind(limited.id)
      .first<{ times: number; rows: number }>();
    expect(row).toEqual({ times: 1, rows: 1 });
  });
});

describe("once per tenant, unless the coupon is reusable", () => {
  /** Issues the tenant's next invoice: the last period of a `once` coupon, which ends its redemption. */
  async function useUpRedemption(owner: Account) {
    const settle = asTenant(admin, owner.tenant.id);
    const draft = await settle("/api/v1/invoices/generate", { body: {} });
    expect(draft.status, JSON.stringify(draft.body)).toBe(201);
    const finalized = await settle(`/api/v1/invoices/${draft.body.id}/finalize`, {
      method: "POST",
    });
    expect(finalized.body.discount, JSON.stringify(finalized.body)).toBeGreaterThan(0);
    const open = await env.DB.prepare(
      "SELECT count(*) AS open FROM coupon_redemptions WHERE tenant_id = ? AND ended_at IS NULL",
    )
      .bind(owner.tenant.id)
      .first<{ open: number }>();
    expect(open?.open).toBe(0);
  }

  const redemptionsOf = async (tenantId: string) =>
    (
      await env.DB.prepare("SELECT id FROM coupon_redemptions WHERE tenant_id = ?")
        .bind(tenantId)
        .all()
    ).results.length;

  it("a coupon whose redemption has ended cannot be redeemed again by the same tenant", async () => {
    const once = await coupon({ percentOff: 20, duration: "once", maxRedemptions: 5 });
    expect(once.reusable).toBe(false);
    const owner = await register();
    const subscription = await subscribe(owner, growth.planId, growth.priceId, {
      couponCode: once.code,
    });
    await useUpRedemption(owner);

    expectError(
      await redeem(owner, subscription.id, once.code),
      409,
      `Coupon ${once.code} has already been redeemed by this tenant: it is redeemable once per tenant`,
    );
    // Nor through a plan change that names it; the subscription is left as it was.
    const change = await call("/api/v1/subscriptions", {
      token: owner.accessToken,
      tenant: owner.tenant.id,
      body: { planId: growth.planId, priceId: growth.priceId, couponCode: once.code },
    });
    expectError(change, 409, /redeemable once per tenant/);
    const current = await asTenant(owner, owner.tenant.id)("/api/v1/subscriptions/active");
    expect(current.body.id).toBe(subscription.id);
    expect(await redemptionsOf(owner.tenant.id)).toBe(1);
    const stored = await env.DB.prepare("SELECT times_redeemed AS times FROM coupons WHERE id = ?")
      .bind(once.id)
      .first<{ times: number }>();
    expect(stored?.times).toBe(1);

    // Another tenant still can.
    const other = await register();
    const theirs = await subscribe(other, growth.planId, growth.priceId);
    expect((await redeem(other, theirs.id, once.code)).status).toBe(201);
  });

  it("a reusable coupon can be redeemed again once the earlier redemption has ended", async () => {
    const reusable = await coupon({ percentOff: 20, duration: "once", reusable: true });
    expect(reusable.reusable).toBe(true);
    const owner = await register();
    const subscription = await subscribe(owner, growth.planId, growth.priceId, {
      couponCode: reusable.code,
    });
    // One active redemption at a time still holds.
    expectError(await redeem(owner, subscription.id, reusable.code), 409, /already has/);
    await useUpRedemption(owner);
    const again = await redeem(owner, subscription.id, reusable.code);
    expect(again.status, JSON.stringify(again.body)).toBe(201);
    expect(await redemptionsOf(owner.tenant.id)).toBe(2);
  });

  it("two concurrent redemptions by one tenant: exactly one succeeds", async () => {
    const once = await coupon({ percentOff: 20, duration: "once" });
    const owner = await register();
    const subscription = await subscribe(owner, growth.planId, growth.priceId);
    const results = await Promise.all([1, 2].map(() => redeem(owner, subscription.id, once.code)));
    expect(results.map((result) => result.status).sort()).toEqual([201, 409]);
    const refused = results.find((result) => result.status === 409);
    if (refused) expectError(refused, 409);
    expect(await redemptionsOf(owner.tenant.id)).toBe(1);
  });

  it("the redemption batch itself refuses a second redemption that got past the check before it", async () => {
    const once = await coupon({ percentOff: 20, duration: "once" });
    const owner = await register();
    const subscription = await subscribe(owner, growth.planId, growth.priceId);
    const coupons = new CouponService(database(env.DB), async () => undefined);
    // Checked while the tenant had not redeemed it yet ...
    const checked = await coupons.requireRedeemable(owner.tenant.id, once.code);
    expect((await redeem(owner, subscription.id, once.code)).status).toBe(201);
    await useUpRedemption(owner);
    // ... and redeemed after the first redemption was made and has ended.
    const { statements } = coupons.redemptionStatements(
      checked,
      owner.tenant.id,
      subscription.id,
      new Date().toISOString(),
    );
    const failure = await database(env.DB)
      .batch(statements)
      .then(
        () => undefined,
        (error: unknown) => error,
      );
    expect(failure).toBeInstanceOf(Error);
    const refusal = await coupons.refusal(failure, once.id, owner.tenant.id);
    expect(refusal).toMatchObject({
      status: 409,
      message: expect.stringMatching(/once per tenant/),
    });
    expect(await redemptionsOf(owner.tenant.id)).toBe(1);
  });

  it("reusable must be a boolean", async () => {
    const result = await createCoupon({
      code: code("flag"),
      percentOff: 10,
      duration: "once",
      reusable: "yes",
    });
    expectError(result, 400);
    expect(JSON.stringify(result.body.message)).toMatch(/reusable must be a boolean/);
  });
});

describe("the DISCOUNT line, for each duration across three periods", () => {
  const durations = [
    { name: "once", terms: { duration: "once" }, discounted: [true, false, false] },
    {
      name: "repeating for 2 periods",
      terms: { duration: "repeating", durationInPeriods: 2 },
      discounted: [true, true, false],
    },
    { name: "forever", terms: { duration: "forever" }, discounted: [true, true, true] },
  ];

  for (const example of durations) {
    it(`${example.name}: 20% off ${example.discounted.filter(Boolean).length} of 3 invoices, each equal to its upcoming invoice`, async () => {
      const twenty = await coupon({ percentOff: 20, ...example.terms });
      const owner = await register();
      const subscription = await subscribe(owner, growth.planId, growth.priceId, {
        couponCode: twenty.code,
      });
      const t0 = new Date(subscription.startedAt);
      const provider = steerableProvider("pending").provider;
      const seen: boolean[] = [];
      for (let period = 0; period < 3; period++) {
        const start = period === 0 ? t0 : addMonthsClamped(t0, period);
        // 1,100 calls, 1,000 included: 100 x 15 micro-cents = 15 cents.
        await consumeAt(
          owner.tenant.id,
          growth.keys.calls,
          1100,
          new Date(start.getTime() + MS_PER_DAY),
        );
        const upcoming = await upcomingOf(owner);
        await runCycle(new Date(addMonthsClamped(t0, period + 1).getTime() + MINUTE), provider, [
          owner.tenant.id,
        ]);
        const issued = await periodInvoice(owner, start.toISOString());
        expect(invoiceContent(upcoming)).toEqual(invoiceContent(issued));
        const discounted = discountLines(issued).length === 1;
        seen.push(discounted);
        // Subtotal 2,900 + 15 = 2,915; 20% = 583 off.
        expect(issued).toMatchObject(
          discounted
            ? { subtotal: 2915, discount: 583, total: 2332 }
            : { subtotal: 2915, discount: 0, total: 2915 },
        );
        if (discounted) {
          expect(discountLines(issued)[0]).toMatchObject({
            description: `Discount: ${twenty.code} (20% off)`,
            amount: -583,
          });
        }
      }
      expect(seen).toEqual(example.discounted);
    });
  }

  it("an amountOff coupon never takes a total below zero, and only applies in its currency", async () => {
    const big = await coupon({ amountOff: 5000, currency: "usd", duration: "forever" });
    const owner = await register();
    await subscribe(owner, growth.planId, growth.priceId, { couponCode: big.code });
    const upcoming = await upcomingOf(owner);
    expect(upcoming).toMatchObject({ subtotal: 2900, discount: 2900, total: 0 });
    expect(discountLines(upcoming)[0].description).toBe(`Discount: ${big.code} (50.00 USD off)`);

    const euros = await coupon({ amountOff: 500, currency: "eur", duration: "forever" });
    const other = await register();
    await subscribe(other, growth.planId, growth.priceId, { couponCode: euros.code });
    expect(await upcomingOf(other)).toMatchObject({ discount: 0, total: 2900 });
  });
});

describe("voiding a discounted invoice", () => {
  it("gives the coupon period back, so the replacement is discounted as the voided invoice was", async () => {
    const once = await coupon({ percentOff: 20, duration: "once" });
    const owner = await register();
    await subscribe(owner, growth.planId, growth.priceId, { couponCode: once.code });
    const settle = asTenant(admin, owner.tenant.id);
    const redemption = () =>
      env.DB.prepare(
        "SELECT invoices_discounted AS used, ended_at AS ended FROM coupon_redemptions WHERE tenant_id = ?",
      )
        .bind(owner.tenant.id)
        .first<{ used: number; ended: string | null }>();

    const draft = await settle("/api/v1/invoices/generate", { body: {} });
    const first = await settle(`/api/v1/invoices/${draft.body.id}/finalize`, { method: "POST" });
    expect(first.body).toMatchObject({ subtotal: 2900, discount: 580, total: 2320 });
    expect(await redemption()).toMatchObject({ used: 1, ended: expect.any(String) });

    const voided = await settle(`/api/v1/invoices/${draft.body.id}/void`, { method: "POST" });
    expect(voided.status, JSON.stringify(voided.body)).toBe(201);
    expect(await redemption()).toEqual({ used: 0, ended: null });
    // A second void changes nothing, the period is given back once.
    await settle(`/api/v1/invoices/${draft.body.id}/void`, { method: "POST" });
    expect(await redemption()).toEqual({ used: 0, ended: null });

    const replacement = await settle("/api/v1/invoices/generate", {
      body: { replacesInvoiceId: draft.body.id },
    });
    expect(replacement.status, JSON.stringify(replacement.body)).toBe(201);
    const second = await settle(`/api/v1/invoices/${replacement.body.id}/finalize`, {
      method: "POST",
    });
    expect(second.body).toMatchObject({ subtotal: 2900, discount: 580, total: 2320 });
    expect(await redemption()).toMatchObject({ used: 1, ended: expect.any(String) });
  });
});

describe("base fee + graduated usage + 20% coupon + 10% tax", () => {
  it("derives every amount by hand, and the upcoming invoice equals the issued one", async () => {
    const plan = await createPlan(admin, { name: "Tiered Pro" });
    const price = await createPrice(admin, plan.id, { interval: "MONTHLY", amount: 2900 });
    const calls = await createFeature(admin, "METERED");
    await grant(admin, plan.id, calls.id, {
      includedAmount: 100,
      resetPeriod: "MONTHLY",
      pricing: {
        model: "graduated",
        tiers: [
          { upTo: 1000, unitPrice: 200 },
          { upTo: 5000, unitPrice: 100 },
          { upTo: null, unitPrice: 50 },
        ],
      },
    });
    const twenty = await coupon({ percentOff: 20, duration: "forever" });
    const owner = await register();
    const details = await call(`/api/v1/tenants/${owner.tenant.id}/billing-details`, {
      method: "PUT",
      token: admin.accessToken,
      body: {
        taxRate: 10,
        legalName: "Analytical Engines Ltd",
        address: { line1: "1 Engine Row", city: "London", country: "GB" },
      },
    });
    expect(details.status, JSON.stringify(details.body)).toBe(200);
    const subscription = await subscribe(owner, plan.id, price.id, { couponCode: twenty.code });
    const t0 = new Date(subscription.startedAt);
    await consumeAt(owner.tenant.id, calls.lookupKey, 6100, new Date(t0.getTime() + MS_PER_DAY));

    // Base fee: 2,900.
    // Usage: 6,100 used - 100 included = 6,000 billed, graduated:
    //   1,000 x 200 + 4,000 x 100 + 1,000 x 50 = 650,000 micro-cents = 6,500 cents.
    // Subtotal: 2,900 + 6,500 = 9,400.
    // Discount: 20% of 9,400 = 1,880.
    // Tax: 10% of (9,400 - 1,880 = 7,520) = 752.
    // Total: 9,400 - 1,880 + 752 = 8,272.
    const expected = { subtotal: 9400, discount: 1880, tax: 752, taxRate: 10, total: 8272 };
    const upcoming = await upcomingOf(owner);
    expect(upcoming).toMatchObject(expected);
    expect(upcoming.lineItems.map((line: Json) => [line.kind, line.amount])).toEqual([
      ["BASE", 2900],
      ["USAGE", 6500],
      ["DISCOUNT", -1880],
      ["TAX", 752],
    ]);

    await runCycle(
      new Date(addMonthsClamped(t0, 1).getTime() + MINUTE),
      steerableProvider("pending").provider,
      [owner.tenant.id],
    );
    const issued = await periodInvoice(owner, subscription.currentPeriodStart);
    expect(issued).toMatchObject({ ...expected, status: "OPEN" });
    expect(invoiceContent(upcoming)).toEqual(invoiceContent(issued));
    const ledger = await asTenant(owner, owner.tenant.id)("/api/v1/billing/ledger");
    expect(ledger.body.data.find((entry: Json) => entry.type === "CHARGE").debit).toBe(8272);
  });
});
