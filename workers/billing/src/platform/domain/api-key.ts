import { randomToken, sha256Hex } from "./secrets.ts";

// A short marker lets secret scanners recognise leaked keys while the stored
// 7-character prefix still carries 4 random characters to tell keys apart.
export const API_KEY_MARKER = "mk_";
/** The issue fixes the stored prefix at the key's first 7 characters. */
export const API_KEY_PREFIX_LENGTH = 7;
const API_KEY_RANDOM_BYTES = 32;
/** Marker plus base64url of 32 bytes (43 characters). */
const API_KEY_FORMAT = /^mk_[A-Za-z0-9_-]{43}$/;

export interface GeneratedApiKey {
  /** The raw key: returned once to the creator, never stored. */
  key: string;
  prefix: string;
  hash: string;
}

export async function generateApiKey(): Promise<GeneratedApiKey> {
  const key = `${API_KEY_MARKER}${randomToken(API_KEY_RANDOM_BYTES)}`;
  return { key, prefix: key.slice(0, API_KEY_PREFIX_LENGTH), hash: await sha256Hex(key) };
}

export function looksLikeApiKey(candidate: string): boolean {
  return API_KEY_FORMAT.test(candidate);
}

export type EffectiveApiKeyStatus = "ACTIVE" | "REVOKED" | "EXPIRED";

/** A key past its expiry is EXPIRED whatever its stored status says (nothing has to sweep it). */
export function effectiveApiKeyStatus(
  stored: EffectiveApiKeyStatus,
  expiresAt: string | null,
  now: Date,
): EffectiveApiKeyStatus {
  if (stored === "ACTIVE" && expiresAt !== null && Date.parse(expiresAt) <= now.getTime()) {
    return "EXPIRED";
  }
  return stored;
}
