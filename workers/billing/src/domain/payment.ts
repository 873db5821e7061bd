import { MS_PER_DAY } from "@edge-platform/shared/billing/billing-period";

// Dunning: how failed payments are retried and when a subscription pays for it.
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

/** When the attempt after a failed `attemptNumber` runs, or null when that was the last one. */
export function nextRetryAt(attemptNumber: number, failedAt: Date): Date | null {
  const delayDays = RETRY_DELAYS_DAYS[attemptNumber - 1];
  if (delayDays === undefined) return null;
  return new Date(failedAt.getTime() + delayDays * MS_PER_DAY);
}

export function isLastAttempt(attemptNumber: number): boolean {
  return attemptNumber >= MAX_PAYMENT_ATTEMPTS;
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
    }
  | {
      type: "payment.failed" | "payment.cancelled";
      providerPaymentId: string;
      amount: number | null;
      currency: string | null;
      failureReason: string | null;
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
