import type { SnapshotTerms } from "@edge-platform/shared/billing/entitlement-snapshot";
import { allowanceShare, billableAllowance } from "../../invoicing/index.ts";
import { usageCharge } from "../../pricing/index.ts";

// Prepaid credits: the rules, as pure functions. The tenant's
// EntitlementCounter holds the grants and applies these in the same
// synchronous step as the count (entitlements/counter/credit-balance.ts).
//
// Cost. Usage costs what the invoice bills for it: the units beyond the
// subscription's share of the included amount (or SOFT limit) in the
// window, the same share the invoice uses (allowanceShare: prorated by the
// time the subscription is billable in the window, so after a mid-window
// plan change the new subscription's share), priced by the feature's charge model
// (charge-models.ts, the invoice's own routine). The cost of `amount` more
// units is charge(billed units after) - charge(billed units before), each
// rounded half up to cents once, so the costs drawn for a window add up to
// the charge of all its units: exactly what its USAGE line bills. A volume
// price whose total reaches a cheaper tier costs 0 (never negative).
//
// Burn-down. A cost is drawn from the ACTIVE grants that apply (same
// currency, not expired, the feature among the grant's `features` or the
// grant open to all priced usage), lowest priority first, then soonest
// expiry (a grant without expiry last), then oldest, then by id.

export const CREDIT_GRANT_STATUSES = ["PENDING", "ACTIVE", "EXPIRED", "VOIDED"] as const;
export type StoredGrantStatus = (typeof CREDIT_GRANT_STATUSES)[number];
/** As the API shows it: an ACTIVE grant with nothing left is EXHAUSTED. */
export type CreditGrantStatus = StoredGrantStatus | "EXHAUSTED";
export const CREDIT_CATEGORIES = ["promotional", "paid"] as const;
export type CreditCategory = (typeof CREDIT_CATEGORIES)[number];

export const MAX_GRANT_AMOUNT = 1_000_000_000;
export const DEFAULT_GRANT_PRIORITY = 50;
export const CREDITS_EXHAUSTED = "CREDITS_EXHAUSTED";

/** A grant as the burn-down sees it. */
export interface GrantBalance {
  id: string;
  currency: string;
  priority: number;
  /** ISO-8601; null: never expires. */
  expiresAt: string | null;
  createdAt: string;
  /** Feature lookup keys it may pay for; null: all priced usage. */
  features: readonly string[] | null;
  status: StoredGrantStatus;
  /** Cents left to draw. */
  remaining: number;
}

export interface DrawContext {
  featureKey: string;
  currency: string;
  now: Date;
}

/** Whether the grant may pay for this usage now. */
export function grantApplies(grant: GrantBalance, context: DrawContext): boolean {
  return (
    grant.status === "ACTIVE" &&
    grant.remaining > 0 &&
    grant.currency === context.currency &&
    (grant.expiresAt === null || Date.parse(grant.expiresAt) > context.now.getTime()) &&
    (grant.features === null || grant.features.includes(context.featureKey))
  );
}

/** The burn-down order: lowest priority, soonest expiry (none last), oldest, id. */
export function burnDownOrder(a: GrantBalance, b: GrantBalance): number {
  if (a.priority !== b.priority) return a.priority - b.priority;
  const expiresA = a.expiresAt === null ? Number.POSITIVE_INFINITY : Date.parse(a.expiresAt);
  const expiresB = b.expiresAt === null ? Number.POSITIVE_INFINITY : Date.parse(b.expiresAt);
  if (expiresA !== expiresB) return expiresA < expiresB ? -1 : 1;
  if (a.createdAt !== b.createdAt) return a.createdAt < b.createdAt ? -1 : 1;
  return a.id < b.id ? -1 : a.id > b.id ? 1 : 0;
}

/** What the applicable grants hold for this usage, in cents. */
export function applicableBalance(grants: readonly GrantBalance[], context: DrawContext): number {
  let total = 0;
  for (const grant of grants) if (grantApplies(grant, context)) total += grant.remaining;
  return total;
}

export interface DrawPlan {
  /** Cents taken from each grant, in burn-down order (grants drawn nothing are left out). */
  draws: { grantId: string; amount: number }[];
  /** Cents the grants covered. */
  covered: number;
  /** Cents they did not (billed on the period's invoice). */
  shortfall: number;
}

/** How `cost` cents are drawn from the grants that apply, in burn-down order. */
export function planDraw(
  grants: readonly GrantBalance[],
  cost: number,
  context: DrawContext,
): DrawPlan {
  if (!Number.isSafeInteger(cost) || cost < 0) throw new RangeError("cost must be whole cents");
  const draws: DrawPlan["draws"] = [];
  let left = cost;
  for (const grant of grants.filter((g) => grantApplies(g, context)).sort(burnDownOrder)) {
    if (left === 0) break;
    const amount = Math.min(left, grant.remaining);
    draws.push({ grantId: grant.id, amount });
    left -= amount;
  }
  return { draws, covered: cost - left, shortfall: left };
}

/** The cents a window's billed units cost under the snapshot's pricing (0 for unpriced features). */
function chargeOf(snapshot: SnapshotTerms, billedUnits: number): number {
  const allowance = billableAllowance(snapshot);
  if (!allowance || billedUnits <= 0) return 0;
  return usageCharge(allowance.pricing, { alreadyBilled: 0, alreadyCharged: 0 }, billedUnits)
    .amount;
}

/** Whether usage of the feature is priced (METERED or SOFT with a price): only such usage draws credit. */
export function isPricedUsage(snapshot: SnapshotTerms): boolean {
  const allowance = billableAllowance(snapshot);
  if (!allowance) return false;
  return allowance.pricing.model !== "per_unit" || allowance.pricing.unitPrice > 0;
}

/** Where a draw's units are counted: the usage window and the subscription's billable start. */
export interface CostWindow {
  /** The window's key (its start, ISO-8601), as the invoice reads it. */
  windowKey: string;
  /** null: the lifetime window. */
  windowEnd: Date | null;
  /** When the subscription became billable (trial end, else start). */
  billableFrom: Date;
}

/**
 * The included units (or SOFT limit) the subscription gets in the window:
 * the invoice's own share (allowanceShare), or the whole allowance
 * without a window. In the lifetime window the earlier subscriptions'
 * usage is not known here: the whole allowance.
 */
export function includedFor(snapshot: SnapshotTerms, window?: CostWindow): number {
  const allowance = billableAllowance(snapshot);
  if (!allowance) return 0;
  if (!window) return allowance.included;
  return allowanceShare(
    allowance.included,
    { windowKey: window.windowKey, windowEnd: window.windowEnd },
    { from: window.billableFrom, until: null },
  );
}

/**
 * Cents that `amount` more units cost, given the units the subscription
 * already used in the window: its included share first, then the charge
 * model on the billed units (see the top of this module).
 */
export function usageCostCents(
  snapshot: SnapshotTerms,
  usedBefore: number,
  amount: number,
  window?: CostWindow,
): number {
  const allowance = billableAllowance(snapshot);
  if (!allowance) return 0;
  const included = includedFor(snapshot, window);
  const billedBefore = Math.max(0, usedBefore - included);
  const billedAfter = Math.max(0, usedBefore + amount - included);
  return Math.max(0, chargeOf(snapshot, billedAfter) - chargeOf(snapshot, billedBefore));
}

/** The status a grant shows: EXHAUSTED once an ACTIVE grant has nothing left. */
export function displayedStatus(status: StoredGrantStatus, remaining: number): CreditGrantStatus {
  return status === "ACTIVE" && remaining <= 0 ? "EXHAUSTED" : status;
}

/** A paid grant the automatic top-up asks for. */
export interface TopUpRequest {
  grantId: string;
  amount: number;
  currency: string;
}

/**
 * The grant credits that `paidCents` of its TOP_UP invoice bought:
 * paidCents x amount / paidAmount, rounded half up (exact for any amounts
 * up to MAX_GRANT_AMOUNT: the product is taken in BigInt).
 */
export function creditsForPaidCents(paidCents: number, amount: number, paidAmount: number): number {
  assertCents(paidCents, "paidCents");
  const denominator = BigInt(paidAmount);
  if (denominator <= 0n) throw new RangeError("paidAmount must be positive");
  const doubled = 2n * BigInt(paidCents) * BigInt(amount);
  return Number((doubled + denominator) / (2n * denominator));
}

/**
 * The paid cents that `credits` of a grant are worth, rounded down, so that
 * taking back that many paid cents never needs more credits than `credits`.
 */
export function paidCentsForCredits(credits: number, amount: number, paidAmount: number): number {
  assertCents(credits, "credits");
  if (amount <= 0) throw new RangeError("amount must be positive");
  return Number((BigInt(credits) * BigInt(paidAmount)) / BigInt(amount));
}

function assertCents(value: number, name: string): void {
  if (!Number.isSafeInteger(value) || value < 0)
    throw new RangeError(`${name} must be whole cents`);
}

/**
 * The ledger's external_reference of a take-back's write-off: the mark by
 * which the tenant's counter learns that the batch holding it was written.
 */
export function takeBackReference(reservationId: string): string {
  return `credit-take-back:${reservationId}`;
}
