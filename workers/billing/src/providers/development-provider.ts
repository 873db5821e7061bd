import type { ProviderPaymentStatus } from "../domain/payment.ts";
import type { PaymentProvider, PaymentRequest, PaymentResult } from "./payment-provider.ts";

export type DevelopmentOutcome =
  | ProviderPaymentStatus
  | { status: ProviderPaymentStatus; failureReason?: string };

/**
 * The development and test provider: no network, no money. Each payment
 * gets the outcome `decide` returns for it (default: `pending`, so the
 * payment settles when a webhook, e.g. `POST /webhooks/fake`, says so).
 * Ids derive from the idempotency key, so a repeated call answers with the
 * same payment, as a real provider does.
 */
export class DevelopmentPaymentProvider implements PaymentProvider {
  readonly name = "development";
  readonly requests: PaymentRequest[] = [];

  constructor(
    private readonly decide: (request: PaymentRequest) => DevelopmentOutcome = () => "pending",
  ) {}

  async createPayment(request: PaymentRequest): Promise<PaymentResult> {
    this.requests.push(request);
    const decided = this.decide(request);
    const status = typeof decided === "string" ? decided : decided.status;
    const failureReason =
      status === "failed"
        ? ((typeof decided === "string" ? undefined : decided.failureReason) ?? "Card declined")
        : null;
    const providerPaymentId = `dev_pi_${request.idempotencyKey.replaceAll("-", "")}`;
    return {
      providerPaymentId,
      status,
      failureReason,
      raw: {
        id: providerPaymentId,
        object: "payment_intent",
        amount: request.amount,
        currency: request.currency,
        status,
        failure_reason: failureReason,
        metadata: request.metadata,
      },
    };
  }
}

/** Steering from configuration (`DEV_PAYMENT_OUTCOME`): one fixed outcome for every payment. */
export function fixedOutcome(value: string | undefined): () => DevelopmentOutcome {
  const allowed: ProviderPaymentStatus[] = [
    "succeeded",
    "failed",
    "pending",
    "requires_action",
    "cancelled",
  ];
  const outcome = allowed.find((status) => status === value) ?? "pending";
  return () => outcome;
}
