import { describe, expect, it } from "vitest";
import {
  effectiveApiKeyStatus,
  generateApiKey,
  looksLikeApiKey,
  mayManageMembership,
  PASSWORD_ITERATIONS,
  redactEmail,
  SLUG_MAX,
  SLUG_PATTERN,
  sha256Hex,
  slugFromName,
  verifyPassword,
  withRandomSuffix,
} from "../../platform/index.ts";
import { DUMMY_PASSWORD_HASH } from "../session-service.ts";

describe("withRandomSuffix", () => {
  it("keeps a generated slug valid and within bounds, and differs per call", () => {
    const long = slugFromName("x".repeat(200));
    const a = withRandomSuffix(long);
    expect(a).toMatch(SLUG_PATTERN);
    expect(a.length).toBeLessThanOrEqual(SLUG_MAX);
    expect(a).toMatch(/^x{90}-[a-z0-9x]{8}$/);
    expect(withRandomSuffix("acme")).not.toBe(withRandomSuffix("acme"));
  });
});

describe("slugFromName", () => {
  it.each([
    ["Acme Analytics", "acme-analytics"],
    ["  Crème Brûlée!! ", "creme-brulee"],
    ["42 Labs", "t-42-labs"],
    ["X", "x-org"],
    ["", "t-org"],
    ["日本", "t-org"],
  ])("%j -> %j", (name, slug) => {
    expect(slugFromName(name)).toBe(slug);
    expect(slugFromName(name)).toMatch(SLUG_PATTERN);
  });

  it("stays within 100 characters", () => {
    expect(slugFromName("word ".repeat(60)).length).toBeLessThanOrEqual(100);
  });
});

describe("API keys", () => {
  it("are mk_ plus 32 random bytes; prefix is 7 characters; stored as SHA-256", async () => {
    const generated = await generateApiKey();
    expect(generated.key).toMatch(/^mk_[A-Za-z0-9_-]{43}$/);
    expect(looksLikeApiKey(generated.key)).toBe(true);
    expect(generated.prefix).toBe(generated.key.slice(0, 7));
    expect(generated.hash).toBe(await sha256Hex(generated.key));
    expect((await generateApiKey()).key).not.toBe(generated.key);
  });

  it("an ACTIVE key past its expiry reads as EXPIRED", () => {
    const now = new Date("2026-01-01T00:00:00Z");
    expect(effectiveApiKeyStatus("ACTIVE", "2025-12-31T23:59:59Z", now)).toBe("EXPIRED");
    expect(effectiveApiKeyStatus("ACTIVE", "2026-01-02T00:00:00Z", now)).toBe("ACTIVE");
    expect(effectiveApiKeyStatus("ACTIVE", null, now)).toBe("ACTIVE");
    expect(effectiveApiKeyStatus("REVOKED", "2025-01-01T00:00:00Z", now)).toBe("REVOKED");
  });
});

describe("membership management rules", () => {
  it("only an OWNER touches ownership", () => {
    expect(mayManageMembership("OWNER", "OWNER", "ADMIN")).toBe(true);
    expect(mayManageMembership("ADMIN", "DEVELOPER", "BILLING")).toBe(true);
    expect(mayManageMembership("ADMIN", "OWNER", "ADMIN")).toBe(false);
    expect(mayManageMembership("ADMIN", "DEVELOPER", "OWNER")).toBe(false);
    expect(mayManageMembership("DEVELOPER", "BILLING")).toBe(false);
  });
});

describe("login timing guard", () => {
  it("the dummy hash uses the current iteration count and matches nothing likely", async () => {
    expect(DUMMY_PASSWORD_HASH.split("$")[1]).toBe(String(PASSWORD_ITERATIONS));
    expect((await verifyPassword("Sup3rSecret", DUMMY_PASSWORD_HASH)).valid).toBe(false);
  });
});

describe("redactEmail", () => {
  it("keeps the first letter and the domain", () => {
    expect(redactEmail("jane.doe@example.com")).toBe("j***@example.com");
    expect(redactEmail("nope")).toBe("***");
  });
});
