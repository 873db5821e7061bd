import { base64, base64Url, fromBase64 } from "../../platform/index.ts";

// Webhook signing secrets. Deliveries sign with the secret itself, so it
// cannot be stored as a hash only: it is kept encrypted (AES-256-GCM,
// WebCrypto) under a key derived from the WEBHOOK_SECRET_KEY secret, with
// the endpoint id as associated data so a ciphertext copied onto another
// endpoint does not decrypt.

export const WEBHOOK_SECRET_MARKER = "whsec_";
const WEBHOOK_SECRET_BYTES = 32;
/** The encryption key's source must carry at least this many characters. */
export const WEBHOOK_SECRET_KEY_MIN_LENGTH = 32;
const CIPHERTEXT_VERSION = "v1";

/** How long a rotated-out secret keeps signing unless the rotation says otherwise. */
export const DEFAULT_ROTATION_OVERLAP_HOURS = 24;
/** The longest overlap a rotation may ask for. */
export const MAX_ROTATION_OVERLAP_HOURS = 7 * 24;

/** `whsec_` + standard base64 (with padding) of 32 random bytes: the Standard Webhooks form. */
export function generateWebhookSecret(): string {
  return `${WEBHOOK_SECRET_MARKER}${base64(crypto.getRandomValues(new Uint8Array(WEBHOOK_SECRET_BYTES)))}`;
}

/** When a rotated-out secret stops signing, or null when it no longer signs (or there is none). */
export function previousSecretOverlapEnd(
  previousCiphertext: string | null,
  expiresAt: string | null,
  now: Date,
): string | null {
  if (!previousCiphertext || !expiresAt) return null;
  return Date.parse(expiresAt) > now.getTime() ? expiresAt : null;
}

export class WebhookSecretKeyMissingError extends Error {
  constructor() {
    super(
      `WEBHOOK_SECRET_KEY is not set or shorter than ${WEBHOOK_SECRET_KEY_MIN_LENGTH} characters`,
    );
  }
}

async function aesKey(keySource: string | undefined): Promise<CryptoKey> {
  if (!keySource || keySource.length < WEBHOOK_SECRET_KEY_MIN_LENGTH) {
    throw new WebhookSecretKeyMissingError();
  }
  // HKDF turns the configured text (any high-entropy string) into one AES-256 key.
  const material = await crypto.subtle.importKey(
    "raw",
    new TextEncoder().encode(keySource),
    "HKDF",
    false,
    ["deriveKey"],
  );
  return crypto.subtle.deriveKey(
    {
      name: "HKDF",
      hash: "SHA-256",
      salt: new TextEncoder().encode("edge-platform webhook secrets"),
      info: new TextEncoder().encode(CIPHERTEXT_VERSION),
    },
    material,
    { name: "AES-GCM", length: 256 },
    false,
    ["encrypt", "decrypt"],
  );
}

/** `v1.<iv>.<ciphertext>` (base64url), bound to `endpointId`. */
export async function encryptWebhookSecret(
  keySource: string | undefined,
  endpointId: string,
  secret: string,
): Promise<string> {
  const key = await aesKey(keySource);
  const iv = crypto.getRandomValues(new Uint8Array(12));
  const sealed = await crypto.subtle.encrypt(
    { name: "AES-GCM", iv, additionalData: new TextEncoder().encode(endpointId) },
    key,
    new TextEncoder().encode(secret),
  );
  return `${CIPHERTEXT_VERSION}.${base64Url(iv)}.${base64Url(new Uint8Array(sealed))}`;
}

/** The secret; throws when the key is wrong, the text was altered, or it belongs to another endpoint. */
export async function decryptWebhookSecret(
  keySource: string | undefined,
  endpointId: string,
  stored: string,
): Promise<string> {
  const [version, iv, sealed] = stored.split(".");
  if (version !== CIPHERTEXT_VERSION || !iv || !sealed) {
    throw new Error("unrecognised webhook secret ciphertext");
  }
  const key = await aesKey(keySource);
  const opened = await crypto.subtle.decrypt(
    {
      name: "AES-GCM",
      iv: fromBase64(iv),
      additionalData: new TextEncoder().encode(endpointId),
    },
    key,
    fromBase64(sealed),
  );
  return new TextDecoder().decode(opened);
}
