import { env } from "cloudflare:workers";
import { initialSubscriptionPeriods } from "@edge-platform/shared/billing/billing-period";
import { entitlementCounter } from "@edge-platform/shared/billing/entitlement-counter-client";
import type { SnapshotTerms } from "@edge-platform/shared/billing/entitlement-snapshot";
import { planPrices, plans } from "@edge-platform/shared/db/schema/catalog";
import { entitlementSnapshots, subscriptions } from "@edge-platform/shared/db/schema/subscriptions";
import { drizzle } from "drizzle-orm/d1";
import { expect, vi } from "vitest";

// Fixtures and assertions for pipeline tests: tenants are made through the
// billing worker's API (register, API key), their plan and subscription
// directly in D1 (the catalog is not what these tests are about).

// biome-ignore lint/suspicious/noExplicitAny: test-side JSON bodies
export type Json = any;

let counter = 0;
const uniqueIp = () => `10.9.${Math.floor(counter / 250) % 250}.${(counter++ % 250) + 1}`;

export async function billing(
  path: string,
  options: {
    method?: string;
    body?: unknown;
    rawBody?: string;
    token?: string;
    tenant?: string;
  } = {},
): Promise<{ status: number; body: Json }> {
  const headers: Record<string, string> = { "cf-connecting-ip": uniqueIp() };
  if (options.token) headers.authorization = `Bearer ${options.token}`;
  if (options.tenant) headers["x-tenant-id"] = options.tenant;
  const body =
    options.rawBody ?? (options.body === undefined ? undefined : JSON.stringify(options.body));
  if (body !== undefined) headers["content-type"] = "application/json";
  const response = await env.BILLING.fetch(`http://billing/api/v1${path}`, {
    method: options.method ?? (body === undefined ? "GET" : "POST"),
    headers,
    ...(body !== undefined ? { body } : {}),
  });
  const text = await response.text();
  let parsed: unknown = text;
  try {
    parsed = JSON.parse(text);
  } catch {
    // keep the text
  }
  return { status: response.status, body: parsed };
}

const noTerms = {
  value: null,
  limit: null,
  limitBehavior: null,
  overagePrice: null,
  includedAmount: null,
  resetPeriod: null,
  pricing: null,
} as const;

export const snapshot = {
  flag: (key: string): SnapshotTerms => ({
    ...noTerms,
    featureLookupKey: key,
    featureType: "BOOLEAN",
    value: true,
  }),
  hard: (
    key: string,
    limit: number,
    resetPeriod: SnapshotTerms["resetPeriod"] = "NEVER",
  ): SnapshotTerms => ({
    ...noTerms,
    featureLookupKey: key,
    featureType: "QUOTA",
    limit,
    limitBehavior: "HARD",
    resetPeriod,
  }),
  metered: (key: string): SnapshotTerms => ({
    ...noTerms,
    featureLookupKey: key,
    featureType: "METERED",
    includedAmount: 1000,
    overagePrice: 10,
    resetPeriod: "MONTHLY",
  }),
};

export const DEFAULT_SNAPSHOTS = [
  snapshot.metered("api_calls"),
  snapshot.hard("projects", 25),
  snapshot.flag("sso"),
];

export interface PipelineTenant {
  tenantId: string;
  subscriptionId: string;
  ownerToken: string;
  apiKey: string;
}

/** A registered tenant with a subscription holding `snapshots`, and an API key. */
export async function pipelineTenant(snapshots = DEFAULT_SNAPSHOTS): Promise<PipelineTenant> {
  const n = `${Date.now().toString(36)}-${counter++}-${Math.random().toString(36).slice(2, 7)}`;
  const registered = await billing("/auth/register", {
    body: {
      email: `pipeline-${n}@example.com`,
      password: "Sup3rSecret",
      firstName: "Pipe",
      lastName: "Line",
      tenantName: "Pipeline",
      tenantSlug: `pipeline-${n}`,
    },
  });
  expect(registered.status, JSON.stringify(registered.body)).toBe(201);
  const tenantId = registered.body.tenant.id as string;
  const ownerToken = registered.body.accessToken as string;

  const db = drizzle(env.DB);
  const planId = crypto.randomUUID();
  const priceId = crypto.randomUUID();
  const subscriptionId = crypto.randomUUID();
  const startedAt = new Date(Date.now() - 10 * 86_400_000);
  const periods = initialSubscriptionPeriods(startedAt, "MONTHLY");
  await db.batch([
    db.insert(plans).values({ id: planId, name: "Pipeline", slug: `pipeline-plan-${n}` }),
    db.insert(planPrices).values({ id: priceId, planId, interval: "MONTHLY", amount: 0 }),
    db.insert(subscriptions).values({
      id: subscriptionId,
      tenantId,
      planId,
      priceId,
      status: "ACTIVE",
      startedAt: startedAt.toISOString(),
      currentPeriodStart: periods.currentPeriodStart.toISOString(),
      currentPeriodEnd: periods.currentPeriodEnd.toISOString(),
      billingAnchor: periods.billingAnchor,
    }),
    ...snapshots.map((terms) =>
      db.insert(entitlementSnapshots).values({ id: crypto.randomUUID(), subscriptionId, ...terms }),
    ),
  ]);
  const key = await billing("/api-keys", {
    token: ownerToken,
    tenant: tenantId,
    body: { name: "pipeline" },
  });
  expect(key.status, JSON.stringify(key.body)).toBe(201);
  return { tenantId, subscriptionId, ownerToken, apiKey: key.body.key as string };
}

export function usageEvent(overrides: Record<string, unknown> = {}) {
  return {
    eventId: crypto.randomUUID(),
    feature: "api_calls",
    amount: 1,
    timestamp: new Date().toISOString(),
    ...overrides,
  };
}

export async function statusCounts(tenantId: string): Promise<Record<string, number>> {
  const { results } = await env.DB.prepare(
    "SELECT status, COUNT(*) AS n FROM usage_events WHERE tenant_id = ? GROUP BY status",
  )
    .bind(tenantId)
    .all<{ status: string; n: number }>();
  return Object.fromEntries(results.map((row) => [row.status, row.n]));
}

/** Waits until every stored event of the tenant is AGGREGATED or REJECTED. */
export async function waitForFinalStatuses(tenantId: string, timeout = 10_000) {
  await vi.waitFor(
    async () => {
      const counts = await statusCounts(tenantId);
      expect(counts.PENDING ?? 0).toBe(0);
      expect(counts.VALIDATED ?? 0).toBe(0);
    },
    { timeout, interval: 50 },
  );
}

export const counterFor = (tenantId: string) =>
  entitlementCounter(env.ENTITLEMENT_COUNTER, tenantId);

/**
 * The pipeline invariant: events accepted (stored) = aggregated + rejected,
 * and the aggregates hold exactly the amounts of the aggregated events, per
 * feature; the counter object agrees with the aggregates.
 */
export async function expectPipelineInvariant(tenantId: string) {
  const counts = await statusCounts(tenantId);
  const stored = Object.values(counts).reduce((sum, n) => sum + n, 0);
  expect(stored).toBe((counts.AGGREGATED ?? 0) + (counts.REJECTED ?? 0));
  const { results: events } = await env.DB.prepare(
    `SELECT feature_lookup_key AS feature, SUM(amount) AS amount FROM usage_events
      WHERE tenant_id = ? AND status = 'AGGREGATED' GROUP BY feature_lookup_key ORDER BY feature_lookup_key`,
  )
    .bind(tenantId)
    .all<{ feature: string; amount: number }>();
  const { results: aggregates } = await env.DB.prepare(
    `SELECT feature_lookup_key AS feature, SUM(amount) AS amount FROM usage_aggregates
      WHERE tenant_id = ? AND amount > 0 GROUP BY feature_lookup_key ORDER BY feature_lookup_key`,
  )
    .bind(tenantId)
    .all<{ feature: string; amount: number }>();
  expect(aggregates).toEqual(events);
  return { counts, aggregated: Object.fromEntries(events.map((e) => [e.feature, e.amount])) };
}
