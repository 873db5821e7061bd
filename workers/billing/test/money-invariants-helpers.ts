import { env } from "cloudflare:workers";
import { entitlementCounter } from "@edge-platform/shared/billing/entitlement-counter-client";
import { expect } from "vitest";
import type { DevelopmentOutcome } from "../src/payments/providers/development-provider.ts";
import {
  asTenant,
  chargeRefunded,
  consumeAt,
  paymentIntentEvent,
  runCycle,
  signedWebhook,
  steerableProvider,
  waitForWebhook,
} from "./billing-helpers.ts";
import {
  createFeature,
  createPlan,
  createPrice,
  grant,
  subscribe,
  uniqueKey,
} from "./catalog-helpers.ts";
import { type Account, type CallResult, call, type Json, register } from "./helpers.ts";

// The driver and the referee of the money property: each operation is done
// the way the platform, the tenant or the payment provider would do it, and
// a model of the money that moved outside the platform (what the provider
// collected and gave back, what was marked paid) is kept by the test
// itself, so the ledger is compared with something it did not write.

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;

export type CloseOutcome = "succeeded" | "failed" | "pending" | "unavailable";
export type Settlement = "REDUCE" | "REFUND" | "CREDIT";

export type Op =
  | { kind: "usage"; units: number }
  | { kind: "promotional"; amount: number; priority: number }
  | { kind: "topUp"; amount: number; paidPercent: number }
  | { kind: "settle"; pick: number; outcome: "succeeded" | "failed" | "replay" }
  | { kind: "markPaid"; pick: number }
  | { kind: "refund"; pick: number; permille: number }
  | {
      kind: "creditNote";
      pick: number;
      settlement: Settlement;
      lines: { pick: number; permille: number }[];
    }
  | {
      kind: "coupon";
      percentOff: number;
      duration: "once" | "repeating" | "forever";
      again: boolean;
      pick: number;
    }
  | { kind: "void"; pick: number }
  | { kind: "voidGrant"; pick: number }
  | { kind: "close"; outcome: CloseOutcome };

/** A payment as the provider sees it: collected or not, and how much of it went back. */
interface ProviderPayment {
  amount: number;
  state: "pending" | "succeeded" | "failed";
  refunded: number;
}

export interface MoneyModel {
  /** Money the tenant handed over: collected by the provider, or paid outside it (mark-paid). */
  received: number;
  /** Money that went back to the tenant through the provider. */
  refunded: number;
  payments: Map<string, ProviderPayment>;
  /** REDUCE credit notes per invoice, as the 201 answers gave them. */
  reduced: Map<string, number>;
  /** Notes the API answered 201 for, by id, with their totals. */
  notes: Map<string, number>;
  couponCodes: string[];
}

export interface World {
  admin: Account;
  owner: Account;
  tenantId: string;
  subscriptionId: string;
  usageKey: string;
  api: ReturnType<typeof asTenant>;
  steer: ReturnType<typeof steerableProvider>;
  /** Requests of the steerable provider already read into the model. */
  seenRequests: number;
  model: MoneyModel;
  /** Each step as done, for the failure message. */
  log: string[];
}

export interface PropertyPlan {
  planId: string;
  priceId: string;
  usageKey: string;
}

/**
 * Base fee 2,900 and one METERED feature, 5 units included, 12.5 cents a
 * unit beyond (an odd price, so draws and lines round half up).
 */
export async function buildPropertyPlan(admin: Account): Promise<PropertyPlan> {
  const plan = await createPlan(admin, { name: "Money invariants" });
  const price = await createPrice(admin, plan.id, { amount: 2900 });
  const feature = await createFeature(admin, "METERED");
  await grant(admin, plan.id, feature.id, {
    includedAmount: 5,
    overagePrice: 1250,
    resetPeriod: "MONTHLY",
  });
  return { planId: plan.id, priceId: price.id, usageKey: feature.lookupKey };
}

export async function newWorld(admin: Account, plan: PropertyPlan, taxRate: number) {
  const owner = await register();
  const tenantId = owner.tenant.id;
  if (taxRate > 0) {
    const put = await call(`/api/v1/tenants/${tenantId}/billing-details`, {
      method: "PUT",
      token: admin.accessToken,
      body: {
        taxRate,
        legalName: "Invariant Engines Ltd",
        address: { line1: "1 Ledger Row", city: "London", postalCode: "EC1A 1AA", country: "gb" },
      },
    });
    expect(put.status, JSON.stringify(put.body)).toBe(200);
  }
  const subscription = await subscribe(owner, plan.planId, plan.priceId);
  const world: World = {
    admin,
    owner,
    tenantId,
    subscriptionId: subscription.id,
    usageKey: plan.usageKey,
    api: asTenant(admin, tenantId),
    steer: steerableProvider("pending"),
    seenRequests: 0,
    model: {
      received: 0,
      refunded: 0,
      payments: new Map(),
      reduced: new Map(),
      notes: new Map(),
      couponCodes: [],
    },
    log: [`tenant ${tenantId}, tax ${taxRate}%`],
  };
  return world;
}

/** A 2xx, or a clean refusal: never a 5xx, always the error shape. */
function expectCleanAnswer(result: CallResult, what: string) {
  expect(result.status, `${what}: ${JSON.stringify(result.body)}`).toBeLessThan(500);
  if (result.status >= 400) {
    expect(result.body?.statusCode, `${what}: ${JSON.stringify(result.body)}`).toBe(result.status);
  }
  return result.status < 300;
}

const pickOf = <T>(items: readonly T[], pick: number): T | undefined =>
  items.length === 0 ? undefined : items[pick % items.length];

async function invoicesOf(tenantId: string) {
  const { results } = await env.DB.prepare(
    `SELECT id, status, kind, total, invoice_number AS number FROM invoices
     WHERE tenant_id = ? ORDER BY created_at, rowid`,
  )
    .bind(tenantId)
    .all<{ id: string; status: string; kind: string; total: number; number: string | null }>();
  return results;
}

async function subscriptionOf(world: World) {
  return env.DB.prepare(
    "SELECT status, current_period_start AS start, current_period_end AS end FROM subscriptions WHERE id = ?",
  )
    .bind(world.subscriptionId)
    .first<{ status: string; start: string; end: string }>();
}

/** Payments the platform asked for that the model has not seen yet: pending at the provider. */
async function trackAttempts(world: World) {
  const { results } = await env.DB.prepare(
    `SELECT provider_payment_id AS pid, amount FROM payment_attempts
     WHERE tenant_id = ? AND provider_payment_id IS NOT NULL`,
  )
    .bind(world.tenantId)
    .all<{ pid: string; amount: number }>();
  for (const row of results) {
    if (!world.model.payments.has(row.pid)) {
      world.model.payments.set(row.pid, { amount: row.amount, state: "pending", refunded: 0 });
    }
  }
}

/** What the steerable provider answered during a billing cycle, as money collected. */
function trackCycleRequests(world: World, outcome: CloseOutcome) {
  const requests = world.steer.provider.requests.slice(world.seenRequests);
  world.seenRequests = world.steer.provider.requests.length;
  // An unreachable provider made no payment.
  if (outcome === "unavailable") return;
  for (const request of requests) {
    const pid = `dev_pi_${request.idempotencyKey.replaceAll("-", "")}`;
    const known = world.model.payments.get(pid);
    if (known?.state === "succeeded") continue;
    world.model.payments.set(pid, {
      amount: request.amount,
      state: outcome === "succeeded" ? "succeeded" : outcome === "failed" ? "failed" : "pending",
      refunded: known?.refunded ?? 0,
    });
    if (outcome === "succeeded") world.model.received += request.amount;
  }
}

async function deliver(event: Json, what: string) {
  const sent = await signedWebhook(event);
  expect(sent.status, `${what}: ${JSON.stringify(sent.body)}`).toBe(200);
  const processed = await waitForWebhook(event.id);
  expect(processed.status, `${what}: ${JSON.stringify(processed)}`).toBe("PROCESSED");
}

/** Does one operation and moves the model as the money outside the platform moved. */
export async function apply(world: World, op: Op): Promise<string> {
  const { api, model } = world;
  switch (op.kind) {
    case "usage": {
      const subscription = await subscriptionOf(world);
      if (subscription?.status !== "ACTIVE" && subscription?.status !== "PAST_DUE") {
        return "usage: no live subscription";
      }
      // Inside the current period, later than any earlier usage of it.
      const at = new Date(Date.parse(subscription.start) + HOUR * (world.log.length + 1));
      await consumeAt(world.tenantId, world.usageKey, op.units, at);
      return `usage ${op.units} units at ${at.toISOString()}`;
    }
    case "promotional": {
      const created = await api("/api/v1/credit-grants", {
        body: {
          amount: op.amount,
          currency: "usd",
          category: "promotional",
          priority: op.priority,
        },
      });
      expect(created.status, JSON.stringify(created.body)).toBe(201);
      return `promotional grant ${op.amount} (priority ${op.priority}) ${created.body.id}`;
    }
    case "topUp": {
      const paidAmount = Math.max(1, Math.round((op.amount * op.paidPercent) / 100));
      const created = await api("/api/v1/credit-grants", {
        body: { amount: op.amount, paidAmount, currency: "usd", category: "paid" },
      });
      const ok = expectCleanAnswer(created, "top-up");
      await trackAttempts(world);
      return ok
        ? `paid grant ${op.amount} for ${paidAmount}: grant ${created.body.id}, invoice ${created.body.invoiceId}`
        : `paid grant refused ${created.status}`;
    }
    case "settle": {
      const wanted = op.outcome === "replay" ? "succeeded" : "pending";
      const candidates = [...model.payments.entries()].filter(([, p]) => p.state === wanted);
      const chosen = pickOf(candidates, op.pick);
      if (!chosen) return `settle ${op.outcome}: no ${wanted} payment`;
      const [pid, payment] = chosen;
      if (op.outcome === "failed") {
        await deliver(
          paymentIntentEvent("payment_intent.payment_failed", pid, {
            amount: payment.amount,
            currency: "usd",
            last_payment_error: { message: "Card declined" },
          }),
          "payment_failed",
        );
        payment.state = "failed";
        return `provider: ${pid} failed`;
      }
      await deliver(
        paymentIntentEvent("payment_intent.succeeded", pid, {
          amount: payment.amount,
          currency: "usd",
        }),
        "payment succeeded",
      );
      if (op.outcome === "succeeded") {
        payment.state = "succeeded";
        model.received += payment.amount;
        return `provider: ${pid} succeeded (${payment.amount})`;
      }
      return `provider: ${pid} succeeded again (replay)`;
    }
    case "markPaid": {
      const open = (await invoicesOf(world.tenantId)).filter(
        (invoice) => invoice.status === "OPEN" || invoice.status === "UNCOLLECTIBLE",
      );
      const invoice = pickOf(open, op.pick);
      if (!invoice) return "mark-paid: no open invoice";
      const due = invoice.total - (model.reduced.get(invoice.id) ?? 0);
      const paid = await api(`/api/v1/invoices/${invoice.id}/mark-paid`, { body: {} });
      if (expectCleanAnswer(paid, "mark-paid")) model.received += due;
      return `mark-paid ${invoice.number} (${invoice.kind}, due ${due}): ${paid.status}`;
    }
    case "refund": {
      const candidates = [...model.payments.entries()].filter(([, p]) => p.state === "succeeded");
      const chosen = pickOf(candidates, op.pick);
      if (!chosen) return "refund: no collected payment";
      const [pid, payment] = chosen;
      // permille 0 repeats the provider's last report (a refund made by a note, or a replay).
      const more = Math.ceil(((payment.amount - payment.refunded) * op.permille) / 1000);
      const cumulative = payment.refunded + more;
      await deliver(chargeRefunded(pid, cumulative), "charge.refunded");
      model.refunded += cumulative - payment.refunded;
      payment.refunded = cumulative;
      return `provider: ${pid} refunded, cumulative ${cumulative} of ${payment.amount}`;
    }
    case "creditNote":
      return creditNote(world, op);
    case "coupon": {
      let code = pickOf(model.couponCodes, op.pick);
      if (!op.again || !code) {
        code = uniqueKey("inv").toUpperCase().replaceAll("_", "-").slice(0, 40);
        const created = await call("/api/v1/coupons", {
          token: world.admin.accessToken,
          body: {
            code,
            percentOff: op.percentOff,
            duration: op.duration,
            ...(op.duration === "repeating" ? { durationInPeriods: 2 } : {}),
          },
        });
        expect(created.status, JSON.stringify(created.body)).toBe(201);
        model.couponCodes.push(code);
      }
      const redeemed = await asTenant(world.owner, world.tenantId)(
        `/api/v1/subscriptions/${world.subscriptionId}/coupon`,
        { body: { couponCode: code } },
      );
      expectCleanAnswer(redeemed, "coupon redemption");
      return `coupon ${code} ${op.percentOff}% ${op.duration}: ${redeemed.status}`;
    }
    case "void": {
      const open = (await invoicesOf(world.tenantId)).filter(
        (invoice) => invoice.status === "OPEN" || invoice.status === "UNCOLLECTIBLE",
      );
      const invoice = pickOf(open, op.pick);
      if (!invoice) return "void: no open invoice";
      const voided = await api(`/api/v1/invoices/${invoice.id}/void`, { method: "POST" });
      expectCleanAnswer(voided, "void");
      return `void ${invoice.number} (${invoice.kind}): ${voided.status}`;
    }
    case "voidGrant": {
      const { results } = await env.DB.prepare(
        "SELECT id FROM credit_grants WHERE tenant_id = ? AND status = 'ACTIVE' ORDER BY created_at, rowid",
      )
        .bind(world.tenantId)
        .all<{ id: string }>();
      const chosen = pickOf(results, op.pick);
      if (!chosen) return "void grant: none active";
      const voided = await api(`/api/v1/credit-grants/${chosen.id}/void`, { method: "POST" });
      expectCleanAnswer(voided, "void grant");
      return `void grant ${chosen.id}: ${voided.status}`;
    }
    case "close": {
      const subscription = await subscriptionOf(world);
      if (subscription?.status !== "ACTIVE" && subscription?.status !== "PAST_DUE") {
        return `close: subscription is ${subscription?.status}`;
      }
      const at = new Date(Date.parse(subscription.end) + MINUTE);
      world.steer.state.outcome = op.outcome as DevelopmentOutcome;
      await runCycle(at, world.steer.provider, [world.tenantId]);
      trackCycleRequests(world, op.outcome);
      await trackAttempts(world);
      return `close at ${at.toISOString()}, provider ${op.outcome}`;
    }
  }
}

async function creditNote(world: World, op: Extract<Op, { kind: "creditNote" }>) {
  const { api, model } = world;
  const finalized = (await invoicesOf(world.tenantId)).filter((i) => i.status !== "DRAFT");
  const invoice = pickOf(finalized, op.pick);
  if (!invoice) return "credit note: no finalized invoice";
  const { results: charges } = await env.DB.prepare(
    `SELECT id, kind, amount FROM invoice_line_items
     WHERE invoice_id = ? AND kind IN ('BASE', 'USAGE', 'CREDIT_PURCHASE') AND amount > 0
     ORDER BY sort_order`,
  )
    .bind(invoice.id)
    .all<{ id: string; kind: string; amount: number }>();
  const lines = new Map<string, number>();
  for (const wanted of op.lines) {
    const line = pickOf(charges, wanted.pick);
    if (line && !lines.has(line.id)) {
      lines.set(line.id, Math.max(1, Math.round((line.amount * wanted.permille) / 1000)));
    }
  }
  if (lines.size === 0) return `credit note: ${invoice.number} has no charge lines`;
  const body = {
    reason: "OTHER",
    settlement: op.settlement,
    lines: [...lines].map(([lineItemId, amount]) => ({ lineItemId, amount })),
  };
  const created = await api(`/api/v1/invoices/${invoice.id}/credit-notes`, { body });
  const what = `credit note ${op.settlement} on ${invoice.number} (${invoice.kind} ${invoice.status}) lines ${JSON.stringify(body.lines.map((line) => line.amount))}`;
  if (!expectCleanAnswer(created, what)) return `${what}: ${created.status}`;
  expect(created.status).toBe(201);
  const note = created.body;
  model.notes.set(note.id, note.total);
  if (op.settlement === "REDUCE") {
    model.reduced.set(invoice.id, (model.reduced.get(invoice.id) ?? 0) + note.total);
  }
  if (op.settlement === "REFUND") {
    // The development provider refunds at once; the note names no payment, the invoice's PAYMENT does.
    expect(note.refundStatus, what).toBe("SUCCEEDED");
    const paidBy = await env.DB.prepare(
      "SELECT external_reference AS pid FROM ledger_entries WHERE invoice_id = ? AND type = 'PAYMENT'",
    )
      .bind(invoice.id)
      .first<{ pid: string }>();
    const payment = paidBy ? model.payments.get(paidBy.pid) : undefined;
    expect(payment, `${what}: refunded a payment the provider never collected`).toBeDefined();
    if (payment) payment.refunded += note.total;
    model.refunded += note.total;
  }
  return `${what}: 201 total ${note.total}`;
}

interface InvoiceState {
  id: string;
  number: string | null;
  kind: string;
  status: string;
  total: number;
  credited_total: number;
  applied: number;
  notes: number;
  paid: number;
  received_as_credit: number;
  refunded_payment: number;
  refunded_credit: number;
  refunded_owed: number;
}

/** The invariants, read from D1, the counter and the API after a step. */
export async function expectInvariants(world: World) {
  const { tenantId, model } = world;
  const context = world.log.join("\n  ");
  const counter = entitlementCounter(env.ENTITLEMENT_COUNTER, tenantId);
  await counter.flush();
  const [invoiceRows, noteRows, grantRows] = await env.DB.batch([
    env.DB.prepare(
      `SELECT inv.id, inv.invoice_number AS number, inv.kind, inv.status, inv.total, inv.credited_total,
         (SELECT coalesce(-sum(amount), 0) FROM invoice_line_items
           WHERE invoice_id = inv.id AND kind = 'CREDIT_APPLIED') AS applied,
         (SELECT coalesce(sum(total), 0) FROM credit_notes WHERE invoice_id = inv.id) AS notes,
         coalesce(sum(CASE WHEN le.type = 'PAYMENT' THEN le.credit END), 0) AS paid,
         coalesce(sum(CASE WHEN le.type = 'CREDIT' AND le.external_reference IS NOT NULL
                            AND le.external_reference NOT LIKE 'credit-restored:%'
                            AND le.external_reference NOT LIKE 'invoice-excess:%'
                           THEN le.credit END), 0) AS received_as_credit,
         coalesce(sum(CASE WHEN le.type = 'REFUND' AND (coalesce(le.external_reference, '') NOT LIKE 'credit-refund%'
                                                        OR le.external_reference LIKE 'credit-refund:note:%'
                                                        OR le.external_reference LIKE 'credit-refund-owed:note:%')
                           THEN le.debit END), 0) AS refunded_payment,
         coalesce(sum(CASE WHEN le.type = 'REFUND' AND le.external_reference LIKE 'credit-refund%'
                                                   AND le.external_reference NOT LIKE 'credit-refund:note:%'
                                                   AND le.external_reference NOT LIKE 'credit-refund-owed:note:%'
                           THEN le.debit END), 0) AS refunded_credit,
         coalesce(sum(CASE WHEN le.type = 'REFUND' AND coalesce(le.external_reference, '') NOT LIKE 'credit-refund%'
                                                   AND coalesce(le.external_reference, '') NOT LIKE 'credit-note:%'
                           THEN le.debit END), 0) AS refunded_owed
       FROM invoices inv LEFT JOIN ledger_entries le ON le.invoice_id = inv.id
       WHERE inv.tenant_id = ? GROUP BY inv.id`,
    ).bind(tenantId),
    env.DB.prepare("SELECT id, total FROM credit_notes WHERE tenant_id = ?").bind(tenantId),
    env.DB.prepare(
      `SELECT g.id, g.category, g.status, g.amount, g.drawn, g.written_off AS writtenOff,
              inv.status AS invoiceStatus
       FROM credit_grants g LEFT JOIN invoices inv ON inv.id = g.invoice_id
       WHERE g.tenant_id = ?`,
    ).bind(tenantId),
  ]);
  const invoices = (invoiceRows?.results ?? []) as InvoiceState[];
  const notes = (noteRows?.results ?? []) as { id: string; total: number }[];
  const grants = (grantRows?.results ?? []) as {
    id: string;
    category: string;
    status: string;
    amount: number;
    drawn: number;
    writtenOff: number;
    invoiceStatus: string | null;
  }[];

  // Every note the API answered 201 for is stored as answered (the provider's
  // refunds of TOP_UP payments add notes of their own).
  for (const [id, total] of model.notes) {
    expect(notes.find((note) => note.id === id)?.total, `note ${id}\n  ${context}`).toBe(total);
  }

  // 1. The ledger balance is what the invoices say is owed, less the money the
  // model says the tenant handed over, less credit notes, plus money given back.
  const billed = invoices
    .filter((invoice) => ["OPEN", "PAID", "UNCOLLECTIBLE"].includes(invoice.status))
    .reduce((sum, invoice) => sum + invoice.total + invoice.applied, 0);
  const credited = notes.reduce((sum, note) => sum + note.total, 0);
  const expected = billed - model.received - credited + model.refunded;
  const balance = await world.api("/api/v1/billing/balance?currency=usd");
  expect(balance.status, JSON.stringify(balance.body)).toBe(200);
  expect(
    balance.body.balance,
    `1. balance = billed ${billed} - received ${model.received} - credit notes ${credited} + refunded ${model.refunded}\n  ${context}`,
  ).toBe(expected);

  // 2. Credit the tenant holds is never negative.
  expect(
    balance.body.creditBalance,
    `2. creditBalance never negative\n  ${context}`,
  ).toBeGreaterThanOrEqual(0);

  for (const invoice of invoices) {
    const label = `${invoice.number ?? invoice.id} (${invoice.kind} ${invoice.status}) ${JSON.stringify(invoice)}\n  ${context}`;
    // 3. No invoice total below zero.
    expect(invoice.total, `3. total >= 0: ${label}`).toBeGreaterThanOrEqual(0);
    // 4. Paid less refunded less credited never exceeds the total; credit
    // notes never exceed it; refunds never exceed what was paid.
    expect(
      invoice.paid - invoice.refunded_payment - invoice.credited_total,
      `4. paid - refunded - credited <= total: ${label}`,
    ).toBeLessThanOrEqual(invoice.total);
    expect(invoice.credited_total, `4. credited <= total: ${label}`).toBeLessThanOrEqual(
      invoice.total,
    );
    expect(invoice.credited_total, `4. credited = its notes: ${label}`).toBe(invoice.notes);
    expect(invoice.refunded_payment, `4. refunds <= paid: ${label}`).toBeLessThanOrEqual(
      invoice.paid,
    );
    expect(
      invoice.refunded_credit,
      `4. refunds of credited money <= money credited: ${label}`,
    ).toBeLessThanOrEqual(invoice.received_as_credit);
    // 6. An invoice never gives back more than it billed: its credit notes
    // plus the provider's refunds owed again (a refund that took back a
    // note's credit, or completed a REFUND note, is the note's).
    expect(
      invoice.credited_total + invoice.refunded_owed,
      `6. credited + refunds owed again <= total: ${label}`,
    ).toBeLessThanOrEqual(invoice.total);
  }

  // The provider never gave back more than it collected (the generator's own bound).
  for (const [pid, payment] of model.payments) {
    expect(payment.refunded, `provider refunds of ${pid}`).toBeLessThanOrEqual(
      payment.state === "succeeded" ? payment.amount : 0,
    );
  }

  // 5. A grant's drawn + written off + remaining is its amount; a paid grant
  // whose invoice was never paid never held anything.
  const live = await counter.credits();
  for (const row of grants) {
    const label = `${row.id} ${JSON.stringify(row)}\n  ${context}`;
    const entry = live.grants.find((candidate) => candidate.id === row.id);
    const remaining = entry && entry.status === "ACTIVE" ? entry.remaining : 0;
    if (row.category === "paid" && row.invoiceStatus !== "PAID") {
      expect(row.drawn + row.writtenOff + remaining, `5. unpaid grant held nothing: ${label}`).toBe(
        0,
      );
    } else {
      expect(
        row.drawn + row.writtenOff + remaining,
        `5. drawn + written off + remaining = amount: ${label}`,
      ).toBe(row.amount);
    }
  }
}
