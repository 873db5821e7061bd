import { defineConfig } from "vitest/config";

// `npm run test:unit` runs every worker's suite inside workerd
// (@cloudflare/vitest-plugin), each project with its own vitest.config.ts,
// and the scripts', benchmarks' and end-to-end helpers' own unit tests in
// Node. Starting a runtime costs seconds per test file, so only tests that
// need fresh storage get one each: billing and portfolio run their
// code-level tests (src/) in one shared runtime and their API-level tests
// (test/) in one runtime per file; shared and aqi keep no storage a test
// could trip over and share one runtime.
export default defineConfig({
  test: {
    projects: [
      "shared/vitest.config.ts",
      "workers/billing/vitest.config.ts",
      "workers/usage-consumer/vitest.config.ts",
      "workers/aqi/vitest.config.ts",
      "workers/portfolio/vitest.config.ts",
      "workers/portfolio/eval/vitest.config.ts",
      {
        test: {
          name: "scripts",
          include: ["scripts/**/*.test.ts", "bench/**/*.test.ts", "e2e/lib/**/*.test.ts"],
        },
      },
    ],
  },
});
