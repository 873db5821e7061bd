import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import {
  atLeast,
  atMost,
  below,
  cell,
  condition,
  count,
  type MachineSnapshot,
  markdownTable,
  renderSection,
  replaceSection,
  reproduceCommand,
  startBenchmarkReport,
  times,
} from "./benchmarks-doc.ts";

const machine: MachineSnapshot = {
  cpu: "Test CPU @ 2.0GHz",
  cores: 2,
  memoryBytes: 8 * 1024 ** 3,
  node: "v24.0.0",
  platform: "linux x64",
  loadStart: [0.5, 0.25, 0.125],
  loadEnd: [1.5, 1, 0.75],
};

const document = [
  "# Benchmarks",
  "",
  "Intro.",
  "",
  "<!-- bench:billing -->",
  "old billing",
  "<!-- /bench:billing -->",
  "",
  "<!-- bench:aqi -->",
  "old aqi",
  "<!-- /bench:aqi -->",
  "",
].join("\n");

describe("replaceSection", () => {
  it("replaces only the named service's section and keeps its markers", () => {
    const updated = replaceSection(document, "billing", "new billing");
    expect(updated).toBe(document.replace("old billing", "new billing"));
    expect(updated).toContain("old aqi");
  });

  it("gives the same document when run twice with the same body", () => {
    const once = replaceSection(document, "aqi", "## AQI\n\nfigures\n");
    expect(replaceSection(once, "aqi", "## AQI\n\nfigures\n")).toBe(once);
  });

  it("appends a section for a service with no markers yet", () => {
    const updated = replaceSection(document, "usage", "usage figures");
    expect(updated.startsWith(document.trimEnd())).toBe(true);
    expect(updated.endsWith("<!-- bench:usage -->\nusage figures\n<!-- /bench:usage -->\n")).toBe(
      true,
    );
  });

  it("refuses a damaged file rather than rewriting it", () => {
    expect(() =>
      replaceSection(document.replace("<!-- /bench:aqi -->", ""), "aqi", "x"),
    ).toThrowError(/one <!-- bench:aqi --> and one <!-- \/bench:aqi -->, found 1 and 0/);
    expect(() =>
      replaceSection(`${document}\n<!-- bench:aqi -->\n<!-- /bench:aqi -->\n`, "aqi", "x"),
    ).toThrowError(/found 2 and 2/);
    expect(() =>
      replaceSection("<!-- /bench:aqi -->\n<!-- bench:aqi -->\n", "aqi", "x"),
    ).toThrowError(/comes before/);
  });

  it("does not take one service's markers for another whose name starts the same", () => {
    const withPrefix = `${document}<!-- bench:aqi-history -->\nold history\n<!-- /bench:aqi-history -->\n`;
    const updated = replaceSection(withPrefix, "aqi", "new aqi");
    expect(updated).toContain("old history");
    expect(updated).toContain("<!-- bench:aqi -->\nnew aqi\n<!-- /bench:aqi -->");
  });
});

describe("targets", () => {
  it("judge a figure against its bound and say how", () => {
    expect(atLeast(0.6, 0.6)).toEqual({ label: ">= 0.6×", met: true });
    expect(atLeast(0.59, 0.6).met).toBe(false);
    expect(atMost(1.51, 1.5)).toEqual({ label: "<= 1.5×", met: false });
    expect(below(1999, 2000, " ms")).toEqual({ label: "< 2,000 ms", met: true });
    expect(below(2000, 2000, " ms").met).toBe(false);
    expect(below(Number.NaN, 2000, " ms").met).toBe(false);
    expect(condition("exact", true)).toEqual({ label: "exact", met: true });
  });
});

describe("formatting", () => {
  it("writes ratios with ×, figures with thousands separators, and n/a for non-numbers", () => {
    expect(times(0.6249)).toBe("0.62×");
    expect(times(2.25, 1)).toBe("2.3×");
    expect(times(Number.NaN)).toBe("n/a");
    expect(count(6130.4)).toBe("6,130");
    expect(count(0.2049, 3)).toBe("0.205");
    expect(count(Number.POSITIVE_INFINITY)).toBe("n/a");
  });

  it("escapes pipes and folds line breaks so a value cannot break the table", () => {
    expect(cell(" a | b\nc ")).toBe("a \\| b c");
  });

  it("writes one table row per benchmark, with the verdict only where there is a target", () => {
    const table = markdownTable([
      { benchmark: "`GET /health/live` (baseline)", figure: "556 req/s" },
      {
        benchmark: "entitlement check",
        figure: "345 req/s",
        ratio: "0.62×",
        baseline: "`GET /health/live`, 556 req/s",
        target: atLeast(0.62, 0.6),
      },
      {
        benchmark: "consume",
        figure: "200 req/s | p50 9 ms",
        ratio: "0.36×",
        baseline: "`GET /health/live`, 556 req/s",
        target: atLeast(0.36, 0.5),
      },
    ]);
    expect(table.split("\n")).toEqual([
      "| benchmark | figure | ratio | baseline (same run) | target | met |",
      "|---|---|---|---|---|---|",
      "| `GET /health/live` (baseline) | 556 req/s |  |  |  |  |",
      "| entitlement check | 345 req/s | **0.62×** | `GET /health/live`, 556 req/s | >= 0.6× | **met** |",
      "| consume | 200 req/s \\| p50 9 ms | **0.36×** | `GET /health/live`, 556 req/s | >= 0.5× | **not met** |",
    ]);
  });

  it("renders a section with when, where, the command, the method, the table and the notes", () => {
    const body = renderSection(
      {
        title: "Billing: entitlements",
        method: "autocannon, 20 connections.",
        rows: [{ benchmark: "baseline", figure: "556 req/s" }],
        notes: ["A note."],
      },
      {
        finishedAt: new Date("2026-11-25T16:42:10.500Z"),
        command: "BENCH_SECONDS=1 npm run bench -- billing --markdown",
        machine,
      },
    );
    expect(body.split("\n\n")).toEqual([
      "## Billing: entitlements",
      "Measured 2026-11-25 16:42 UTC on Test CPU @ 2.0GHz, 2 cores, 8.0 GiB memory; linux x64, Node v24.0.0; load average (1 / 5 / 15 min) 0.50 / 0.25 / 0.13 at the start, 1.50 / 1.00 / 0.75 at the end.",
      "Reproduce: `BENCH_SECONDS=1 npm run bench -- billing --markdown`",
      "autocannon, 20 connections.",
      "| benchmark | figure | ratio | baseline (same run) | target | met |\n|---|---|---|---|---|---|\n| baseline | 556 req/s |  |  |  |  |",
      "- A note.",
    ]);
  });
});

describe("reproduceCommand", () => {
  it("names the run's BENCH_ settings, sorted, and the service", () => {
    expect(
      reproduceCommand("usage", {
        BENCH_SECONDS: "1",
        PATH: "/usr/bin",
        BENCH_CLIENTS: "4",
        BENCH_EMPTY: "",
        BENCH_NOTE: "two words",
      }),
    ).toBe(
      "BENCH_CLIENTS=4 BENCH_NOTE='two words' BENCH_SECONDS=1 npm run bench -- usage --markdown",
    );
    expect(reproduceCommand("aqi", {})).toBe("npm run bench -- aqi --markdown");
  });
});

describe("startBenchmarkReport", () => {
  const section = {
    title: "AQI: prediction",
    method: "Method.",
    rows: [
      {
        benchmark: "inference",
        figure: "0.2 ms",
        ratio: "1.88×",
        baseline: "onnxruntime-node",
        target: atMost(1.88, 1.5),
      },
    ],
  };

  function scratchDocument(): string {
    const file = path.join(mkdtempSync(path.join(tmpdir(), "benchmarks-doc-")), "benchmarks.md");
    writeFileSync(file, document);
    return file;
  }

  it("prints the summary and leaves the file alone without --markdown", () => {
    const docPath = scratchDocument();
    const printed: string[] = [];
    startBenchmarkReport("aqi", {
      argv: ["node", "aqi.ts"],
      docPath,
      out: (text) => printed.push(text),
    }).record(section);
    expect(readFileSync(docPath, "utf8")).toBe(document);
    expect(printed.join("")).toMatch(
      /inference\s+0\.2 ms\s+1\.88×\s+onnxruntime-node\s+<= 1\.5×\s+NOT met/,
    );
  });

  it("with --markdown writes the service's section and nothing else", () => {
    const docPath = scratchDocument();
    startBenchmarkReport("aqi", {
      argv: ["node", "aqi.ts", "--markdown"],
      docPath,
      out: () => {},
    }).record(section);
    const written = readFileSync(docPath, "utf8");
    const aqi = written.slice(
      written.indexOf("<!-- bench:aqi -->"),
      written.indexOf("<!-- /bench:aqi -->"),
    );
    expect(aqi).toContain("## AQI: prediction");
    expect(aqi).toMatch(/Measured \d{4}-\d\d-\d\d \d\d:\d\d UTC on .+ cores?, .+ GiB memory/);
    expect(aqi).toContain("npm run bench -- aqi --markdown`");
    expect(aqi).toContain(
      "| inference | 0.2 ms | **1.88×** | onnxruntime-node | <= 1.5× | **not met** |",
    );
    expect(written.replace(aqi, "<!-- bench:aqi -->\nold aqi\n")).toBe(document);
  });
});
