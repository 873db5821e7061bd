// Webhook signatures, both directions: `t=<unix seconds>,v1=<hex
// HMAC-SHA256 of "<t>.<raw body>">` (the Stripe scheme), in the provider's
// `payprovider-signature` header on webhooks we receive, and in
// `edge-signature` on the webhooks we send tenants (signWebhook). Several v1 values may be present (secret rotation); one match is
// enough. The comparison is crypto.subtle.verify, which is constant-time.

export const SIGNATURE_HEADER = "payprovider-signature";
export const SIGNATURE_TOLERANCE_SECONDS = 300;

export interface ParsedSignature {
  timestamp: number;
  signatures: Uint8Array[];
}

const HEX = /^[0-9a-f]{64}$/i;

function hexToBytes(hex: string): Uint8Array {
  const bytes = new Uint8Array(hex.length / 2);
  for (let index = 0; index < bytes.length; index++) {
    bytes[index] = Number.parseInt(hex.slice(index * 2, index * 2 + 2), 16);
  }
  return bytes;
}

function bytesToHex(bytes: ArrayBuffer): string {
  return [...new Uint8Array(bytes)].map((byte) => byte.toString(16).padStart(2, "0")).join("");
}

export function parseSignatureHeader(header: string | undefined | null): ParsedSignature | null {
  if (!header || header.length > 2048) return null;
  let timestamp: number | null = null;
  const signatures: Uint8Array[] = [];
  for (const part of header.split(",")) {
    const separator = part.indexOf("=");
    if (separator < 0) continue;
    const key = part.slice(0, separator).trim();
    const value = part.slice(separator + 1).trim();
    if (key === "t" && /^\d{1,12}$/.test(value)) timestamp = Number(value);
    else if (key === "v1" && HEX.test(value)) signatures.push(hexToBytes(value));
  }
  if (timestamp === null || signatures.length === 0) return null;
  return { timestamp, signatures };
}

async function hmacKey(secret: string, usage: "sign" | "verify"): Promise<CryptoKey> {
  return crypto.subtle.importKey(
    "raw",
    new TextEncoder().encode(secret),
    { name: "HMAC", hash: "SHA-256" },
    false,
    [usage],
  );
}

/** The header a provider would send for `rawBody` at `timestampSeconds` (tests, tools). */
export async function signWebhook(
  secret: string,
  rawBody: string,
  timestampSeconds: number,
): Promise<string> {
  const key = await hmacKey(secret, "sign");
  const mac = await crypto.subtle.sign(
    "HMAC",
    key,
    new TextEncoder().encode(`${timestampSeconds}.${rawBody}`),
  );
  return `t=${timestampSeconds},v1=${bytesToHex(mac)}`;
}

export type SignatureCheck =
  | { ok: true; timestamp: number }
  | { ok: false; reason: "missing_secret" | "malformed" | "stale" | "mismatch" };

export async function verifyWebhookSignature(
  secret: string | undefined,
  header: string | undefined | null,
  rawBody: string,
  nowSeconds: number,
  toleranceSeconds = SIGNATURE_TOLERANCE_SECONDS,
): Promise<SignatureCheck> {
  if (!secret) return { ok: false, reason: "missing_secret" };
  const parsed = parseSignatureHeader(header);
  if (!parsed) return { ok: false, reason: "malformed" };
  if (Math.abs(nowSeconds - parsed.timestamp) > toleranceSeconds) {
    return { ok: false, reason: "stale" };
  }
  const key = await hmacKey(secret, "verify");
  const signed = new TextEncoder().encode(`${parsed.timestamp}.${rawBody}`);
  let matched = false;
  // Check every candidate (no early exit), so timing does not depend on which matched.
  for (const signature of parsed.signatures) {
    if (await crypto.subtle.verify("HMAC", key, signature, signed)) matched = true;
  }
  return matched ? { ok: true, timestamp: parsed.timestamp } : { ok: false, reason: "mismatch" };
}
