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
      include: ["src/**/*.test.ts", "test/**/*.test.ts"],
      // The Chromium page test runs in Node (test/browser/vitest.config.ts).
      exclude: ["test/browser/**"],
      setupFiles: ["./test/setup.ts"],
    },
  };
});
