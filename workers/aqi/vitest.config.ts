import path from "node:path";
import { cloudflareTest } from "@cloudflare/vitest-plugin";
import { defineConfig } from "vitest/config";

export default defineConfig({
  plugins: [
    cloudflareTest({
      wrangler: { configPath: path.join(import.meta.dirname, "wrangler.toml") },
      miniflare: { bindings: { ENVIRONMENT: "test" } },
    }),
  ],
  test: {
    name: "aqi",
    include: ["src/**/*.test.ts", "test/**/*.test.ts"],
  },
});
