import type { PaymentResult } from "../providers/payment-provider.ts";
import type { PaymentEvent } from "./payment.ts";

export interface PaymentOutcome {
  /** Whether anything changed; an event that changes nothing is still recorded. */
  changed: boolean;
  note: string;
}

/** Events about the status of a payment (not a refund, not an unknown type). */
export type PaymentStatusEvent = Exclude<PaymentEvent, { type: "charge.refunded" | "unknown" }>;

/**
 * What the provider's answer about an attempt (its synchronous answer to the
 * charge, or what it reports when asked later) settles: the same event a
 * webhook would bring, or null while the payment is still undecided at the
 * provider (pending, requires_action). The amount is the attempt's, as the
 * answer is about the payment we asked for.
 */
export function settledEventOf(
  result: PaymentResult,
  attempt: { amount: number; currency: string },
): PaymentStatusEvent | null {
  const event = {
    providerPaymentId: result.providerPaymentId,
    amount: attempt.amount,
    currency: attempt.currency,
  };
  switch (result.status) {
    case "succeeded":
      return { type: "payment.succeeded", ...event };
    case "failed":
    case "cancelled":
      return {
        type: result.status === "failed" ? "payment.failed" : "payment.cancelled",
        ...event,
        failureReason: result.failureReason,
      };
    default:
      return null;
  }
}
