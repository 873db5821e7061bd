import { mkdirSync } from "node:fs";
import path from "node:path";
import { cloudflareTest, readD1Migrations } from "@cloudflare/vitest-plugin";
import { build } from "esbuild";
import { defineConfig } from "vitest/config";
import { promptQueueConsumers } from "../../scripts/lib/test-queues.ts";

const ROOT = path.join(import.meta.dirname, "../..");
/** The billing worker's D1 database (root wrangler.toml): both workers share it. */
const DATABASE_ID = "6f0e3a52-6c1e-4a4e-9d35-0b1b2b7c0001";

/**
 * The billing worker as an auxiliary worker, bundled from source for this
 * run: it owns the EntitlementCounter the aggregation stage writes through
 * (bound here with `script_name = "billing"`, as in production), and the
 * pipeline tests ingest through its HTTP API. Its queue producers and this
 * worker's consumers meet in the one Miniflare instance, as in `npm run dev`.
 * Here the billing worker spreads tenants over two raw queues
 * (USAGE_RAW_QUEUES = 2: usage-raw and usage-raw-1), so every pipeline test
 * runs the several-queue path; `npm run dev` runs the default, eight.
 */
async function bundleBilling(): Promise<string> {
  const outdir = path.join(ROOT, ".tmp/vitest/billing-aux");
  mkdirSync(outdir, { recursive: true });
  const outfile = path.join(outdir, "index.mjs");
  await build({
    entryPoints: [path.join(ROOT, "workers/billing/src/index.ts")],
    outfile,
    bundle: true,
    format: "esm",
    platform: "browser",
    target: "es2022",
    conditions: ["workerd", "worker", "browser"],
    external: ["cloudflare:*", "node:*"],
    logLevel: "warning",
  });
  return outfile;
}

export default defineConfig(async () => {
  const migrations = await readD1Migrations(path.join(ROOT, "migrations"));
  const billingScript = await bundleBilling();
  return {
    plugins: [
      cloudflareTest({
        wrangler: { configPath: path.join(import.meta.dirname, "./wrangler.toml") },
        miniflare: {
          bindings: { TEST_MIGRATIONS: migrations, ENVIRONMENT: "test" },
          // Queue work lands within milliseconds (scripts/lib/test-queues.ts);
          // wrangler.toml's consumers include usage-raw-1 and its dead-letter queue.
          queueConsumers: promptQueueConsumers(path.join(import.meta.dirname, "./wrangler.toml")),
          // Test-only way in: the billing API.
          serviceBindings: { BILLING: "billing" },
          workers: [
            {
              name: "billing",
              modules: true,
              scriptPath: billingScript,
              // Module names are relative to this; the bundle lives outside the project.
              modulesRoot: path.dirname(billingScript),
              compatibilityDate: "2026-11-01",
              d1Databases: { DB: DATABASE_ID },
              durableObjects: {
                RATE_LIMITER: { className: "RateLimiter", useSQLite: true },
                ENTITLEMENT_COUNTER: { className: "EntitlementCounter", useSQLite: true },
                USAGE_LOG: { className: "UsageLog", useSQLite: true },
              },
              r2Buckets: { USAGE_ARCHIVE: "usage-archive" },
              queueProducers: {
                USAGE_RAW_QUEUE: { queueName: "usage-raw" },
                USAGE_RAW_QUEUE_1: { queueName: "usage-raw-1" },
                USAGE_VALIDATED_QUEUE: { queueName: "usage-validated" },
                // The counter's usage alerts and quota.exhausted events.
                TENANT_EVENTS_QUEUE: { queueName: "tenant-events" },
              },
              bindings: {
                ENVIRONMENT: "test",
                CORS_ORIGINS: "",
                USAGE_RAW_QUEUES: "2",
                JWT_SECRET: "test-only-jwt-signing-secret-0123456789abcdef",
              },
            },
          ],
        },
      }),
    ],
    test: {
      name: "usage-consumer",
      include: ["src/**/*.test.ts", "test/**/*.test.ts"],
      setupFiles: ["./test/setup.ts"],
    },
  };
});
