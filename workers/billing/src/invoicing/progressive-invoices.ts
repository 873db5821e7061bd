import { type Database, database } from "@edge-platform/shared/db/client";
import { tenantEventStatement } from "../notifications/index.ts";
import type { PaymentService } from "../payments/index.ts";
import { findInvoiceById } from "../payments/index.ts";
import type { ProgressiveRequest } from "../pricing/index.ts";
import { findSubscriptionById } from "../subscriptions/index.ts";
import { draftInvoiceFor, finalizeInvoice } from "./service.ts";
import { draftInvoiceStatements } from "./storage.ts";

/** Subscriptions whose usage a progressive invoice may bill. */
const BILLABLE = new Set(["ACTIVE", "PAST_DUE"]);

/**
 * Issues the PROGRESSIVE invoice the tenant's counter asked for (the
 * period's priced usage passed a threshold): the usage no billed invoice
 * covers yet, with the credits drawn for it, finalized and charged at once.
 * Idempotent on the id the counter chose; nothing when there is nothing to
 * bill. Runs from the counter's alarm after its usage reached D1.
 */
export async function issueProgressiveInvoice(
  env: Env,
  paymentsFor: () => PaymentService,
  tenantId: string,
  request: ProgressiveRequest,
  now: Date = new Date(),
): Promise<void> {
  const db: Database = database(env.DB);
  if (await findInvoiceById(db, request.invoiceId)) return;
  const found = await findSubscriptionById(db, request.subscriptionId);
  const subscription = found?.subscription;
  if (!found || !subscription || subscription.tenantId !== tenantId) return;
  if (!BILLABLE.has(subscription.status)) return;
  const period = {
    start: new Date(subscription.currentPeriodStart),
    end: new Date(subscription.currentPeriodEnd),
  };
  if (now.getTime() >= period.end.getTime()) return; // the period's own invoice bills it
  const draft = await draftInvoiceFor(db, env.DB, found, "PROGRESSIVE", period, null, null);
  if (!draft.lines.some((line) => line.kind === "USAGE") || draft.total <= 0) return;
  const invoice = { id: request.invoiceId, tenantId, subscriptionId: subscription.id };
  const at = now.toISOString();
  await env.DB.batch([
    ...draftInvoiceStatements(env.DB, invoice, { ...draft, periodStart: now, periodEnd: now }, at),
    tenantEventStatement(
      env.DB,
      {
        type: "invoice.progressive_issued",
        tenantId,
        data: {
          id: invoice.id,
          subscriptionId: subscription.id,
          subtotal: draft.subtotal,
          currency: draft.currency,
          periodStart: period.start.toISOString(),
          periodEnd: period.end.toISOString(),
        },
      },
      {
        now,
        id: `evt_progressive_${invoice.id}`,
        when: { sql: "EXISTS (SELECT 1 FROM invoices WHERE id = ?)", params: [invoice.id] },
      },
    ),
  ]);
  await finalizeInvoice(env.DB, invoice, now);
  const payments = paymentsFor();
  try {
    await payments.attempt(invoice.id, 1, now);
  } catch (error) {
    console.error(
      JSON.stringify({
        level: "error",
        msg: "progressive invoice payment attempt failed; the billing cycle retries it",
        invoiceId: invoice.id,
        error: String(error),
      }),
    );
  }
}
