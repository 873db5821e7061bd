import { defineConfig } from "vitest/config";

// The chat page in headless Chromium, driven from Node against `wrangler dev`
// (outside workerd, unlike the rest of the portfolio suite).
export default defineConfig({
  test: {
    name: "portfolio-page",
    include: ["workers/portfolio/test/browser/**/*.browser.test.ts"],
    testTimeout: 60_000,
    hookTimeout: 150_000,
  },
});
