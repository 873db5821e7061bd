import path from "node:path";
import { cloudflareTest } from "@cloudflare/vitest-plugin";
import { defineConfig } from "vitest/config";

// wrangler.toml's module rules (.onnx as Data, .wasm as CompiledWasm) apply
// here too, so tests run the same onnxruntime-web recipe as `wrangler dev`.
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
    // Every file runs in one runtime: starting one per file compiled the
    // onnxruntime wasm again each time (about 5 s a file on this machine).
    // The only state is the rate limiter's, per client IP, and each test
    // takes fresh IPs (test/helpers.ts, evaluated once per runtime).
    isolate: false,
    // The first request starts the isolate, which compiles the 14 MB
    // onnxruntime wasm; on a busy machine that alone can take seconds.
    testTimeout: 30_000,
  },
});
