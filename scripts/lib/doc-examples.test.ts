import { describe, expect, it } from "vitest";
import { examplesScript, judgeExamples, shellExamples } from "./doc-examples.ts";

const page = [
  "# Page",
  "```sh",
  "curl -s localhost:8787/health",
  "```",
  "```ts",
  "const x = 1;",
  "```sh",
  "```",
  "```sh status=422",
  "curl -s localhost:8788/v1/predict -d '{}'",
  "```",
  "```text",
  "not run",
  "```",
].join("\n");

describe("documentation shell examples", () => {
  it("takes sh blocks only, with their expected status and line", () => {
    const examples = shellExamples(page);
    expect(examples).toEqual([
      { line: 2, code: "curl -s localhost:8787/health", expectedStatus: null },
      { line: 9, code: "curl -s localhost:8788/v1/predict -d '{}'", expectedStatus: 422 },
    ]);
  });

  it("refuses a block that is never closed", () => {
    expect(() => shellExamples("```sh\ncurl x")).toThrow(/never closed/);
  });

  it("points the documented hosts at the test stack's ports", () => {
    const script = examplesScript(shellExamples(page), {
      billing: "127.0.0.1:40001",
      aqi: "127.0.0.1:40002",
      portfolio: "127.0.0.1:40003",
    });
    expect(script).toContain("curl -s 127.0.0.1:40001/health");
    expect(script).toContain("curl -s 127.0.0.1:40002/v1/predict");
    expect(script).not.toContain("localhost:87");
  });

  it("judges each block by the statuses its requests answered", () => {
    const examples = shellExamples(page);
    const ok = judgeExamples(examples, "@@example 0\n@@status 200\n@@example 1\n@@status 422\n");
    expect(ok.map((outcome) => outcome.problem)).toEqual([null, null]);

    const failed = judgeExamples(examples, "@@example 0\n@@status 500\n");
    expect(failed[0]?.problem).toMatch(/answered 500/);
    expect(failed[1]?.problem).toMatch(/never ran/);

    const silent = judgeExamples(examples, "@@example 0\n@@example 1\n@@status 200\n");
    expect(silent[0]?.problem).toBe("made no request");
    expect(silent[1]?.problem).toMatch(/expected 422/);
  });
});
