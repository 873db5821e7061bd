import { defineConfig } from "vitest/config";

// The README's quick start, run as a new user would: a fresh clone of the
// committed HEAD, the machine's own Node, `npm install && npm run dev`.
export default defineConfig({
  test: {
    name: "quick-start",
    include: ["e2e/quick-start/**/*.test.ts"],
    testTimeout: 420_000,
    hookTimeout: 240_000,
  },
});
