/**
 * `npm test`: every part of the suite, one after another, each run even when
 * an earlier one failed, then one closing line
 * `tests: N passed, N failed, N skipped`; exits non-zero on any failure.
 *
 * A vitest step is counted from its JSON report: its tests, plus one failure
 * for each test file that failed without a failed test (a failed
 * `beforeAll`, which vitest reports as skipped tests, or a file that did not
 * load), plus one when the run failed with no failure in the report
 * (unhandled errors) or wrote no report. Any other step counts as one test.
 *
 * Adding a part is one line in `STEPS`.
 */
import { spawnSync } from "node:child_process";
import { existsSync, readFileSync, rmSync } from "node:fs";
import path from "node:path";

const ROOT = path.resolve(import.meta.dirname, "..");
const REPORTS = path.join(ROOT, ".tmp", "test-results");

interface Step {
  /** The npm script to run. */
  script: string;
  /** The JSON report a vitest step writes, under .tmp/test-results. */
  report?: string;
  /** Run only when package.json defines the script. */
  ifPresent?: boolean;
}

const STEPS: Step[] = [
  { script: "check" },
  { script: "test:unit", report: "unit.json" },
  { script: "test:e2e", report: "e2e.json" },
  { script: "test:quick-start", report: "quick-start.json" },
  { script: "test:page", report: "page.json" },
  { script: "eval:safety" },
  { script: "eval:answers", ifPresent: true },
];

interface Tally {
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

function tallyReport(file: string, exitCode: number): Tally {
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
    const reason = result.message.split("\n")[0] || "a hook failed; its tests did not run";
    tally.notes.push(`${path.relative(ROOT, result.name)}: ${reason}`);
  }
  if (exitCode !== 0 && tally.failed === 0) {
    tally.failed = 1;
    tally.notes.push(`exited with ${exitCode} with no failed test in its report`);
  }
  return tally;
}

const scripts = (
  JSON.parse(readFileSync(path.join(ROOT, "package.json"), "utf8")) as {
    scripts: Record<string, string>;
  }
).scripts;

const rows: { script: string; seconds: number; tally: Tally }[] = [];
for (const step of STEPS) {
  if (step.ifPresent && !scripts[step.script]) continue;
  const reportFile = step.report ? path.join(REPORTS, step.report) : undefined;
  if (reportFile) rmSync(reportFile, { force: true });
  process.stdout.write(`\n[test] npm run ${step.script}\n`);
  const started = Date.now();
  const result = spawnSync("npm", ["run", step.script], { cwd: ROOT, stdio: "inherit" });
  const exitCode = result.status ?? 1;
  const tally = reportFile
    ? tallyReport(reportFile, exitCode)
    : exitCode === 0
      ? { passed: 1, failed: 0, skipped: 0, notes: [] }
      : {
          passed: 0,
          failed: 1,
          skipped: 0,
          notes: [`exited with ${result.status ?? result.signal}`],
        };
  rows.push({ script: step.script, seconds: (Date.now() - started) / 1000, tally });
}

const total = { passed: 0, failed: 0, skipped: 0 };
process.stdout.write("\n");
for (const { script, seconds, tally } of rows) {
  total.passed += tally.passed;
  total.failed += tally.failed;
  total.skipped += tally.skipped;
  process.stdout.write(
    `[test] ${tally.failed > 0 ? "FAIL" : "ok  "} ${script.padEnd(18)} ${String(tally.passed).padStart(4)} passed, ${tally.failed} failed, ${tally.skipped} skipped (${seconds.toFixed(0)} s)\n`,
  );
  for (const note of tally.notes) process.stdout.write(`[test]        ${note}\n`);
}
console.log(`tests: ${total.passed} passed, ${total.failed} failed, ${total.skipped} skipped`);
process.exit(total.failed > 0 || total.passed === 0 ? 1 : 0);
