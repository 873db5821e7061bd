import { sql } from "drizzle-orm";
import {
  check,
  index,
  integer,
  primaryKey,
  sqliteTable,
  text,
  uniqueIndex,
} from "drizzle-orm/sqlite-core";
import type { ChargeModel } from "./catalog.ts";
import { tenants } from "./identity.ts";
import { subscriptions } from "./subscriptions.ts";

// The money side: invoices and their lines, the append-only ledger, payment
// attempts and provider webhooks. Amounts are integer cents; unit prices are
// integer micro-cents (1 cent = 100 micro-cents). Times are ISO-8601 UTC text.

const now = sql`(strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))`;

export const invoiceStatuses = ["DRAFT", "OPEN", "PAID", "VOID", "UNCOLLECTIBLE"] as const;
export type InvoiceStatus = (typeof invoiceStatuses)[number];

/**
 * PERIOD: a closed (or, by manual generate, the current) billing period.
 * PRORATION: the final invoice of a subscription that ended inside a
 * billable period (plan change or immediate cancel).
 * TOP_UP: the purchase of a paid credit grant (its period is the instant
 * the grant was bought).
 * PROGRESSIVE: usage billed before the period's end, when the period's
 * priced usage passed one of the price's usageThresholds (its period is
 * the instant it was issued).
 */
export const invoiceKinds = ["PERIOD", "PRORATION", "TOP_UP", "PROGRESSIVE"] as const;
export type InvoiceKind = (typeof invoiceKinds)[number];

/**
 * Added at finalize, in this order after the charges: DISCOUNT (a coupon,
 * negative), TAX (on the discounted amount), CREDIT_APPLIED (the tenant's
 * credit balance, money received that no invoice needed, negative).
 */
export const lineItemKinds = [
  "BASE",
  "PRORATION_CREDIT",
  "USAGE",
  "CREDIT_APPLIED",
  "DISCOUNT",
  "TAX",
  "CREDIT_PURCHASE",
  "CREDITS",
  "PROGRESSIVE_BILLED",
] as const;
export type LineItemKind = (typeof lineItemKinds)[number];

/** One tier of a tiered USAGE line: the units it billed and at what price. */
export interface BilledTier {
  /** First and last billed unit of the tier (cumulative, 1-based); `upTo` null for the open tier. */
  from: number;
  upTo: number | null;
  units: number;
  unitPrice: number;
  flatFee: number;
}

/**
 * How a USAGE line of tiered or package pricing was priced. `tiers`: the
 * tiers it billed (graduated: each one its units fell in; volume: the tier
 * the total reached); `packages`: for package pricing.
 */
export interface BilledCharge {
  model: ChargeModel;
  tiers?: BilledTier[];
  packages?: { count: number; packageSize: number; packagePrice: number };
}

export const ledgerEntryTypes = [
  "CHARGE",
  "PAYMENT",
  "CREDIT",
  "REFUND",
  "ADJUSTMENT",
  "CREDIT_WRITE_OFF",
  "CREDIT_NOTE",
] as const;
export type LedgerEntryType = (typeof ledgerEntryTypes)[number];

export const paymentAttemptStatuses = [
  "PENDING",
  "SUCCEEDED",
  "FAILED",
  "CANCELLED",
  "REQUIRES_ACTION",
] as const;
export type PaymentAttemptStatus = (typeof paymentAttemptStatuses)[number];

export const webhookEventStatuses = [
  "PENDING",
  "PROCESSING",
  "PROCESSED",
  "FAILED",
  "SKIPPED",
] as const;
export type WebhookEventStatus = (typeof webhookEventStatuses)[number];

/**
 * One live invoice per (subscription, period start, kind): the partial
 * unique index is what makes generation idempotent, for the billing cycle
 * and for `POST /invoices/generate` alike. A VOID invoice leaves the slot,
 * so the platform can issue a replacement for the same period.
 */
export const invoices = sqliteTable(
  "invoices",
  {
    id: text("id").primaryKey(),
    tenantId: text("tenant_id")
      .notNull()
      .references(() => tenants.id, { onDelete: "restrict" }),
    subscriptionId: text("subscription_id")
      .notNull()
      .references(() => subscriptions.id, { onDelete: "restrict" }),
    kind: text("kind", { enum: invoiceKinds }).notNull(),
    /** `INV-<UTC year>-<6 digits>`, assigned at finalize from a gap-free per-year sequence. */
    invoiceNumber: text("invoice_number").unique("invoices_number_unique"),
    status: text("status", { enum: invoiceStatuses }).notNull().default("DRAFT"),
    currency: text("currency").notNull(),
    /** The charges (base fee, proration, usage), before discount, tax and credit. */
    subtotal: integer("subtotal").notNull().default(0),
    /** Cents a coupon took off the subtotal (positive; the DISCOUNT line is its negative). */
    discount: integer("discount").notNull().default(0),
    /** The coupon redemption that discounted the invoice at finalize, if any. */
    couponRedemptionId: text("coupon_redemption_id"),
    /** Cents of tax on subtotal - discount, at `taxRatePpm`. */
    tax: integer("tax").notNull().default(0),
    /** The tenant's tax rate when the invoice was finalized, in millionths (10% = 100,000); null: none. */
    taxRatePpm: integer("tax_rate_ppm"),
    /** subtotal - discount + tax - credit applied. */
    total: integer("total").notNull().default(0),
    periodStart: text("period_start").notNull(),
    /** Exclusive; for a PRORATION invoice, when the subscription ended. */
    periodEnd: text("period_end").notNull(),
    dueDate: text("due_date"),
    finalizedAt: text("finalized_at"),
    paidAt: text("paid_at"),
    voidedAt: text("voided_at"),
    uncollectibleAt: text("uncollectible_at"),
    /** When the last scheduled payment retry failed: the grace period runs from here. */
    dunningExhaustedAt: text("dunning_exhausted_at"),
    /** Cents of credit notes on the invoice (every settlement); never above `total`. */
    creditedTotal: integer("credited_total").notNull().default(0),
    /** Cents REDUCE credit notes took off what is due: the amount due is total - reducedTotal. */
    reducedTotal: integer("reduced_total").notNull().default(0),
    notes: text("notes"),
    createdAt: text("created_at").notNull().default(now),
    updatedAt: text("updated_at").notNull().default(now),
  },
  (table) => [
    uniqueIndex("invoices_subscription_period_kind_live_unique")
      .on(table.subscriptionId, table.periodStart, table.kind)
      .where(sql`status <> 'VOID'`),
    index("invoices_tenant_created_idx").on(table.tenantId, table.createdAt),
    index("invoices_status_idx").on(table.status),
    check("invoices_total_non_negative", sql`total >= 0 AND subtotal >= 0`),
  ],
);

export const invoiceLineItems = sqliteTable(
  "invoice_line_items",
  {
    id: text("id").primaryKey(),
    invoiceId: text("invoice_id")
      .notNull()
      .references(() => invoices.id, { onDelete: "cascade" }),
    kind: text("kind", { enum: lineItemKinds }).notNull(),
    description: text("description").notNull(),
    featureLookupKey: text("feature_lookup_key"),
    /** The usage window (usage_aggregates.period_key) a USAGE line bills. */
    usageWindowKey: text("usage_window_key"),
    quantity: integer("quantity").notNull(),
    unitPriceMicroCents: integer("unit_price_micro_cents").notNull(),
    /** Cents; negative for a credit. */
    amount: integer("amount").notNull(),
    /** CREDITS lines: the grant whose draws the line credits. */
    creditGrantId: text("credit_grant_id"),
    /** USAGE lines of a feature whose meter groups its usage: the group's values. */
    dimensions: text("dimensions", { mode: "json" }).$type<
      Record<string, string | number | null>
    >(),
    /** USAGE lines priced per unit by a decimal price: that price in micro-cents. */
    unitPriceDecimal: text("unit_price_decimal"),
    /** USAGE lines of tiered or package pricing: what each tier (or the packages) billed. */
    pricing: text("pricing", { mode: "json" }).$type<BilledCharge>(),
    sortOrder: integer("sort_order").notNull().default(0),
    createdAt: text("created_at").notNull().default(now),
  },
  (table) => [
    index("invoice_line_items_invoice_idx").on(table.invoiceId, table.sortOrder),
    index("invoice_line_items_usage_idx").on(table.featureLookupKey, table.usageWindowKey),
  ],
);

/**
 * What a platform administrator records about a tenant for its invoices:
 * the tax rate (exclusive, added on top) and the legal identity. The rate
 * in force when an invoice is finalized is copied onto it.
 */
export const tenantBillingDetails = sqliteTable(
  "tenant_billing_details",
  {
    tenantId: text("tenant_id")
      .primaryKey()
      .references(() => tenants.id, { onDelete: "cascade" }),
    /** Millionths: a percentage with up to 4 decimals x 10,000 (8.875% = 88,750). */
    taxRatePpm: integer("tax_rate_ppm").notNull().default(0),
    taxId: text("tax_id"),
    legalName: text("legal_name").notNull(),
    address: text("address", { mode: "json" }).$type<PostalAddress>().notNull(),
    createdAt: text("created_at").notNull().default(now),
    updatedAt: text("updated_at").notNull().default(now),
  },
  () => [check("tenant_billing_details_tax_rate_range", sql`tax_rate_ppm BETWEEN 0 AND 1000000`)],
);

export interface PostalAddress {
  line1: string;
  line2?: string | null;
  city: string;
  postalCode?: string | null;
  region?: string | null;
  /** ISO 3166-1 alpha-2, upper-case. */
  country: string;
}

export const couponDurations = ["once", "repeating", "forever"] as const;
export type CouponDuration = (typeof couponDurations)[number];
export const couponStatuses = ["ACTIVE", "ARCHIVED"] as const;

/**
 * A discount platform administrators offer: `percentOff` (1-100) or
 * `amountOff` cents in `currency`, on `once` one invoice, `repeating`
 * `durationInPeriods` invoices, or `forever`. `timesRedeemed` only moves by
 * a conditional update that also checks `maxRedemptions` and, unless the
 * coupon is `reusable`, that the tenant has never redeemed it, so both
 * limits hold however many redemptions run at once.
 */
export const coupons = sqliteTable(
  "coupons",
  {
    id: text("id").primaryKey(),
    /** Upper-case; what tenants type. */
    code: text("code").notNull().unique("coupons_code_unique"),
    /** "SAVE20 (20% off)": the DISCOUNT line's text. */
    label: text("label").notNull(),
    percentOff: integer("percent_off"),
    amountOff: integer("amount_off"),
    /** Lower-case ISO 4217, with amountOff only. */
    currency: text("currency"),
    duration: text("duration", { enum: couponDurations }).notNull(),
    durationInPeriods: integer("duration_in_periods"),
    maxRedemptions: integer("max_redemptions"),
    redeemBy: text("redeem_by"),
    timesRedeemed: integer("times_redeemed").notNull().default(0),
    status: text("status", { enum: couponStatuses }).notNull().default("ACTIVE"),
    /** Redeemable again by a tenant whose earlier redemption has ended; otherwise once per tenant. */
    reusable: integer("reusable", { mode: "boolean" }).notNull().default(false),
    createdAt: text("created_at").notNull().default(now),
    updatedAt: text("updated_at").notNull().default(now),
  },
  () => [
    check(
      "coupons_one_discount",
      sql`(percent_off BETWEEN 1 AND 100 AND amount_off IS NULL AND currency IS NULL)
        OR (percent_off IS NULL AND amount_off > 0 AND currency IS NOT NULL)`,
    ),
    check(
      "coupons_redemptions_within_max",
      sql`max_redemptions IS NULL OR times_redeemed <= max_redemptions`,
    ),
  ],
);

/**
 * A tenant's use of a coupon, redeemed on one of its subscriptions: it
 * discounts the tenant's invoices finalized while it is active (`endedAt`
 * null), counting them in `invoicesDiscounted`; it ends when its duration
 * is used up. One active redemption per tenant.
 */
export const couponRedemptions = sqliteTable(
  "coupon_redemptions",
  {
    id: text("id").primaryKey(),
    couponId: text("coupon_id")
      .notNull()
      .references(() => coupons.id, { onDelete: "restrict" }),
    tenantId: text("tenant_id")
      .notNull()
      .references(() => tenants.id, { onDelete: "cascade" }),
    subscriptionId: text("subscription_id")
      .notNull()
      .references(() => subscriptions.id, { onDelete: "cascade" }),
    invoicesDiscounted: integer("invoices_discounted").notNull().default(0),
    redeemedAt: text("redeemed_at").notNull(),
    endedAt: text("ended_at"),
  },
  (table) => [
    uniqueIndex("coupon_redemptions_one_active_per_tenant")
      .on(table.tenantId)
      .where(sql`ended_at IS NULL`),
    index("coupon_redemptions_coupon_idx").on(table.couponId),
    index("coupon_redemptions_coupon_tenant_idx").on(table.couponId, table.tenantId),
  ],
);

/** The per-year counter behind invoice numbers (global across tenants, UTC years). */
export const invoiceSequences = sqliteTable("invoice_sequences", {
  year: integer("year").primaryKey(),
  lastValue: integer("last_value").notNull().default(0),
});

/**
 * Append-only (triggers in the migration refuse UPDATE and DELETE). An
 * invoice gets at most one CHARGE, one PAYMENT, one reversing CREDIT (void)
 * and one ADJUSTMENT (credit balance applied): the partial unique indexes
 * are the last line of defence against a double charge. A CREDIT with a
 * provider reference is money received that no invoice took (a payment on
 * a VOID or already PAID invoice): once per provider payment, and it is the
 * tenant's credit balance until a later invoice applies it.
 */
export const ledgerEntries = sqliteTable(
  "ledger_entries",
  {
    id: text("id").primaryKey(),
    tenantId: text("tenant_id")
      .notNull()
      .references(() => tenants.id, { onDelete: "restrict" }),
    invoiceId: text("invoice_id").references(() => invoices.id, { onDelete: "restrict" }),
    type: text("type", { enum: ledgerEntryTypes }).notNull(),
    description: text("description").notNull(),
    debit: integer("debit").notNull().default(0),
    credit: integer("credit").notNull().default(0),
    currency: text("currency").notNull(),
    externalReference: text("external_reference"),
    createdAt: text("created_at").notNull().default(now),
  },
  (table) => [
    uniqueIndex("ledger_entries_invoice_type_once_v2")
      .on(table.invoiceId, table.type)
      .where(
        sql`type IN ('CHARGE', 'PAYMENT', 'ADJUSTMENT') OR (type = 'CREDIT' AND external_reference IS NULL)`,
      ),
    uniqueIndex("ledger_entries_received_credit_unique")
      .on(table.externalReference)
      .where(sql`type = 'CREDIT' AND external_reference IS NOT NULL`),
    uniqueIndex("ledger_entries_refund_reference_unique")
      .on(table.externalReference)
      .where(sql`type = 'REFUND'`),
    index("ledger_entries_tenant_currency_idx").on(table.tenantId, table.currency, table.createdAt),
    index("ledger_entries_tenant_type_idx").on(table.tenantId, table.type),
    check(
      "ledger_entries_one_sided",
      sql`debit >= 0 AND credit >= 0 AND (debit = 0 OR credit = 0)`,
    ),
  ],
);

export const paymentAttempts = sqliteTable(
  "payment_attempts",
  {
    id: text("id").primaryKey(),
    invoiceId: text("invoice_id")
      .notNull()
      .references(() => invoices.id, { onDelete: "restrict" }),
    tenantId: text("tenant_id")
      .notNull()
      .references(() => tenants.id, { onDelete: "restrict" }),
    provider: text("provider").notNull(),
    /** Null until the provider has answered. */
    providerPaymentId: text("provider_payment_id").unique("payment_attempts_provider_id_unique"),
    status: text("status", { enum: paymentAttemptStatuses }).notNull().default("PENDING"),
    amount: integer("amount").notNull(),
    currency: text("currency").notNull(),
    failureReason: text("failure_reason"),
    providerResponse: text("provider_response", { mode: "json" }).$type<unknown>(),
    /** 1 for the first attempt on an invoice, then 2, 3, ... for retries. */
    attemptNumber: integer("attempt_number").notNull(),
    retryOf: text("retry_of"),
    /** Set on a FAILED attempt when another attempt is scheduled. */
    nextRetryAt: text("next_retry_at"),
    createdAt: text("created_at").notNull().default(now),
    updatedAt: text("updated_at").notNull().default(now),
  },
  (table) => [
    uniqueIndex("payment_attempts_invoice_attempt_unique").on(table.invoiceId, table.attemptNumber),
    index("payment_attempts_tenant_created_idx").on(table.tenantId, table.createdAt),
    index("payment_attempts_status_retry_idx").on(table.status, table.nextRetryAt),
  ],
);

/**
 * The provider-side customer of a tenant: created once (the provider call
 * is idempotent on the tenant) and reused for every charge.
 */
export const paymentCustomers = sqliteTable(
  "payment_customers",
  {
    tenantId: text("tenant_id")
      .notNull()
      .references(() => tenants.id, { onDelete: "cascade" }),
    provider: text("provider").notNull(),
    providerCustomerId: text("provider_customer_id").notNull(),
    createdAt: text("created_at").notNull().default(now),
  },
  (table) => [primaryKey({ columns: [table.tenantId, table.provider] })],
);

/** Provider webhooks, stored raw before they are answered, then processed from a queue. */
export const webhookEvents = sqliteTable(
  "webhook_events",
  {
    id: text("id").primaryKey(),
    /** `payprovider` (signed) or `fake` (development and test only). */
    provider: text("provider").notNull(),
    providerEventId: text("provider_event_id").notNull(),
    eventType: text("event_type").notNull(),
    status: text("status", { enum: webhookEventStatuses }).notNull().default("PENDING"),
    rawPayload: text("raw_payload").notNull(),
    attempts: integer("attempts").notNull().default(0),
    /** What processing did (or why it changed nothing). */
    outcome: text("outcome"),
    processingError: text("processing_error"),
    processedAt: text("processed_at"),
    createdAt: text("created_at").notNull().default(now),
    updatedAt: text("updated_at").notNull().default(now),
  },
  (table) => [
    uniqueIndex("webhook_events_provider_event_unique").on(table.provider, table.providerEventId),
    index("webhook_events_status_idx").on(table.status, table.createdAt),
  ],
);

export const creditNoteReasons = [
  "DUPLICATE",
  "PRODUCT_UNSATISFACTORY",
  "ORDER_CHANGE",
  "FRAUDULENT",
  "OTHER",
] as const;
export type CreditNoteReason = (typeof creditNoteReasons)[number];

/**
 * REDUCE: lowers the amount due of an unpaid invoice. REFUND: money back
 * through the payment provider, for what was paid. CREDIT: the tenant's
 * credit balance, applied to its later invoices.
 */
export const creditNoteSettlements = ["REDUCE", "REFUND", "CREDIT"] as const;
export type CreditNoteSettlement = (typeof creditNoteSettlements)[number];

export const refundStatuses = ["PENDING", "SUCCEEDED", "FAILED"] as const;
export type RefundStatus = (typeof refundStatuses)[number];

/**
 * A correction to a finalized invoice (migration 0023_credit_notes.sql:
 * triggers keep amounts and lines immutable). `CN-<UTC year>-<6 digits>`
 * from a gap-free per-year sequence.
 */
export const creditNotes = sqliteTable(
  "credit_notes",
  {
    id: text("id").primaryKey(),
    tenantId: text("tenant_id")
      .notNull()
      .references(() => tenants.id, { onDelete: "restrict" }),
    invoiceId: text("invoice_id")
      .notNull()
      .references(() => invoices.id, { onDelete: "restrict" }),
    creditNoteNumber: text("credit_note_number").notNull().unique("credit_notes_number_unique"),
    reason: text("reason", { enum: creditNoteReasons }).notNull(),
    settlement: text("settlement", { enum: creditNoteSettlements }).notNull(),
    currency: text("currency").notNull(),
    subtotal: integer("subtotal").notNull(),
    tax: integer("tax").notNull(),
    total: integer("total").notNull(),
    memo: text("memo"),
    /** REFUND notes only: where the money back stands at the provider. */
    refundStatus: text("refund_status", { enum: refundStatuses }),
    refundReference: text("refund_reference"),
    refundFailureReason: text("refund_failure_reason"),
    createdAt: text("created_at").notNull(),
    updatedAt: text("updated_at").notNull(),
  },
  (table) => [
    index("credit_notes_tenant_created_idx").on(table.tenantId, table.createdAt),
    index("credit_notes_invoice_idx").on(table.invoiceId),
    index("credit_notes_refund_reference_idx")
      .on(table.refundReference)
      .where(sql`refund_reference IS NOT NULL`),
    check("credit_notes_amounts", sql`subtotal > 0 AND tax >= 0 AND total = subtotal + tax`),
  ],
);

export const creditNoteLines = sqliteTable(
  "credit_note_lines",
  {
    id: text("id").primaryKey(),
    creditNoteId: text("credit_note_id")
      .notNull()
      .references(() => creditNotes.id, { onDelete: "restrict" }),
    invoiceLineItemId: text("invoice_line_item_id")
      .notNull()
      .references(() => invoiceLineItems.id, { onDelete: "restrict" }),
    description: text("description").notNull(),
    /** Cents credited on the invoice line, before tax. */
    amount: integer("amount").notNull(),
    sortOrder: integer("sort_order").notNull(),
  },
  (table) => [
    index("credit_note_lines_note_idx").on(table.creditNoteId, table.sortOrder),
    index("credit_note_lines_line_idx").on(table.invoiceLineItemId),
    check("credit_note_lines_positive", sql`amount > 0`),
  ],
);

export const creditNoteSequences = sqliteTable("credit_note_sequences", {
  year: integer("year").primaryKey(),
  lastValue: integer("last_value").notNull().default(0),
});
