import { MS_PER_DAY } from "@edge-platform/shared/billing/billing-period";
import type { SnapshotTerms } from "@edge-platform/shared/billing/entitlement-snapshot";
import type { PropertyValue } from "@edge-platform/shared/billing/meter";
import type {
  BilledCharge,
  InvoiceKind,
  InvoiceStatus,
  LineItemKind,
} from "@edge-platform/shared/db/schema/billing";
import type { BillingInterval } from "@edge-platform/shared/db/schema/catalog";
import { centsToMicroCents, prorateCents, sumCents } from "../../platform/index.ts";
import {
  type CouponTerms,
  describeCharge,
  discountLineDescription,
  groupTerms,
  periodDiscountCents,
  taxCents,
  taxLineDescription,
  type UsagePricing,
  usageCharge,
  usagePricingOfTerms,
} from "../../pricing/index.ts";

// What goes on an invoice, as pure functions of the subscription, its
// period and the usage read for it. Lines, in order:
//   0  BASE              the plan's price for the period (quantity 1); when
//                        the period is the tail of a cycle period (the first
//                        period after a plan change that kept the cycle),
//                        the price prorated to it: the charge for the rest
//                        of the new plan
//   1  PRORATION_CREDIT  PRORATION invoices only: the unused part of the
//                        period after the subscription ended (plan change or
//                        immediate cancel), as a negative amount
//   2+ USAGE             per billable feature (QUOTA SOFT beyond its limit,
//                        METERED beyond its included amount) and usage
//                        window, by lookup key then window start; only
//                        windows with something left to bill get a line;
//                        priced by the feature's charge model
//                        (charge-models.ts), tiered lines listing the tiers
//                        they billed
//      CREDITS           prepaid credit drawn for that usage, negative
//      PROGRESSIVE_BILLED what the period's PROGRESSIVE invoices billed,
//                        negative; when the period costs less than that
//                        (volume pricing), a second, positive one floors
//                        the subtotal at 0 and finalize moves the excess to
//                        the credit balance
// and, added when the invoice is finalized (withDiscount, withTax,
// withCreditBalance preview them):
//      DISCOUNT          the tenant's active coupon: its discount on the
//                        whole period's charges, less what the period's
//                        PROGRESSIVE invoices were discounted
//      TAX               the tenant's rate on subtotal - discount
//      CREDIT_APPLIED    the tenant's credit balance, up to the total
// Amounts follow the single rounding rule in money.ts. Both proration
// amounts are fractions of the FULL cycle period's length, so on a plan
// change at instant t inside the cycle period [S, E) the old plan nets
// price_old - round(price_old x (E - t) / (E - S)) and the new plan is
// charged round(price_new x (E - t) / (E - S)): each plan pays for its own
// share of the same period, nothing twice, nothing missed.

export interface InvoiceLineDraft {
  kind: LineItemKind;
  description: string;
  featureLookupKey: string | null;
  usageWindowKey: string | null;
  quantity: number;
  unitPriceMicroCents: number;
  amount: number;
  sortOrder: number;
  /** Tiered and package USAGE lines: how the units were priced. */
  pricing?: BilledCharge | null;
  /** CREDITS lines: the grant whose draws the line credits. */
  creditGrantId?: string | null;
  /** USAGE lines of a feature whose meter groups its usage: the group's values. */
  dimensions?: Record<string, PropertyValue | null> | null;
  /** USAGE lines priced per unit by a decimal price: that price (micro-cents). */
  unitPriceDecimal?: string | null;
}

/** What one credit grant paid for a subscription's usage, and what earlier invoices credited of it. */
export interface CreditDrawReading {
  grantId: string;
  category: string;
  /** Cents drawn from the grant for the subscription's usage in the invoice's windows and before. */
  drawn: number;
  /** Cents of it CREDITS lines of other billed invoices already took off. */
  alreadyCredited: number;
}

/** Units counted in one usage window of one feature, and what earlier invoices billed of it. */
export interface UsageWindowReading {
  featureLookupKey: string;
  windowKey: string;
  /** Where the subscription's part of the window starts. */
  windowStart: Date;
  /** Exclusive end of the window; null for the NEVER-reset lifetime window. */
  windowEnd?: Date | null;
  /** Units the subscription used in the window (attributed to it when they were counted). */
  used: number;
  /** Overage units of this window already on other invoices of the subscription. */
  alreadyBilled: number;
  /** Cents those invoices' lines charged for this window (tiered pricing bills the rest). */
  alreadyCharged?: number;
  /** Lifetime window only: the tenant's units in it attributed to earlier subscriptions. */
  priorUsage?: number;
  /** A metered feature's group in the window (its meter's groupBy values); absent: the whole window. */
  groupKey?: string;
  dimensions?: Record<string, PropertyValue | null>;
}

/** The usage_window_key of a USAGE line: its window, and its group when the feature's meter has one. */
export function usageLineWindowKey(windowKey: string, groupKey: string | undefined): string {
  return groupKey === undefined || groupKey === "" ? windowKey : `${windowKey}#${groupKey}`;
}

/** When the subscription was billable: from its first billable start to its end (null: still running). */
export interface ActiveSpan {
  from: Date;
  until: Date | null;
}

/**
 * The part of an included amount (METERED) or SOFT limit a subscription
 * gets in a usage window, so that a plan change never hands out a fresh
 * allowance. Within a reset window (MONTHLY, ANNUALLY) it is prorated by
 * the time the subscription was billable in the window, as the base fee
 * is: round(allowance x overlap / window length); a subscription that
 * covers the whole window gets all of it. In the lifetime window (NEVER)
 * the allowance is the tenant's for good: what earlier subscriptions used
 * of it is gone.
 */
export function allowanceShare(
  allowance: number,
  reading: Pick<UsageWindowReading, "windowKey" | "windowEnd" | "priorUsage">,
  active: ActiveSpan,
): number {
  if (!reading.windowEnd) return Math.max(0, allowance - (reading.priorUsage ?? 0));
  const windowStart = Date.parse(reading.windowKey);
  const windowEnd = reading.windowEnd.getTime();
  if (!Number.isFinite(windowStart) || windowEnd <= windowStart) return allowance;
  const from = Math.max(windowStart, active.from.getTime());
  const until = Math.min(windowEnd, active.until?.getTime() ?? windowEnd);
  const overlap = Math.max(0, until - from);
  if (overlap >= windowEnd - windowStart) return allowance;
  return Math.round((allowance * overlap) / (windowEnd - windowStart));
}

export interface InvoiceDraftInput {
  kind: InvoiceKind;
  planName: string;
  price: { interval: BillingInterval; amount: number; currency: string };
  /** The billing period [start, end). */
  period: { start: Date; end: Date };
  /**
   * The full cycle period the billing period belongs to, when the billing
   * period is only its tail (the first period after a plan change that
   * kept the cycle); absent means the period itself.
   */
  cycle?: { start: Date; end: Date } | undefined;
  /** PRORATION: when the subscription ended inside the period. */
  endedAt?: Date | null;
  snapshots: readonly SnapshotTerms[];
  usage: readonly UsageWindowReading[];
  /** The subscription's billable span: shares allowances across plan changes (allowanceShare). */
  active?: ActiveSpan | undefined;
  /** Prepaid credit drawn for the usage: one CREDITS line per grant (creditLines). */
  credits?: readonly CreditDrawReading[] | undefined;
  /** Cents the period's PROGRESSIVE invoices billed: one negative PROGRESSIVE_BILLED line. */
  progressiveBilled?: number | undefined;
}

export interface InvoiceDraft {
  kind: InvoiceKind;
  currency: string;
  periodStart: Date;
  periodEnd: Date;
  /** The charges: base fee, proration credit, usage. */
  subtotal: number;
  /** Cents a coupon takes off the subtotal (finalize applies it). */
  discount: number;
  /** Cents of tax on subtotal - discount (finalize applies it). */
  tax: number;
  /** The tax rate used, in millionths; null when the tenant has none. */
  taxRatePpm: number | null;
  total: number;
  notes: string | null;
  lines: InvoiceLineDraft[];
}

const day = (instant: Date) => instant.toISOString().slice(0, 10);

/** "api_calls" -> "Api Calls". */
export function featureDisplayName(lookupKey: string): string {
  return lookupKey
    .split("_")
    .filter(Boolean)
    .map((word) => word.charAt(0).toUpperCase() + word.slice(1))
    .join(" ");
}

const count = (value: number) => value.toLocaleString("en-US");

/**
 * How a snapshot prices its billed units: its charge model, else the
 * per-unit overagePriceDecimal (decimal micro-cents), else overagePrice.
 */
export function usagePricingOf(snapshot: SnapshotTerms): UsagePricing {
  return usagePricingOfTerms(snapshot);
}

/** Units a snapshot lets through before overage is billed, or null when the feature is not billed by usage. */
export function billableAllowance(
  snapshot: SnapshotTerms,
): { included: number; pricing: UsagePricing } | null {
  if (snapshot.featureType === "METERED") {
    return { included: snapshot.includedAmount ?? 0, pricing: usagePricingOf(snapshot) };
  }
  if (snapshot.featureType === "QUOTA" && snapshot.limitBehavior === "SOFT") {
    return { included: snapshot.limit ?? 0, pricing: usagePricingOf(snapshot) };
  }
  return null;
}

/** Whole days in a span, rounded (descriptions only; amounts use the milliseconds). */
export const wholeDays = (ms: number) => Math.round(ms / MS_PER_DAY);

/**
 * The base-fee line of a period: the full price, or, for the tail of a
 * cycle period, round(price x tail / cycle period) by the single rounding
 * rule, described as the contract's prorated base line.
 */
export function baseFeeLine(
  planName: string,
  price: { interval: BillingInterval; amount: number },
  period: { start: Date; end: Date },
  cycle: { start: Date; end: Date },
): InvoiceLineDraft {
  const periodMs = period.end.getTime() - period.start.getTime();
  const cycleMs = cycle.end.getTime() - cycle.start.getTime();
  if (periodMs <= 0) throw new RangeError("period must have a positive length");
  if (
    cycle.start.getTime() > period.start.getTime() ||
    cycle.end.getTime() < period.end.getTime()
  ) {
    throw new RangeError("the period must lie inside its cycle period");
  }
  const interval = price.interval.toLowerCase();
  const prorated = periodMs < cycleMs;
  const amount = prorated ? prorateCents(price.amount, periodMs, cycleMs) : price.amount;
  return {
    kind: "BASE",
    description: prorated
      ? `${planName} plan - ${interval} (prorated: ${wholeDays(periodMs)}/${wholeDays(cycleMs)} days)`
      : `${planName} plan - ${interval} (${day(period.start)} to ${day(period.end)})`,
    featureLookupKey: null,
    usageWindowKey: null,
    quantity: 1,
    unitPriceMicroCents: centsToMicroCents(amount),
    amount,
    sortOrder: 0,
  };
}

export function buildInvoiceDraft(input: InvoiceDraftInput): InvoiceDraft {
  const { period, price } = input;
  const cycle = input.cycle ?? period;
  const base = baseFeeLine(input.planName, price, period, cycle);
  const cycleMs = cycle.end.getTime() - cycle.start.getTime();
  // A PROGRESSIVE invoice bills usage only; the base fee stays with the period's invoice.
  const lines: InvoiceLineDraft[] = input.kind === "PROGRESSIVE" ? [] : [base];

  let notes = cycleTailNote(period, cycle, cycleMs);
  let billedUntil = period.end;
  if (input.kind === "PRORATION") {
    const proration = prorationCredit(input, cycleMs);
    lines.push(proration.line);
    notes = proration.notes;
    billedUntil = proration.billedUntil;
  }
  lines.push(...usageLines(input, billedUntil, lines.length));
  lines.push(...creditLines(input.credits ?? [], lines));
  const progressive = input.progressiveBilled ?? 0;
  if (progressive > 0) {
    lines.push(progressiveBilledLine(progressive, lines.length));
    const below = sumCents(lines.map((line) => line.amount));
    if (below < 0) lines.push(progressiveExcessLine(-below, lines.length));
  }
  const subtotal = sumCents(lines.map((line) => line.amount));
  return {
    kind: input.kind,
    currency: price.currency,
    periodStart: period.start,
    periodEnd: input.kind === "PRORATION" ? billedUntil : period.end,
    subtotal,
    discount: 0,
    tax: 0,
    taxRatePpm: null,
    total: subtotal,
    notes,
    lines,
  };
}

/** The note on the tail of a cycle period, or null when the period is a whole one. */
function cycleTailNote(
  period: { start: Date; end: Date },
  cycle: { start: Date; end: Date },
  cycleMs: number,
): string | null {
  if (cycle.start.getTime() >= period.start.getTime()) return null;
  const periodDays = wholeDays(period.end.getTime() - period.start.getTime());
  return `Prorated first period after a plan change: ${day(period.start)} to ${day(period.end)}, ${periodDays} of ${wholeDays(cycleMs)} days`;
}

/**
 * A PRORATION invoice's credit for the unused rest of the period, its note,
 * and the instant billing stops (endedAt, clamped into the period).
 */
function prorationCredit(
  input: InvoiceDraftInput,
  cycleMs: number,
): { line: InvoiceLineDraft; notes: string; billedUntil: Date } {
  const { period, price } = input;
  const endedAt = input.endedAt;
  if (!endedAt) throw new RangeError("a PRORATION invoice needs endedAt");
  const endedMs = Math.min(
    Math.max(endedAt.getTime(), period.start.getTime()),
    period.end.getTime(),
  );
  const unusedMs = period.end.getTime() - endedMs;
  const credit = prorateCents(price.amount, unusedMs, cycleMs);
  const unusedDays = wholeDays(unusedMs);
  const totalDays = wholeDays(cycleMs);
  return {
    line: {
      kind: "PRORATION_CREDIT",
      description: `Unused time on ${input.planName} plan after ${day(endedAt)} (${unusedDays} of ${totalDays} days)`,
      featureLookupKey: null,
      usageWindowKey: null,
      quantity: 1,
      unitPriceMicroCents: -centsToMicroCents(credit),
      amount: -credit,
      sortOrder: 1,
    },
    notes: `Prorated: the subscription ended on ${endedAt.toISOString()}, ${wholeDays(endedMs - period.start.getTime())} of ${totalDays} days used`,
    billedUntil: new Date(endedMs),
  };
}

type Allowance = NonNullable<ReturnType<typeof billableAllowance>>;

/**
 * One USAGE line per billable feature and usage window that started before
 * `billedUntil` and has overage not yet billed, by lookup key then window
 * start; sort orders continue after the `preceding` lines.
 */
function usageLines(
  input: InvoiceDraftInput,
  billedUntil: Date,
  preceding: number,
): InvoiceLineDraft[] {
  const allowances = new Map(
    input.snapshots.flatMap((snapshot) => {
      const allowance = billableAllowance(snapshot);
      return allowance ? [[snapshot.featureLookupKey, allowance] as const] : [];
    }),
  );
  const readings = [...input.usage]
    .filter((reading) => allowances.has(reading.featureLookupKey))
    .filter((reading) => reading.windowStart.getTime() < billedUntil.getTime())
    .sort((a, b) =>
      a.featureLookupKey === b.featureLookupKey
        ? a.windowStart.getTime() - b.windowStart.getTime()
        : a.featureLookupKey < b.featureLookupKey
          ? -1
          : 1,
    );
  const lines: InvoiceLineDraft[] = [];
  for (const reading of readings) {
    const allowance = allowanceOfReading(input, reading, allowances.get(reading.featureLookupKey));
    if (!allowance) continue;
    const line = usageLine(input, reading, allowance, preceding + lines.length);
    if (line) lines.push(line);
  }
  return lines;
}

/**
 * The allowance and price of a reading: a group of a metered feature is
 * priced by the entitlement's dimension entry its values match (groupTerms),
 * else by the entitlement's own terms.
 */
function allowanceOfReading(
  input: InvoiceDraftInput,
  reading: UsageWindowReading,
  allowance: Allowance | undefined,
): Allowance | undefined {
  if (!allowance || reading.groupKey === undefined) return allowance;
  const snapshot = input.snapshots.find((s) => s.featureLookupKey === reading.featureLookupKey);
  return snapshot ? groupTerms(snapshot, reading.dimensions ?? {}) : allowance;
}

/** The USAGE line for one window's overage not yet billed, or null when there is none. */
function usageLine(
  input: InvoiceDraftInput,
  reading: UsageWindowReading,
  allowance: Allowance,
  sortOrder: number,
): InvoiceLineDraft | null {
  const included = input.active
    ? allowanceShare(allowance.included, reading, input.active)
    : allowance.included;
  const overage = Math.max(0, reading.used - included);
  const quantity = overage - reading.alreadyBilled;
  if (quantity <= 0) return null;
  const charged = usageCharge(
    allowance.pricing,
    { alreadyBilled: reading.alreadyBilled, alreadyCharged: reading.alreadyCharged ?? 0 },
    quantity,
  );
  const how = charged.billed ? ` - ${describeCharge(charged.billed, input.price.currency)}` : "";
  const decimal =
    allowance.pricing.model === "per_unit" ? (allowance.pricing.unitPriceDecimal ?? null) : null;
  const grouped = reading.groupKey !== undefined && reading.groupKey !== "";
  return {
    kind: "USAGE",
    description: `${usageLabel(input, reading, included)}${how}`,
    featureLookupKey: reading.featureLookupKey,
    usageWindowKey: usageLineWindowKey(reading.windowKey, reading.groupKey),
    dimensions: grouped ? (reading.dimensions ?? {}) : null,
    unitPriceDecimal: decimal,
    quantity,
    unitPriceMicroCents: charged.unitPriceMicroCents,
    amount: charged.amount,
    sortOrder,
    pricing: charged.billed,
  };
}

/** A USAGE line's description up to how it was priced: feature, counts, window, earlier billing. */
function usageLabel(input: InvoiceDraftInput, reading: UsageWindowReading, included: number) {
  const values = Object.entries(reading.dimensions ?? {});
  const group =
    values.length > 0
      ? ` [${values.map(([key, value]) => `${key}: ${value ?? "none"}`).join(", ")}]`
      : reading.groupKey === "*"
        ? " [other combinations]"
        : "";
  const name = `${featureDisplayName(reading.featureLookupKey)}${group}`;
  const snapshot = input.snapshots.find((s) => s.featureLookupKey === reading.featureLookupKey);
  const label =
    snapshot?.featureType === "QUOTA"
      ? `${name} overage (${count(reading.used)} used, ${count(included)} limit)`
      : `${name} (${count(reading.used)} used, ${count(included)} included)`;
  const window =
    reading.windowStart.getTime() === input.period.start.getTime()
      ? ""
      : ` - usage window from ${day(reading.windowStart)}`;
  const earlier =
    reading.alreadyBilled > 0 ? `, ${count(reading.alreadyBilled)} billed earlier` : "";
  return `${label}${window}${earlier}`;
}

/** The period's PROGRESSIVE invoices already billed `cents`: taken off as one negative line. */
function progressiveBilledLine(cents: number, sortOrder: number): InvoiceLineDraft {
  return {
    kind: "PROGRESSIVE_BILLED",
    description: "Usage already billed on this period's progressive invoices",
    featureLookupKey: null,
    usageWindowKey: null,
    quantity: 1,
    unitPriceMicroCents: centsToMicroCents(-cents),
    amount: -cents,
    sortOrder,
    pricing: null,
  };
}

/**
 * The period cost less than its PROGRESSIVE invoices billed (a volume tier
 * the whole period reached is cheaper than the one they billed at): the
 * difference, so that no subtotal goes below zero. Finalize moves it to the
 * tenant's credit balance (discount-storage.ts excessCreditStatements).
 */
function progressiveExcessLine(cents: number, sortOrder: number): InvoiceLineDraft {
  return {
    kind: "PROGRESSIVE_BILLED",
    description:
      "Billed on this period's progressive invoices beyond its charges: to the credit balance",
    featureLookupKey: null,
    usageWindowKey: null,
    quantity: 1,
    unitPriceMicroCents: centsToMicroCents(cents),
    amount: cents,
    sortOrder,
    pricing: null,
  };
}

/**
 * One negative CREDITS line per grant that paid for usage billed here: the
 * cents it drew not yet credited on another invoice, after the usage lines
 * and inside the subtotal (usage paid with credit is not billed, discounted
 * or taxed again). Credits never take off more than the usage lines charge.
 */
export function creditLines(
  credits: readonly CreditDrawReading[],
  lines: readonly InvoiceLineDraft[],
): InvoiceLineDraft[] {
  let usage = sumCents(lines.filter((line) => line.kind === "USAGE").map((line) => line.amount));
  const out: InvoiceLineDraft[] = [];
  for (const credit of credits) {
    const amount = Math.min(usage, credit.drawn - credit.alreadyCredited);
    if (amount <= 0) continue;
    usage -= amount;
    out.push({
      kind: "CREDITS",
      description: `Prepaid credits: ${credit.category} grant ${credit.grantId.slice(0, 8)}`,
      featureLookupKey: null,
      usageWindowKey: null,
      quantity: 1,
      unitPriceMicroCents: centsToMicroCents(-amount),
      amount: -amount,
      sortOrder: lines.length + out.length,
      pricing: null,
      creditGrantId: credit.grantId,
    });
  }
  return out;
}

const nextSortOrder = (draft: InvoiceDraft) =>
  Math.max(0, ...draft.lines.map((line) => line.sortOrder)) + 1;

/**
 * The coupon discount a period's own invoice takes when it is finalized
 * while the tenant has an active redemption: a DISCOUNT line of
 * -periodDiscountCents (coupons.ts) after the charges, `discount` set and
 * the total lowered. The discount is the period's: on its charges before
 * PROGRESSIVE_BILLED, less the `discountedEarlier` cents the period's
 * PROGRESSIVE invoices took. The coupon's currency or used-up periods can
 * leave it without one. `discountStatements` (discount-storage.ts) applies
 * this rule in SQL in the finalize batch, where the redemption's period is
 * counted and PROGRESSIVE invoices take their part; the upcoming invoice
 * previews it here.
 */
export function withDiscount(
  draft: InvoiceDraft,
  redemption: { coupon: CouponTerms & { label: string }; invoicesDiscounted: number } | null,
  discountedEarlier = 0,
): InvoiceDraft {
  if (!redemption) return draft;
  const progressiveBilled = sumCents(
    draft.lines.filter((line) => line.kind === "PROGRESSIVE_BILLED").map((line) => line.amount),
  );
  const discount = periodDiscountCents(redemption.coupon, redemption.invoicesDiscounted, {
    subtotal: draft.subtotal,
    currency: draft.currency,
    charges: draft.subtotal - progressiveBilled,
    discountedEarlier,
  });
  if (discount === null) return draft;
  return {
    ...draft,
    discount,
    total: draft.total - discount,
    lines: [
      ...draft.lines,
      {
        kind: "DISCOUNT",
        description: discountLineDescription(redemption.coupon.label, discountedEarlier > 0),
        featureLookupKey: null,
        usageWindowKey: null,
        quantity: 1,
        unitPriceMicroCents: centsToMicroCents(0 - discount),
        amount: 0 - discount,
        sortOrder: nextSortOrder(draft),
        pricing: null,
      },
    ],
  };
}

/**
 * The tax a draft takes when it is finalized with the tenant's rate then in
 * force: a TAX line of round_half_up((subtotal - discount) x rate) after the
 * charges and the discount, added to the total. A positive rate gets the
 * line (0 when nothing is taxable); the rate (0 too) stays on the invoice;
 * a tenant without billing details gets neither. `finalizeStatements` (invoicing/storage.ts)
 * applies this rule in SQL inside the finalize batch, so the rate read is
 * the one at finalization; the upcoming invoice previews it here.
 */
export function withTax(draft: InvoiceDraft, taxRatePpm: number | null): InvoiceDraft {
  if (taxRatePpm === null) return draft;
  const taxable = draft.subtotal - draft.discount;
  const tax = taxRatePpm > 0 ? taxCents(taxable, taxRatePpm) : 0;
  if (taxRatePpm === 0) return { ...draft, taxRatePpm };
  return {
    ...draft,
    tax,
    taxRatePpm,
    total: draft.total + tax,
    lines: [
      ...draft.lines,
      {
        kind: "TAX",
        description: taxLineDescription(taxRatePpm),
        featureLookupKey: null,
        usageWindowKey: null,
        quantity: 1,
        unitPriceMicroCents: centsToMicroCents(tax),
        amount: tax,
        sortOrder: nextSortOrder(draft),
        pricing: null,
      },
    ],
  };
}

/**
 * The credit balance a draft takes when it is finalized: a CREDIT_APPLIED
 * line of -min(total, available) after the other lines, and the total
 * lowered by it (subtotal unchanged). `finalizeStatements` (invoicing/storage.ts)
 * applies this rule in SQL inside the finalize batch, where it must run so
 * that each credit is used once; the upcoming invoice previews it here.
 */
export function withCreditBalance(draft: InvoiceDraft, availableCredit: number): InvoiceDraft {
  if (draft.total <= 0 || availableCredit <= 0) return draft;
  const applied = Math.min(draft.total, availableCredit);
  const sortOrder = nextSortOrder(draft);
  return {
    ...draft,
    total: draft.total - applied,
    lines: [
      ...draft.lines,
      {
        kind: "CREDIT_APPLIED",
        description: "Credit balance applied",
        featureLookupKey: null,
        usageWindowKey: null,
        quantity: 1,
        unitPriceMicroCents: centsToMicroCents(-applied),
        amount: -applied,
        sortOrder,
      },
    ],
  };
}

// --- the state machine ----------------------------------------------------

export type InvoiceAction = "finalize" | "pay" | "void" | "markUncollectible";

export const INVOICE_TRANSITIONS: Record<
  InvoiceAction,
  { from: readonly InvoiceStatus[]; to: InvoiceStatus }
> = {
  finalize: { from: ["DRAFT"], to: "OPEN" },
  pay: { from: ["OPEN", "UNCOLLECTIBLE"], to: "PAID" },
  void: { from: ["DRAFT", "OPEN", "UNCOLLECTIBLE"], to: "VOID" },
  markUncollectible: { from: ["OPEN"], to: "UNCOLLECTIBLE" },
};

export function canTransition(action: InvoiceAction, from: InvoiceStatus): boolean {
  return INVOICE_TRANSITIONS[action].from.includes(from);
}

export function transitionError(action: InvoiceAction, from: InvoiceStatus): string {
  return `Cannot transition invoice from ${from} to ${INVOICE_TRANSITIONS[action].to}`;
}

/** Invoices are due this long after they are finalized. */
export const INVOICE_DUE_DAYS = 30;

/** `INV-2026-000001`: the UTC year of finalization and the year's gap-free sequence number. */
export function formatInvoiceNumber(year: number, sequence: number): string {
  return `INV-${year}-${String(sequence).padStart(6, "0")}`;
}
