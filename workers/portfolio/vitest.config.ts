import path from "node:path";
import { cloudflareTest, readD1Migrations } from "@cloudflare/vitest-plugin";
import { defineConfig } from "vitest/config";

export default defineConfig(async () => {
  const migrations = await readD1Migrations(
    path.join(import.meta.dirname, "../../migrations/portfolio"),
  );
  return {
    plugins: [
      cloudflareTest({
        wrangler: { configPath: path.join(import.meta.dirname, "wrangler.toml") },
        miniflare: {
          bindings: {
            TEST_MIGRATIONS: migrations,
            ENVIRONMENT: "test",
            API_TOKEN: "test-portfolio-token",
            // Most tests drive the development-mode pipeline (fictional content,
            // local providers); tests of the production providers and the CMS
            // override the environment per request (test/helpers.ts).
            DEV_MODE: "true",
          },
        },
      }),
    ],
    test: {
      name: "portfolio",
      projects: [
        // Code-level tests (src/) touch no storage: they share one runtime
        // instead of starting workerd and importing the worker for each file.
        { test: { name: "unit", include: ["src/**/*.test.ts"], isolate: false } },
        // API-level tests (test/) each get a fresh runtime and storage. The
        // Chromium page test runs in Node (test/browser/vitest.config.ts).
        {
          test: {
            name: "integration",
            include: ["test/**/*.test.ts"],
            exclude: ["test/browser/**"],
          },
        },
      ],
      setupFiles: ["./test/setup.ts"],
    },
  };
});
