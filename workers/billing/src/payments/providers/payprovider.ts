import type { ProviderPaymentStatus } from "../domain/payment.ts";
import {
  type CustomerRequest,
  type PaymentProvider,
  type PaymentRequest,
  type PaymentResult,
  type ProviderRefundStatus,
  ProviderUnavailableError,
  type RefundRequest,
  type RefundResult,
} from "./payment-provider.ts";

export interface PayProviderOptions {
  apiKey: string;
  /** Stripe-compatible API root, e.g. https://api.stripe.com */
  baseUrl: string;
  fetch?: typeof fetch;
}

/** The customer has nothing to charge off-session: a decline, not an outage. */
export class NoPaymentMethodError extends Error {
  override name = "NoPaymentMethodError";
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

interface RefundBody {
  id?: string;
  status?: string;
  failure_reason?: string | null;
  error?: { message?: string };
}

/** Stripe's Refund statuses, as ours. */
function refundStatusOf(status: string | undefined): ProviderRefundStatus {
  if (status === "succeeded") return "succeeded";
  if (status === "failed" || status === "canceled") return "failed";
  return "pending";
}

interface CustomerBody {
  id?: string;
  invoice_settings?: { default_payment_method?: string | { id?: string } | null } | null;
  error?: { message?: string };
}

function intentResult(body: IntentBody & { id: string }): PaymentResult {
  const status = statusFromIntent(body.status, Boolean(body.last_payment_error));
  return {
    providerPaymentId: body.id,
    status,
    failureReason: status === "failed" ? (body.last_payment_error?.message ?? "Declined") : null,
    raw: body,
  };
}

/**
 * A Stripe-compatible provider over HTTP (form-encoded, `Bearer` secret
 * key, `Idempotency-Key` on every create). Each tenant is one provider
 * customer (created once by the payment service and stored); a payment is
 * a PaymentIntent for that customer, confirmed off-session against the
 * customer's default payment method (`customer`, `payment_method`,
 * `confirm`, `off_session`). Card declines come back as 402 with the
 * intent inside the error; network errors, 5xx and 429 are "unavailable".
 */
export class PayProviderPaymentProvider implements PaymentProvider {
  readonly name = "payprovider";
  private readonly fetcher: typeof fetch;

  constructor(private readonly options: PayProviderOptions) {
    this.fetcher = options.fetch ?? ((input, init) => fetch(input, init));
  }

  async createCustomer(request: CustomerRequest) {
    const form = new URLSearchParams();
    form.set("name", request.name);
    form.set("metadata[tenantId]", request.tenantId);
    const { response, body } = await this.call<CustomerBody>("POST", "/v1/customers", {
      form,
      idempotencyKey: request.idempotencyKey,
    });
    if (response.ok && body.id) return { providerCustomerId: body.id };
    throw this.unavailable(response, body);
  }

  async createPayment(request: PaymentRequest): Promise<PaymentResult> {
    const paymentMethod = await this.defaultPaymentMethod(request.customerId);
    const form = new URLSearchParams();
    form.set("amount", String(request.amount));
    form.set("currency", request.currency);
    form.set("customer", request.customerId);
    form.set("payment_method", paymentMethod);
    form.set("confirm", "true");
    form.set("off_session", "true");
    form.set("description", request.description);
    form.set("metadata[tenantId]", request.tenantId);
    for (const [key, value] of Object.entries(request.metadata)) {
      form.set(`metadata[${key}]`, value);
    }
    const { response, body } = await this.call<IntentBody>("POST", "/v1/payment_intents", {
      form,
      idempotencyKey: request.idempotencyKey,
    });
    if (response.ok && body.id) return intentResult({ ...body, id: body.id });
    const intent = body.error?.payment_intent;
    if (response.status === 402 && intent?.id) {
      return {
        providerPaymentId: intent.id,
        status: "failed",
        failureReason: body.error?.message ?? "Declined",
        raw: body,
      };
    }
    throw this.unavailable(response, body);
  }

  /** A Refund on the PaymentIntent; a refund the provider declines at once is `failed`, not an outage. */
  async createRefund(request: RefundRequest): Promise<RefundResult> {
    const form = new URLSearchParams();
    form.set("payment_intent", request.providerPaymentId);
    form.set("amount", String(request.amount));
    for (const [key, value] of Object.entries(request.metadata)) {
      form.set(`metadata[${key}]`, value);
    }
    const { response, body } = await this.call<RefundBody>("POST", "/v1/refunds", {
      form,
      idempotencyKey: request.idempotencyKey,
    });
    if (response.ok && body.id) {
      const status = refundStatusOf(body.status);
      return {
        providerRefundId: body.id,
        status,
        failureReason: status === "failed" ? (body.failure_reason ?? "Refund failed") : null,
        raw: body,
      };
    }
    if (response.status === 400 || response.status === 402) {
      return {
        providerRefundId: `refused_${request.idempotencyKey}`,
        status: "failed",
        failureReason: body.error?.message ?? `refused (${response.status})`,
        raw: body,
      };
    }
    throw this.unavailable(response, body);
  }

  async retrievePayment(providerPaymentId: string): Promise<PaymentResult> {
    const { response, body } = await this.call<IntentBody>(
      "GET",
      `/v1/payment_intents/${encodeURIComponent(providerPaymentId)}`,
    );
    if (response.ok && body.id) return intentResult({ ...body, id: body.id });
    throw this.unavailable(response, body);
  }

  private async defaultPaymentMethod(customerId: string): Promise<string> {
    const { response, body } = await this.call<CustomerBody>(
      "GET",
      `/v1/customers/${encodeURIComponent(customerId)}`,
    );
    if (!response.ok) throw this.unavailable(response, body);
    const method = body.invoice_settings?.default_payment_method;
    const id = typeof method === "string" ? method : method?.id;
    if (!id) throw new NoPaymentMethodError("The customer has no default payment method");
    return id;
  }

  private async call<T>(
    method: "GET" | "POST",
    path: string,
    options: { form?: URLSearchParams; idempotencyKey?: string } = {},
  ): Promise<{ response: Response; body: T }> {
    const headers: Record<string, string> = { authorization: `Bearer ${this.options.apiKey}` };
    if (options.form) headers["content-type"] = "application/x-www-form-urlencoded";
    if (options.idempotencyKey) headers["idempotency-key"] = options.idempotencyKey;
    let response: Response;
    try {
      response = await this.fetcher(`${this.options.baseUrl.replace(/\/$/, "")}${path}`, {
        method,
        headers,
        ...(options.form ? { body: options.form.toString() } : {}),
      });
    } catch (error) {
      throw new ProviderUnavailableError(`payment provider unreachable: ${String(error)}`);
    }
    const body = (await response.json().catch(() => ({}))) as T;
    return { response, body };
  }

  private unavailable(response: Response, body: { error?: { message?: string } }) {
    return new ProviderUnavailableError(
      `payment provider answered ${response.status}: ${body.error?.message ?? "no message"}`,
    );
  }
}
