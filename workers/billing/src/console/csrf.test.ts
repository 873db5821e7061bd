import { describe, expect, it } from "vitest";
import { checkCsrf, sameOriginRequest, tokensMatch } from "./csrf.ts";

const ORIGIN = "http://localhost:8787";

describe("console CSRF checks", () => {
  it("accepts the console's own origin, or a same-origin fetch without Origin", () => {
    expect(sameOriginRequest({ origin: ORIGIN, secFetchSite: undefined }, ORIGIN)).toEqual({
      ok: true,
    });
    expect(sameOriginRequest({ origin: undefined, secFetchSite: "same-origin" }, ORIGIN)).toEqual({
      ok: true,
    });
  });

  it("refuses another origin, an opaque one, or a request that says nothing", () => {
    expect(
      sameOriginRequest({ origin: "http://evil.example", secFetchSite: "same-origin" }, ORIGIN),
    ).toMatchObject({ ok: false });
    expect(sameOriginRequest({ origin: "null", secFetchSite: "cross-site" }, ORIGIN)).toMatchObject(
      { ok: false },
    );
    expect(sameOriginRequest({ origin: undefined, secFetchSite: undefined }, ORIGIN)).toMatchObject(
      { ok: false },
    );
  });

  it("needs the session's token in the form", () => {
    const same = { origin: ORIGIN, secFetchSite: "same-origin" };
    expect(checkCsrf(same, ORIGIN, "token-a", "token-a")).toEqual({ ok: true });
    expect(checkCsrf(same, ORIGIN, "token-a", "token-b")).toMatchObject({ ok: false });
    expect(checkCsrf(same, ORIGIN, "token-a", undefined)).toMatchObject({ ok: false });
    expect(checkCsrf(same, ORIGIN, undefined, undefined)).toMatchObject({ ok: false });
    expect(tokensMatch("abc", "abcd")).toBe(false);
  });
});
