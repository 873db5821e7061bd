import { describe, expect, it } from "vitest";
import { PRODUCT_TEXT_EXEMPT, PRODUCT_TEXT_FILES, productTextFindings } from "./product-text.ts";

const finds = (text: string) => productTextFindings("file.ts", text).map((found) => found.rule);

describe("product text check", () => {
  it.each([
    ["// Outbound webhooks (issue 18): endpoints", "tracker reference"],
    ["the money rules of Issue #12", "tracker reference"],
    ["see issues 3 and 4", "tracker reference"],
    ["fixes #41", "tracker reference"],
    ["merged from s2-13 into main", "branch name"],
    ["the shared helpers of s3-e2e", "branch name"],
    ["this branch is 2.7x faster", "branch name"],
    ["while other agents were busy", "note on how the work was done"],
    ["the agents' test suites", "note on how the work was done"],
    ["before the second round of work", "note on how the work was done"],
    ["rows named after work rounds", "note on how the work was done"],
  ])("flags %j", (text, rule) => {
    expect(finds(text)).toEqual([rule]);
  });

  it.each([
    "invoices are issued at the period end",
    "rounded half up once per line",
    "the last round trip to D1",
    "CPU time per run in the last round of the benchmark",
    "an issuer claim in the JWT",
    "the tenant's refresh token session",
    "R2 bucket usage-archive in s3-compatible storage",
    "ids such as #12 in the invoice number",
  ])("passes %j", (text) => {
    expect(finds(text)).toEqual([]);
  });

  it("reports the line of each finding", () => {
    const found = productTextFindings("docs/x.md", "fine\n(issue 7) not fine\n");
    expect(found).toEqual([
      { file: "docs/x.md", line: 2, rule: "tracker reference", text: "(issue 7) not fine" },
    ]);
  });

  it("reads product text files and leaves generated ones alone", () => {
    for (const file of ["README.md", "docs/billing.md", "src/a.ts", "wrangler.toml", ".ci/run"]) {
      expect(PRODUCT_TEXT_FILES.test(file)).toBe(true);
    }
    expect(PRODUCT_TEXT_FILES.test("models/aqi-1.0.0.onnx")).toBe(false);
    expect(PRODUCT_TEXT_EXEMPT.test("package-lock.json")).toBe(true);
    expect(PRODUCT_TEXT_EXEMPT.test("workers/aqi/worker-configuration.d.ts")).toBe(true);
  });
});
