import { describe, expect, it } from "vitest";
import { signWebhook, verifyWebhookSignature } from "../../platform/index.ts";
import {
  DEFAULT_DELIVERY_SETTINGS,
  deliverySettings,
  disableVerdict,
  isDelivered,
  normaliseEventTypes,
  retryDelaySeconds,
  subscribesTo,
} from "./webhook-delivery.ts";
import {
  decryptWebhookSecret,
  encryptWebhookSecret,
  generateWebhookSecret,
  WebhookSecretKeyMissingError,
} from "./webhook-secret.ts";

const KEY = "unit-test-webhook-secret-encryption-key-0123456789";

describe("delivery backoff", () => {
  it("doubles from the base and stops at the cap", () => {
    const settings = { retryBaseSeconds: 30, retryMaxSeconds: 300 };
    expect([1, 2, 3, 4, 5, 6, 7, 50].map((n) => retryDelaySeconds(n, settings))).toEqual([
      30, 60, 120, 240, 300, 300, 300, 300,
    ]);
    expect(retryDelaySeconds(0, settings)).toBe(30);
    expect(retryDelaySeconds(3, { retryBaseSeconds: 0.2, retryMaxSeconds: 2 })).toBe(1);
  });

  it("reads settings from vars, keeping defaults for missing or nonsense values", () => {
    expect(deliverySettings({})).toEqual(DEFAULT_DELIVERY_SETTINGS);
    expect(
      deliverySettings({
        WEBHOOK_RETRY_BASE_SECONDS: "1",
        WEBHOOK_RETRY_MAX_SECONDS: "99999",
        WEBHOOK_DISABLE_AFTER_HOURS: "1",
        WEBHOOK_TIMEOUT_MS: "-5",
        WEBHOOK_ALLOW_HTTP_LOCALHOST: "TRUE",
      }),
    ).toEqual({
      retryBaseSeconds: 1,
      retryMaxSeconds: 43_200,
      disableAfterMs: 3_600_000,
      timeoutMs: DEFAULT_DELIVERY_SETTINGS.timeoutMs,
      allowHttpLocalhost: true,
    });
    expect(deliverySettings({ WEBHOOK_ALLOW_HTTP_LOCALHOST: "yes" }).allowHttpLocalhost).toBe(
      false,
    );
  });
});

describe("subscriptions and outcomes", () => {
  it("matches event types, with * for all", () => {
    expect(subscribesTo(["invoice.paid"], "invoice.paid")).toBe(true);
    expect(subscribesTo(["invoice.paid"], "invoice.voided")).toBe(false);
    expect(subscribesTo(["*"], "quota.exhausted")).toBe(true);
    expect(normaliseEventTypes(["invoice.paid", "invoice.finalized", "invoice.paid"])).toEqual([
      "invoice.finalized",
      "invoice.paid",
    ]);
    expect(normaliseEventTypes(["invoice.paid", "*"])).toEqual(["*"]);
  });

  it("only 2xx is delivered; redirects are failures", () => {
    expect([200, 204, 299].every(isDelivered)).toBe(true);
    expect([199, 301, 302, 307, 400, 410, 500].some(isDelivered)).toBe(false);
  });

  it("disables only after failing for longer than the setting", () => {
    const since = "2026-01-01T00:00:00.000Z";
    const threeDays = 72 * 3600_000;
    expect(disableVerdict(null, new Date("2026-02-01T00:00:00Z"), threeDays)).toBeNull();
    expect(disableVerdict(since, new Date("2026-01-04T00:00:00.000Z"), threeDays)).toBeNull();
    expect(disableVerdict(since, new Date("2026-01-04T00:00:00.001Z"), threeDays)).toMatch(
      /failed since 2026-01-01T00:00:00.000Z \(longer than 72 hours\)/,
    );
  });
});

describe("signing secrets", () => {
  it("are whsec_ + 32 random bytes in base64", () => {
    const secret = generateWebhookSecret();
    expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(generateWebhookSecret()).not.toBe(secret);
  });

  it("round-trip through AES-GCM, bound to the endpoint and the key", async () => {
    const secret = generateWebhookSecret();
    const sealed = await encryptWebhookSecret(KEY, "endpoint-a", secret);
    expect(sealed).toMatch(/^v1\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/);
    expect(sealed).not.toContain(secret.slice(6));
    expect(await decryptWebhookSecret(KEY, "endpoint-a", sealed)).toBe(secret);
    // Fresh IV each time.
    expect(await encryptWebhookSecret(KEY, "endpoint-a", secret)).not.toBe(sealed);
    await expect(decryptWebhookSecret(KEY, "endpoint-b", sealed)).rejects.toThrow();
    await expect(decryptWebhookSecret(`${KEY}x`, "endpoint-a", sealed)).rejects.toThrow();
    const [version, iv, body] = sealed.split(".");
    const flipped = `${version}.${iv}.${body?.startsWith("A") ? "B" : "A"}${body?.slice(1)}`;
    await expect(decryptWebhookSecret(KEY, "endpoint-a", flipped)).rejects.toThrow();
  });

  it("refuse to work without a key of at least 32 characters", async () => {
    await expect(encryptWebhookSecret(undefined, "e", "s")).rejects.toBeInstanceOf(
      WebhookSecretKeyMissingError,
    );
    await expect(encryptWebhookSecret("short", "e", "s")).rejects.toBeInstanceOf(
      WebhookSecretKeyMissingError,
    );
  });

  it("sign deliveries with the provider-webhook scheme (known HMAC vector)", async () => {
    const header = await signWebhook("whsec_known", '{"id":"evt_1"}', 1_700_000_000);
    expect(header).toBe(
      "t=1700000000,v1=68a37d422c7a8b96c533eaf81281025cd110ae84fcf96e4f0307b1bad5f2a1cd",
    );
    expect(
      await verifyWebhookSignature("whsec_known", header, '{"id":"evt_1"}', 1_700_000_100),
    ).toEqual({ ok: true, timestamp: 1_700_000_000 });
  });
});
