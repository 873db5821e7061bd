/**
 * `npm run check:product-text` (part of `npm run check`): fails when a
 * tracked text file refers to the tracker or to how the work was organised
 * (see scripts/lib/product-text.ts for the rules).
 */
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import path from "node:path";
import {
  PRODUCT_TEXT_EXEMPT,
  PRODUCT_TEXT_FILES,
  productTextFindings,
} from "./lib/product-text.ts";
import { ROOT } from "./lib/wrangler.ts";

const files = execFileSync("git", ["ls-files", "--cached", "--others", "--exclude-standard"], {
  cwd: ROOT,
  encoding: "utf8",
})
  .split("\n")
  .filter((file) => PRODUCT_TEXT_FILES.test(file) && !PRODUCT_TEXT_EXEMPT.test(file));

const findings = files.flatMap((file) => {
  let content: string;
  try {
    content = readFileSync(path.join(ROOT, file), "utf8");
  } catch {
    return []; // deleted in the working tree
  }
  return productTextFindings(file, content);
});

for (const finding of findings) {
  console.error(`${finding.file}:${finding.line}: ${finding.rule}: ${finding.text}`);
}
if (findings.length > 0) {
  console.error(
    `\nproduct text: ${findings.length} line(s) speak of the tracker or of how the work was done; ` +
      "say what the product does instead (commit messages may cite issues).",
  );
  process.exit(1);
}
console.log(`product text: ${files.length} files checked, nothing to fix`);
