import { describe, expect, it } from "vitest";
import { DevelopmentPaymentProvider } from "./development-provider.ts";
import { paymentProviderFromEnv } from "./index.ts";
import { ProviderUnavailableError } from "./payment-provider.ts";
import { PayProviderPaymentProvider, statusFromIntent } from "./payprovider.ts";

const request = {
  amount: 4552,
  currency: "usd",
  idempotencyKey: "0b5d2a8e-0000-4000-8000-000000000001",
  description: "Invoice INV-2026-000001",
  tenantId: "t-1",
  metadata: { invoiceId: "i-1" },
};

describe("the Stripe-compatible provider (over a stand-in fetch; never the network)", () => {
  it("posts a form-encoded, idempotent, confirmed PaymentIntent and maps its status", async () => {
    const seen: { url: string; init: RequestInit }[] = [];
    const provider = new PayProviderPaymentProvider({
      apiKey: "sk_test_x",
      baseUrl: "https://provider.invalid/",
      fetch: async (url, init) => {
        seen.push({ url: String(url), init: init ?? {} });
        return Response.json({ id: "pi_1", status: "succeeded" });
      },
    });
    expect(await provider.createPayment(request)).toMatchObject({
      providerPaymentId: "pi_1",
      status: "succeeded",
      failureReason: null,
    });
    const sent = seen[0];
    expect(sent?.url).toBe("https://provider.invalid/v1/payment_intents");
    const headers = new Headers(sent?.init.headers);
    expect(headers.get("idempotency-key")).toBe(request.idempotencyKey);
    expect(headers.get("authorization")).toBe("Bearer sk_test_x");
    const form = new URLSearchParams(String(sent?.init.body));
    expect(form.get("amount")).toBe("4552");
    expect(form.get("confirm")).toBe("true");
    expect(form.get("metadata[invoiceId]")).toBe("i-1");
  });

  it("reads a decline (402) as a failed payment and anything else as unavailable", async () => {
    const declined = new PayProviderPaymentProvider({
      apiKey: "k",
      baseUrl: "https://provider.invalid",
      fetch: async () =>
        Response.json(
          { error: { message: "Your card was declined.", payment_intent: { id: "pi_2" } } },
          { status: 402 },
        ),
    });
    expect(await declined.createPayment(request)).toMatchObject({
      providerPaymentId: "pi_2",
      status: "failed",
      failureReason: "Your card was declined.",
    });
    const down = new PayProviderPaymentProvider({
      apiKey: "k",
      baseUrl: "https://provider.invalid",
      fetch: async () => new Response("oops", { status: 503 }),
    });
    await expect(down.createPayment(request)).rejects.toBeInstanceOf(ProviderUnavailableError);
    expect(statusFromIntent("processing", false)).toBe("pending");
    expect(statusFromIntent("requires_payment_method", true)).toBe("failed");
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
  });

  it("the development provider answers the same id for the same idempotency key", async () => {
    const provider = new DevelopmentPaymentProvider(() => "succeeded");
    const a = await provider.createPayment(request);
    const b = await provider.createPayment(request);
    expect(a.providerPaymentId).toBe(b.providerPaymentId);
    expect(provider.requests).toHaveLength(2);
  });
});
