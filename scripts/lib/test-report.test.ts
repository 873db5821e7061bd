import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { tallyReport } from "./test-report.ts";

const dir = mkdtempSync(path.join(tmpdir(), "test-report-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function reportFile(report: unknown): string {
  const file = path.join(dir, `${Math.random().toString(36).slice(2)}.json`);
  writeFileSync(file, JSON.stringify(report));
  return file;
}

// The shape vitest 5's JSON reporter wrote for: a file whose beforeAll threw
// (its tests "skipped"), a file that failed to load, and a file with one
// failed, one passed and one skipped test.
const mixed = {
  numPassedTests: 1,
  numFailedTests: 1,
  numPendingTests: 3,
  numTodoTests: 0,
  testResults: [
    {
      name: "/repo/a.test.ts",
      status: "failed",
      message: "",
      assertionResults: [{ status: "skipped" }, { status: "skipped" }],
    },
    {
      name: "/repo/b.test.ts",
      status: "failed",
      message: "Cannot find module './does-not-exist.ts'\nmore",
      assertionResults: [],
    },
    {
      name: "/repo/c.test.ts",
      status: "failed",
      message: "",
      assertionResults: [{ status: "failed" }, { status: "passed" }, { status: "skipped" }],
    },
  ],
};

describe("tallyReport", () => {
  it("counts a failed hook and a file that did not load as failures, once each", () => {
    const tally = tallyReport(reportFile(mixed), 1, "/repo");
    expect(tally).toMatchObject({ passed: 1, failed: 3, skipped: 3 });
    expect(tally.notes).toEqual([
      "a.test.ts: failed outside its tests (a beforeAll/afterAll hook)",
      "b.test.ts: Cannot find module './does-not-exist.ts'",
    ]);
  });

  it("counts a clean report as it is", () => {
    const clean = {
      numPassedTests: 4,
      numFailedTests: 0,
      numPendingTests: 1,
      numTodoTests: 1,
      testResults: [
        {
          name: "/repo/d.test.ts",
          status: "passed",
          message: "",
          assertionResults: [{ status: "passed" }],
        },
      ],
    };
    expect(tallyReport(reportFile(clean), 0, "/repo")).toEqual({
      passed: 4,
      failed: 0,
      skipped: 2,
      notes: [],
    });
  });

  it("a failed run with nothing failed in its report is one failure (unhandled errors)", () => {
    const quiet = { ...mixed, numFailedTests: 0, testResults: [] };
    expect(tallyReport(reportFile(quiet), 1, "/repo")).toMatchObject({ failed: 1 });
  });

  it("a missing report is one failure", () => {
    expect(tallyReport(path.join(dir, "absent.json"), 0, "/repo")).toMatchObject({
      passed: 0,
      failed: 1,
    });
  });
});
