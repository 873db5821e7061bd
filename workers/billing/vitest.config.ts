import path from "node:path";
import { cloudflareTest, readD1Migrations } from "@cloudflare/vitest-plugin";
import { defineConfig } from "vitest/config";
import { promptQueueConsumers } from "../../scripts/lib/test-queues.ts";

const TEST_JWT_SECRET = "test-only-jwt-signing-secret-0123456789abcdef";
const WRANGLER_CONFIG = path.join(import.meta.dirname, "../../wrangler.toml");

export default defineConfig(async () => {
  const migrations = await readD1Migrations(path.join(import.meta.dirname, "../../migrations"));
  return {
    plugins: [
      cloudflareTest({
        wrangler: { configPath: WRANGLER_CONFIG },
        miniflare: {
          // Queue work lands within milliseconds (scripts/lib/test-queues.ts).
          queueConsumers: promptQueueConsumers(WRANGLER_CONFIG),
          bindings: {
            TEST_MIGRATIONS: migrations,
            ENVIRONMENT: "test",
            // Tests sign and check real tokens; this key exists only here.
            JWT_SECRET: TEST_JWT_SECRET,
            // Webhook tests sign their payloads with this; it exists only here.
            PAYPROVIDER_WEBHOOK_SECRET: "test-only-payprovider-webhook-secret-0123456789",
            // Encrypts webhook endpoints' signing secrets in tests; it exists only here.
            WEBHOOK_SECRET_KEY: "test-only-webhook-secret-encryption-key-0123456789",
          },
        },
      }),
    ],
    test: {
      name: "billing",
      projects: [
        // Code-level tests (src/) touch no storage: they share one runtime,
        // which saves starting workerd, importing the worker and applying
        // the migrations for each of their files.
        { test: { name: "unit", include: ["src/**/*.test.ts"], isolate: false } },
        // API-level tests (test/) each get a fresh runtime and storage.
        { test: { name: "integration", include: ["test/**/*.test.ts"] } },
      ],
      setupFiles: ["./test/setup.ts"],
      // Room for the generous waits on Durable Object and queue work, and for
      // scenario tests that drive dozens of HTTP calls and billing cycles.
      testTimeout: 30_000,
      // A local server speaking the payment provider's wire format (payprovider tests).
      globalSetup: ["./test/support/global-setup.ts"],
    },
  };
});
