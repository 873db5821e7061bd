/**
 * Prints one closing line for the whole suite, `tests: N passed, N failed`
 * (and skipped), from the JSON reports the unit, e2e and page runs wrote.
 */
import { existsSync, readFileSync } from "node:fs";
import path from "node:path";

const reports = ["unit", "e2e", "page"].map((name) =>
  path.join(".tmp", "test-results", `${name}.json`),
);
let passed = 0;
let failed = 0;
let skipped = 0;
for (const file of reports) {
  if (!existsSync(file)) {
    console.error(`missing test report ${file}`);
    process.exit(1);
  }
  const report = JSON.parse(readFileSync(file, "utf8")) as {
    numPassedTests: number;
    numFailedTests: number;
    numPendingTests: number;
    numTodoTests: number;
  };
  passed += report.numPassedTests;
  failed += report.numFailedTests;
  skipped += report.numPendingTests + report.numTodoTests;
}
console.log(`tests: ${passed} passed, ${failed} failed, ${skipped} skipped`);
process.exit(failed > 0 || passed === 0 ? 1 : 0);
