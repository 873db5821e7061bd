import { env } from "cloudflare:workers";
import { initialSubscriptionPeriods } from "@edge-platform/shared/billing/billing-period";
import { entitlementCounter } from "@edge-platform/shared/billing/entitlement-counter-client";
import type { SnapshotTerms } from "@edge-platform/shared/billing/entitlement-snapshot";
import { planPrices, plans } from "@edge-platform/shared/db/schema/catalog";
import { entitlementSnapshots, subscriptions } from "@edge-platform/shared/db/schema/subscriptions";
import type { RawUsageMessage } from "@edge-platform/shared/queues/usage";
import { usageLogName, withShard } from "@edge-platform/shared/usage-log/client";
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

/** Each test tenant's API key, for reading its events through the API. */
const apiKeys = new Map<string, string>();

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
  apiKeys.set(tenantId, key.body.key as string);
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

/** An event as GET /usage/events lists it. */
export interface ListedEvent {
  id: string;
  eventId: string;
  feature: string;
  amount: number;
  status: string;
  subscriptionId: string | null;
  periodKey: string | null;
  validatedAt: string | null;
  aggregatedAt: string | null;
}

/** Every event of the tenant, as its API key lists them (all pages). */
export async function listedEvents(tenantId: string): Promise<ListedEvent[]> {
  const token = apiKeys.get(tenantId);
  if (!token) throw new Error(`no API key for tenant ${tenantId}`);
  const events: ListedEvent[] = [];
  let cursor: string | null = null;
  do {
    const page = await billing(
      `/usage/events?limit=1000${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`,
      { token },
    );
    expect(page.status, JSON.stringify(page.body)).toBe(200);
    events.push(...page.body.data);
    cursor = page.body.meta.nextCursor;
  } while (cursor);
  return events;
}

export async function statusCounts(tenantId: string): Promise<Record<string, number>> {
  const counts: Record<string, number> = {};
  for (const event of await listedEvents(tenantId)) {
    counts[event.status] = (counts[event.status] ?? 0) + 1;
  }
  return counts;
}

/** The tenant's usage log (one shard: the default count). */
export function usageLogOf(tenantId: string) {
  return env.USAGE_LOG.get(env.USAGE_LOG.idFromName(usageLogName(tenantId, 0))) as unknown as {
    import(input: unknown): Promise<number>;
    redrive(nowMs?: number): Promise<{ raw: number; validated: number; failed: number }>;
  };
}

/**
 * PENDING events in the tenant's usage log whose raw messages never went
 * out (no outbox entry), and those messages: what a lost message leaves.
 */
export async function storePending(
  tenant: PipelineTenant,
  count: number,
  shape: (i: number) => { feature?: string; amount: number },
): Promise<RawUsageMessage[]> {
  const receivedAt = new Date().toISOString();
  const messages: RawUsageMessage[] = Array.from({ length: count }, (_, i) => ({
    id: withShard(crypto.randomUUID(), 0),
    tenantId: tenant.tenantId,
    eventId: crypto.randomUUID(),
    feature: shape(i).feature ?? "api_calls",
    amount: shape(i).amount,
    timestamp: receivedAt,
    receivedAt,
  }));
  await usageLogOf(tenant.tenantId).import({
    tenantId: tenant.tenantId,
    shard: 0,
    events: messages.map((message) => ({
      id: message.id,
      eventId: message.eventId,
      feature: message.feature,
      amount: message.amount,
      timestamp: message.timestamp,
      receivedAt: message.receivedAt,
      status: "PENDING",
      reason: null,
      message: null,
      subscriptionId: null,
      periodKey: null,
      periodStart: null,
      periodEnd: null,
      validatedAt: null,
      aggregatedAt: null,
      metadata: {},
    })),
  });
  return messages;
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
  const events = await listedEvents(tenantId);
  const counts: Record<string, number> = {};
  const units = new Map<string, number>();
  for (const event of events) {
    counts[event.status] = (counts[event.status] ?? 0) + 1;
    if (event.status === "AGGREGATED") {
      units.set(event.feature, (units.get(event.feature) ?? 0) + event.amount);
    }
  }
  expect(events.length).toBe((counts.AGGREGATED ?? 0) + (counts.REJECTED ?? 0));
  const aggregatedEvents = [...units.entries()]
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([feature, amount]) => ({ feature, amount }));
  const { results: aggregates } = await env.DB.prepare(
    `SELECT feature_lookup_key AS feature, SUM(amount) AS amount FROM usage_aggregates
      WHERE tenant_id = ? AND amount > 0 GROUP BY feature_lookup_key ORDER BY feature_lookup_key`,
  )
    .bind(tenantId)
    .all<{ feature: string; amount: number }>();
  expect(aggregates).toEqual(aggregatedEvents);
  return { counts, aggregated: Object.fromEntries(units) };
}
