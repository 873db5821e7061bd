import { LESS_PROGRESSIVE_DISCOUNTS } from "../pricing/index.ts";

// The finalize steps that look at a billing period as a whole rather than
// at one invoice: the coupon's discount, spread over the period's
// PROGRESSIVE invoices and its own invoice (pricing/domain/coupons.ts
// periodDiscountCents), and what progressive invoices billed beyond what
// the whole period costs, moved to the tenant's credit balance. Both run
// inside finalizeStatements' batch (storage.ts).

/** round_half_up(taxable x rate / 1,000,000) in integer SQL, for taxable >= 0 (pricing/domain/tax.ts). */
export const TAX_OF = (taxable: string, rate: string) =>
  `((${taxable}) * (${rate}) * 2 + 1000000) / 2000000`;

/** Periods a coupon covers in SQL over `coupons AS c` (NULL: forever); pricing/domain/coupons.ts periodsLeft. */
const COUPON_PERIODS =
  "CASE c.duration WHEN 'forever' THEN NULL WHEN 'once' THEN 1 ELSE c.duration_in_periods END";

/** The discount of `coupons AS c` on `cents` of charges, as pricing/domain/coupons.ts discountCents. */
const DISCOUNT_ON = (cents: string) => `(CASE WHEN c.percent_off IS NOT NULL
  THEN (max(${cents}, 0) * c.percent_off * 2 + 100) / 200
  ELSE min(c.amount_off, max(${cents}, 0)) END)`;

const DISCOUNT_LINES = (invoice: string) =>
  `(SELECT sum(amount) FROM invoice_line_items WHERE invoice_id = ${invoice} AND kind = 'DISCOUNT')`;

const BILLED = "('OPEN', 'PAID', 'UNCOLLECTIBLE')";

/**
 * The other billed PROGRESSIVE invoices (`invoices AS p`) of the billing
 * period of invoice `inv`. A PROGRESSIVE invoice is finalized as it is
 * issued, so for it they are the ones issued since its subscription's
 * current period started; for the period's own invoice, the ones issued in
 * [period_start, period_end), which its PROGRESSIVE_BILLED line subtracts
 * (draftInvoiceFor's window).
 */
const OF_THE_PERIOD = (inv: string) => `p.subscription_id = ${inv}.subscription_id
  AND p.kind = 'PROGRESSIVE' AND p.status IN ${BILLED} AND p.id <> ${inv}.id
  AND CASE WHEN ${inv}.kind = 'PROGRESSIVE'
    THEN p.period_start >= (SELECT current_period_start FROM subscriptions WHERE id = ${inv}.subscription_id)
    ELSE p.period_start >= ${inv}.period_start AND p.period_start < ${inv}.period_end END`;

const PROGRESSIVE_LINES = (inv: string, sign = "") =>
  `coalesce((SELECT sum(amount) FROM invoice_line_items
    WHERE invoice_id = ${inv}.id AND kind = 'PROGRESSIVE_BILLED' ${sign}), 0)`;

/**
 * Invoice ?2 as `invoices AS <alias>` with the period's figures: `charges`,
 * the period's charges so far (a PROGRESSIVE invoice's own and the earlier
 * ones' subtotals; the own invoice's subtotal before its PROGRESSIVE_BILLED
 * lines), and `discounted`, what the period's PROGRESSIVE invoices took.
 */
const withPeriod = (alias: string) => `(SELECT i.*,
    i.subtotal - ${PROGRESSIVE_LINES("i")}
      + CASE WHEN i.kind = 'PROGRESSIVE'
        THEN (SELECT coalesce(sum(p.subtotal), 0) FROM invoices p WHERE ${OF_THE_PERIOD("i")})
        ELSE 0 END AS charges,
    (SELECT coalesce(sum(p.discount), 0) FROM invoices p WHERE ${OF_THE_PERIOD("i")}) AS discounted
  FROM invoices i WHERE i.id = ?2) ${alias}`;

/** The cents invoice `inv` takes: periodDiscountCents, within 0 and its subtotal. */
const PERIOD_DISCOUNT = `max(0, min(${DISCOUNT_ON("inv.charges")} - inv.discounted, inv.subtotal))`;

/**
 * The coupon's DISCOUNT line, the discount and total it sets, and the
 * redemption's count of periods. A PROGRESSIVE invoice is discounted (no
 * line for nothing) but holds no redemption: it is not one of the
 * redemption's periods, so it counts none and voiding it gives none back.
 * A period's own invoice gets its line even at 0 (its progressive invoices
 * took the whole discount): the period is used all the same.
 */
export function discountStatements(d1: D1Database, invoiceId: string, at: string) {
  return [
    d1
      .prepare(
        `INSERT INTO invoice_line_items
           (id, invoice_id, kind, description, feature_lookup_key, usage_window_key, quantity, unit_price_micro_cents, amount, sort_order, created_at)
         SELECT ?1, inv.id, 'DISCOUNT',
                'Discount: ' || c.label
                  || CASE WHEN inv.kind <> 'PROGRESSIVE' AND inv.discounted > 0 THEN ?4 ELSE '' END,
                NULL, NULL, 1, -${PERIOD_DISCOUNT} * 100, -${PERIOD_DISCOUNT},
                (SELECT coalesce(max(sort_order), 0) + 1 FROM invoice_line_items WHERE invoice_id = inv.id), ?3
         FROM ${withPeriod("inv")}
           JOIN coupon_redemptions r ON r.tenant_id = inv.tenant_id AND r.ended_at IS NULL
           JOIN coupons c ON c.id = r.coupon_id
         WHERE inv.status = 'DRAFT' AND inv.kind <> 'TOP_UP'
           AND (${COUPON_PERIODS} IS NULL OR r.invoices_discounted < ${COUPON_PERIODS})
           AND (c.percent_off IS NOT NULL OR c.currency = inv.currency)
           AND (inv.kind <> 'PROGRESSIVE' OR ${PERIOD_DISCOUNT} > 0)
           AND NOT EXISTS (SELECT 1 FROM invoice_line_items WHERE invoice_id = ?2 AND kind = 'DISCOUNT')`,
      )
      .bind(crypto.randomUUID(), invoiceId, at, LESS_PROGRESSIVE_DISCOUNTS),
    d1
      .prepare(
        `UPDATE invoices SET
           discount = -coalesce(${DISCOUNT_LINES("?1")}, 0),
           coupon_redemption_id = CASE WHEN ${DISCOUNT_LINES("?1")} IS NULL OR kind = 'PROGRESSIVE' THEN NULL ELSE
             (SELECT r.id FROM coupon_redemptions r WHERE r.tenant_id = invoices.tenant_id AND r.ended_at IS NULL) END,
           total = subtotal + coalesce(${DISCOUNT_LINES("?1")}, 0)
         WHERE id = ?1 AND status = 'DRAFT'`,
      )
      .bind(invoiceId),
    // The invoice is one of the redemption's periods; the last one ends it.
    d1
      .prepare(
        `UPDATE coupon_redemptions SET
           invoices_discounted = invoices_discounted + 1,
           ended_at = (SELECT CASE WHEN ${COUPON_PERIODS} IS NOT NULL
                                    AND coupon_redemptions.invoices_discounted + 1 >= ${COUPON_PERIODS}
                               THEN ?2 END
                       FROM coupons c WHERE c.id = coupon_redemptions.coupon_id)
         WHERE id = (SELECT coupon_redemption_id FROM invoices WHERE id = ?1 AND status = 'DRAFT')`,
      )
      .bind(invoiceId, at),
  ];
}

/** Cents the subscription's billed PROGRESSIVE invoices issued in [from, before) were discounted. */
export async function progressiveDiscountedIn(
  d1: D1Database,
  subscriptionId: string,
  from: string,
  before: string,
): Promise<number> {
  const row = await d1
    .prepare(
      `SELECT coalesce(sum(discount), 0) AS discounted FROM invoices
        WHERE subscription_id = ?1 AND kind = 'PROGRESSIVE' AND status IN ${BILLED}
          AND period_start >= ?2 AND period_start < ?3`,
    )
    .bind(subscriptionId, from, before)
    .first<{ discounted: number }>();
  return Number(row?.discounted ?? 0);
}

/**
 * `excess`: what the period's PROGRESSIVE invoices charged (billed less
 * discounted) beyond what the whole period costs (its charges less the
 * coupon's discount on them), over `invoices AS inv` from withPeriod; and
 * `movedBefore`, what invoices of the same period voided since already
 * moved to the credit balance (the replacement moves only the rest).
 */
const WITH_EXCESS = `(SELECT base.*,
    max(0, (-${PROGRESSIVE_LINES("base", "AND amount < 0")} - base.discounted)
      - (base.charges - CASE WHEN c.id IS NULL THEN 0 ELSE ${DISCOUNT_ON("base.charges")} END)) AS excess,
    (SELECT coalesce(sum(e.credit), 0) FROM ledger_entries e JOIN invoices v ON v.id = e.invoice_id
      WHERE v.subscription_id = base.subscription_id AND v.period_start = base.period_start
        AND v.status = 'VOID' AND e.type = 'CREDIT'
        AND e.external_reference = 'invoice-excess:' || v.id) AS movedBefore
  FROM ${withPeriod("base")}
    LEFT JOIN coupon_redemptions r ON r.id = base.coupon_redemption_id
    LEFT JOIN coupons c ON c.id = r.coupon_id) inv`;

const EXCESS_CREDIT = `(inv.excess + ${TAX_OF("inv.excess", "coalesce(inv.tax_rate_ppm, 0)")} - inv.movedBefore)`;

/**
 * A period's own invoice just finalized whose period cost less than its
 * PROGRESSIVE invoices charged: the excess with its tax becomes the
 * tenant's credit balance (a CREDIT with a reference, once per invoice),
 * so the invoice stays at 0 and the next ones apply it. It runs after the
 * DRAFT -> OPEN step, on the invoice that step finalized.
 */
export function excessCreditStatements(d1: D1Database, invoiceId: string, at: string) {
  return [
    d1
      .prepare(
        `INSERT INTO ledger_entries (id, tenant_id, invoice_id, type, description, debit, credit, currency, external_reference, created_at)
         SELECT ?1, inv.tenant_id, inv.id, 'CREDIT',
                'Billed on progressive invoices beyond the period cost: invoice ' || inv.invoice_number,
                0, ${EXCESS_CREDIT}, inv.currency, 'invoice-excess:' || inv.id, ?3
         FROM ${WITH_EXCESS}
         WHERE inv.status = 'OPEN' AND inv.finalized_at = ?3 AND inv.kind IN ('PERIOD', 'PRORATION')
           AND ${EXCESS_CREDIT} > 0
         ON CONFLICT DO NOTHING`,
      )
      .bind(crypto.randomUUID(), invoiceId, at),
  ];
}
