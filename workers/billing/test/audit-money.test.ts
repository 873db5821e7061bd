import { env } from "cloudflare:workers";
import { beforeAll, describe, expect, it } from "vitest";
import { auditRowsFor, failAuditFor, listAudit, onlyAuditRow } from "./audit-helpers.ts";
import {
  asTenant,
  buildMoneyPlan,
  type MoneyPlan,
  paymentIntentEvent,
  signedWebhook,
  waitForWebhook,
} from "./billing-helpers.ts";
import {
  createFeature,
  createPlan,
  createPrice,
  grant,
  platformAdmin,
  subscribe,
} from "./catalog-helpers.ts";
import { type Account, call, db, expectError, register } from "./helpers.ts";

// Audit rows for the catalog, subscriptions, invoices, payments and dead
// letters, each written in the batch of its change.

const API = "/api/v1";
let admin: Account;
let plan: MoneyPlan;
let other: MoneyPlan;

beforeAll(async () => {
  admin = await platformAdmin();
  plan = await buildMoneyPlan(admin, 2900);
  other = await buildMoneyPlan(admin, 4900);
});

const asAdmin = (path: string, body?: unknown, method?: string) =>
  call(path, { token: admin.accessToken, body, method });

describe("audit trail: catalog", () => {
  it("plan, price and entitlement writes are recorded as the platform admin, with no tenant", async () => {
    const created = await createPlan(admin, { name: "Audited" });
    const planRow = await onlyAuditRow(created.id, "plan.created");
    expect(planRow).toMatchObject({
      tenant_id: null,
      actor_type: "platform_admin",
      actor_id: admin.user.id,
      target_type: "plan",
    });
    expect(planRow.changes.name).toEqual({ after: "Audited" });

    const patched = await asAdmin(
      `${API}/plans/${created.id}`,
      { name: "Audited 2", displayOrder: 3 },
      "PATCH",
    );
    expect(patched.status).toBe(200);
    const updated = await onlyAuditRow(created.id, "plan.updated");
    expect(updated.changes).toEqual({
      name: { before: "Audited", after: "Audited 2" },
      displayOrder: { before: 0, after: 3 },
    });

    const price = await createPrice(admin, created.id, { amount: 1500 });
    const priceRow = await onlyAuditRow(price.id, "price.created");
    expect(priceRow.changes.amount).toEqual({ after: 1500 });
    const deactivated = await asAdmin(
      `${API}/plans/${created.id}/prices/${price.id}`,
      { isActive: false },
      "PATCH",
    );
    expect(deactivated.status, JSON.stringify(deactivated.body)).toBe(200);
    const priceUpdated = await onlyAuditRow(price.id, "price.updated");
    expect(priceUpdated.changes).toEqual({ isActive: { before: true, after: false } });

    const feature = await createFeature(admin, "QUOTA");
    const entitlement = await grant(admin, created.id, feature.id, {
      limit: 5,
      limitBehavior: "HARD",
      resetPeriod: "MONTHLY",
    });
    const grantRow = await onlyAuditRow(entitlement.id, "entitlement.created");
    expect(grantRow.changes).toMatchObject({
      limit: { after: 5 },
      feature: { after: feature.lookupKey },
    });
    const path = `${API}/plans/${created.id}/entitlements/${entitlement.id}`;
    expect((await asAdmin(path, { limit: 9 }, "PATCH")).status).toBe(200);
    const changed = await onlyAuditRow(entitlement.id, "entitlement.updated");
    expect(changed.changes).toEqual({ limit: { before: 5, after: 9 } });
    expect((await asAdmin(path, undefined, "DELETE")).status).toBe(200);
    const deleted = await onlyAuditRow(entitlement.id, "entitlement.deleted");
    expect(deleted.changes.limit).toEqual({ before: 9 });
    expectError(await asAdmin(path, undefined, "DELETE"), 404);
    expect(await auditRowsFor(entitlement.id, "entitlement.deleted")).toHaveLength(1);
  });

  it("a change the database refuses leaves no audit row; a refused audit row leaves no change", async () => {
    const created = await createPlan(admin, { name: "Guarded" });
    const trigger = `refuse_plan_${created.id.replaceAll("-", "_")}`;
    await db()
      .prepare(
        `CREATE TRIGGER ${trigger} BEFORE UPDATE ON plans WHEN OLD.id = '${created.id}'
         BEGIN SELECT RAISE(ABORT, 'plan update refused by test'); END`,
      )
      .run();
    try {
      expect((await asAdmin(`${API}/plans/${created.id}`, { name: "Never" }, "PATCH")).status).toBe(
        500,
      );
    } finally {
      await db().prepare(`DROP TRIGGER ${trigger}`).run();
    }
    expect(await auditRowsFor(created.id, "plan.updated")).toHaveLength(0);

    const restore = await failAuditFor(created.id);
    try {
      expect(
        (await asAdmin(`${API}/plans/${created.id}`, { name: "Never either" }, "PATCH")).status,
      ).toBe(500);
    } finally {
      await restore();
    }
    const stored = await db()
      .prepare("SELECT name FROM plans WHERE id = ?")
      .bind(created.id)
      .first<{ name: string }>();
    expect(stored?.name).toBe("Guarded");
  });
});

describe("audit trail: subscriptions", () => {
  it("created, changed, paused, resumed and cancelled, each once", async () => {
    const owner = await register();
    const api = asTenant(owner, owner.tenant.id);
    const first = await subscribe(owner, plan.planId, plan.priceId);
    const created = await onlyAuditRow(first.id, "subscription.created");
    expect(created).toMatchObject({
      tenant_id: owner.tenant.id,
      actor_type: "user",
      actor_id: owner.user.id,
    });
    expect(created.changes.planId).toEqual({ before: null, after: plan.planId });

    const second = await subscribe(owner, other.planId, other.priceId);
    const changed = await onlyAuditRow(second.id, "subscription.changed");
    expect(changed.changes).toMatchObject({
      planId: { before: plan.planId, after: other.planId },
      replacedSubscriptionId: { after: first.id },
    });

    expect((await api(`${API}/subscriptions/${second.id}/pause`, { method: "POST" })).status).toBe(
      201,
    );
    expectError(await api(`${API}/subscriptions/${second.id}/pause`, { method: "POST" }), 409);
    const paused = await onlyAuditRow(second.id, "subscription.paused");
    expect(paused.changes.status).toEqual({ before: "ACTIVE", after: "PAUSED" });

    expect((await api(`${API}/subscriptions/${second.id}/resume`, { method: "POST" })).status).toBe(
      201,
    );
    const resumed = await onlyAuditRow(second.id, "subscription.resumed");
    expect(resumed.changes.status).toEqual({ before: "PAUSED", after: "ACTIVE" });

    const cancel = () =>
      api(`${API}/subscriptions/${second.id}/cancel`, { method: "POST", body: {} });
    expect((await cancel()).status).toBe(201);
    expectError(await cancel(), 409);
    const cancelled = await onlyAuditRow(second.id, "subscription.cancelled");
    expect(cancelled.changes.status).toEqual({ before: "ACTIVE", after: "CANCELLED" });
  });
});

/** A tenant with a finalized invoice and its PENDING first attempt. */
async function openInvoice() {
  const owner = await register();
  await subscribe(owner, plan.planId, plan.priceId);
  // The platform administrator settles; the tenant only reads.
  const api = asTenant(admin, owner.tenant.id);
  const draft = (await api(`${API}/invoices/generate`, { method: "POST" })).body;
  const invoice = (await api(`${API}/invoices/${draft.id}/finalize`, { method: "POST" })).body;
  const attempt = (await api(`${API}/billing/payments`)).body.data[0];
  return { owner, api, invoice, attempt };
}

describe("audit trail: invoices and payments", () => {
  it("invoice.finalized and invoice.voided, only for transitions that happened", async () => {
    const { owner, api, invoice } = await openInvoice();
    const finalized = await onlyAuditRow(invoice.id, "invoice.finalized");
    expect(finalized).toMatchObject({
      tenant_id: owner.tenant.id,
      actor_type: "platform_admin",
      actor_id: admin.user.id,
    });
    expect(finalized.changes.status).toEqual({ before: "DRAFT", after: "OPEN" });
    expect((await api(`${API}/invoices/${invoice.id}/void`, { method: "POST" })).status).toBe(201);
    expectError(await api(`${API}/invoices/${invoice.id}/void`, { method: "POST" }), 400);
    const voided = await onlyAuditRow(invoice.id, "invoice.voided");
    expect(voided.changes.status).toEqual({ before: "OPEN", after: "VOID" });
  });

  it("a refused audit row rolls back the void and its CREDIT", async () => {
    const { api, invoice } = await openInvoice();
    const restore = await failAuditFor(invoice.id);
    try {
      expect((await api(`${API}/invoices/${invoice.id}/void`, { method: "POST" })).status).toBe(
        500,
      );
    } finally {
      await restore();
    }
    expect((await api(`${API}/invoices/${invoice.id}`)).body.status).toBe("OPEN");
    expect((await api(`${API}/billing/ledger?type=CREDIT`)).body.meta.total).toBe(0);
    expect(await auditRowsFor(invoice.id, "invoice.voided")).toHaveLength(0);
  });

  it("invoice.marked_paid", async () => {
    const { api, invoice } = await openInvoice();
    expect((await api(`${API}/invoices/${invoice.id}/mark-paid`, { method: "POST" })).status).toBe(
      201,
    );
    const paid = await onlyAuditRow(invoice.id, "invoice.marked_paid");
    expect(paid).toMatchObject({ actor_type: "platform_admin", actor_id: admin.user.id });
    expect(paid.changes).toMatchObject({
      status: { before: "OPEN", after: "PAID" },
      amount: { after: 2900 },
    });
  });

  it("payment.failed and payment.succeeded come from the provider", async () => {
    const { owner, invoice, attempt } = await openInvoice();
    const failed = paymentIntentEvent("payment_intent.payment_failed", attempt.providerPaymentId, {
      last_payment_error: { message: "Insufficient funds" },
    });
    await signedWebhook(failed);
    await waitForWebhook(failed.id);
    const failedRow = await onlyAuditRow(attempt.id, "payment.failed");
    expect(failedRow).toMatchObject({ tenant_id: owner.tenant.id, actor_type: "provider" });
    expect(failedRow.changes).toMatchObject({
      status: { before: "PENDING", after: "FAILED" },
      failureReason: { after: "Insufficient funds" },
    });

    // A later attempt succeeds.
    const retryId = crypto.randomUUID();
    const providerPaymentId = `dev_pi_${crypto.randomUUID()}`;
    await env.DB.prepare(
      "INSERT INTO payment_attempts (id, invoice_id, tenant_id, provider, provider_payment_id, status, amount, currency, attempt_number) VALUES (?, ?, ?, 'development', ?, 'PENDING', ?, 'usd', 2)",
    )
      .bind(retryId, invoice.id, owner.tenant.id, providerPaymentId, invoice.total)
      .run();
    const succeeded = paymentIntentEvent("payment_intent.succeeded", providerPaymentId);
    await signedWebhook(succeeded);
    await waitForWebhook(succeeded.id);
    const paidRow = await onlyAuditRow(retryId, "payment.succeeded");
    expect(paidRow.changes).toMatchObject({
      invoiceStatus: { before: "OPEN", after: "PAID" },
      amount: { after: 2900 },
    });
    // The same event again changes nothing and records nothing.
    const again = { ...succeeded, id: `evt_${crypto.randomUUID()}` };
    await signedWebhook(again);
    await waitForWebhook(again.id);
    expect(await auditRowsFor(retryId, "payment.succeeded")).toHaveLength(1);
  });
});

describe("audit trail: money received for an invoice that no longer needs it", () => {
  it("a payment for a VOID invoice is credited and recorded once as payment.succeeded", async () => {
    const { api, invoice, attempt } = await openInvoice();
    expect((await api(`${API}/invoices/${invoice.id}/void`, { method: "POST" })).status).toBe(201);
    const event = paymentIntentEvent("payment_intent.succeeded", attempt.providerPaymentId);
    await signedWebhook(event);
    await waitForWebhook(event.id);
    const row = await onlyAuditRow(attempt.id, "payment.succeeded");
    expect(row).toMatchObject({ actor_type: "provider" });
    expect(row.changes).toMatchObject({
      credited: { after: invoice.total },
      invoiceStatus: { before: "VOID", after: "VOID" },
    });
    const again = { ...event, id: `evt_${crypto.randomUUID()}` };
    await signedWebhook(again);
    await waitForWebhook(again.id);
    expect(await auditRowsFor(attempt.id, "payment.succeeded")).toHaveLength(1);
  });
});

describe("audit trail: dead letters", () => {
  it("dead_letter.retried and dead_letter.discarded name the platform admin", async () => {
    const now = new Date().toISOString();
    const payload = {
      id: crypto.randomUUID(),
      tenantId: crypto.randomUUID(),
      eventId: "evt-audit",
      subscriptionId: crypto.randomUUID(),
      feature: "calls",
      amount: 1,
      timestamp: now,
      receivedAt: now,
      window: { key: "lifetime", start: now, end: null },
      validatedAt: now,
    };
    const retried = crypto.randomUUID();
    const discarded = crypto.randomUUID();
    for (const id of [retried, discarded]) {
      await db()
        .prepare(
          `INSERT INTO dead_letter_events (id, topic, failure_stage, failure_reason, original_payload, tenant_id)
           VALUES (?, 'usage-validated', 'AGGREGATION', 'test', ?, ?)`,
        )
        .bind(id, JSON.stringify(payload), payload.tenantId)
        .run();
    }
    const retry = await asAdmin(`${API}/admin/dead-letter/${retried}/retry`, undefined, "POST");
    expect(retry.status, JSON.stringify(retry.body)).toBe(201);
    const retriedRow = await onlyAuditRow(retried, "dead_letter.retried");
    expect(retriedRow).toMatchObject({
      tenant_id: payload.tenantId,
      actor_type: "platform_admin",
      actor_id: admin.user.id,
    });
    expect(retriedRow.changes).toEqual({
      status: { before: "FAILED", after: "RETRYING" },
      retryCount: { before: 0, after: 1 },
    });
    const discard = await asAdmin(
      `${API}/admin/dead-letter/${discarded}/discard`,
      undefined,
      "POST",
    );
    expect(discard.status).toBe(201);
    const discardedRow = await onlyAuditRow(discarded, "dead_letter.discarded");
    expect(discardedRow.changes.status).toEqual({ before: "FAILED", after: "DISCARDED" });

    // A platform admin lists everything without x-tenant-id, filtered by action.
    const listed = await listAudit(admin, `?action=dead_letter.discarded&targetId=${discarded}`);
    expect(listed.body.data).toHaveLength(1);
  });
});
