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
    projects: [
      // Code-level tests (src/) touch no storage: they share one runtime
      // instead of starting workerd and importing the worker for each file.
      { test: { name: "unit", include: ["src/**/*.test.ts"], isolate: false } },
      // API- and model-level tests (test/) each get a fresh runtime.
      { test: { name: "integration", include: ["test/**/*.test.ts"] } },
    ],
    // The first request of a file starts the isolate, which compiles the
    // 14 MB onnxruntime wasm; on a busy machine that alone can take seconds.
    testTimeout: 30_000,
  },
});
