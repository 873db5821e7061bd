import { defineConfig } from "vitest/config";

// The answer evaluation's harness runs in Node (node:sqlite stands in for D1), not in workerd.
export default defineConfig({
  test: {
    name: "portfolio-eval",
    dir: import.meta.dirname,
    include: ["**/*.test.ts"],
  },
});
