import type { Database } from "@edge-platform/shared/db/client";
import { inList } from "@edge-platform/shared/db/in-list";
import {
  type CouponDuration,
  type InvoiceKind,
  type InvoiceStatus,
  invoiceLineItems,
  invoices,
} from "@edge-platform/shared/db/schema/billing";
import { usageAggregates } from "@edge-platform/shared/db/schema/usage-aggregates";
import { and, asc, count, desc, eq, gte, inArray, lt, ne, sql } from "drizzle-orm";
import {
  AVAILABLE_CREDIT_SQL,
  availableCreditOf,
  INSERT_LEDGER_FROM_INVOICE,
} from "../payments/index.ts";
import { discountStatements, excessCreditStatements, TAX_OF } from "./discount-storage.ts";
import type {
  CreditDrawReading,
  InvoiceDraft,
  InvoiceLineDraft,
  UsageWindowReading,
} from "./domain/invoice.ts";

/** Invoices whose lines count as billed. */
export const BILLED_STATUSES = ["OPEN", "PAID", "UNCOLLECTIBLE"] as const;
export type InvoiceLineRow = typeof invoiceLineItems.$inferSelect;

export function findInvoice(db: Database, tenantId: string, id: string) {
  return db
    .select()
    .from(invoices)
    .where(and(eq(invoices.id, id), eq(invoices.tenantId, tenantId)))
    .get();
}

/**
 * The invoice of a (subscription, period start, kind) slot: the live one
 * (not VOID; at most one) when there is one, else the latest VOID one.
 * `live: true` returns only a live one.
 */
export function findInvoiceForPeriod(
  db: Database,
  subscriptionId: string,
  periodStart: string,
  kind: InvoiceKind,
  options: { live?: boolean } = {},
) {
  return db
    .select()
    .from(invoices)
    .where(
      and(
        eq(invoices.subscriptionId, subscriptionId),
        eq(invoices.periodStart, periodStart),
        eq(invoices.kind, kind),
        options.live ? ne(invoices.status, "VOID") : undefined,
      ),
    )
    .orderBy(sql`${invoices.status} = 'VOID'`, desc(invoices.createdAt))
    .get();
}

export async function listInvoices(
  db: Database,
  tenantId: string,
  filter: { status?: InvoiceStatus | undefined },
  offset: number,
  limit: number,
) {
  const where = and(
    eq(invoices.tenantId, tenantId),
    filter.status ? eq(invoices.status, filter.status) : undefined,
  );
  const [rows, totals] = await Promise.all([
    db
      .select()
      .from(invoices)
      .where(where)
      .orderBy(desc(invoices.createdAt), desc(invoices.periodStart), desc(invoices.id))
      .limit(limit)
      .offset(offset)
      .all(),
    db.select({ total: count() }).from(invoices).where(where).all(),
  ]);
  return { rows, total: totals[0]?.total ?? 0 };
}

export function listLineItems(db: Database, invoiceIds: string[]) {
  if (invoiceIds.length === 0) return Promise.resolve([] as InvoiceLineRow[]);
  return db
    .select()
    .from(invoiceLineItems)
    .where(inList(invoiceLineItems.invoiceId, invoiceIds))
    .orderBy(asc(invoiceLineItems.invoiceId), asc(invoiceLineItems.sortOrder))
    .all();
}

/**
 * Usage windows of a subscription that started inside [billableFrom,
 * before), with the overage units other invoices already billed of each.
 * Only invoices that bill (OPEN, PAID, and UNCOLLECTIBLE, an OPEN invoice
 * written off and still owed) count: a DRAFT or VOID invoice billed nothing.
 */
export async function readUsageWindows(
  db: Database,
  subscriptionId: string,
  billableFrom: string,
  before: string,
  excludeInvoiceId: string | null,
  /** A period's own invoice bills its usage in full and subtracts its PROGRESSIVE invoices in one line. */
  excludeProgressive = false,
): Promise<UsageWindowReading[]> {
  const [windows, billed] = await Promise.all([
    db
      .select({
        featureLookupKey: usageAggregates.featureLookupKey,
        windowKey: usageAggregates.periodKey,
        windowStart: usageAggregates.periodStart,
        windowEnd: usageAggregates.periodEnd,
        used: usageAggregates.amount,
        // Lifetime windows: the tenant's units attributed to subscriptions that started earlier.
        // (Columns spelled out: drizzle leaves them unqualified in a one-table select.)
        priorUsage: sql<number>`CASE WHEN usage_aggregates.period_key = 'lifetime' THEN (
          SELECT coalesce(sum(prior.amount), 0) FROM usage_aggregates prior
          JOIN subscriptions earlier ON earlier.id = prior.subscription_id
          JOIN subscriptions this_one ON this_one.id = usage_aggregates.subscription_id
          WHERE prior.tenant_id = usage_aggregates.tenant_id
            AND prior.feature_lookup_key = usage_aggregates.feature_lookup_key
            AND prior.period_key = 'lifetime'
            AND prior.subscription_id <> usage_aggregates.subscription_id
            AND earlier.started_at < this_one.started_at) ELSE 0 END`,
      })
      .from(usageAggregates)
      .where(
        and(
          eq(usageAggregates.subscriptionId, subscriptionId),
          gte(usageAggregates.periodStart, billableFrom),
          lt(usageAggregates.periodStart, before),
        ),
      )
      .all(),
    readBilledUsage(db, subscriptionId, excludeInvoiceId, excludeProgressive),
  ]);
  return windows.map((window) => {
    const earlier = billed.get(`${window.featureLookupKey}\u0000${window.windowKey}`);
    return {
      featureLookupKey: window.featureLookupKey,
      windowKey: window.windowKey,
      windowStart: new Date(window.windowStart),
      windowEnd: window.windowEnd ? new Date(window.windowEnd) : null,
      priorUsage: Number(window.priorUsage ?? 0),
      used: window.used,
      alreadyBilled: earlier?.units ?? 0,
      alreadyCharged: earlier?.cents ?? 0,
    };
  });
}

/**
 * What the subscription's billing invoices (other than `excludeInvoiceId`)
 * billed per feature and usage window key (a USAGE line's
 * usage_window_key): units and cents.
 */
export async function readBilledUsage(
  db: Database,
  subscriptionId: string,
  excludeInvoiceId: string | null,
  excludeProgressive: boolean,
): Promise<Map<string, { units: number; cents: number }>> {
  const billed = await db
    .select({
      featureLookupKey: invoiceLineItems.featureLookupKey,
      windowKey: invoiceLineItems.usageWindowKey,
      quantity: sql<number>`sum(${invoiceLineItems.quantity})`,
      amount: sql<number>`sum(${invoiceLineItems.amount})`,
    })
    .from(invoiceLineItems)
    .innerJoin(invoices, eq(invoices.id, invoiceLineItems.invoiceId))
    .where(
      and(
        eq(invoices.subscriptionId, subscriptionId),
        eq(invoiceLineItems.kind, "USAGE"),
        inArray(invoices.status, [...BILLED_STATUSES]),
        excludeInvoiceId ? ne(invoices.id, excludeInvoiceId) : undefined,
        excludeProgressive ? ne(invoices.kind, "PROGRESSIVE") : undefined,
      ),
    )
    .groupBy(invoiceLineItems.featureLookupKey, invoiceLineItems.usageWindowKey)
    .all();
  return new Map(
    billed.map((row) => [
      `${row.featureLookupKey}\u0000${row.windowKey}`,
      { units: Number(row.quantity), cents: Number(row.amount) },
    ]),
  );
}

// --- writes: raw statements, because every one of them is conditional ------

const INSERT_LINE_IF_DRAFT = `
INSERT INTO invoice_line_items
  (id, invoice_id, kind, description, feature_lookup_key, usage_window_key, quantity, unit_price_micro_cents, amount, sort_order, pricing, created_at, credit_grant_id, dimensions, unit_price_decimal)
SELECT ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?12, ?11, ?13, ?14, ?15
WHERE EXISTS (SELECT 1 FROM invoices WHERE id = ?2 AND status = 'DRAFT')`;

function lineStatements(d1: D1Database, invoiceId: string, lines: InvoiceLineDraft[], now: string) {
  return lines.map((line) =>
    d1
      .prepare(INSERT_LINE_IF_DRAFT)
      .bind(
        crypto.randomUUID(),
        invoiceId,
        line.kind,
        line.description,
        line.featureLookupKey,
        line.usageWindowKey,
        line.quantity,
        line.unitPriceMicroCents,
        line.amount,
        line.sortOrder,
        now,
        line.pricing ? JSON.stringify(line.pricing) : null,
        line.creditGrantId ?? null,
        line.dimensions ? JSON.stringify(line.dimensions) : null,
        line.unitPriceDecimal ?? null,
      ),
  );
}

/** What the subscription's billed PROGRESSIVE invoices issued in [from, before) billed (their subtotals). */
export async function progressiveBilledIn(
  d1: D1Database,
  subscriptionId: string,
  from: string,
  before: string,
  excludeInvoiceId: string | null,
): Promise<number> {
  const row = await d1
    .prepare(
      `SELECT coalesce(sum(subtotal), 0) AS billed FROM invoices
        WHERE subscription_id = ?1 AND kind = 'PROGRESSIVE'
          AND status IN ('OPEN', 'PAID', 'UNCOLLECTIBLE')
          AND period_start >= ?2 AND period_start < ?3 AND id IS NOT ?4`,
    )
    .bind(subscriptionId, from, before, excludeInvoiceId)
    .first<{ billed: number }>();
  return Number(row?.billed ?? 0);
}

/**
 * Per credit grant, the cents it paid for the subscription's usage in
 * windows that started before `before`, less what other billed invoices of
 * the subscription already credited of it (CREDITS lines).
 */
export async function readCreditDraws(
  d1: D1Database,
  subscriptionId: string,
  before: string,
  excludeInvoiceId: string | null,
  excludeProgressive = false,
): Promise<CreditDrawReading[]> {
  const { results } = await d1
    .prepare(
      `SELECT d.grant_id AS grantId, g.category AS category, sum(d.amount) AS drawn,
              coalesce((SELECT -sum(l.amount) FROM invoice_line_items l
                          JOIN invoices i ON i.id = l.invoice_id
                         WHERE i.subscription_id = ?1 AND l.kind = 'CREDITS'
                           AND l.credit_grant_id = d.grant_id
                           AND i.status IN ('OPEN', 'PAID', 'UNCOLLECTIBLE')
                           AND i.id IS NOT ?3 AND (?4 = 0 OR i.kind <> 'PROGRESSIVE')), 0) AS alreadyCredited
         FROM credit_draws d JOIN credit_grants g ON g.id = d.grant_id
        WHERE d.subscription_id = ?1 AND d.period_start < ?2
        GROUP BY d.grant_id
        ORDER BY min(g.priority), g.created_at, d.grant_id`,
    )
    .bind(subscriptionId, before, excludeInvoiceId, excludeProgressive ? 1 : 0)
    .all<CreditDrawReading>();
  return results.map((row) => ({
    grantId: row.grantId,
    category: row.category,
    drawn: Number(row.drawn),
    alreadyCredited: Number(row.alreadyCredited),
  }));
}

/**
 * Inserts a DRAFT invoice and its lines in one batch, unless the
 * (subscription, period start, kind) slot is taken. Returns whether this
 * call created it.
 */
export async function insertDraftInvoice(
  d1: D1Database,
  invoice: { id: string; tenantId: string; subscriptionId: string },
  draft: InvoiceDraft,
  now: string,
): Promise<boolean> {
  const results = await d1.batch(draftInvoiceStatements(d1, invoice, draft, now));
  return (results[0]?.meta.changes ?? 0) === 1;
}

/** insertDraftInvoice's statements, for a caller that adds its own to the batch (the first is the insert). */
export function draftInvoiceStatements(
  d1: D1Database,
  invoice: { id: string; tenantId: string; subscriptionId: string },
  draft: InvoiceDraft,
  now: string,
): D1PreparedStatement[] {
  return [
    d1
      .prepare(
        `INSERT INTO invoices
           (id, tenant_id, subscription_id, kind, status, currency, subtotal, total, period_start, period_end, notes, created_at, updated_at)
         VALUES (?1, ?2, ?3, ?4, 'DRAFT', ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?11)
         ON CONFLICT (subscription_id, period_start, kind) WHERE status <> 'VOID' DO NOTHING`,
      )
      .bind(
        invoice.id,
        invoice.tenantId,
        invoice.subscriptionId,
        draft.kind,
        draft.currency,
        draft.subtotal,
        draft.total,
        draft.periodStart.toISOString(),
        draft.periodEnd.toISOString(),
        draft.notes,
        now,
      ),
    ...lineStatements(d1, invoice.id, draft.lines, now),
  ];
}

/** Rebuilds a DRAFT's lines and totals (the period closed after a manual generate). */
export async function replaceDraftLines(
  d1: D1Database,
  invoiceId: string,
  draft: InvoiceDraft,
  now: string,
): Promise<boolean> {
  const results = await d1.batch([
    d1
      .prepare(
        `UPDATE invoices SET subtotal = ?2, total = ?3, period_end = ?4, notes = ?5, updated_at = ?6
         WHERE id = ?1 AND status = 'DRAFT'`,
      )
      .bind(
        invoiceId,
        draft.subtotal,
        draft.total,
        draft.periodEnd.toISOString(),
        draft.notes,
        now,
      ),
    d1
      .prepare(
        `DELETE FROM invoice_line_items WHERE invoice_id = ?1
           AND EXISTS (SELECT 1 FROM invoices WHERE id = ?1 AND status = 'DRAFT')`,
      )
      .bind(invoiceId),
    ...lineStatements(d1, invoiceId, draft.lines, now),
  ]);
  return (results[0]?.meta.changes ?? 0) === 1;
}

/** The tenant's credit balance in the invoice's currency (payments' AVAILABLE_CREDIT_SQL), over `invoices AS inv`. */
const AVAILABLE_CREDIT = AVAILABLE_CREDIT_SQL("inv.tenant_id", "inv.currency");

/** The tenant's credit balance in `currency` now: the same AVAILABLE_CREDIT finalize applies. */
export const availableCredit = availableCreditOf;

/** Index of the DRAFT -> OPEN update in finalizeStatements' batch. */
export const FINALIZE_STATUS_STATEMENT = 8;

/** The tenant's active coupon redemption now (null: none): what finalize would apply. */
export async function activeRedemptionOf(d1: D1Database, tenantId: string) {
  const row = await d1
    .prepare(
      `SELECT r.invoices_discounted, c.code, c.label, c.percent_off, c.amount_off, c.currency,
              c.duration, c.duration_in_periods
       FROM coupon_redemptions r JOIN coupons c ON c.id = r.coupon_id
       WHERE r.tenant_id = ?1 AND r.ended_at IS NULL`,
    )
    .bind(tenantId)
    .first<{
      invoices_discounted: number;
      code: string;
      label: string;
      percent_off: number | null;
      amount_off: number | null;
      currency: string | null;
      duration: CouponDuration;
      duration_in_periods: number | null;
    }>();
  if (!row) return null;
  return {
    invoicesDiscounted: Number(row.invoices_discounted),
    coupon: {
      code: row.code,
      label: row.label,
      percentOff: row.percent_off,
      amountOff: row.amount_off,
      currency: row.currency,
      duration: row.duration,
      durationInPeriods: row.duration_in_periods,
    },
  };
}

/** The tenant's tax rate in millionths now (null: no billing details): what finalize would use. */
export async function taxRateOf(d1: D1Database, tenantId: string): Promise<number | null> {
  const row = await d1
    .prepare("SELECT tax_rate_ppm FROM tenant_billing_details WHERE tenant_id = ?1")
    .bind(tenantId)
    .first<{ tax_rate_ppm: number }>();
  return row ? Number(row.tax_rate_ppm) : null;
}

/**
 * DRAFT -> OPEN with its number and its CHARGE, as one batch. First the
 * tenant's active coupon (a DISCOUNT line, the period's discount less what
 * its progressive invoices took; a period's own invoice counted as one of
 * the redemption's periods, the last one ending it: discount-storage.ts),
 * then tax at
 * the tenant's rate read now (a TAX line on subtotal - discount, the rate
 * copied onto the invoice), then the tenant's credit balance (a
 * CREDIT_APPLIED line, the total lowered, an ADJUSTMENT entry consuming
 * the credit), so a credit is used by exactly one invoice. The sequence
 * only moves when the invoice is still a DRAFT, and the number is read
 * back from it inside the same transaction, so numbers have no gaps and no
 * duplicates however many finalizes race. Last, what progressive invoices
 * billed beyond the whole period's cost goes to the credit balance.
 * invoicing/domain/invoice.ts (withDiscount, withTax, withCreditBalance)
 * states the same rules for the upcoming invoice.
 */
export function finalizeStatements(d1: D1Database, invoiceId: string, now: Date, dueDate: Date) {
  const at = now.toISOString();
  return [
    ...discountStatements(d1, invoiceId, at),
    ...taxStatements(d1, invoiceId, at),
    ...creditBalanceStatements(d1, invoiceId, at),
    ...numberingStatements(d1, invoiceId, now, dueDate),
    ...chargeStatements(d1, invoiceId, at),
    ...excessCreditStatements(d1, invoiceId, at),
  ];
}

/** The TAX line at the tenant's rate read now, and the tax, rate and total it sets. */
function taxStatements(d1: D1Database, invoiceId: string, at: string) {
  const taxAmount = TAX_OF("max(inv.subtotal - inv.discount, 0)", "d.tax_rate_ppm");
  return [
    d1
      .prepare(
        `INSERT INTO invoice_line_items
           (id, invoice_id, kind, description, feature_lookup_key, usage_window_key, quantity, unit_price_micro_cents, amount, sort_order, created_at)
         SELECT ?1, inv.id, 'TAX',
                'Tax (' || rtrim(rtrim(printf('%.4f', d.tax_rate_ppm / 10000.0), '0'), '.') || '%)',
                NULL, NULL, 1, ${taxAmount} * 100, ${taxAmount},
                (SELECT coalesce(max(sort_order), 0) + 1 FROM invoice_line_items WHERE invoice_id = inv.id), ?3
         FROM invoices inv JOIN tenant_billing_details d ON d.tenant_id = inv.tenant_id
         WHERE inv.id = ?2 AND inv.status = 'DRAFT' AND d.tax_rate_ppm > 0
           AND NOT EXISTS (SELECT 1 FROM invoice_line_items WHERE invoice_id = ?2 AND kind = 'TAX')`,
      )
      .bind(crypto.randomUUID(), invoiceId, at),
    d1
      .prepare(
        `UPDATE invoices SET
           tax = coalesce((SELECT sum(amount) FROM invoice_line_items WHERE invoice_id = ?1 AND kind = 'TAX'), 0),
           tax_rate_ppm = (SELECT tax_rate_ppm FROM tenant_billing_details WHERE tenant_id = invoices.tenant_id),
           total = subtotal - discount
             + coalesce((SELECT sum(amount) FROM invoice_line_items WHERE invoice_id = ?1 AND kind = 'TAX'), 0)
         WHERE id = ?1 AND status = 'DRAFT'`,
      )
      .bind(invoiceId),
  ];
}

/** The CREDIT_APPLIED line from the tenant's credit balance, and the total it lowers. */
function creditBalanceStatements(d1: D1Database, invoiceId: string, at: string) {
  return [
    d1
      .prepare(
        `INSERT INTO invoice_line_items
           (id, invoice_id, kind, description, feature_lookup_key, usage_window_key, quantity, unit_price_micro_cents, amount, sort_order, created_at)
         SELECT ?1, inv.id, 'CREDIT_APPLIED', 'Credit balance applied', NULL, NULL, 1,
                -min(inv.total, ${AVAILABLE_CREDIT}) * 100, -min(inv.total, ${AVAILABLE_CREDIT}),
                (SELECT coalesce(max(sort_order), 0) + 1 FROM invoice_line_items WHERE invoice_id = inv.id), ?3
         FROM invoices inv
         WHERE inv.id = ?2 AND inv.status = 'DRAFT' AND inv.total > 0 AND ${AVAILABLE_CREDIT} > 0
           AND NOT EXISTS (SELECT 1 FROM invoice_line_items WHERE invoice_id = ?2 AND kind = 'CREDIT_APPLIED')`,
      )
      .bind(crypto.randomUUID(), invoiceId, at),
    d1
      .prepare(
        `UPDATE invoices SET total = subtotal - discount + tax + coalesce(
           (SELECT sum(amount) FROM invoice_line_items WHERE invoice_id = ?1 AND kind = 'CREDIT_APPLIED'), 0)
         WHERE id = ?1 AND status = 'DRAFT'`,
      )
      .bind(invoiceId),
  ];
}

/** The year's sequence moved, then DRAFT -> OPEN with the number read back from it. */
function numberingStatements(d1: D1Database, invoiceId: string, now: Date, dueDate: Date) {
  const year = now.getUTCFullYear();
  const at = now.toISOString();
  return [
    d1
      .prepare(
        `INSERT INTO invoice_sequences (year, last_value)
         SELECT ?1, 1 WHERE EXISTS (SELECT 1 FROM invoices WHERE id = ?2 AND status = 'DRAFT')
         ON CONFLICT (year) DO UPDATE SET last_value = last_value + 1`,
      )
      .bind(year, invoiceId),
    d1
      .prepare(
        `UPDATE invoices SET
           status = 'OPEN',
           invoice_number = printf('INV-%d-%06d', ?2, (SELECT last_value FROM invoice_sequences WHERE year = ?2)),
           finalized_at = ?3, due_date = ?4, updated_at = ?3
         WHERE id = ?1 AND status = 'DRAFT'`,
      )
      .bind(invoiceId, year, at, dueDate.toISOString()),
  ];
}

/** The CHARGE of the OPEN invoice, and the ADJUSTMENT that consumes the credit it applied. */
function chargeStatements(d1: D1Database, invoiceId: string, at: string) {
  return [
    d1
      .prepare(
        INSERT_LEDGER_FROM_INVOICE(
          "CHARGE",
          "total",
          "0",
          "'Invoice ' || invoice_number || ' finalized'",
        ),
      )
      .bind(crypto.randomUUID(), invoiceId, null, at, "OPEN"),
    d1
      .prepare(
        `INSERT INTO ledger_entries (id, tenant_id, invoice_id, type, description, debit, credit, currency, external_reference, created_at)
         SELECT ?1, inv.tenant_id, inv.id, 'ADJUSTMENT', 'Credit balance applied to invoice ' || inv.invoice_number,
                -li.amount, 0, inv.currency, NULL, ?3
         FROM invoices inv JOIN invoice_line_items li ON li.invoice_id = inv.id AND li.kind = 'CREDIT_APPLIED'
         WHERE inv.id = ?2 AND inv.status = 'OPEN' AND li.amount < 0
           AND NOT EXISTS (SELECT 1 FROM ledger_entries WHERE invoice_id = ?2 AND type = 'ADJUSTMENT')`,
      )
      .bind(crypto.randomUUID(), invoiceId, at),
  ];
}

/**
 * -> VOID; a CREDIT reverses the CHARGE when there was one (OPEN or
 * UNCOLLECTIBLE), credit balance the invoice had applied goes back to
 * the tenant (a referenced CREDIT, available to the next invoice), and so
 * does the coupon period it used.
 */
export function voidStatements(d1: D1Database, invoiceId: string, now: Date) {
  const at = now.toISOString();
  return [
    d1
      .prepare(
        // Credit notes already corrected the invoice: voiding it too would credit twice.
        `UPDATE invoices SET status = 'VOID', voided_at = ?2, updated_at = ?2
         WHERE id = ?1 AND status IN ('DRAFT', 'OPEN', 'UNCOLLECTIBLE') AND credited_total = 0`,
      )
      .bind(invoiceId, at),
    d1
      .prepare(
        `${INSERT_LEDGER_FROM_INVOICE(
          "CREDIT",
          "0",
          "total",
          "'Invoice ' || invoice_number || ' voided - charge reversed'",
        )}
         AND EXISTS (SELECT 1 FROM ledger_entries WHERE invoice_id = ?2 AND type = 'CHARGE')`,
      )
      .bind(crypto.randomUUID(), invoiceId, null, at, "VOID"),
    d1
      .prepare(
        `INSERT INTO ledger_entries (id, tenant_id, invoice_id, type, description, debit, credit, currency, external_reference, created_at)
         SELECT ?1, inv.tenant_id, inv.id, 'CREDIT', 'Credit balance restored: invoice ' || inv.invoice_number || ' voided',
                0, adj.debit, inv.currency, 'credit-restored:' || inv.id, ?3
         FROM invoices inv JOIN ledger_entries adj ON adj.invoice_id = inv.id AND adj.type = 'ADJUSTMENT'
         WHERE inv.id = ?2 AND inv.status = 'VOID'
         ON CONFLICT DO NOTHING`,
      )
      .bind(crypto.randomUUID(), invoiceId, at),
    d1
      .prepare(
        `UPDATE payment_attempts SET next_retry_at = NULL, updated_at = ?2
         WHERE invoice_id = ?1 AND next_retry_at IS NOT NULL
           AND EXISTS (SELECT 1 FROM invoices WHERE id = ?1 AND status = 'VOID')`,
      )
      .bind(invoiceId, at),
    // A voided TOP_UP invoice voids the credit grant it would have paid for.
    d1
      .prepare(
        `UPDATE credit_grants SET status = 'VOIDED', ended_at = ?2, updated_at = ?2
         WHERE invoice_id = ?1 AND status = 'PENDING'
           AND EXISTS (SELECT 1 FROM invoices WHERE id = ?1 AND status = 'VOID')`,
      )
      .bind(invoiceId, at),
    // The coupon period the invoice used goes back to its redemption (active
    // again unless the tenant has redeemed another coupon since), so the
    // replacement invoice is discounted as the voided one was; the invoice
    // lets go of the redemption so that this happens once.
    d1
      .prepare(
        `UPDATE coupon_redemptions SET
           invoices_discounted = max(invoices_discounted - 1, 0),
           ended_at = CASE WHEN EXISTS (SELECT 1 FROM coupon_redemptions other
                                        WHERE other.tenant_id = coupon_redemptions.tenant_id
                                          AND other.ended_at IS NULL AND other.id <> coupon_redemptions.id)
                           THEN ended_at ELSE NULL END
         WHERE id = (SELECT coupon_redemption_id FROM invoices WHERE id = ?1 AND status = 'VOID')`,
      )
      .bind(invoiceId),
    d1
      .prepare(
        `UPDATE invoices SET coupon_redemption_id = NULL
         WHERE id = ?1 AND status = 'VOID' AND coupon_redemption_id IS NOT NULL`,
      )
      .bind(invoiceId),
  ];
}

/** Rows changed by the first statement of a transition batch (the conditional status update). */
export function transitioned(results: D1Result[], index = 0): boolean {
  return (results[index]?.meta.changes ?? 0) === 1;
}
