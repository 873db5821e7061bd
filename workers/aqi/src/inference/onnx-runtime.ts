/**
 * onnxruntime-web (CPU/wasm build) made to run inside workerd.
 *
 * workerd refuses to compile WebAssembly from bytes at run time, so the
 * runtime's wasm is bundled as a precompiled `WebAssembly.Module` (wrangler's
 * CompiledWasm rule) and ort is handed a sentinel `wasmBinary`: ort passes
 * that buffer to `WebAssembly.instantiate`, which is wrapped once so that the
 * sentinel instantiates the precompiled module instead (instantiating a
 * compiled module is allowed). Threads and the proxy worker are off: a Worker
 * has neither SharedArrayBuffer threads nor Web Workers.
 *
 * Re-test on every onnxruntime-web upgrade (the recipe leans on how its
 * emscripten glue calls `WebAssembly.instantiate`).
 */
import ortWasmModule from "onnxruntime-web/ort-wasm-simd-threaded.wasm";
import * as ort from "onnxruntime-web/wasm";

export type { InferenceSession, Tensor } from "onnxruntime-web/wasm";
export { ort };

const SENTINEL = new ArrayBuffer(8);

let configured = false;

function isSentinel(source: unknown): boolean {
  if (source === SENTINEL) return true;
  return ArrayBuffer.isView(source) && source.buffer === SENTINEL;
}

function configureOnce(): void {
  if (configured) return;
  configured = true;
  const instantiate = WebAssembly.instantiate.bind(WebAssembly) as (
    source: unknown,
    imports?: WebAssembly.Imports,
  ) => Promise<unknown>;
  const patched = (source: unknown, imports?: WebAssembly.Imports): Promise<unknown> => {
    if (isSentinel(source)) {
      // The emscripten glue expects the BufferSource overload's result shape.
      return WebAssembly.instantiate(ortWasmModule, imports).then((instance) => ({
        instance,
        module: ortWasmModule,
      }));
    }
    return instantiate(source, imports);
  };
  (WebAssembly as { instantiate: unknown }).instantiate = patched;
  ort.env.wasm.numThreads = 1;
  ort.env.wasm.proxy = false;
  ort.env.wasm.wasmBinary = SENTINEL;
  ort.env.logLevel = "error";
}

/** A CPU session over an in-memory model (the `.onnx` bytes). */
export async function createOrtSession(modelBytes: Uint8Array): Promise<ort.InferenceSession> {
  configureOnce();
  return ort.InferenceSession.create(modelBytes, {
    executionProviders: ["wasm"],
    graphOptimizationLevel: "all",
  });
}
