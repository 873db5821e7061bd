import { env } from "cloudflare:workers";
import { entitlementCounter } from "@edge-platform/shared/billing/entitlement-counter-client";
import { expect, vi } from "vitest";
import type { BillingCycleOptions } from "../src/invoicing/billing-cycle.ts";
import { runSubscriptionJobs } from "../src/invoicing/subscription-jobs.ts";
import {
  type DevelopmentOutcome,
  DevelopmentPaymentProvider,
} from "../src/payments/providers/development-provider.ts";
import type { PaymentProvider } from "../src/payments/providers/payment-provider.ts";
import { signWebhook } from "../src/platform/domain/webhook-signature.ts";
import { billingCycleOver } from "../src/services.ts";
import { createFeature, createPlan, createPrice, grant } from "./catalog-helpers.ts";
import { type Account, type CallOptions, call, login } from "./helpers.ts";

// Builders for the money tests: a plan with billable usage, a steerable
// payment provider, the billing cycle at a chosen instant, signed webhooks.

export const WEBHOOK_SECRET = "test-only-payprovider-webhook-secret-0123456789";

export interface MoneyPlan {
  planId: string;
  priceId: string;
  name: string;
  keys: { seats: string; calls: string; hard: string };
}

/**
 * A monthly plan: `seats` QUOTA SOFT (limit 5, $5.00 = 50,000 micro-cents a
 * seat beyond), `calls` METERED (1,000 included, 15 micro-cents a call
 * beyond), `hard` QUOTA HARD (never billed).
 */
export async function buildMoneyPlan(
  admin: Account,
  amount = 2900,
  priceExtra: { trialDays?: number } = {},
): Promise<MoneyPlan> {
  const name = `Growth ${amount}`;
  const plan = await createPlan(admin, { name });
  const price = await createPrice(admin, plan.id, { interval: "MONTHLY", amount, ...priceExtra });
  const seats = await createFeature(admin, "QUOTA");
  const calls = await createFeature(admin, "METERED");
  const hard = await createFeature(admin, "QUOTA");
  await grant(admin, plan.id, seats.id, {
    limit: 5,
    limitBehavior: "SOFT",
    overagePrice: 50_000,
    resetPeriod: "MONTHLY",
  });
  await grant(admin, plan.id, calls.id, {
    includedAmount: 1000,
    overagePrice: 15,
    resetPeriod: "MONTHLY",
  });
  await grant(admin, plan.id, hard.id, {
    limit: 10,
    limitBehavior: "HARD",
    resetPeriod: "MONTHLY",
  });
  return {
    planId: plan.id,
    priceId: price.id,
    name,
    keys: { seats: seats.lookupKey, calls: calls.lookupKey, hard: hard.lookupKey },
  };
}

/** A development provider whose next outcomes the test sets. */
export function steerableProvider(initial: DevelopmentOutcome = "pending") {
  const state = { outcome: initial };
  const provider = new DevelopmentPaymentProvider(() => state.outcome);
  return { provider, state };
}

/** The scheduled jobs with the billing cycle at `at`, limited to `tenantIds`. */
export function runCycle(
  at: Date,
  provider: PaymentProvider,
  tenantIds: readonly string[],
  options: BillingCycleOptions = {},
) {
  return runSubscriptionJobs(env, at, {
    billing: billingCycleOver(env, provider, tenantIds, options),
  });
}

/** Usage through the tenant's counter object at an injected instant. */
export async function consumeAt(tenantId: string, key: string, amount: number, at: Date) {
  const result = await entitlementCounter(env.ENTITLEMENT_COUNTER, tenantId).consume(
    key,
    amount,
    at.getTime(),
  );
  expect(result.status, JSON.stringify(result)).toBe("consumed");
  return result;
}

export function asTenant(account: { accessToken: string }, tenantId: string) {
  return (path: string, options: CallOptions = {}) =>
    call(path, { token: account.accessToken, tenant: tenantId, ...options });
}

/** Runs `work` with the wall clock set to `at` (only Date is faked), signed in afresh at that time. */
export async function atWallClock<T>(
  at: Date,
  owner: Account,
  work: (session: { accessToken: string }) => Promise<T>,
): Promise<T> {
  vi.useFakeTimers({ toFake: ["Date"], now: at });
  try {
    const session = await login(owner.email, owner.password);
    return await work(session);
  } finally {
    vi.useRealTimers();
  }
}

export async function signedWebhook(
  event: unknown,
  options: { secret?: string; timestamp?: number; tamper?: (raw: string) => string } = {},
) {
  const raw = JSON.stringify(event);
  const timestamp = options.timestamp ?? Math.floor(Date.now() / 1000);
  const header = await signWebhook(options.secret ?? WEBHOOK_SECRET, raw, timestamp);
  return call("/api/v1/webhooks/payprovider", {
    rawBody: options.tamper ? options.tamper(raw) : raw,
    headers: { "payprovider-signature": header },
  });
}

export function paymentIntentEvent(
  type: string,
  providerPaymentId: string,
  extra: Record<string, unknown> = {},
) {
  return {
    id: `evt_${crypto.randomUUID().replaceAll("-", "")}`,
    object: "event",
    type,
    data: { object: { id: providerPaymentId, object: "payment_intent", ...extra } },
  };
}

/** The provider's report of a payment's refunds: `amountRefunded` is cumulative, as Stripe's charge.refunded. */
export function chargeRefunded(providerPaymentId: string, amountRefunded: number) {
  return {
    id: `evt_${crypto.randomUUID().replaceAll("-", "")}`,
    object: "event",
    type: "charge.refunded",
    data: {
      object: {
        id: `ch_${providerPaymentId}`,
        object: "charge",
        payment_intent: providerPaymentId,
        amount_refunded: amountRefunded,
        currency: "usd",
      },
    },
  };
}

/** Waits until the queue consumer has processed the stored webhook event. */
export async function waitForWebhook(providerEventId: string, provider = "payprovider") {
  return vi.waitFor(
    async () => {
      const row = await env.DB.prepare(
        "SELECT status, outcome, processing_error FROM webhook_events WHERE provider = ? AND provider_event_id = ?",
      )
        .bind(provider, providerEventId)
        .first<{ status: string; outcome: string | null; processing_error: string | null }>();
      if (!row || row.status === "PENDING" || row.status === "PROCESSING") {
        throw new Error(`webhook ${providerEventId} not processed yet: ${JSON.stringify(row)}`);
      }
      return row;
    },
    { timeout: 15_000, interval: 100 },
  );
}

/** Everything money-related of a tenant, to prove a rerun changed nothing. */
export async function moneySnapshot(tenantId: string) {
  const [invoices, ledger, attempts, subscriptions] = await Promise.all(
    [
      "SELECT id, status, total, invoice_number, period_start, period_end, dunning_exhausted_at FROM invoices WHERE tenant_id = ? ORDER BY id",
      "SELECT id, type, debit, credit FROM ledger_entries WHERE tenant_id = ? ORDER BY id",
      "SELECT id, status, attempt_number, next_retry_at FROM payment_attempts WHERE tenant_id = ? ORDER BY id",
      "SELECT id, status, current_period_start, current_period_end FROM subscriptions WHERE tenant_id = ? ORDER BY id",
    ].map((sql) => env.DB.prepare(sql).bind(tenantId).all()),
  );
  return {
    invoices: invoices?.results,
    ledger: ledger?.results,
    attempts: attempts?.results,
    subscriptions: subscriptions?.results,
  };
}
