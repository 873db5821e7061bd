import { errors, jwtVerify, SignJWT } from "jose";
import { randomHex } from "./secrets.ts";

export const ACCESS_TOKEN_TTL_SECONDS = 15 * 60;
/** HS256 keys shorter than the hash output are guessable; refuse to run with one. */
export const MIN_SECRET_BYTES = 32;
const ALGORITHM = "HS256";
const ISSUER = "billing";

export interface AccessTokenClaims {
  /** User id. */
  sub: string;
  email: string;
  /** 16 random bytes as 32 hex characters. */
  jti: string;
  /** The user's token version when the token was issued (see users.token_version). */
  ver: number;
}

export class SigningKeyError extends Error {}

/** The signing key, or a SigningKeyError when the secret is missing or too short. */
export function signingKey(secret: string | undefined): Uint8Array<ArrayBuffer> {
  const bytes = new Uint8Array(new TextEncoder().encode(secret ?? ""));
  if (bytes.byteLength < MIN_SECRET_BYTES) {
    throw new SigningKeyError(
      secret ? `JWT_SECRET is shorter than ${MIN_SECRET_BYTES} bytes` : "JWT_SECRET is not set",
    );
  }
  return bytes;
}

export async function signAccessToken(
  key: Uint8Array<ArrayBuffer>,
  claims: Omit<AccessTokenClaims, "jti">,
  now: Date = new Date(),
): Promise<string> {
  const issuedAt = Math.floor(now.getTime() / 1000);
  return new SignJWT({ email: claims.email, ver: claims.ver })
    .setProtectedHeader({ alg: ALGORITHM, typ: "JWT" })
    .setSubject(claims.sub)
    .setJti(randomHex(16))
    .setIssuer(ISSUER)
    .setIssuedAt(issuedAt)
    .setExpirationTime(issuedAt + ACCESS_TOKEN_TTL_SECONDS)
    .sign(key);
}

export type AccessTokenFailure = "expired" | "invalid";

/**
 * Verifies signature, algorithm (HS256 only: `alg: none` and every other
 * algorithm are refused before the key is used), issuer and expiry (a
 * token without `exp` is invalid).
 */
export async function verifyAccessToken(
  key: Uint8Array<ArrayBuffer>,
  token: string,
): Promise<{ ok: true; claims: AccessTokenClaims } | { ok: false; reason: AccessTokenFailure }> {
  try {
    // `exp` is required: a token without one would never expire.
    const { payload } = await jwtVerify(token, key, {
      algorithms: [ALGORITHM],
      issuer: ISSUER,
      requiredClaims: ["exp"],
    });
    const { sub, email, jti, ver } = payload;
    if (
      typeof sub !== "string" ||
      typeof email !== "string" ||
      typeof jti !== "string" ||
      typeof ver !== "number"
    ) {
      return { ok: false, reason: "invalid" };
    }
    return { ok: true, claims: { sub, email, jti, ver } };
  } catch (error) {
    if (error instanceof errors.JWTExpired) return { ok: false, reason: "expired" };
    return { ok: false, reason: "invalid" };
  }
}
