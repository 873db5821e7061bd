import { spawn, spawnSync } from "node:child_process";
import path from "node:path";

export const ROOT = path.resolve(import.meta.dirname, "../..");

/** Offline: no telemetry, no request.cf lookups. */
export const WRANGLER_ENV = {
  ...process.env,
  WRANGLER_SEND_METRICS: "false",
  CLOUDFLARE_CF_FETCH_ENABLED: "false",
  // A coloured, interactive session would fight the prefixed log lines.
  FORCE_COLOR: "0",
  // wrangler's local trace store (spans of every request and call, for its
  // local explorer) writes into one SQLite file inside the stack's own
  // process, so the whole stack slowed as it grew: off unless asked for
  // (X_LOCAL_OBSERVABILITY=true). Production's observability is not in the
  // Worker's process.
  X_LOCAL_OBSERVABILITY: process.env.X_LOCAL_OBSERVABILITY ?? "false",
};

export const WRANGLER_BIN = path.join(ROOT, "node_modules", ".bin", "wrangler");

/** Runs a short wrangler command to completion; throws with its output on failure. */
export function runWrangler(args: string[]): string {
  const result = spawnSync(WRANGLER_BIN, args, { cwd: ROOT, env: WRANGLER_ENV, encoding: "utf8" });
  if (result.status !== 0) {
    throw new Error(`wrangler ${args.join(" ")} failed:\n${result.stdout}\n${result.stderr}`);
  }
  return result.stdout;
}

/** Applies a config's D1 migrations to the local database under `persistTo`. */
export function applyLocalMigrations(config: string, persistTo: string): void {
  runWrangler([
    "d1",
    "migrations",
    "apply",
    "DB",
    "--local",
    "--persist-to",
    persistTo,
    "-c",
    config,
  ]);
}

export function startWrangler(args: string[]) {
  return spawn(WRANGLER_BIN, args, {
    cwd: ROOT,
    env: WRANGLER_ENV,
    stdio: ["ignore", "pipe", "pipe"],
    // Its own process group, so stopping it also stops workerd below it.
    detached: true,
  });
}
