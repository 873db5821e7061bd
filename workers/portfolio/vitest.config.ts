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
          },
        },
      }),
    ],
    test: {
      name: "portfolio",
      include: ["src/**/*.test.ts", "test/**/*.test.ts"],
      setupFiles: ["./test/setup.ts"],
    },
  };
});
