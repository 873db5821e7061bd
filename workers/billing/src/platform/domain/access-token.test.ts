import { base64url, SignJWT } from "jose";
import { describe, expect, it } from "vitest";
import {
  ACCESS_TOKEN_TTL_SECONDS,
  SigningKeyError,
  signAccessToken,
  signingKey,
  verifyAccessToken,
} from "./access-token.ts";

const key = signingKey("a-test-secret-that-is-long-enough-0123456789");
const claims = { sub: "00000000-0000-4000-8000-000000000001", email: "a@b.co", ver: 0 };

describe("access tokens", () => {
  it("round-trips sub, email, jti and ver with a 15 minute lifetime", async () => {
    const token = await signAccessToken(key, claims);
    const result = await verifyAccessToken(key, token);
    expect(result.ok).toBe(true);
    if (!result.ok) return;
    expect(result.claims).toMatchObject(claims);
    expect(result.claims.jti).toMatch(/^[0-9a-f]{32}$/);
    const payload = JSON.parse(new TextDecoder().decode(base64url.decode(token.split(".")[1]!)));
    expect(payload.exp - payload.iat).toBe(ACCESS_TOKEN_TTL_SECONDS);
  });

  it("rejects expired tokens as expired", async () => {
    const token = await signAccessToken(key, claims, new Date(Date.now() - 16 * 60 * 1000));
    expect(await verifyAccessToken(key, token)).toEqual({ ok: false, reason: "expired" });
  });

  it("rejects another key, alg none, another algorithm and garbage", async () => {
    const other = await signAccessToken(signingKey("x".repeat(32)), claims);
    expect((await verifyAccessToken(key, other)).ok).toBe(false);
    const [, body] = (await signAccessToken(key, claims)).split(".");
    const none = `${base64url.encode(JSON.stringify({ alg: "none", typ: "JWT" }))}.${body}.`;
    expect((await verifyAccessToken(key, none)).ok).toBe(false);
    const hs512 = await new SignJWT({ email: "a@b.co", ver: 0 })
      .setProtectedHeader({ alg: "HS512" })
      .setSubject(claims.sub)
      .setIssuer("billing")
      .setJti("x")
      .setExpirationTime("5m")
      .sign(new TextEncoder().encode("a-test-secret-that-is-long-enough-0123456789".repeat(2)));
    expect((await verifyAccessToken(key, hs512)).ok).toBe(false);
    expect((await verifyAccessToken(key, "not.a.jwt")).ok).toBe(false);
  });

  it("refuses a missing or short secret", () => {
    expect(() => signingKey(undefined)).toThrow(SigningKeyError);
    expect(() => signingKey("short")).toThrow(/shorter than 32 bytes/);
    expect(() => signingKey("x".repeat(31))).toThrow(SigningKeyError);
    expect(signingKey("x".repeat(32)).byteLength).toBe(32);
  });
});

describe("a token without exp", () => {
  it("is invalid even when correctly signed (it would never expire)", async () => {
    const forever = await new SignJWT({ email: "a@example.com", ver: 0 })
      .setProtectedHeader({ alg: "HS256", typ: "JWT" })
      .setSubject("user-1")
      .setJti("0".repeat(32))
      .setIssuer("billing")
      .setIssuedAt()
      .sign(key);
    expect(await verifyAccessToken(key, forever)).toEqual({ ok: false, reason: "invalid" });
  });
});
