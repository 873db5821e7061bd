/**
 * `npm run bench [name ...] [--markdown]`: runs each benchmark script in
 * bench/ (one per service, e.g. bench/aqi.ts) one after another, so that
 * they do not compete for the two cores. Each script starts its own stack
 * and prints figures and ratios against a baseline it measures in the same
 * run. Options (`--markdown`: write each script's figures into its section
 * of docs/benchmarks.md) are passed on to every script.
 */
import { spawnSync } from "node:child_process";
import { readdirSync } from "node:fs";
import path from "node:path";

// Offline like every local run: no telemetry, no request.cf lookups (the
// benchmarks' own wrangler instances inherit this environment).
process.env.WRANGLER_SEND_METRICS ??= "false";
process.env.CLOUDFLARE_CF_FETCH_ENABLED ??= "false";

const benchDir = import.meta.dirname;
const args = process.argv.slice(2);
const options = args.filter((arg) => arg.startsWith("--"));
const wanted = args.filter((arg) => !arg.startsWith("--"));
const scripts = readdirSync(benchDir)
  .filter((file) => file.endsWith(".ts") && file !== "run.ts" && !file.endsWith(".test.ts"))
  .filter((file) => wanted.length === 0 || wanted.includes(path.basename(file, ".ts")))
  .sort();

if (scripts.length === 0) {
  console.error(`no benchmark matches ${wanted.join(", ")}`);
  process.exit(1);
}
let failed = false;
for (const script of scripts) {
  console.log(`\n=== bench/${script} ===`);
  const result = spawnSync(
    process.execPath,
    [
      "--experimental-transform-types",
      "--disable-warning=ExperimentalWarning",
      path.join(benchDir, script),
      ...options,
    ],
    { stdio: "inherit" },
  );
  if (result.status !== 0) failed = true;
}
process.exit(failed ? 1 : 0);
