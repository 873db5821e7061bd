import { base64Url } from "../../platform/index.ts";

/**
 * How long after its rotation a spent refresh token still answers as its
 * first use did. Two tabs of the console, or a page and a PDF download,
 * refresh with the same token at nearly the same moment; treating the
 * second as theft would sign the user out for nothing.
 */
export const REFRESH_REUSE_GRACE_MS = 30_000;

const SUCCESSOR_INFO = new TextEncoder().encode("billing refresh token successor v1");

/**
 * The refresh token a presented one is rotated to: HMAC-SHA256 of the
 * presented token under a key derived (HKDF) from the signing secret.
 *
 * A reuse within the grace period must hand out the same successor, yet
 * refresh tokens are stored only as SHA-256 hashes. Deriving the successor
 * instead of storing it (even encrypted) means no table holds a raw token
 * or anything one can be decrypted from: computing it takes the spent
 * token, which only its client holds, and the server's secret, so neither a
 * copy of the database nor a stolen spent token alone yields the chain of
 * successors. Each token is still random at the root (a sign-in's first
 * token), so successors are as unguessable as the tokens they come from.
 */
export async function successorToken(
  signingKey: Uint8Array<ArrayBuffer>,
  presented: string,
): Promise<string> {
  const material = await crypto.subtle.importKey("raw", signingKey, "HKDF", false, ["deriveKey"]);
  const key = await crypto.subtle.deriveKey(
    { name: "HKDF", hash: "SHA-256", salt: new Uint8Array(0), info: SUCCESSOR_INFO },
    material,
    { name: "HMAC", hash: "SHA-256", length: 256 },
    false,
    ["sign"],
  );
  const mac = await crypto.subtle.sign("HMAC", key, new TextEncoder().encode(presented));
  return base64Url(new Uint8Array(mac));
}

/**
 * Whether a token revoked at `revokedAt` by its rotation is still within the
 * grace period at `now`. A concurrent request may have read its clock just
 * before the rotation it lost to was stamped, so a rotation "in the future"
 * counts as within.
 */
export function withinReuseGrace(revokedAt: string, now: Date): boolean {
  return now.getTime() - Date.parse(revokedAt) <= REFRESH_REUSE_GRACE_MS;
}
