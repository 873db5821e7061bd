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
import { readFileSync, rmSync } from "node:fs";
import path from "node:path";
import { type Tally, tallyReport } from "./lib/test-report.ts";

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
    ? tallyReport(reportFile, exitCode, ROOT)
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
