import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { entitlementCounter } from "@edge-platform/shared/billing/entitlement-counter-client";
import { database } from "@edge-platform/shared/db/client";
import { beforeAll, describe, expect, it } from "vitest";
import { SYSTEM_AUDIT } from "../src/audit/index.ts";
import { CreditService } from "../src/credits/index.ts";
import type { EntitlementCounter } from "../src/index.ts";
import { payments } from "../src/services.ts";
import { auditRowsFor } from "./audit-helpers.ts";
import { asTenant } from "./billing-helpers.ts";
import {
  createFeature,
  createPlan,
  createPrice,
  grant,
  platformAdmin,
  subscribe,
} from "./catalog-helpers.ts";
import { type Account, type Json, register } from "./helpers.ts";

// Taking back part of a paid TOP_UP grant (what a refund of its invoice
// does): paid cents converted to the grant's credits, taken from its
// unspent remainder all or nothing, written off in the ledger, and the
// reservation a caller's own batch writes or releases.

let admin: Account;

beforeAll(async () => {
  admin = await platformAdmin();
});

const service = () =>
  new CreditService(database(env.DB), env.DB, env.ENTITLEMENT_COUNTER, payments(env));

/** A tenant on a price whose METERED usage costs 100 cents a unit. */
async function subscribedTenant() {
  const plan = await createPlan(admin, { name: "Take back" });
  const price = await createPrice(admin, plan.id, { amount: 0 });
  const feature = await createFeature(admin, "METERED");
  await grant(admin, plan.id, feature.id, {
    includedAmount: 0,
    overagePrice: 10_000,
    resetPeriod: "MONTHLY",
  });
  const owner = await register();
  await subscribe(owner, plan.id, price.id);
  return { owner, tenantId: owner.tenant.id as string, key: feature.lookupKey as string };
}

/** A paid grant of `amount` credits bought for `paidAmount` cents, its TOP_UP invoice paid. */
async function paidGrant(tenantId: string, amount: number, paidAmount: number) {
  const created = await asTenant(admin, tenantId)("/api/v1/credit-grants", {
    body: { amount, paidAmount, currency: "usd", category: "paid" },
  });
  expect(created.status, JSON.stringify(created.body)).toBe(201);
  const paid = await asTenant(admin, tenantId)(
    `/api/v1/invoices/${created.body.invoiceId}/mark-paid`,
    { body: {} },
  );
  expect(paid.body.status, JSON.stringify(paid.body)).toBe("PAID");
  return created.body as { id: string; invoiceId: string };
}

const balanceOf = async (tenantId: string) =>
  (await asTenant(admin, tenantId)("/api/v1/credits")).body.balance as number;

const stored = (grantId: string) =>
  env.DB.prepare(
    "SELECT status, amount, drawn, written_off AS writtenOff, ended_at AS endedAt FROM credit_grants WHERE id = ?",
  )
    .bind(grantId)
    .first<{
      status: string;
      amount: number;
      drawn: number;
      writtenOff: number;
      endedAt: string | null;
    }>();

const writeOffs = async (tenantId: string) =>
  (
    await env.DB.prepare(
      "SELECT debit, description, invoice_id AS invoiceId FROM ledger_entries WHERE tenant_id = ? AND type = 'CREDIT_WRITE_OFF' ORDER BY created_at, debit",
    )
      .bind(tenantId)
      .all<{ debit: number; description: string; invoiceId: string | null }>()
  ).results;

/** drawn + written off + remaining == amount, with `remaining` the counter's exact figure. */
async function expectGrantAddsUp(tenantId: string, grantId: string) {
  await entitlementCounter(env.ENTITLEMENT_COUNTER, tenantId).flush();
  const row = await stored(grantId);
  const { grants } = await entitlementCounter(env.ENTITLEMENT_COUNTER, tenantId).credits();
  const live = grants.find((entry) => entry.id === grantId);
  const remaining = live && live.status === "ACTIVE" ? live.remaining : 0;
  expect(row && row.drawn + row.writtenOff + remaining).toBe(row?.amount);
}

describe("taking back a TOP_UP grant's credit", () => {
  it("converts paid cents at the price paid, takes them from the unspent part, refuses more than is left, and ends the grant at 0", async () => {
    const { owner, tenantId, key } = await subscribedTenant();
    // 10,000 credits bought for 8,000 cents; 30 units spend 3,000 of them.
    const bought = await paidGrant(tenantId, 10_000, 8_000);
    const consumed = await asTenant(owner, tenantId)(`/api/v1/entitlements/${key}/consume`, {
      body: { amount: 30 },
    });
    expect(consumed.status, JSON.stringify(consumed.body)).toBe(200);
    const credits = service();
    const now = new Date();

    // 4,000 paid cents are 4,000 x 10,000 / 8,000 = 5,000 credits.
    expect(
      await credits.takeBackTopUp(tenantId, bought.invoiceId, 4_000, now, SYSTEM_AUDIT),
    ).toEqual({ grantId: bought.id, credits: 5_000 });
    expect(await balanceOf(tenantId)).toBe(2_000);
    expect(await stored(bought.id)).toMatchObject({ status: "ACTIVE", writtenOff: 5_000 });
    expect(await writeOffs(tenantId)).toEqual([
      {
        debit: 5_000,
        description: `Credit grant ${bought.id} taken back: refund`,
        invoiceId: bought.invoiceId,
      },
    ]);
    const audited = await auditRowsFor(bought.id, "credit_grant.taken_back");
    expect(audited).toHaveLength(1);
    expect(JSON.parse(audited[0]?.changes ?? "{}")).toMatchObject({
      writtenOff: { after: 5_000 },
    });

    // 2,000 paid cents are 2,500 credits, more than the 2,000 unspent: refused
    // whole, with the unspent part in paid cents (2,000 x 8,000 / 10,000).
    expect(
      await credits.takeBackTopUp(tenantId, bought.invoiceId, 2_000, now, SYSTEM_AUDIT),
    ).toEqual({ refused: { unspentPaidCents: 1_600 } });
    expect(await balanceOf(tenantId)).toBe(2_000);
    expect(await writeOffs(tenantId)).toHaveLength(1);

    // Exactly what is left: the grant ends (VOIDED), nothing left to spend.
    expect(
      await credits.takeBackTopUp(tenantId, bought.invoiceId, 1_600, now, SYSTEM_AUDIT),
    ).toEqual({ grantId: bought.id, credits: 2_000 });
    expect(await stored(bought.id)).toMatchObject({
      status: "VOIDED",
      writtenOff: 7_000,
      endedAt: now.toISOString(),
    });
    expect(await balanceOf(tenantId)).toBe(0);
    await expectGrantAddsUp(tenantId, bought.id);
    expect(await credits.takeBackTopUp(tenantId, bought.invoiceId, 1, now, SYSTEM_AUDIT)).toEqual({
      refused: { unspentPaidCents: 0 },
    });
    // An invoice that bought no grant.
    expect(
      await credits.takeBackTopUp(tenantId, crypto.randomUUID(), 100, now, SYSTEM_AUDIT),
    ).toBeNull();
  });

  it("10 concurrent take-backs of 1,000 against 5,000 unspent: exactly 5 succeed", async () => {
    const { tenantId } = await subscribedTenant();
    const bought = await paidGrant(tenantId, 5_000, 5_000);
    const credits = service();
    const results = await Promise.all(
      Array.from({ length: 10 }, () =>
        credits.takeBackTopUp(tenantId, bought.invoiceId, 1_000, new Date(), SYSTEM_AUDIT),
      ),
    );
    expect(results.filter((result) => result && "grantId" in result)).toHaveLength(5);
    expect(results.filter((result) => result && "refused" in result)).toHaveLength(5);
    expect(await stored(bought.id)).toMatchObject({ status: "VOIDED", writtenOff: 5_000 });
    expect(await writeOffs(tenantId)).toHaveLength(5);
    await expectGrantAddsUp(tenantId, bought.id);
  });

  it("refuses a grant whose invoice is not paid, and converts with half-up rounding", async () => {
    const { tenantId } = await subscribedTenant();
    const created = await asTenant(admin, tenantId)("/api/v1/credit-grants", {
      body: { amount: 3, paidAmount: 2, currency: "usd", category: "paid" },
    });
    const credits = service();
    // PENDING: nothing of it is spendable, so nothing can be taken back.
    expect(
      await credits.takeBackTopUp(tenantId, created.body.invoiceId, 1, new Date(), SYSTEM_AUDIT),
    ).toEqual({ refused: { unspentPaidCents: 0 } });
    const paid = await asTenant(admin, tenantId)(
      `/api/v1/invoices/${created.body.invoiceId}/mark-paid`,
      { body: {} },
    );
    expect(paid.body.status).toBe("PAID");
    // 1 paid cent of 3 credits for 2 cents is 1.5 credits: 2.
    expect(
      await credits.takeBackTopUp(tenantId, created.body.invoiceId, 1, new Date(), SYSTEM_AUDIT),
    ).toEqual({ grantId: created.body.id, credits: 2 });
    // 1 credit left is floor(1 x 2 / 3) = 0 paid cents.
    expect(
      await credits.takeBackTopUp(tenantId, created.body.invoiceId, 1, new Date(), SYSTEM_AUDIT),
    ).toEqual({ refused: { unspentPaidCents: 0 } });
    // 1 paid cent of 4 credits for 10 cents is 0.4 credits: nothing to take, nothing refused.
    const cheap = await paidGrant(tenantId, 4, 10);
    expect(
      await credits.takeBackTopUp(tenantId, cheap.invoiceId, 1, new Date(), SYSTEM_AUDIT),
    ).toEqual({ grantId: cheap.id, credits: 0 });
    const listed = (await asTenant(admin, tenantId)("/api/v1/credit-grants")).body.data as Json[];
    expect(listed.find((row) => row.id === created.body.id)).toMatchObject({
      status: "ACTIVE",
      remaining: 1,
      writtenOff: 2,
    });
    expect(listed.find((row) => row.id === cheap.id)).toMatchObject({
      remaining: 4,
      writtenOff: 0,
    });
  });
});

describe("a take-back reservation in the caller's own batch", () => {
  it("is released when the batch did not write it, kept when it did", async () => {
    const { tenantId } = await subscribedTenant();
    const bought = await paidGrant(tenantId, 5_000, 5_000);
    const credits = service();
    const now = new Date();

    // The caller's batch writes nothing of it (its own condition failed): released.
    const first = await credits.reserveTakeBack(tenantId, bought.invoiceId, 3_000, now);
    if (!first || "refused" in first) throw new Error(`not reserved: ${JSON.stringify(first)}`);
    expect(first).toMatchObject({ grantId: bought.id, credits: 3_000, remaining: 2_000 });
    expect(await balanceOf(tenantId)).toBe(2_000);
    await env.DB.batch(first.statements({ sql: "0", params: [] }));
    await first.release();
    expect(await balanceOf(tenantId)).toBe(5_000);
    expect(await stored(bought.id)).toMatchObject({ status: "ACTIVE", writtenOff: 0 });
    expect(await writeOffs(tenantId)).toEqual([]);

    // Written with the caller's own statement, under the caller's condition.
    const second = await credits.reserveTakeBack(tenantId, bought.invoiceId, 3_000, now);
    if (!second || "refused" in second) throw new Error("not reserved");
    const marker = crypto.randomUUID();
    await env.DB.batch([
      env.DB.prepare("CREATE TABLE IF NOT EXISTS take_back_callers (id TEXT PRIMARY KEY)"),
      env.DB.prepare("INSERT INTO take_back_callers (id) VALUES (?)").bind(marker),
      ...second.statements({
        sql: "EXISTS (SELECT 1 FROM take_back_callers WHERE id = ?)",
        params: [marker],
      }),
    ]);
    await second.written();
    expect(await stored(bought.id)).toMatchObject({ status: "ACTIVE", writtenOff: 3_000 });
    // A release after the batch wrote it changes nothing.
    await second.release();
    expect(await balanceOf(tenantId)).toBe(2_000);
    expect((await writeOffs(tenantId)).map((entry) => entry.debit)).toEqual([3_000]);
    await expectGrantAddsUp(tenantId, bought.id);
  });

  it("that nobody releases goes back to the grant once it is old", async () => {
    const { tenantId } = await subscribedTenant();
    const bought = await paidGrant(tenantId, 5_000, 5_000);
    const reserved = await service().reserveTakeBack(tenantId, bought.invoiceId, 1_000, new Date());
    if (!reserved || "refused" in reserved) throw new Error("not reserved");
    expect(await balanceOf(tenantId)).toBe(4_000);
    // The caller never wrote its batch nor released (it crashed): an hour later.
    const counter = env.ENTITLEMENT_COUNTER.get(env.ENTITLEMENT_COUNTER.idFromName(tenantId));
    await runInDurableObject(counter, (_instance: EntitlementCounter, state) => {
      state.storage.sql.exec("UPDATE credit_take_backs SET reserved_at = reserved_at - 3600000");
    });
    await entitlementCounter(env.ENTITLEMENT_COUNTER, tenantId).refreshCredits();
    expect(await balanceOf(tenantId)).toBe(5_000);
    expect(await stored(bought.id)).toMatchObject({ status: "ACTIVE", writtenOff: 0 });
  });

  for (const outcome of ["written", "released"] as const) {
    it(`on a grant voided meanwhile, ${outcome}: every credit ends written off once`, async () => {
      const { tenantId } = await subscribedTenant();
      const bought = await paidGrant(tenantId, 5_000, 5_000);
      const credits = service();
      const reserved = await credits.reserveTakeBack(tenantId, bought.invoiceId, 2_000, new Date());
      if (!reserved || "refused" in reserved) throw new Error("not reserved");
      const voided = await asTenant(admin, tenantId)(`/api/v1/credit-grants/${bought.id}/void`, {
        body: {},
      });
      expect(voided.body).toMatchObject({ status: "VOIDED", writtenOff: 3_000 });
      if (outcome === "written") {
        await env.DB.batch(reserved.statements());
        await reserved.written();
      } else {
        await reserved.release();
      }
      await expectGrantAddsUp(tenantId, bought.id);
      expect(await stored(bought.id)).toMatchObject({ status: "VOIDED", writtenOff: 5_000 });
      const debits = (await writeOffs(tenantId)).map((entry) => entry.debit).sort();
      expect(debits).toEqual([2_000, 3_000]);
      expect(await balanceOf(tenantId)).toBe(0);
    });
  }
});
