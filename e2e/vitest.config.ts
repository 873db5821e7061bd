import { defineConfig } from "vitest/config";

// End-to-end: one real stack (scripts/dev.ts on free ports, fresh state) for
// the whole run, driven over HTTP from Node.
export default defineConfig({
  test: {
    name: "e2e",
    include: ["e2e/**/*.e2e.test.ts"],
    globalSetup: ["e2e/global-setup.ts"],
    // Long enough to wait out a sign-in rate limit (e2e/lib/billing-api.ts).
    testTimeout: 90_000,
    hookTimeout: 180_000,
    fileParallelism: false,
  },
});
