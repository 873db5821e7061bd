import { expect } from "vitest";
import { type Account, call, db, register, unique } from "./helpers.ts";

// Builders for catalog and subscription tests, all through the HTTP API
// except the platform-admin flag, which no endpoint grants (local stacks get
// one from DEV_ADMIN_EMAIL; tests set it on a fresh account).

export async function platformAdmin(): Promise<Account> {
  const account = await register();
  await db()
    .prepare("UPDATE users SET is_platform_admin = 1 WHERE id = ?")
    .bind(account.user.id)
    .run();
  return account;
}

/** A lookup key or plan slug nobody else in the shared test database uses. */
export const uniqueKey = (label: string) =>
  unique(label)
    .toLowerCase()
    .replaceAll("-", "_")
    .replace(/[^a-z0-9_]/g, "");
export const uniquePlanSlug = (label = "plan") =>
  unique(label)
    .toLowerCase()
    .replace(/[^a-z0-9-]/g, "");

async function ok(path: string, admin: Account, body: unknown, method = "POST") {
  const result = await call(path, { token: admin.accessToken, body, method });
  expect(result.status, `${method} ${path}: ${JSON.stringify(result.body)}`).toBeLessThan(300);
  return result.body;
}

export async function createPlan(admin: Account, overrides: Record<string, unknown> = {}) {
  return ok("/api/v1/plans", admin, { name: "Plan", slug: uniquePlanSlug(), ...overrides });
}

export async function createPrice(
  admin: Account,
  planId: string,
  overrides: Record<string, unknown> = {},
) {
  return ok(`/api/v1/plans/${planId}/prices`, admin, {
    interval: "MONTHLY",
    amount: 2900,
    currency: "usd",
    ...overrides,
  });
}

export async function createFeature(
  admin: Account,
  type: "BOOLEAN" | "QUOTA" | "METERED",
  overrides: Record<string, unknown> = {},
) {
  return ok("/api/v1/features", admin, {
    name: `Feature ${type}`,
    lookupKey: uniqueKey(type.toLowerCase()),
    type,
    ...(type === "BOOLEAN" ? {} : { unit: "unit" }),
    ...overrides,
  });
}

export async function grant(
  admin: Account,
  planId: string,
  featureId: string,
  terms: Record<string, unknown>,
) {
  return ok(`/api/v1/plans/${planId}/entitlements`, admin, { featureId, ...terms });
}

export interface BuiltPlan {
  plan: { id: string; slug: string };
  monthly: { id: string };
  annual: { id: string };
  /** Feature lookup keys by role in the plan. */
  keys: { flag: string; hard: string; soft: string; metered: string };
  /** Entitlement ids by the same roles. */
  entitlements: { flag: string; hard: string; soft: string; metered: string };
}

/** A plan with a price per interval and one entitlement of every kind. */
export async function buildPlan(
  admin: Account,
  limits: { hard?: number; soft?: number; included?: number } = {},
): Promise<BuiltPlan> {
  const plan = await createPlan(admin);
  const monthly = await createPrice(admin, plan.id, { interval: "MONTHLY", amount: 2900 });
  const annual = await createPrice(admin, plan.id, { interval: "ANNUALLY", amount: 29000 });
  const flag = await createFeature(admin, "BOOLEAN");
  const hard = await createFeature(admin, "QUOTA");
  const soft = await createFeature(admin, "QUOTA");
  const metered = await createFeature(admin, "METERED");
  const entitlements = {
    flag: (await grant(admin, plan.id, flag.id, { value: true })).id,
    hard: (
      await grant(admin, plan.id, hard.id, {
        limit: limits.hard ?? 50,
        limitBehavior: "HARD",
        resetPeriod: "MONTHLY",
      })
    ).id,
    soft: (
      await grant(admin, plan.id, soft.id, {
        limit: limits.soft ?? 5,
        limitBehavior: "SOFT",
        overagePrice: 2500,
        resetPeriod: "MONTHLY",
      })
    ).id,
    metered: (
      await grant(admin, plan.id, metered.id, {
        includedAmount: limits.included ?? 1000,
        overagePrice: 10,
        resetPeriod: "MONTHLY",
      })
    ).id,
  };
  return {
    plan,
    monthly,
    annual,
    keys: {
      flag: flag.lookupKey,
      hard: hard.lookupKey,
      soft: soft.lookupKey,
      metered: metered.lookupKey,
    },
    entitlements,
  };
}

export async function subscribe(
  owner: Account,
  planId: string,
  priceId: string,
  extra: Record<string, unknown> = {},
) {
  const result = await call("/api/v1/subscriptions", {
    token: owner.accessToken,
    tenant: owner.tenant.id,
    body: { planId, priceId, ...extra },
  });
  expect(result.status, JSON.stringify(result.body)).toBe(201);
  return result.body;
}

export async function createApiKey(owner: Account): Promise<string> {
  const result = await call("/api/v1/api-keys", {
    token: owner.accessToken,
    tenant: owner.tenant.id,
    body: { name: "server" },
  });
  expect(result.status, JSON.stringify(result.body)).toBe(201);
  return result.body.key;
}

/** Entitlement calls as the tenant's server would make them, with its API key. */
export function entitlementsFor(key: string) {
  return {
    check: (featureKey: string) => call(`/api/v1/entitlements/${featureKey}/check`, { token: key }),
    consume: (featureKey: string, amount = 1) =>
      call(`/api/v1/entitlements/${featureKey}/consume`, { token: key, body: { amount } }),
  };
}
