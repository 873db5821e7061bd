import { describe, expect, it } from "vitest";
import {
  keepsAnswer,
  parseIdempotencyKey,
  requestFingerprint,
  storableBody,
  takesIdempotencyKey,
} from "./idempotency.ts";

describe("parseIdempotencyKey", () => {
  it("accepts 1 to 255 printable ASCII characters", () => {
    expect(parseIdempotencyKey("a")).toEqual({ kind: "key", key: "a" });
    expect(parseIdempotencyKey("x".repeat(255))).toEqual({ kind: "key", key: "x".repeat(255) });
    expect(parseIdempotencyKey("retry 1 ~!@#")).toEqual({ kind: "key", key: "retry 1 ~!@#" });
  });

  it("refuses empty, too long, control and non-ASCII keys", () => {
    expect(parseIdempotencyKey("").kind).toBe("invalid");
    expect(parseIdempotencyKey("x".repeat(256)).kind).toBe("invalid");
    expect(parseIdempotencyKey("a\tb").kind).toBe("invalid");
    expect(parseIdempotencyKey("clé").kind).toBe("invalid");
    expect(parseIdempotencyKey("a\u007f").kind).toBe("invalid");
  });

  it("reports a missing header as absent", () => {
    expect(parseIdempotencyKey(undefined)).toEqual({ kind: "absent" });
  });
});

describe("takesIdempotencyKey", () => {
  it("covers state-changing POSTs but not auth, webhooks or other methods", () => {
    expect(takesIdempotencyKey("POST", "/entitlements/api_calls/consume")).toBe(true);
    expect(takesIdempotencyKey("POST", "/api-keys")).toBe(true);
    expect(takesIdempotencyKey("POST", "/auth/login")).toBe(false);
    expect(takesIdempotencyKey("POST", "/webhooks/payprovider")).toBe(false);
    expect(takesIdempotencyKey("GET", "/api-keys")).toBe(false);
    expect(takesIdempotencyKey("PATCH", "/plans/x")).toBe(false);
    expect(takesIdempotencyKey("PUT", "/tenants/x/billing-details")).toBe(true);
  });
});

describe("keepsAnswer", () => {
  it("keeps successes and client errors, not 5xx or 429", () => {
    for (const status of [200, 201, 202, 400, 403, 404, 409, 422])
      expect(keepsAnswer(status)).toBe(true);
    for (const status of [429, 500, 502, 503]) expect(keepsAnswer(status)).toBe(false);
  });
});

describe("requestFingerprint", () => {
  it("differs when the method, path, tenant or body differ", () => {
    const base = { method: "POST", path: "/a", tenantHeader: "t1", body: '{"x":1}' };
    const fingerprint = requestFingerprint(base);
    expect(requestFingerprint({ ...base })).toBe(fingerprint);
    expect(requestFingerprint({ ...base, path: "/b" })).not.toBe(fingerprint);
    expect(requestFingerprint({ ...base, tenantHeader: "t2" })).not.toBe(fingerprint);
    expect(requestFingerprint({ ...base, body: '{"x":2}' })).not.toBe(fingerprint);
  });
});

describe("storableBody", () => {
  const secrets = { fields: ["key"], notice: "shown once" };

  it("drops once-shown fields and says so", () => {
    const stored = JSON.parse(
      storableBody(JSON.stringify({ id: "k1", key: "mk_secret" }), secrets),
    );
    expect(stored).toEqual({ id: "k1", notice: "shown once" });
  });

  it("keeps bodies without such fields, and any body when nothing is secret", () => {
    expect(storableBody('{"statusCode":403}', secrets)).toBe('{"statusCode":403}');
    expect(storableBody('{"key":"v"}', undefined)).toBe('{"key":"v"}');
    expect(storableBody("not json", secrets)).toBe("not json");
  });
});
