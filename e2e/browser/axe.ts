import { AxeBuilder } from "@axe-core/playwright";
import type { Page } from "playwright-core";

/** axe-core on the page as it is now: each serious or critical violation as one line. */
export async function seriousAxeFindings(page: Page, name: string): Promise<string[]> {
  const results = await new AxeBuilder({ page }).analyze();
  return results.violations
    .filter((violation) => violation.impact === "serious" || violation.impact === "critical")
    .map(
      (violation) =>
        `${name}: ${violation.id} (${violation.impact}) ${violation.nodes.map((n) => n.target.join(" ")).join(", ")}`,
    );
}
