import { createHmac, timingSafeEqual } from "node:crypto";

// The "Receiving them" snippet of docs/billing.md (outbound webhooks), verbatim: what a tenant's
// receiver runs on every delivery (Node). The end-to-end receiver uses it.

/** True when `header` (edge-signature) signs `rawBody` with `secret`, within `toleranceSeconds`. */
export function verifyEdgeSignature(
  secret: string,
  header: string | undefined,
  rawBody: string,
  toleranceSeconds = 300,
  nowSeconds = Math.floor(Date.now() / 1000),
): boolean {
  const fields = (header ?? "").split(",").map((part) => part.trim().split("="));
  const timestamp = Number(fields.find(([key]) => key === "t")?.[1]);
  if (!Number.isInteger(timestamp) || Math.abs(nowSeconds - timestamp) > toleranceSeconds) {
    return false;
  }
  const expected = createHmac("sha256", secret).update(`${timestamp}.${rawBody}`).digest();
  return fields.some(
    ([key, value]) =>
      key === "v1" &&
      /^[0-9a-f]{64}$/.test(value ?? "") &&
      timingSafeEqual(Buffer.from(value ?? "", "hex"), expected),
  );
}
