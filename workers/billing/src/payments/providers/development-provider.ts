import type { ProviderPaymentStatus } from "../domain/payment.ts";
import type {
  CustomerRequest,
  PaymentProvider,
  PaymentRequest,
  PaymentResult,
  ProviderRefundStatus,
  RefundRequest,
  RefundResult,
} from "./payment-provider.ts";
import { ProviderUnavailableError } from "./payment-provider.ts";

export type DevelopmentOutcome =
  | ProviderPaymentStatus
  | "unavailable"
  | { status: ProviderPaymentStatus; failureReason?: string };

/**
 * The development and test provider: no network, no money. Each payment
 * gets the outcome `decide` returns for it (default: `pending`, so the
 * payment settles when a webhook, e.g. `POST /webhooks/fake`, says so;
 * `unavailable` throws as an unreachable provider would). Ids derive from
 * the idempotency key, so a repeated call answers with the same payment,
 * as a real provider does. `retrievePayment` answers what `settle` says
 * the payment became (default: its outcome when it was made). A refund gets
 * the outcome `decideRefund` returns (default: `succeeded`).
 */
export class DevelopmentPaymentProvider implements PaymentProvider {
  readonly name = "development";
  readonly requests: PaymentRequest[] = [];
  readonly customers: CustomerRequest[] = [];
  readonly retrieved: string[] = [];
  readonly refunds: RefundRequest[] = [];
  private readonly payments = new Map<string, PaymentResult>();

  constructor(
    private readonly decide: (request: PaymentRequest) => DevelopmentOutcome = () => "pending",
    private readonly settle: (providerPaymentId: string) => DevelopmentOutcome | undefined = () =>
      undefined,
    private readonly decideRefund: (
      request: RefundRequest,
    ) => ProviderRefundStatus | "unavailable" = () => "succeeded",
  ) {}

  async createCustomer(request: CustomerRequest) {
    this.customers.push(request);
    return { providerCustomerId: `dev_cus_${request.tenantId.replaceAll("-", "")}` };
  }

  async createPayment(request: PaymentRequest): Promise<PaymentResult> {
    this.requests.push(request);
    const providerPaymentId = `dev_pi_${request.idempotencyKey.replaceAll("-", "")}`;
    const result = resultOf(providerPaymentId, this.decide(request), request);
    this.payments.set(providerPaymentId, result);
    return result;
  }

  async createRefund(request: RefundRequest): Promise<RefundResult> {
    this.refunds.push(request);
    const status = this.decideRefund(request);
    if (status === "unavailable") {
      throw new ProviderUnavailableError("development provider set to be unavailable");
    }
    const providerRefundId = `dev_re_${request.idempotencyKey.replaceAll("-", "")}`;
    const failureReason = status === "failed" ? "Refund declined by the card issuer" : null;
    return {
      providerRefundId,
      status,
      failureReason,
      raw: {
        id: providerRefundId,
        object: "refund",
        amount: request.amount,
        currency: request.currency,
        payment_intent: request.providerPaymentId,
        status,
        failure_reason: failureReason,
        metadata: request.metadata,
      },
    };
  }

  async retrievePayment(providerPaymentId: string): Promise<PaymentResult> {
    this.retrieved.push(providerPaymentId);
    const settled = this.settle(providerPaymentId);
    if (settled !== undefined) return resultOf(providerPaymentId, settled, null);
    return this.payments.get(providerPaymentId) ?? resultOf(providerPaymentId, "pending", null);
  }
}

function resultOf(
  providerPaymentId: string,
  decided: DevelopmentOutcome,
  request: PaymentRequest | null,
): PaymentResult {
  if (decided === "unavailable") {
    throw new ProviderUnavailableError("development provider set to be unavailable");
  }
  const status = typeof decided === "string" ? decided : decided.status;
  const failureReason =
    status === "failed"
      ? ((typeof decided === "string" ? undefined : decided.failureReason) ?? "Card declined")
      : null;
  return {
    providerPaymentId,
    status,
    failureReason,
    raw: {
      id: providerPaymentId,
      object: "payment_intent",
      amount: request?.amount ?? null,
      currency: request?.currency ?? null,
      customer: request?.customerId ?? null,
      status,
      failure_reason: failureReason,
      metadata: request?.metadata ?? {},
    },
  };
}

/** Steering from configuration (`DEV_REFUND_OUTCOME`): one fixed outcome for every refund. */
export function fixedRefundOutcome(
  value: string | undefined,
): () => ProviderRefundStatus | "unavailable" {
  const allowed = ["succeeded", "pending", "failed", "unavailable"] as const;
  const outcome = allowed.find((status) => status === value) ?? "succeeded";
  return () => outcome;
}

/** Steering from configuration (`DEV_PAYMENT_OUTCOME`): one fixed outcome for every payment. */
export function fixedOutcome(value: string | undefined): () => DevelopmentOutcome {
  const allowed: DevelopmentOutcome[] = [
    "succeeded",
    "failed",
    "pending",
    "requires_action",
    "cancelled",
    "unavailable",
  ];
  const outcome = allowed.find((status) => status === value) ?? "pending";
  return () => outcome;
}
