import { describe, expect, it } from "vitest";
import { DevelopmentPaymentProvider } from "./development-provider.ts";
import { ProviderUnavailableError } from "./payment-provider.ts";
import { statusFromIntent } from "./payprovider.ts";
import { paymentProviderFromEnv } from "./providers.ts";

// The Stripe-compatible adapter's wire format is tested against a local
// HTTP server in test/payprovider-wire.test.ts; these are the pure parts.

const request = {
  amount: 4552,
  currency: "usd",
  idempotencyKey: "0b5d2a8e-0000-4000-8000-000000000001",
  description: "Invoice INV-2026-000001",
  tenantId: "t-1",
  customerId: "cus_1",
  metadata: { invoiceId: "i-1" },
};

describe("PaymentIntent statuses", () => {
  it("maps Stripe's statuses to ours (a declined confirmation is a failure)", () => {
    expect(statusFromIntent("succeeded", false)).toBe("succeeded");
    expect(statusFromIntent("processing", false)).toBe("pending");
    expect(statusFromIntent("requires_payment_method", true)).toBe("failed");
    expect(statusFromIntent("requires_payment_method", false)).toBe("requires_action");
    expect(statusFromIntent("canceled", false)).toBe("cancelled");
  });
});

describe("provider selection", () => {
  it("uses the development provider only in development and test", async () => {
    expect(paymentProviderFromEnv({ ENVIRONMENT: "test" }).name).toBe("development");
    expect(() =>
      paymentProviderFromEnv({ ENVIRONMENT: "production", PAYMENT_PROVIDER: "development" }),
    ).toThrow(/only allowed/);
    expect(() => paymentProviderFromEnv({ ENVIRONMENT: "production" })).toThrow(
      /PAYPROVIDER_API_KEY/,
    );
    expect(
      paymentProviderFromEnv({ ENVIRONMENT: "production", PAYPROVIDER_API_KEY: "sk" }).name,
    ).toBe("payprovider");
    const steered = paymentProviderFromEnv({
      ENVIRONMENT: "development",
      DEV_PAYMENT_OUTCOME: "failed",
    });
    expect((await steered.createPayment(request)).status).toBe("failed");
    const down = paymentProviderFromEnv({
      ENVIRONMENT: "development",
      DEV_PAYMENT_OUTCOME: "unavailable",
    });
    await expect(down.createPayment(request)).rejects.toBeInstanceOf(ProviderUnavailableError);
  });

  it("the development provider answers the same id for the same idempotency key, and retrieves it", async () => {
    const provider = new DevelopmentPaymentProvider(
      () => "pending",
      (id) => (id.endsWith("0001") ? "succeeded" : undefined),
    );
    const a = await provider.createPayment(request);
    const b = await provider.createPayment(request);
    expect(a.providerPaymentId).toBe(b.providerPaymentId);
    expect(provider.requests).toHaveLength(2);
    expect((await provider.retrievePayment(a.providerPaymentId)).status).toBe("succeeded");
    const other = await provider.createPayment({ ...request, idempotencyKey: "k-2" });
    expect((await provider.retrievePayment(other.providerPaymentId)).status).toBe("pending");
  });
});
