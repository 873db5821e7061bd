import type { ProviderPaymentStatus } from "../domain/payment.ts";
import {
  type PaymentProvider,
  type PaymentRequest,
  type PaymentResult,
  ProviderUnavailableError,
} from "./payment-provider.ts";

export interface PayProviderOptions {
  apiKey: string;
  /** Stripe-compatible API root, e.g. https://api.stripe.com */
  baseUrl: string;
  fetch?: typeof fetch;
}

/** Stripe's PaymentIntent statuses, as ours. */
export function statusFromIntent(
  status: string | undefined,
  hasError: boolean,
): ProviderPaymentStatus {
  switch (status) {
    case "succeeded":
      return "succeeded";
    case "canceled":
      return "cancelled";
    case "processing":
      return "pending";
    case "requires_action":
    case "requires_confirmation":
      return "requires_action";
    case "requires_payment_method":
      // After a confirmation attempt this means the charge was declined.
      return hasError ? "failed" : "requires_action";
    default:
      return "pending";
  }
}

interface IntentBody {
  id?: string;
  status?: string;
  last_payment_error?: { message?: string } | null;
  error?: { message?: string; payment_intent?: IntentBody };
}

/**
 * A Stripe-compatible provider over HTTP (form-encoded PaymentIntents,
 * confirmed off-session against the customer's default payment method).
 * The customer is found by the tenant id in metadata on the provider side.
 * Card declines come back as 402 with the intent inside the error.
 */
export class PayProviderPaymentProvider implements PaymentProvider {
  readonly name = "payprovider";
  private readonly fetcher: typeof fetch;

  constructor(private readonly options: PayProviderOptions) {
    this.fetcher = options.fetch ?? ((input, init) => fetch(input, init));
  }

  async createPayment(request: PaymentRequest): Promise<PaymentResult> {
    const form = new URLSearchParams();
    form.set("amount", String(request.amount));
    form.set("currency", request.currency);
    form.set("confirm", "true");
    form.set("off_session", "true");
    form.set("description", request.description);
    form.set("metadata[tenantId]", request.tenantId);
    for (const [key, value] of Object.entries(request.metadata)) {
      form.set(`metadata[${key}]`, value);
    }
    let response: Response;
    try {
      response = await this.fetcher(
        `${this.options.baseUrl.replace(/\/$/, "")}/v1/payment_intents`,
        {
          method: "POST",
          headers: {
            authorization: `Bearer ${this.options.apiKey}`,
            "content-type": "application/x-www-form-urlencoded",
            "idempotency-key": request.idempotencyKey,
          },
          body: form.toString(),
        },
      );
    } catch (error) {
      throw new ProviderUnavailableError(`payment provider unreachable: ${String(error)}`);
    }
    const body = (await response.json().catch(() => ({}))) as IntentBody;
    if (response.ok && body.id) {
      const hasError = Boolean(body.last_payment_error);
      const status = statusFromIntent(body.status, hasError);
      return {
        providerPaymentId: body.id,
        status,
        failureReason:
          status === "failed" ? (body.last_payment_error?.message ?? "Declined") : null,
        raw: body,
      };
    }
    const intent = body.error?.payment_intent;
    if (response.status === 402 && intent?.id) {
      return {
        providerPaymentId: intent.id,
        status: "failed",
        failureReason: body.error?.message ?? "Declined",
        raw: body,
      };
    }
    throw new ProviderUnavailableError(
      `payment provider answered ${response.status}: ${body.error?.message ?? "no message"}`,
    );
  }
}
