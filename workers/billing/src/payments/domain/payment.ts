import { MS_PER_DAY } from "@edge-platform/shared/billing/billing-period";

// Dunning: how failed payments are retried and when a subscription pays for it.
//
// Every attempt reaches a final state. An attempt whose provider call
// failed (network, 5xx: nothing was decided) is FAILED with a retry
// PROVIDER_UNAVAILABLE_RETRY_MINUTES later that does not count as a dunning
// step; an attempt still PENDING PENDING_RECONCILE_AFTER_MINUTES after its
// last change is reconciled by asking the provider, then SUCCEEDED or
// FAILED (a payment still unsettled at the provider by then counts as a
// failed dunning step; if it succeeds later, the money becomes a credit).
//
// Attempt 1 is made when the invoice is finalized. When attempt n fails,
// attempt n+1 is scheduled RETRY_DELAYS_DAYS[n-1] days after the failure
// (1, 3 and 5 days), so an invoice gets at most MAX_PAYMENT_ATTEMPTS
// attempts. When the last one fails the subscription becomes PAST_DUE; if
// the invoice is still unpaid GRACE_PERIOD_DAYS later the subscription is
// CANCELLED and the invoice UNCOLLECTIBLE. A success at any point (a retry,
// a late webhook, a manual mark-paid) clears PAST_DUE.

export const RETRY_DELAYS_DAYS = [1, 3, 5] as const;
export const MAX_PAYMENT_ATTEMPTS = RETRY_DELAYS_DAYS.length + 1;
export const GRACE_PERIOD_DAYS = 7;
export const PROVIDER_UNAVAILABLE_RETRY_MINUTES = 15;
export const PENDING_RECONCILE_AFTER_MINUTES = 60;
/** failure_reason prefix of attempts whose provider call failed: they are not dunning steps. */
export const PROVIDER_UNAVAILABLE_REASON = "provider_unavailable";

export function unavailableRetryAt(failedAt: Date): Date {
  return new Date(failedAt.getTime() + PROVIDER_UNAVAILABLE_RETRY_MINUTES * 60_000);
}

export function isProviderUnavailableReason(reason: string | null): boolean {
  return reason?.startsWith(`${PROVIDER_UNAVAILABLE_REASON}:`) === true;
}

/** The reconcile bound from configuration (minutes, positive), or the default. */
export function pendingReconcileMinutes(configured: string | undefined): number {
  const minutes = Number(configured);
  return Number.isFinite(minutes) && minutes > 0 ? minutes : PENDING_RECONCILE_AFTER_MINUTES;
}

/**
 * When the attempt after dunning step `step` (the n-th declined attempt of
 * an invoice) runs, or null when that was the last one.
 */
export function nextRetryAt(step: number, failedAt: Date): Date | null {
  const delayDays = RETRY_DELAYS_DAYS[step - 1];
  if (delayDays === undefined) return null;
  return new Date(failedAt.getTime() + delayDays * MS_PER_DAY);
}

export function isLastAttempt(step: number): boolean {
  return step >= MAX_PAYMENT_ATTEMPTS;
}

export function graceEndsAt(exhaustedAt: Date): Date {
  return new Date(exhaustedAt.getTime() + GRACE_PERIOD_DAYS * MS_PER_DAY);
}

/** What the providers report, normalized. */
export type ProviderPaymentStatus =
  | "succeeded"
  | "failed"
  | "pending"
  | "requires_action"
  | "cancelled";

export function attemptStatusOf(status: ProviderPaymentStatus) {
  switch (status) {
    case "succeeded":
      return "SUCCEEDED" as const;
    case "failed":
      return "FAILED" as const;
    case "requires_action":
      return "REQUIRES_ACTION" as const;
    case "cancelled":
      return "CANCELLED" as const;
    case "pending":
      return "PENDING" as const;
  }
}

/** A payment event from any source (webhook or a provider's synchronous answer), normalized. */
export type PaymentEvent =
  | {
      type: "payment.succeeded" | "payment.requires_action";
      providerPaymentId: string;
      amount: number | null;
      currency: string | null;
      /** Our attempt id from the payment's metadata, when the provider echoes it. */
      attemptId?: string | null;
    }
  | {
      type: "payment.failed" | "payment.cancelled";
      providerPaymentId: string;
      amount: number | null;
      currency: string | null;
      failureReason: string | null;
      attemptId?: string | null;
    }
  | {
      type: "charge.refunded";
      providerPaymentId: string;
      /** Cumulative amount refunded on the payment so far, in cents. */
      amountRefunded: number;
      currency: string | null;
      /** The provider's charge or refund id. */
      reference: string;
    }
  | { type: "unknown"; providerType: string };
