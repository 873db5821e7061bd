import { spawn, spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
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

/**
 * Applies a config's D1 migrations to the local database under `persistTo`.
 *
 * `wrangler d1 migrations apply` starts a local runtime per migration (about
 * a second each), which made most of a fresh stack's start. On a fresh
 * state (no local D1 yet) every migration goes in one `d1 execute` instead:
 * the same statements wrangler would run, each migration followed by its
 * `d1_migrations` row, so later applies see them as applied. That runs as
 * one atomic batch; if it fails, nothing of it stays and wrangler's own
 * apply runs, migration by migration, and reports the failure as usual.
 */
export function applyLocalMigrations(config: string, persistTo: string): void {
  if (!existsSync(path.join(persistTo, "v3", "d1"))) {
    try {
      executeLocalSql(config, persistTo, freshDatabaseSql(config));
      return;
    } catch {
      // wrangler's own apply below reports what failed.
    }
  }
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

/** Runs SQL statements on a config's local D1 database under `persistTo`, as one batch (`wrangler d1 execute --file`). */
export function executeLocalSql(config: string, persistTo: string, sql: string): void {
  const dir = mkdtempSync(path.join(tmpdir(), "d1-sql-"));
  try {
    const file = path.join(dir, "statements.sql");
    writeFileSync(file, sql);
    runWrangler([
      "d1",
      "execute",
      "DB",
      "--local",
      "--persist-to",
      persistTo,
      "--file",
      file,
      "-c",
      config,
    ]);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** wrangler's migrations table, and each migration then its row, as `d1 migrations apply` writes them. */
function freshDatabaseSql(config: string): string {
  const toml = readFileSync(path.join(ROOT, config), "utf8");
  const dir = /^migrations_dir\s*=\s*"([^"]+)"/m.exec(toml)?.[1] ?? "migrations";
  const migrations = path.resolve(ROOT, path.dirname(config), dir);
  const files = readdirSync(migrations)
    .filter((name) => name.endsWith(".sql"))
    .sort();
  return [
    `CREATE TABLE IF NOT EXISTS "d1_migrations"(
\t\tid         INTEGER PRIMARY KEY AUTOINCREMENT,
\t\tname       TEXT UNIQUE,
\t\tapplied_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP NOT NULL
);`,
    ...files.map(
      (name) =>
        `${readFileSync(path.join(migrations, name), "utf8")}\nINSERT INTO "d1_migrations" (name)\nvalues ('${name.replaceAll("'", "''")}');`,
    ),
  ].join("\n");
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
