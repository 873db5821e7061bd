/**
 * The documentation's examples work as written: every `sh` block of each
 * service page runs, in order, in one bash shell against the end-to-end
 * stack (the documented local ports rewritten to the stack's), and every
 * request must answer as the block says (2xx/3xx, or its `status=NNN`).
 */
import { spawnSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, inject, it } from "vitest";
import { examplesScript, judgeExamples, shellExamples } from "../scripts/lib/doc-examples.ts";
import { ROOT } from "../scripts/lib/wrangler.ts";

const stack = inject("stack");

const PAGES = ["docs/billing.md", "docs/aqi.md", "docs/portfolio.md", "docs/local-development.md"];

const hostOf = (url: string) => new URL(url).host;

describe("documentation examples run against the stack", () => {
  for (const page of PAGES.filter((file) => existsSync(path.join(ROOT, file)))) {
    it(`${page}: every example answers as documented`, { timeout: 120_000 }, () => {
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
        },
      });
      const failures = judgeExamples(examples, run.stderr)
        .filter((outcome) => outcome.problem !== null)
        .map((outcome) => `${page}:${outcome.example.line}: ${outcome.problem}`);
      const context = `stdout:\n${run.stdout.slice(-3000)}\nstderr:\n${run.stderr.slice(-3000)}`;
      expect(failures, context).toEqual([]);
      expect(run.status, context).toBe(0);
    });
  }
});
