import { Webhook } from "standardwebhooks";
import { describe, expect, it } from "vitest";
import { verifyWebhookSignature } from "../../platform/index.ts";
import {
  deliverySignatureHeaders,
  LEGACY_SIGNATURE_HEADER,
  standardWebhookSignature,
  WEBHOOK_ID_HEADER,
  WEBHOOK_SIGNATURE_HEADER,
  WEBHOOK_TIMESTAMP_HEADER,
  webhookSecretKeyBytes,
} from "./delivery-signature.ts";
import { generateWebhookSecret, previousSecretOverlapEnd } from "./webhook-secret.ts";

const body = '{"id":"evt_1","type":"invoice.paid","data":{"total":2900}}';
const nowSeconds = () => Math.floor(Date.now() / 1000);

async function signed(secrets: string[], timestampSeconds = nowSeconds(), webhookId = "d-1") {
  return deliverySignatureHeaders({ webhookId, timestampSeconds, body, secrets });
}

describe("Standard Webhooks signatures, checked with the standardwebhooks package", () => {
  it("a new secret is whsec_ + base64 of 32 bytes that the package accepts", () => {
    const secret = generateWebhookSecret();
    expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(webhookSecretKeyBytes(secret)).toHaveLength(32);
    expect(() => new Webhook(secret)).not.toThrow();
  });

  it("the package verifies a delivery and returns its body", async () => {
    const secret = generateWebhookSecret();
    const headers = await signed([secret]);
    expect(headers[WEBHOOK_ID_HEADER]).toBe("d-1");
    expect(headers[WEBHOOK_TIMESTAMP_HEADER]).toMatch(/^\d{10}$/);
    expect(headers[WEBHOOK_SIGNATURE_HEADER]).toMatch(/^v1,[A-Za-z0-9+/]{43}=$/);
    expect(new Webhook(secret).verify(body, headers)).toEqual(JSON.parse(body));
  });

  it("during a rotation both secrets sign, and either verifies alone", async () => {
    const [current, previous] = [generateWebhookSecret(), generateWebhookSecret()];
    const headers = await signed([current, previous]);
    expect(headers[WEBHOOK_SIGNATURE_HEADER]?.split(" ")).toHaveLength(2);
    expect(new Webhook(current).verify(body, headers)).toBeTruthy();
    expect(new Webhook(previous).verify(body, headers)).toBeTruthy();
    expect(() => new Webhook(generateWebhookSecret()).verify(body, headers)).toThrow(
      "No matching signature found",
    );
  });

  it("a tampered body, another id, or a timestamp older than five minutes fails", async () => {
    const secret = generateWebhookSecret();
    const headers = await signed([secret]);
    const webhook = new Webhook(secret);
    expect(() => webhook.verify(`${body} `, headers)).toThrow("No matching signature found");
    expect(() => webhook.verify(body, { ...headers, [WEBHOOK_ID_HEADER]: "d-2" })).toThrow(
      "No matching signature found",
    );
    const old = await signed([secret], nowSeconds() - 301);
    expect(() => webhook.verify(body, old)).toThrow("Message timestamp too old");
  });

  it("secrets issued in the url-safe alphabet sign with the same key bytes", async () => {
    const standard = generateWebhookSecret();
    const urlSafe = standard.replaceAll("+", "-").replaceAll("/", "_").replace(/=+$/, "");
    expect(webhookSecretKeyBytes(urlSafe)).toEqual(webhookSecretKeyBytes(standard));
    expect(await standardWebhookSignature(urlSafe, "d-1", 1_700_000_000, body)).toBe(
      await standardWebhookSignature(standard, "d-1", 1_700_000_000, body),
    );
    expect(() => webhookSecretKeyBytes("whsec_")).toThrow();
    expect(() => webhookSecretKeyBytes("whsec_not base64!")).toThrow();
  });

  it("the deprecated edge-signature header carries one v1 value per secret", async () => {
    const [current, previous] = [generateWebhookSecret(), generateWebhookSecret()];
    const headers = await signed([current, previous]);
    const legacy = headers[LEGACY_SIGNATURE_HEADER];
    expect(legacy?.match(/v1=/g)).toHaveLength(2);
    for (const secret of [current, previous]) {
      expect((await verifyWebhookSignature(secret, legacy, body, nowSeconds())).ok).toBe(true);
    }
    expect(
      (await verifyWebhookSignature(generateWebhookSecret(), legacy, body, nowSeconds())).ok,
    ).toBe(false);
  });
});

describe("the overlap of a rotated-out secret", () => {
  const now = new Date("2026-11-27T12:00:00Z");
  it("lasts until its end, and only while there is a previous secret", () => {
    expect(previousSecretOverlapEnd("v1.a.b", "2026-11-28T12:00:00.000Z", now)).toBe(
      "2026-11-28T12:00:00.000Z",
    );
    expect(previousSecretOverlapEnd("v1.a.b", "2026-11-27T12:00:00.000Z", now)).toBeNull();
    expect(previousSecretOverlapEnd(null, "2026-11-28T12:00:00.000Z", now)).toBeNull();
    expect(previousSecretOverlapEnd("v1.a.b", null, now)).toBeNull();
  });
});
