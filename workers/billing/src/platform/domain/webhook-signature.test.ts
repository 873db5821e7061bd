import { describe, expect, it } from "vitest";
import { parseSignatureHeader, signWebhook, verifyWebhookSignature } from "./webhook-signature.ts";

const secret = "whsec_test";
const body = '{"id":"evt_1","type":"payment_intent.succeeded"}';

describe("webhook signatures", () => {
  it("accepts its own signature within 300 seconds either way", async () => {
    const header = await signWebhook(secret, body, 1_700_000_000);
    expect(await verifyWebhookSignature(secret, header, body, 1_700_000_300)).toEqual({
      ok: true,
      timestamp: 1_700_000_000,
    });
    expect(await verifyWebhookSignature(secret, header, body, 1_699_999_700)).toMatchObject({
      ok: true,
    });
    expect(await verifyWebhookSignature(secret, header, body, 1_700_000_301)).toEqual({
      ok: false,
      reason: "stale",
    });
  });

  it("refuses a changed body, another secret, a missing secret and malformed headers", async () => {
    const header = await signWebhook(secret, body, 1_700_000_000);
    expect((await verifyWebhookSignature(secret, header, `${body} `, 1_700_000_000)).ok).toBe(
      false,
    );
    expect(await verifyWebhookSignature("other", header, body, 1_700_000_000)).toEqual({
      ok: false,
      reason: "mismatch",
    });
    expect(await verifyWebhookSignature(undefined, header, body, 1_700_000_000)).toEqual({
      ok: false,
      reason: "missing_secret",
    });
    expect(await verifyWebhookSignature(secret, "garbage", body, 1_700_000_000)).toEqual({
      ok: false,
      reason: "malformed",
    });
    expect(parseSignatureHeader(`t=1,v1=${"g".repeat(64)}`)).toBeNull();
  });

  it("accepts any one of several v1 signatures (secret rotation)", async () => {
    const good = (await signWebhook(secret, body, 1_700_000_000)).split("v1=")[1];
    const header = `t=1700000000,v1=${"0".repeat(64)},v1=${good}`;
    expect((await verifyWebhookSignature(secret, header, body, 1_700_000_000)).ok).toBe(true);
  });
});
