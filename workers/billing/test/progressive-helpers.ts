import { env } from "cloudflare:workers";
import { expect, vi } from "vitest";
import { asTenant } from "./billing-helpers.ts";
import { createFeature, createPlan, createPrice, grant } from "./catalog-helpers.ts";
import type { Account, Json } from "./helpers.ts";

// Builders for the tests of progressive billing against the period's own
// invoice: a plan with one METERED feature and thresholds, and a wait for
// the PROGRESSIVE invoice the tenant's counter issues from its alarm.

export interface ProgressivePlan {
  planId: string;
  priceId: string;
  key: string;
}

/** A monthly plan at `amount` cents, one METERED feature (nothing included) priced by `pricing`. */
export async function progressivePlan(
  admin: Account,
  options: {
    amount: number;
    pricing: unknown;
    usageThresholds?: { amount: number; recurring?: boolean }[];
  },
): Promise<ProgressivePlan> {
  const plan = await createPlan(admin, { name: "Progressive" });
  const price = await createPrice(admin, plan.id, {
    amount: options.amount,
    ...(options.usageThresholds ? { usageThresholds: options.usageThresholds } : {}),
  });
  const calls = await createFeature(admin, "METERED");
  await grant(admin, plan.id, calls.id, {
    includedAmount: 0,
    pricing: options.pricing,
    resetPeriod: "MONTHLY",
  });
  return { planId: plan.id, priceId: price.id, key: calls.lookupKey };
}

/** Waits for the tenant's `count`-th PROGRESSIVE invoice (oldest first), as the API shows them. */
export async function progressiveInvoices(owner: Account, count: number): Promise<Json[]> {
  const ids = await vi.waitFor(
    async () => {
      const { results } = await env.DB.prepare(
        "SELECT id FROM invoices WHERE tenant_id = ? AND kind = 'PROGRESSIVE' AND status <> 'DRAFT' ORDER BY created_at",
      )
        .bind(owner.tenant.id)
        .all<{ id: string }>();
      if (results.length < count) throw new Error(`${results.length} of ${count} issued yet`);
      return results.map((row) => row.id);
    },
    { timeout: 10_000, interval: 100 },
  );
  return Promise.all(
    ids.map(async (id) => {
      const found = await asTenant(owner, owner.tenant.id)(`/api/v1/invoices/${id}`);
      expect(found.status).toBe(200);
      return found.body;
    }),
  );
}

/** The tenant's invoices of `kind`, oldest period first. */
export async function invoicesOfKind(owner: Account, kind: string): Promise<Json[]> {
  const list = await asTenant(owner, owner.tenant.id)("/api/v1/invoices?limit=100");
  expect(list.status).toBe(200);
  return list.body.data
    .filter((invoice: Json) => invoice.kind === kind)
    .sort((a: Json, b: Json) => (a.periodStart < b.periodStart ? -1 : 1));
}

export const linesOf = (invoice: Json) =>
  invoice.lineItems.map((line: Json) => [line.kind, line.amount]);
