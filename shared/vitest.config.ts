import path from "node:path";
import { cloudflareTest } from "@cloudflare/vitest-plugin";
import { defineConfig } from "vitest/config";

// Shared code runs inside workerd under the billing worker's configuration,
// which exports the shared RateLimiter Durable Object.
export default defineConfig({
  plugins: [
    cloudflareTest({
      wrangler: { configPath: path.join(import.meta.dirname, "../wrangler.toml") },
      miniflare: { bindings: { ENVIRONMENT: "test" } },
    }),
  ],
  test: {
    name: "shared",
    include: ["src/**/*.test.ts", "test/**/*.test.ts"],
    // One runtime for every file: only the rate limiter's test keeps state,
    // in Durable Objects of its own names.
    isolate: false,
  },
});
