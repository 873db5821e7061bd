import { existsSync, readFileSync } from "node:fs";
import path from "node:path";

export interface Tally {
  passed: number;
  failed: number;
  skipped: number;
  notes: string[];
}

interface VitestReport {
  numPassedTests: number;
  numFailedTests: number;
  numPendingTests: number;
  numTodoTests: number;
  testResults: {
    name: string;
    status: string;
    message: string;
    assertionResults: { status: string }[];
  }[];
}

/**
 * Counts one vitest step from its JSON report: its tests, plus one failure
 * for each test file that failed without a failed test (a failed hook, whose
 * tests vitest reports as skipped, or a file that did not load), plus one
 * when the run failed with no failure in the report (unhandled errors) or
 * wrote no report.
 */
export function tallyReport(file: string, exitCode: number, root: string): Tally {
  if (!existsSync(file))
    return { passed: 0, failed: 1, skipped: 0, notes: [`no report written (${file})`] };
  const report = JSON.parse(readFileSync(file, "utf8")) as VitestReport;
  const tally: Tally = {
    passed: report.numPassedTests,
    failed: report.numFailedTests,
    skipped: report.numPendingTests + report.numTodoTests,
    notes: [],
  };
  for (const result of report.testResults) {
    if (result.status !== "failed") continue;
    if (result.assertionResults.some((assertion) => assertion.status === "failed")) continue;
    tally.failed += 1;
    const reason =
      result.message.split("\n")[0] || "failed outside its tests (a beforeAll/afterAll hook)";
    tally.notes.push(`${path.relative(root, result.name)}: ${reason}`);
  }
  if (exitCode !== 0 && tally.failed === 0) {
    tally.failed = 1;
    tally.notes.push(`exited with ${exitCode} with no failed test in its report`);
  }
  return tally;
}
