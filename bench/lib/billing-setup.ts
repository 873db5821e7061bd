/** What the billing benchmarks share: requests to the API and the tenant they measure with. */
import { devVarsFile, readDevVars } from "../../scripts/lib/dev-vars.ts";
import { ROOT } from "../../scripts/lib/wrangler.ts";

export interface SendOptions {
  body?: unknown;
  token?: string;
  tenant?: string;
  method?: string;
}

/** One API request during set-up; anything but a 2xx stops the benchmark. */
export async function send(base: string, path: string, options: SendOptions = {}) {
  const headers: Record<string, string> = {};
  if (options.body !== undefined) headers["content-type"] = "application/json";
  if (options.token) headers.authorization = `Bearer ${options.token}`;
  if (options.tenant) headers["x-tenant-id"] = options.tenant;
  const response = await fetch(`${base}/api/v1${path}`, {
    method: options.method ?? (options.body === undefined ? "GET" : "POST"),
    headers,
    ...(options.body !== undefined ? { body: JSON.stringify(options.body) } : {}),
  });
  // biome-ignore lint/suspicious/noExplicitAny: setup responses are read field by field
  const body: any = await response.json();
  if (response.status >= 300) {
    throw new Error(`${path} answered ${response.status}: ${JSON.stringify(body)}`);
  }
  return body;
}

export function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2
    ? (sorted[middle] ?? 0)
    : ((sorted[middle - 1] ?? 0) + (sorted[middle] ?? 0)) / 2;
}

/** The local platform administrator's access token (from the development variables). */
export async function adminToken(base: string): Promise<string> {
  const vars = readDevVars(devVarsFile(ROOT));
  const login = await send(base, "/auth/login", {
    body: { email: vars.DEV_ADMIN_EMAIL, password: vars.DEV_ADMIN_PASSWORD },
  });
  return login.accessToken as string;
}

export interface MeasuredTenant {
  accessToken: string;
  tenantId: string;
  apiKey: string;
}

/** A newly registered tenant owner, subscribed to the price, with an API key: the caller being measured. */
export async function subscribedTenantWithKey(
  base: string,
  name: string,
  subscription: { planId: string; priceId: string },
): Promise<MeasuredTenant> {
  const owner = await send(base, "/auth/register", {
    body: {
      email: `${name}@example.com`,
      password: "BenchPassw0rd",
      firstName: "Bench",
      lastName: "Mark",
      tenantName: name,
    },
  });
  const as = { token: owner.accessToken as string, tenant: owner.tenant.id as string };
  await send(base, "/subscriptions", { ...as, body: subscription });
  const apiKey = (await send(base, "/api-keys", { ...as, body: { name } })).key as string;
  return { accessToken: as.token, tenantId: as.tenant, apiKey };
}

/**
 * The demo tenant (its id fixed, so the stack's per-tenant settings can name
 * it, e.g. its counter shards) moved to the price as its platform
 * administrator, with a new API key.
 */
export async function demoTenantWithKey(
  base: string,
  admin: string,
  tenantId: string,
  subscription: { planId: string; priceId: string },
): Promise<{ tenantId: string; apiKey: string }> {
  const as = { token: admin, tenant: tenantId };
  await send(base, "/subscriptions", { ...as, body: subscription });
  const apiKey = (await send(base, "/api-keys", { ...as, body: { name: "bench shards" } }))
    .key as string;
  return { tenantId, apiKey };
}

/**
 * A free plan with a HARD quota far above what a run can use (every consume
 * succeeds and goes through the full limit check) and a METERED feature
 * billed per unit, both new for this run (`label` keeps names unique).
 */
export async function measuredPlan(base: string, admin: string, label: string) {
  const feature = (name: string, type: "QUOTA" | "METERED") =>
    send(base, "/features", {
      token: admin,
      body: { name: `${label} ${name}`, lookupKey: `${label}_${name}`, type, unit: "op" },
    });
  const quota = await feature("quota", "QUOTA");
  const metered = await feature("meter", "METERED");
  const plan = await send(base, "/plans", {
    token: admin,
    body: { name: label, slug: label.replaceAll("_", "-"), isPublic: false },
  });
  const price = await send(base, `/plans/${plan.id}/prices`, {
    token: admin,
    body: { interval: "MONTHLY", amount: 0, currency: "usd" },
  });
  await send(base, `/plans/${plan.id}/entitlements`, {
    token: admin,
    body: {
      featureId: quota.id,
      limit: 1_000_000_000,
      limitBehavior: "HARD",
      resetPeriod: "MONTHLY",
    },
  });
  await send(base, `/plans/${plan.id}/entitlements`, {
    token: admin,
    body: { featureId: metered.id, includedAmount: 0, overagePrice: 1, resetPeriod: "MONTHLY" },
  });
  return { quota, metered, plan, price };
}

/**
 * A prepaid plan (price of 0 with `prepaid: true`) with one METERED feature
 * at 1 cent a unit and nothing included, and a tenant on it holding a
 * promotional grant of 10^9 cents: every consume draws its cent from the
 * balance in the counter and none runs out during a run.
 */
export async function prepaidTenant(base: string, admin: string, label: string) {
  const feature = await send(base, "/features", {
    token: admin,
    body: { name: `${label} prepaid`, lookupKey: `${label}_prepaid`, type: "METERED", unit: "op" },
  });
  const plan = await send(base, "/plans", {
    token: admin,
    body: {
      name: `${label} prepaid`,
      slug: `${label}-prepaid`.replaceAll("_", "-"),
      isPublic: false,
    },
  });
  const price = await send(base, `/plans/${plan.id}/prices`, {
    token: admin,
    body: { interval: "MONTHLY", amount: 0, currency: "usd", prepaid: true },
  });
  await send(base, `/plans/${plan.id}/entitlements`, {
    token: admin,
    body: { featureId: feature.id, includedAmount: 0, overagePrice: 100, resetPeriod: "MONTHLY" },
  });
  const tenant = await subscribedTenantWithKey(base, `${label}-prepaid`.replaceAll("_", "-"), {
    planId: plan.id,
    priceId: price.id,
  });
  await send(base, "/credit-grants", {
    token: admin,
    tenant: tenant.tenantId,
    body: { amount: 1_000_000_000, currency: "usd", category: "promotional" },
  });
  return { feature, tenant };
}
