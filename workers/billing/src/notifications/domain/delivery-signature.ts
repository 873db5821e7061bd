import { base64, fromBase64, signWebhook } from "../../platform/index.ts";
import { WEBHOOK_SECRET_MARKER } from "./webhook-secret.ts";

// The headers that let a receiver check a delivery came from us, unaltered
// and recently, with a Standard Webhooks verifier (standardwebhooks.com:
// `standardwebhooks` on npm and PyPI, Svix's libraries): the signed content
// is "<webhook-id>.<webhook-timestamp>.<body>", HMAC-SHA256 keyed by the
// base64-decoded part of the `whsec_` secret, sent as `v1,<base64>`. While a
// rotated-out secret still signs, the header carries one signature per
// secret, space-separated, and a receiver holding either secret verifies.
//
// `edge-signature` (`t=<unix>,v1=<hex>`, keyed by the secret's text) is the
// older scheme, still sent beside the standard headers for receivers that
// have not moved yet; it carries one v1 value per signing secret too.

export const WEBHOOK_ID_HEADER = "webhook-id";
export const WEBHOOK_TIMESTAMP_HEADER = "webhook-timestamp";
export const WEBHOOK_SIGNATURE_HEADER = "webhook-signature";
/** Deprecated: sent alongside the standard headers until the next minor version. */
export const LEGACY_SIGNATURE_HEADER = "edge-signature";

/**
 * The key bytes of a `whsec_<base64>` secret. Secrets issued before the
 * standard headers were base64url without padding; both alphabets decode
 * to the same bytes, so those endpoints keep verifying once their receiver
 * converts `-`/`_` to `+`/`/` (or rotates the secret).
 */
export function webhookSecretKeyBytes(secret: string): Uint8Array<ArrayBuffer> {
  const encoded = secret.startsWith(WEBHOOK_SECRET_MARKER)
    ? secret.slice(WEBHOOK_SECRET_MARKER.length)
    : secret;
  const bytes = /^[A-Za-z0-9+/_-]+=*$/.test(encoded) ? fromBase64(encoded) : new Uint8Array();
  if (bytes.length === 0) throw new Error("a webhook secret is whsec_ followed by base64");
  return bytes;
}

/** `v1,<base64 HMAC-SHA256 of "<id>.<timestamp>.<body>">` for one secret. */
export async function standardWebhookSignature(
  secret: string,
  webhookId: string,
  timestampSeconds: number,
  body: string,
): Promise<string> {
  const key = await crypto.subtle.importKey(
    "raw",
    webhookSecretKeyBytes(secret),
    { name: "HMAC", hash: "SHA-256" },
    false,
    ["sign"],
  );
  const mac = await crypto.subtle.sign(
    "HMAC",
    key,
    new TextEncoder().encode(`${webhookId}.${timestampSeconds}.${body}`),
  );
  return `v1,${base64(new Uint8Array(mac))}`;
}

export interface SignedDelivery {
  /** Stable across retries and resends: receivers deduplicate on it. */
  webhookId: string;
  timestampSeconds: number;
  body: string;
  /** The current secret first, then any rotated-out secret still in its overlap. */
  secrets: readonly string[];
}

/** The signature headers of one attempt: the standard three and the deprecated one. */
export async function deliverySignatureHeaders(
  delivery: SignedDelivery,
): Promise<Record<string, string>> {
  const { webhookId, timestampSeconds, body, secrets } = delivery;
  if (secrets.length === 0) throw new Error("a delivery is signed with at least one secret");
  const standard = await Promise.all(
    secrets.map((secret) => standardWebhookSignature(secret, webhookId, timestampSeconds, body)),
  );
  const legacy = await Promise.all(
    secrets.map((secret) => signWebhook(secret, body, timestampSeconds)),
  );
  const legacyValues = legacy.map((header) => header.slice(header.indexOf(",") + 1));
  return {
    [WEBHOOK_ID_HEADER]: webhookId,
    [WEBHOOK_TIMESTAMP_HEADER]: String(timestampSeconds),
    [WEBHOOK_SIGNATURE_HEADER]: standard.join(" "),
    [LEGACY_SIGNATURE_HEADER]: `t=${timestampSeconds},${legacyValues.join(",")}`,
  };
}
