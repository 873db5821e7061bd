/**
 * `npm run bench [name ...]`: runs each benchmark script in bench/ (one per
 * service, e.g. bench/aqi.ts) one after another, so that they do not compete
 * for the two cores. Each script starts its own stack and prints figures
 * and ratios against a baseline it measures in the same run.
 */
import { spawnSync } from "node:child_process";
import { readdirSync } from "node:fs";
import path from "node:path";

// Offline like every local run: no telemetry, no request.cf lookups (the
// benchmarks' own wrangler instances inherit this environment).
process.env.WRANGLER_SEND_METRICS ??= "false";
process.env.CLOUDFLARE_CF_FETCH_ENABLED ??= "false";

const benchDir = import.meta.dirname;
const wanted = process.argv.slice(2);
const scripts = readdirSync(benchDir)
  .filter((file) => file.endsWith(".ts") && file !== "run.ts")
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
      "--experimental-strip-types",
      "--disable-warning=ExperimentalWarning",
      path.join(benchDir, script),
    ],
    { stdio: "inherit" },
  );
  if (result.status !== 0) failed = true;
}
process.exit(failed ? 1 : 0);
