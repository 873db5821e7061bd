import { defineConfig } from "vitest/config";

// Pages in headless Chromium, driven from Node against `wrangler dev`
// (outside workerd): the portfolio chat page. (The documentation pages are
// tested in Chromium inside the end-to-end suite, on its stack.)
export default defineConfig({
  test: {
    name: "pages",
    include: [
      "e2e/browser/**/*.browser.test.ts",
      "workers/portfolio/test/browser/**/*.browser.test.ts",
    ],
    testTimeout: 60_000,
    hookTimeout: 180_000,
    fileParallelism: false,
  },
});
