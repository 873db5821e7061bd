import { applyD1Migrations, type D1Migration } from "cloudflare:test";
import { env } from "cloudflare:workers";

/** The bindings this helper needs; TEST_MIGRATIONS comes from each vitest.config.ts. */
interface MigrationTestEnv {
  DB?: D1Database;
  TEST_MIGRATIONS?: D1Migration[];
}

/**
 * Setup-file body: applies the worker's D1 migrations before its tests.
 * Setup files run outside per-test storage isolation and `applyD1Migrations`
 * skips what is already applied, so running it once per file is safe.
 */
export async function applyTestMigrations(): Promise<void> {
  const { DB, TEST_MIGRATIONS } = env as unknown as MigrationTestEnv;
  if (!DB || !TEST_MIGRATIONS)
    throw new Error("DB binding or TEST_MIGRATIONS missing in vitest config");
  await applyD1Migrations(DB, TEST_MIGRATIONS);
}
