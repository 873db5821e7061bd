/**
 * AQI service benchmark: `node --experimental-strip-types bench/aqi.ts`.
 *
 * 1. Starts the local stack (scripts/dev.ts via startStack) with the AQI rate
 *    limits raised through the environment, so the load is not refused.
 * 2. autocannon against the running worker, in one run: GET /v1/health (the
 *    trivial route), POST /v1/predict (1 row), POST /v1/predict/batch (100
 *    rows); throughput and latency, with ratios to the trivial route.
 * 3. In-Worker inference time for 100 rows: the worker reports the wall time
 *    of its `session.run` in a `Server-Timing` header, from performance.now()
 *    inside workerd. Local workerd's clock runs during execution but ticks in
 *    whole milliseconds, so one reading of a sub-millisecond run is 0 or 1;
 *    requests start at random phases of the tick, so the MEAN over many
 *    sequential requests is an unbiased estimate of the run time (the median
 *    is not, and is shown only for completeness). Next to it, onnxruntime-node
 *    scoring the same ONNX file on the same 100 encoded rows (1 thread, like
 *    the Worker, and its default threads), timed with performance.now() in
 *    Node (sub-microsecond).
 *    Because a single reading is that coarse, a second in-workerd figure comes
 *    from a probe Worker (the service's own ModelHost and shipped model,
 *    started with wrangler's unstable_dev after the stack stops) that times
 *    thousands of back-to-back `run` calls in one request: steady state, as
 *    the onnxruntime-node loop is.
 * 4. Cold session creation: what the service's isolate measured when it
 *    created its session (GET /v1/model/info `session_create_ms`), what the
 *    probe's fresh isolate measured, and onnxruntime-node's creation time.
 *
 * Environment: BENCH_SECONDS (per autocannon run, default 10),
 * BENCH_CONNECTIONS (default 20), BENCH_SAMPLES (timing samples, default 1000).
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import path from "node:path";
import { performance } from "node:perf_hooks";
import * as ortNode from "onnxruntime-node";
import { unstable_dev } from "wrangler";
import { startStack } from "../scripts/lib/stack.ts";
import { ROOT } from "../scripts/lib/wrangler.ts";
import {
  encodeBatch,
  FEATURE_COUNT,
  type FeatureInput,
  type PreprocessingSpec,
} from "../workers/aqi/src/domain/features.ts";

/** The part of autocannon's API used here (the package ships no types). */
type Autocannon = (options: {
  url: string;
  method: string;
  body?: string;
  headers: Record<string, string>;
  requests?: { setupRequest: (request: { headers: Record<string, string> }) => unknown }[];
  connections: number;
  duration: number;
}) => Promise<{
  requests: { total: number; average: number };
  latency: { p50: number; p90: number; p99: number; average: number };
  non2xx: number;
  errors: number;
  timeouts: number;
}>;
const autocannon = createRequire(import.meta.url)("autocannon") as Autocannon;

const SECONDS = Number(process.env.BENCH_SECONDS ?? 10);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 20);
const SAMPLES = Number(process.env.BENCH_SAMPLES ?? 1000);
const PROBE_ITERATIONS = Number(process.env.BENCH_PROBE_ITERATIONS ?? 3000);
const UNLIMITED = "1000000000";

interface LoadResult {
  name: string;
  requests: number;
  non2xx: number;
  errors: number;
  rps: number;
  p50: number;
  p90: number;
  p99: number;
  mean: number;
}

function log(line: string): void {
  process.stderr.write(`[bench:aqi] ${line}\n`);
}

function quantile(values: number[], q: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  if (sorted.length === 0) return Number.NaN;
  const position = (sorted.length - 1) * q;
  const low = Math.floor(position);
  const high = Math.ceil(position);
  return sorted[low]! + (sorted[high]! - sorted[low]!) * (position - low);
}

async function load(
  name: string,
  url: string,
  init: { method?: "GET" | "POST"; body?: string; manyClients?: boolean } = {},
): Promise<LoadResult> {
  let client = 0;
  const result = await autocannon({
    url,
    method: init.method ?? "GET",
    body: init.body,
    headers: init.body ? { "content-type": "application/json" } : {},
    // Every request from another client IP: each has its own rate-limit counter (Durable Object).
    ...(init.manyClients
      ? {
          requests: [
            {
              setupRequest: (request: { headers: Record<string, string> }) => {
                client += 1;
                request.headers = {
                  ...request.headers,
                  "cf-connecting-ip": `10.${(client >> 16) & 255}.${(client >> 8) & 255}.${client & 255}`,
                };
                return request;
              },
            },
          ],
        }
      : {}),
    connections: CONNECTIONS,
    duration: SECONDS,
  });
  return {
    name,
    requests: result.requests.total,
    non2xx: result.non2xx,
    errors: result.errors + result.timeouts,
    rps: result.requests.average,
    p50: result.latency.p50,
    p90: result.latency.p90,
    p99: result.latency.p99,
    mean: result.latency.average,
  };
}

function table(headers: string[], rows: (string | number)[][]): string {
  const cells = [headers, ...rows.map((row) => row.map(String))];
  const widths = headers.map((_, column) =>
    Math.max(...cells.map((row) => (row[column] ?? "").length)),
  );
  const line = (row: string[]) =>
    row
      .map((cell, column) =>
        column === 0 ? cell.padEnd(widths[column]!) : cell.padStart(widths[column]!),
      )
      .join("  ");
  return [
    line(cells[0]!),
    widths.map((width) => "-".repeat(width)).join("  "),
    ...cells.slice(1).map(line),
  ].join("\n");
}

function fixed(value: number, digits = 2): string {
  return Number.isFinite(value) ? value.toFixed(digits) : "n/a";
}

/** Source of the probe Worker: the service's model code, timed inside workerd. */
function probeSource(): string {
  const inference = path.join(ROOT, "workers/aqi/src/inference");
  return `
import { ModelHost } from ${JSON.stringify(path.join(inference, "model-host.ts"))};
import { shippedModel } from ${JSON.stringify(path.join(inference, "shipped-model.ts"))};
import { encodeBatch } from ${JSON.stringify(path.join(ROOT, "workers/aqi/src/domain/features.ts"))};

export default {
  async fetch(request) {
    const { rows, iterations } = await request.json();
    const host = new ModelHost(shippedModel);
    const created = performance.now();
    const state = await host.state();
    const sessionCreateMs = performance.now() - created;
    if (state.status !== "ready") return Response.json(state, { status: 503 });
    const model = state.model;
    const data = encodeBatch(rows, model.artifact.preprocessing);
    for (let i = 0; i < 50; i += 1) await model.run(data, rows.length);
    const runStarted = performance.now();
    for (let i = 0; i < iterations; i += 1) await model.run(data, rows.length);
    const runMs = (performance.now() - runStarted) / iterations;
    const encodeStarted = performance.now();
    for (let i = 0; i < iterations; i += 1) encodeBatch(rows, model.artifact.preprocessing);
    const encodeMs = (performance.now() - encodeStarted) / iterations;
    return Response.json({ sessionCreateMs, runMs, encodeMs, iterations });
  },
};
`;
}

interface ProbeResult {
  sessionCreateMs: number;
  runMs: number;
  encodeMs: number;
  iterations: number;
}

async function probeInWorkerd(rows: FeatureInput[], iterations: number): Promise<ProbeResult[]> {
  const dir = mkdtempSync(path.join(tmpdir(), "aqi-ort-probe-"));
  const script = path.join(dir, "probe.ts");
  writeFileSync(script, probeSource());
  const worker = await unstable_dev(script, {
    compatibilityDate: "2026-11-01",
    rules: [
      { type: "Data", globs: ["**/*.onnx"], fallthrough: true },
      { type: "CompiledWasm", globs: ["**/*.wasm"], fallthrough: true },
    ],
    logLevel: "warn",
    experimental: { disableExperimentalWarning: true },
  });
  try {
    const results: ProbeResult[] = [];
    // Three rounds; each builds a new ModelHost, so each also times a session creation.
    for (let round = 0; round < 3; round += 1) {
      const response = await worker.fetch("http://probe/", {
        method: "POST",
        body: JSON.stringify({ rows, iterations }),
      });
      if (response.status !== 200)
        throw new Error(`probe answered ${response.status}: ${await response.text()}`);
      results.push((await response.json()) as ProbeResult);
    }
    return results;
  } finally {
    await worker.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

async function main(): Promise<void> {
  log("starting the local stack (rate limits raised)");
  const stack = await startStack({
    logLevel: "warn",
    env: {
      // wrangler dev then reads these process variables as bindings, over wrangler.toml's vars.
      CLOUDFLARE_INCLUDE_PROCESS_ENV: "true",
      PREDICT_RATE_LIMIT_PER_MINUTE: UNLIMITED,
      BATCH_RATE_LIMIT_PER_MINUTE: UNLIMITED,
    },
  });
  try {
    const base = stack.aqiUrl;
    const health = (await (await fetch(`${base}/v1/health`)).json()) as { model_loaded: boolean };
    if (!health.model_loaded) throw new Error("the AQI worker has no model loaded: train it first");
    const info = (await (await fetch(`${base}/v1/model/info`)).json()) as {
      model_version: string;
      model_path: string;
      dataset_config: string;
      session_create_ms: number;
    };
    log(
      `model ${info.model_version} (${info.model_path}), isolate session created in ${info.session_create_ms} ms`,
    );

    const card = JSON.parse(readFileSync(path.join(ROOT, info.dataset_config), "utf8")) as {
      preprocessing: PreprocessingSpec;
      files?: { holdout?: string };
    };
    const holdoutFile = card.files?.holdout ?? `${info.model_version}.holdout.json`;
    const holdout = JSON.parse(
      readFileSync(path.join(ROOT, path.dirname(info.model_path), holdoutFile), "utf8"),
    ) as { rows: { request: FeatureInput }[] };
    const rows = Array.from(
      { length: 100 },
      (_, index) => holdout.rows[index % holdout.rows.length]!.request,
    );
    const single = JSON.stringify(rows[0]);
    const batch = JSON.stringify({ requests: rows });

    const check = await fetch(`${base}/v1/predict/batch`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: batch,
    });
    if (check.status !== 200)
      throw new Error(`batch check answered ${check.status}: ${await check.text()}`);
    const checked = (await check.json()) as { count: number };
    if (checked.count !== 100) throw new Error(`batch check returned ${checked.count} predictions`);

    log(`autocannon: ${CONNECTIONS} connections, ${SECONDS} s per route`);
    const results = [
      { rows: 1, ...(await load("GET /v1/health (trivial)", `${base}/v1/health`)) },
      {
        rows: 1,
        ...(await load("POST /v1/predict (1 row), one client", `${base}/v1/predict`, {
          method: "POST",
          body: single,
        })),
      },
      {
        rows: 1,
        ...(await load("POST /v1/predict (1 row), new client each", `${base}/v1/predict`, {
          method: "POST",
          body: single,
          manyClients: true,
        })),
      },
      {
        rows: 100,
        ...(await load(
          "POST /v1/predict/batch (100 rows), one client",
          `${base}/v1/predict/batch`,
          {
            method: "POST",
            body: batch,
          },
        )),
      },
      {
        rows: 100,
        ...(await load(
          "POST /v1/predict/batch (100 rows), new client each",
          `${base}/v1/predict/batch`,
          { method: "POST", body: batch, manyClients: true },
        )),
      },
    ];

    log(`in-Worker timing: ${SAMPLES} sequential batch-of-100 requests`);
    const inference: number[] = [];
    const encode: number[] = [];
    for (let sample = 0; sample < SAMPLES; sample += 1) {
      const response = await fetch(`${base}/v1/predict/batch`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: batch,
      });
      await response.arrayBuffer();
      const timing = response.headers.get("server-timing") ?? "";
      const run = /inference;dur=([\d.]+)/.exec(timing);
      const enc = /encode;dur=([\d.]+)/.exec(timing);
      if (response.status !== 200 || !run || !enc) {
        throw new Error(`sample ${sample}: status ${response.status}, Server-Timing "${timing}"`);
      }
      inference.push(Number(run[1]));
      encode.push(Number(enc[1]));
    }

    log("stopping the stack, so the probe and onnxruntime-node have the machine to themselves");
    await stack.stop();
    log(`in-workerd probe: ${PROBE_ITERATIONS} back-to-back runs x 3 rounds`);
    const probe = await probeInWorkerd(rows, PROBE_ITERATIONS);
    const probeRunMs = quantile(
      probe.map((round) => round.runMs),
      0.5,
    );
    const probeEncodeMs = quantile(
      probe.map((round) => round.encodeMs),
      0.5,
    );

    log("onnxruntime-node on the same file and rows");
    const modelBytes = readFileSync(path.join(ROOT, info.model_path));
    const tensorData = encodeBatch(rows, card.preprocessing);
    const nodeTimes = async (threads: number | undefined) => {
      const created = performance.now();
      const session = await ortNode.InferenceSession.create(modelBytes, {
        executionProviders: ["cpu"],
        graphOptimizationLevel: "all",
        ...(threads ? { intraOpNumThreads: threads, interOpNumThreads: 1 } : {}),
      });
      const createMs = performance.now() - created;
      const feeds = {
        input: new ortNode.Tensor("float32", tensorData, [rows.length, FEATURE_COUNT]),
      };
      for (let warm = 0; warm < 20; warm += 1) await session.run(feeds);
      const times: number[] = [];
      for (let sample = 0; sample < SAMPLES; sample += 1) {
        const started = performance.now();
        await session.run(feeds);
        times.push(performance.now() - started);
      }
      await session.release();
      return { createMs, times };
    };
    const nodeOneThread = await nodeTimes(1);
    const nodeDefault = await nodeTimes(undefined);

    const trivial = results[0]!;
    process.stdout.write(
      `\nAQI service benchmark (${info.model_version}; ${CONNECTIONS} connections, ${SECONDS} s per route; this machine: ${process.arch}, Node ${process.version})\n\n`,
    );
    process.stdout.write(
      `${table(
        [
          "route",
          "req/s",
          "x trivial",
          "rows/s",
          "p50 ms",
          "p90 ms",
          "p99 ms",
          "mean ms",
          "requests",
          "non-2xx",
          "errors",
        ],
        results.map((result) => [
          result.name,
          fixed(result.rps, 0),
          fixed(result.rps / trivial.rps, 2),
          fixed(result.rps * result.rows, 0),
          result.p50,
          result.p90,
          result.p99,
          fixed(result.mean, 1),
          result.requests,
          result.non2xx,
          result.errors,
        ]),
      )}\n\n`,
    );
    const mean = (values: number[]) =>
      values.reduce((sum, value) => sum + value, 0) / values.length;
    const halfWidth95 = (values: number[]) => {
      const average = mean(values);
      const variance =
        values.reduce((sum, value) => sum + (value - average) ** 2, 0) / (values.length - 1);
      return 1.96 * Math.sqrt(variance / values.length);
    };
    const workerMean = mean(inference);
    const timingRow = (name: string, values: number[]) => [
      name,
      `${fixed(mean(values), 3)} ± ${fixed(halfWidth95(values), 3)}`,
      fixed(quantile(values, 0.5), 3),
      fixed(quantile(values, 0.9), 3),
      values.length,
    ];
    process.stdout.write(
      `${table(
        ["inference, 100 rows (session.run)", "mean ms (95% CI)", "p50 ms", "p90 ms", "samples"],
        [
          timingRow(
            "onnxruntime-web in workerd, per request (Server-Timing, 1 ms ticks)",
            inference,
          ),
          [
            `onnxruntime-web in workerd, steady state (probe, ${PROBE_ITERATIONS} runs, median of 3 rounds)`,
            fixed(probeRunMs, 3),
            "",
            "",
            PROBE_ITERATIONS * probe.length,
            "",
          ],
          timingRow("onnxruntime-node, 1 thread", nodeOneThread.times),
          timingRow("onnxruntime-node, default threads", nodeDefault.times),
          timingRow("feature encoding in workerd, per request (Server-Timing)", encode),
          [
            "feature encoding in workerd, steady state (probe)",
            fixed(probeEncodeMs, 3),
            "",
            "",
            PROBE_ITERATIONS * probe.length,
            "",
          ],
        ],
      )}\n\n`,
    );
    process.stdout.write(
      `${table(
        ["cold session creation", "ms"],
        [
          [
            "onnxruntime-web, the service's isolate (first use, /v1/model/info)",
            fixed(info.session_create_ms, 1),
          ],
          [
            "onnxruntime-web, probe's fresh isolate (incl. wasm instantiation)",
            fixed(probe[0]!.sessionCreateMs, 1),
          ],
          [
            "onnxruntime-web, probe, further sessions (runtime already up)",
            probe
              .slice(1)
              .map((round) => fixed(round.sessionCreateMs, 1))
              .join(", "),
          ],
          ["onnxruntime-node, 1 thread", fixed(nodeOneThread.createMs, 1)],
        ],
      )}\n\n`,
    );
    const nodeMean = mean(nodeOneThread.times);
    const steady = probeRunMs / nodeMean;
    const perRequest = workerMean / nodeMean;
    const verdict = (ratio: number) => (ratio <= 1.5 ? "met" : "NOT met");
    process.stdout.write(
      `in-Worker / onnxruntime-node (1 thread, mean ${fixed(nodeMean, 3)} ms), 100 rows, target <= 1.5:\n` +
        `  steady state (back-to-back runs in workerd): ${fixed(steady, 2)} (${verdict(steady)})\n` +
        `  per request (one run per HTTP request, mean of Server-Timing): ${fixed(perRequest, 2)} (${verdict(perRequest)})\n`,
    );
  } finally {
    log("stopping the stack");
    await stack.stop();
  }
}

main().catch((error: unknown) => {
  process.stderr.write(
    `[bench:aqi] failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
  );
  process.exitCode = 1;
});
