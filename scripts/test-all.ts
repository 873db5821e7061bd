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
 * A step marked `alongsideNext` starts in the background and runs beside
 * the step after it; its output is held and printed once it ends (the
 * quick start mostly waits on npm and on the next whole minute's Cron
 * Trigger, so it costs the end-to-end suite beside it little).
 *
 * Adding a part is one line in `STEPS`.
 */
import { spawn } from "node:child_process";
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
  /** Started in the background, beside the next step. */
  alongsideNext?: boolean;
}

const STEPS: Step[] = [
  { script: "check" },
  { script: "test:unit", report: "unit.json" },
  { script: "test:quick-start", report: "quick-start.json", alongsideNext: true },
  { script: "test:e2e", report: "e2e.json" },
  { script: "test:page", report: "page.json" },
  { script: "eval:safety" },
  { script: "eval:answers", ifPresent: true },
];

const scripts = (
  JSON.parse(readFileSync(path.join(ROOT, "package.json"), "utf8")) as {
    scripts: Record<string, string>;
  }
).scripts;

type Row = { script: string; seconds: number; tally: Tally };

function tallyOf(
  reportFile: string | undefined,
  status: number | null,
  signal: string | null,
): Tally {
  if (reportFile) return tallyReport(reportFile, status ?? 1, ROOT);
  return status === 0
    ? { passed: 1, failed: 0, skipped: 0, notes: [] }
    : { passed: 0, failed: 1, skipped: 0, notes: [`exited with ${status ?? signal}`] };
}

function reportOf(step: Step): string | undefined {
  const reportFile = step.report ? path.join(REPORTS, step.report) : undefined;
  if (reportFile) rmSync(reportFile, { force: true });
  return reportFile;
}

/** Runs a step in the background; its output is printed when it ends. */
function startInBackground(step: Step): Promise<Row> {
  const reportFile = reportOf(step);
  const started = Date.now();
  process.stdout.write(
    `\n[test] npm run ${step.script} (in the background, beside the next step)\n`,
  );
  const child = spawn("npm", ["run", step.script], {
    cwd: ROOT,
    stdio: ["ignore", "pipe", "pipe"],
  });
  const output: Buffer[] = [];
  child.stdout.on("data", (chunk: Buffer) => output.push(chunk));
  child.stderr.on("data", (chunk: Buffer) => output.push(chunk));
  return new Promise((resolve) => {
    child.once("close", (status, signal) => {
      process.stdout.write(`\n[test] npm run ${step.script}: its output\n${Buffer.concat(output)}`);
      const seconds = (Date.now() - started) / 1000;
      resolve({ script: step.script, seconds, tally: tallyOf(reportFile, status, signal) });
    });
  });
}

const rows: Row[] = [];
const background: Promise<Row>[] = [];
for (const step of STEPS) {
  if (step.ifPresent && !scripts[step.script]) continue;
  if (step.alongsideNext) {
    background.push(startInBackground(step));
    continue;
  }
  const reportFile = reportOf(step);
  process.stdout.write(`\n[test] npm run ${step.script}\n`);
  const started = Date.now();
  // Not spawnSync: a background step's output must keep flowing meanwhile.
  const child = spawn("npm", ["run", step.script], { cwd: ROOT, stdio: "inherit" });
  const [status, signal] = await new Promise<[number | null, string | null]>((resolve) =>
    child.once("close", (code, killed) => resolve([code, killed])),
  );
  rows.push({
    script: step.script,
    seconds: (Date.now() - started) / 1000,
    tally: tallyOf(reportFile, status, signal),
  });
  rows.push(...(await Promise.all(background.splice(0))));
}
rows.push(...(await Promise.all(background)));

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
