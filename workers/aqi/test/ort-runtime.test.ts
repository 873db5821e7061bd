import { describe, expect, it } from "vitest";
import { createOrtSession, ort } from "../src/inference/onnx-runtime.ts";
import { echoColumnModel } from "./fixtures/onnx-writer.ts";

describe("onnxruntime-web inside workerd (precompiled wasm, sentinel wasmBinary)", () => {
  it("creates sessions from bytes and scores a batch in one run", async () => {
    const first = await createOrtSession(echoColumnModel(14, 6, 10));
    // A second session reuses the runtime already instantiated in this isolate.
    const second = await createOrtSession(echoColumnModel(14, 0, 1));
    const data = new Float32Array(3 * 14);
    data[6] = 50.5;
    data[14 + 6] = 512.75;
    data[28] = 7;
    data[28 + 6] = -3;
    data[9] = Number.NaN;
    const input = new ort.Tensor("float32", data, [3, 14]);
    const out = await first.run({ input });
    expect(out.aqi!.dims).toEqual([3, 1]);
    expect(Array.from(out.aqi!.data as Float32Array)).toEqual([50.5, 512.75, -3]);
    expect(Array.from(out.aqi_low!.data as Float32Array)).toEqual([40.5, 502.75, -13]);
    expect(Array.from(out.aqi_high!.data as Float32Array)).toEqual([60.5, 522.75, 7]);
    const other = await second.run({ input });
    expect(Array.from(other.aqi!.data as Float32Array)).toEqual([0, 0, 7]);
  });
});
