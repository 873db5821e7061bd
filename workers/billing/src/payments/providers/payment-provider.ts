import type { ProviderPaymentStatus } from "../domain/payment.ts";

/** What the billing side asks of a payment provider. */
export interface PaymentRequest {
  /** Cents; always positive (zero-total invoices never reach a provider). */
  amount: number;
  currency: string;
  /** Our attempt id: a repeated call with the same key must not charge twice. */
  idempotencyKey: string;
  description: string;
  /** The tenant being charged. */
  tenantId: string;
  /** The tenant's provider-side customer (created once, stored in payment_customers). */
  customerId: string;
  metadata: Record<string, string>;
}

export interface PaymentResult {
  providerPaymentId: string;
  status: ProviderPaymentStatus;
  failureReason: string | null;
  /** The provider's answer as received, kept on the attempt. */
  raw: unknown;
}

/** Money back on a payment the provider took. */
export interface RefundRequest {
  /** The provider's id of the payment refunded. */
  providerPaymentId: string;
  /** Cents; positive, at most what the payment took less its earlier refunds. */
  amount: number;
  currency: string;
  /** The credit note's id: a repeated call with the same key must not refund twice. */
  idempotencyKey: string;
  metadata: Record<string, string>;
}

export type ProviderRefundStatus = "succeeded" | "pending" | "failed";

export interface RefundResult {
  providerRefundId: string;
  status: ProviderRefundStatus;
  failureReason: string | null;
  raw: unknown;
}

export interface CustomerRequest {
  tenantId: string;
  /** The same key for the same tenant: a repeated call returns the same customer. */
  idempotencyKey: string;
  name: string;
}

export interface PaymentProvider {
  /** Stored on each attempt (`development`, `payprovider`). */
  readonly name: string;
  /** Creates the tenant's customer at the provider (idempotent on the key). */
  createCustomer(request: CustomerRequest): Promise<{ providerCustomerId: string }>;
  /** Charges the customer's default payment method off-session. */
  createPayment(request: PaymentRequest): Promise<PaymentResult>;
  /** The payment as the provider sees it now (reconciling an attempt no webhook settled). */
  retrievePayment(providerPaymentId: string): Promise<PaymentResult>;
  /** Returns part or all of a payment to the customer (idempotent on the key). */
  createRefund(request: RefundRequest): Promise<RefundResult>;
}

/** A provider failure worth retrying later (network, 5xx, rate limit): nothing was decided. */
export class ProviderUnavailableError extends Error {
  override name = "ProviderUnavailableError";
}
