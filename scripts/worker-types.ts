/**
 * Generates (or with --check verifies) the committed `wrangler types` output
 * of every worker, plus runtime-only types for shared/. The dev-vars example
 * files are passed explicitly so that a developer's own .dev.vars never
 * changes the generated Env.
 */
import { spawnSync } from "node:child_process";

const check = process.argv.includes("--check");

const targets = [
  {
    config: "wrangler.toml",
    out: "workers/billing/worker-configuration.d.ts",
    vars: ".dev.vars.example",
  },
  {
    config: "workers/usage-consumer/wrangler.toml",
    out: "workers/usage-consumer/worker-configuration.d.ts",
    vars: ".dev.vars.example",
  },
  {
    config: "workers/aqi/wrangler.toml",
    out: "workers/aqi/worker-configuration.d.ts",
    vars: "workers/aqi/.dev.vars.example",
  },
  {
    config: "workers/portfolio/wrangler.toml",
    out: "workers/portfolio/worker-configuration.d.ts",
    vars: "workers/portfolio/.dev.vars.example",
  },
  { config: "wrangler.toml", out: "shared/runtime.d.ts", vars: null },
];

let failed = false;
for (const target of targets) {
  const args = ["wrangler", "types", target.out, "-c", target.config, "--strict-vars=false"];
  if (target.vars) args.push("--env-file", target.vars);
  else args.push("--include-env=false");
  if (check) args.push("--check");
  const result = spawnSync("npx", args, {
    encoding: "utf8",
    env: { ...process.env, WRANGLER_SEND_METRICS: "false", CLOUDFLARE_CF_FETCH_ENABLED: "false" },
  });
  const ok = result.status === 0;
  console.log(`${ok ? "ok  " : "FAIL"} ${target.out}${check ? " is up to date" : ""}`);
  if (!ok) {
    failed = true;
    process.stderr.write(result.stdout + result.stderr);
  }
}
if (failed) {
  if (check)
    console.error("Generated worker types are stale: run `npm run types` and commit the result.");
  process.exit(1);
}
