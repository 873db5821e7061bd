/**
 * The documentation's examples work as written: every `sh` block of each
 * page runs, in order, in one bash shell against a stack started as
 * `npm run dev` starts it (the documented local ports rewritten to the
 * stack's), and every request must answer as the block says (2xx/3xx, or
 * its `status=NNN`). The pages are written for a fresh `npm run dev`, so
 * they get a fresh stack of their own rather than the suite's shared one,
 * whose demo tenant other tests have moved on; the local-development page
 * runs last, since it moves every tenant's clock.
 */
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { examplesScript, judgeExamples, shellExamples } from "../scripts/lib/doc-examples.ts";
import { type RunningStack, startStack } from "../scripts/lib/stack.ts";
import { ROOT } from "../scripts/lib/wrangler.ts";

interface StackUrls {
  billingUrl: string;
  aqiUrl: string;
  portfolioUrl: string;
}

const hostOf = (url: string) => new URL(url).host;

/** Runs a page's examples against a stack; fails with each block that did not answer as documented. */
function expectExamplesToRun(page: string, stack: StackUrls, stateDir?: string) {
  const examples = shellExamples(readFileSync(path.join(ROOT, page), "utf8"));
  expect(examples.length).toBeGreaterThan(0);
  const script = examplesScript(examples, {
    billing: hostOf(stack.billingUrl),
    aqi: hostOf(stack.aqiUrl),
    portfolio: hostOf(stack.portfolioUrl),
  });
  const run = spawnSync("bash", ["-c", script], {
    cwd: ROOT,
    encoding: "utf8",
    timeout: 110_000,
    env: {
      ...process.env,
      BILLING_PORT: new URL(stack.billingUrl).port,
      AQI_PORT: new URL(stack.aqiUrl).port,
      PORTFOLIO_PORT: new URL(stack.portfolioUrl).port,
      ...(stateDir ? { STATE_DIR: stateDir } : {}),
    },
  });
  const failures = judgeExamples(examples, run.stderr)
    .filter((outcome) => outcome.problem !== null)
    .map((outcome) => `${page}:${outcome.example.line}: ${outcome.problem}`);
  const context = `stdout:\n${run.stdout.slice(-3000)}\nstderr:\n${run.stderr.slice(-3000)}`;
  expect(failures, context).toEqual([]);
  expect(run.status, context).toBe(0);
}

describe("documentation examples run against a fresh stack", () => {
  let stack: RunningStack;
  const stateDir = mkdtempSync(path.join(tmpdir(), "edge-docs-"));

  beforeAll(async () => {
    stack = await startStack({ timeoutMs: 150_000, stateDir });
  }, 180_000);

  afterAll(async () => {
    await stack?.stop();
    rmSync(stateDir, { recursive: true, force: true });
  });

  for (const page of [
    "docs/billing.md",
    "docs/aqi.md",
    "docs/portfolio.md",
    "docs/local-development.md",
  ]) {
    it(`${page}: every example answers as documented`, { timeout: 120_000 }, () => {
      expectExamplesToRun(page, stack, stateDir);
    });
  }
});
