/**
 * The demo catalog (plans free, pro and enterprise with monthly and annual
 * prices; BOOLEAN, QUOTA HARD and SOFT, and METERED features) and a Pro
 * subscription for the demo tenant, as SQL for scripts/demo-data.ts.
 *
 * Every statement inserts only what is missing (by slug, lookup key, plan
 * and feature, price slot, or subscription id), so loading it again leaves
 * whatever a developer changed in place.
 */
import { initialSubscriptionPeriods } from "../shared/src/billing/billing-period.ts";

const sqlText = (value: string) => `'${value.replaceAll("'", "''")}'`;
const sqlValue = (value: string | number | boolean | null) =>
  value === null
    ? "NULL"
    : typeof value === "string"
      ? sqlText(value)
      : typeof value === "boolean"
        ? value
          ? "1"
          : "0"
        : String(value);

/** A random UUID v4, in SQL, for rows created by INSERT ... SELECT. */
const SQL_UUID = `lower(hex(randomblob(4))) || '-' || lower(hex(randomblob(2))) || '-4' || substr(lower(hex(randomblob(2))), 2) || '-' || substr('89ab', 1 + abs(random()) % 4, 1) || substr(lower(hex(randomblob(2))), 2) || '-' || lower(hex(randomblob(6)))`;

// Fixed ids keep the demo rows stable across runs and machines.
const id = (n: number) => `00000000-0000-4000-8000-0000000d${n.toString(16).padStart(4, "0")}`;

type Terms = {
  value?: boolean;
  limit?: number;
  limitBehavior?: "HARD" | "SOFT";
  overagePrice?: number;
  includedAmount?: number;
  resetPeriod?: "MONTHLY" | "ANNUALLY" | "NEVER";
};

export const DEMO_FEATURES = [
  { id: id(1), lookupKey: "sso", name: "Single sign-on", type: "BOOLEAN", unit: null },
  {
    id: id(2),
    lookupKey: "priority_support",
    name: "Priority support",
    type: "BOOLEAN",
    unit: null,
  },
  { id: id(3), lookupKey: "projects", name: "Projects", type: "QUOTA", unit: "project" },
  { id: id(4), lookupKey: "seats", name: "Seats", type: "QUOTA", unit: "seat" },
  { id: id(5), lookupKey: "api_calls", name: "API calls", type: "METERED", unit: "call" },
] as const;

type FeatureKey = (typeof DEMO_FEATURES)[number]["lookupKey"];

/** Prices in cents; overage prices in micro-cents (1 cent = 100 micro-cents). */
export const DEMO_PLANS: {
  id: string;
  slug: string;
  name: string;
  description: string;
  displayOrder: number;
  /** `trialDays`: the free trial a tenant's first subscription to the price gets (one per tenant, ever). */
  prices: { id: string; interval: "MONTHLY" | "ANNUALLY"; amount: number; trialDays?: number }[];
  entitlements: Record<FeatureKey, Terms>;
}[] = [
  {
    id: id(0x101),
    slug: "free",
    name: "Free",
    description: "For trying things out",
    displayOrder: 0,
    prices: [
      { id: id(0x201), interval: "MONTHLY", amount: 0 },
      { id: id(0x202), interval: "ANNUALLY", amount: 0 },
    ],
    entitlements: {
      sso: { value: false },
      priority_support: { value: false },
      projects: { limit: 3, limitBehavior: "HARD", resetPeriod: "NEVER" },
      // $5.00 a seat beyond the limit.
      seats: { limit: 2, limitBehavior: "SOFT", overagePrice: 50_000, resetPeriod: "MONTHLY" },
      // 0.1 cent a call beyond the included amount ($1 per 1,000).
      api_calls: { includedAmount: 1_000, overagePrice: 10, resetPeriod: "MONTHLY" },
    },
  },
  {
    id: id(0x102),
    slug: "pro",
    name: "Pro",
    description: "For growing teams",
    displayOrder: 1,
    prices: [
      { id: id(0x203), interval: "MONTHLY", amount: 2_900, trialDays: 14 },
      { id: id(0x204), interval: "ANNUALLY", amount: 29_000 },
    ],
    entitlements: {
      sso: { value: false },
      priority_support: { value: true },
      projects: { limit: 25, limitBehavior: "HARD", resetPeriod: "NEVER" },
      seats: { limit: 10, limitBehavior: "SOFT", overagePrice: 40_000, resetPeriod: "MONTHLY" },
      api_calls: { includedAmount: 100_000, overagePrice: 8, resetPeriod: "MONTHLY" },
    },
  },
  {
    id: id(0x103),
    slug: "enterprise",
    name: "Enterprise",
    description: "For organisations with single sign-on and volume",
    displayOrder: 2,
    prices: [
      { id: id(0x205), interval: "MONTHLY", amount: 9_900, trialDays: 30 },
      { id: id(0x206), interval: "ANNUALLY", amount: 99_000 },
    ],
    entitlements: {
      sso: { value: true },
      priority_support: { value: true },
      projects: { limit: 1_000, limitBehavior: "HARD", resetPeriod: "NEVER" },
      seats: { limit: 100, limitBehavior: "SOFT", overagePrice: 30_000, resetPeriod: "MONTHLY" },
      api_calls: { includedAmount: 2_000_000, overagePrice: 5, resetPeriod: "MONTHLY" },
    },
  },
];

const DEMO_SUBSCRIPTION_ID = id(0x301);

export function demoCatalogSql(demoTenantSlug: string, now: Date = new Date()): string[] {
  const statements: string[] = [];
  for (const feature of DEMO_FEATURES) {
    statements.push(
      `INSERT INTO features (id, name, lookup_key, type, unit)
       VALUES (${sqlText(feature.id)}, ${sqlText(feature.name)}, ${sqlText(feature.lookupKey)}, ${sqlText(feature.type)}, ${sqlValue(feature.unit)})
       ON CONFLICT DO NOTHING;`,
    );
  }
  for (const plan of DEMO_PLANS) {
    statements.push(
      `INSERT INTO plans (id, name, slug, description, display_order)
       VALUES (${sqlText(plan.id)}, ${sqlText(plan.name)}, ${sqlText(plan.slug)}, ${sqlText(plan.description)}, ${plan.displayOrder})
       ON CONFLICT DO NOTHING;`,
    );
    for (const price of plan.prices) {
      statements.push(
        `INSERT INTO plan_prices (id, plan_id, interval, amount, currency, trial_days)
         SELECT ${sqlText(price.id)}, p.id, ${sqlText(price.interval)}, ${price.amount}, 'usd', ${price.trialDays ?? "NULL"}
         FROM plans p WHERE p.slug = ${sqlText(plan.slug)}
           AND NOT EXISTS (SELECT 1 FROM plan_prices pp WHERE pp.plan_id = p.id AND pp.interval = ${sqlText(price.interval)} AND pp.currency = 'usd')
           AND NOT EXISTS (SELECT 1 FROM plan_prices pp WHERE pp.id = ${sqlText(price.id)});`,
      );
      if (price.trialDays !== undefined) {
        // State loaded before prices had trials gets them; a trial set since is kept.
        statements.push(
          `UPDATE plan_prices SET trial_days = ${price.trialDays} WHERE id = ${sqlText(price.id)} AND trial_days IS NULL;`,
        );
      }
    }
    for (const [lookupKey, terms] of Object.entries(plan.entitlements)) {
      statements.push(
        `INSERT INTO plan_entitlements (id, plan_id, feature_id, value, "limit", limit_behavior, overage_price, included_amount, reset_period)
         SELECT ${SQL_UUID}, p.id, f.id, ${sqlValue(terms.value ?? null)}, ${sqlValue(terms.limit ?? null)}, ${sqlValue(terms.limitBehavior ?? null)},
                ${sqlValue(terms.overagePrice ?? null)}, ${sqlValue(terms.includedAmount ?? null)}, ${sqlValue(terms.resetPeriod ?? null)}
         FROM plans p, features f WHERE p.slug = ${sqlText(plan.slug)} AND f.lookup_key = ${sqlText(lookupKey)}
         ON CONFLICT DO NOTHING;`,
      );
    }
  }

  // The demo tenant on Pro (monthly), unless it has ever had a subscription.
  const periods = initialSubscriptionPeriods(now, "MONTHLY");
  const startedAt = now.toISOString();
  statements.push(
    `INSERT INTO subscriptions (id, tenant_id, plan_id, price_id, status, started_at, current_period_start, current_period_end, billing_anchor)
     SELECT ${sqlText(DEMO_SUBSCRIPTION_ID)}, t.id, p.id, pp.id, 'ACTIVE', ${sqlText(startedAt)},
            ${sqlText(periods.currentPeriodStart.toISOString())}, ${sqlText(periods.currentPeriodEnd.toISOString())}, ${periods.billingAnchor}
     FROM tenants t, plans p, plan_prices pp
     WHERE t.slug = ${sqlText(demoTenantSlug)} AND p.slug = 'pro' AND pp.plan_id = p.id
       AND pp.interval = 'MONTHLY' AND pp.currency = 'usd' AND pp.is_active = 1
       AND NOT EXISTS (SELECT 1 FROM subscriptions s WHERE s.tenant_id = t.id);`,
    // Its snapshots, copied from Pro's entitlements, only while the subscription has none.
    `INSERT INTO entitlement_snapshots (id, subscription_id, feature_lookup_key, feature_type, value, "limit", limit_behavior, overage_price, included_amount, reset_period)
     SELECT ${SQL_UUID}, s.id, f.lookup_key, f.type, e.value, e."limit", e.limit_behavior, e.overage_price, e.included_amount, e.reset_period
     FROM subscriptions s
     JOIN plan_entitlements e ON e.plan_id = s.plan_id
     JOIN features f ON f.id = e.feature_id AND f.status = 'ACTIVE'
     WHERE s.id = ${sqlText(DEMO_SUBSCRIPTION_ID)}
       AND NOT EXISTS (SELECT 1 FROM entitlement_snapshots x WHERE x.subscription_id = s.id)
     ON CONFLICT DO NOTHING;`,
  );
  return statements;
}
