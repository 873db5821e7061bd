import type { ProviderPaymentStatus } from "../domain/payment.ts";

/** What the billing side asks of a payment provider. */
export interface PaymentRequest {
  /** Cents; always positive (zero-total invoices never reach a provider). */
  amount: number;
  currency: string;
  /** Our attempt id: a repeated call with the same key must not charge twice. */
  idempotencyKey: string;
  description: string;
  /** The tenant being charged (the provider-side customer is looked up by it). */
  tenantId: string;
  metadata: Record<string, string>;
}

export interface PaymentResult {
  providerPaymentId: string;
  status: ProviderPaymentStatus;
  failureReason: string | null;
  /** The provider's answer as received, kept on the attempt. */
  raw: unknown;
}

export interface PaymentProvider {
  /** Stored on each attempt (`development`, `payprovider`). */
  readonly name: string;
  createPayment(request: PaymentRequest): Promise<PaymentResult>;
}

/** A provider failure worth retrying later (network, 5xx, rate limit): nothing was decided. */
export class ProviderUnavailableError extends Error {
  override name = "ProviderUnavailableError";
}
