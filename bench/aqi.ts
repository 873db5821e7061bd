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
 *    thousands of back-to-back `run` calls in one request: steady state.
 *    (Local workerd's performance.now() equals Date.now(), whole ms, and
 *    advances during execution; over a few thousand runs it agrees with the
 *    wall time seen from outside the Worker to within 0.1%.)
 *    The ratio compares like with like: every runtime (probe in workerd,
 *    onnxruntime-node, onnxruntime-web in Node) follows the same protocol:
 *    the same file and 100 encoded rows, the same warm-up (WARM_UP runs), the
 *    same number of back-to-back runs per round (PROBE_ITERATIONS), ROUNDS
 *    rounds interleaved round by round (so load from elsewhere on the shared
 *    machine falls on every side alike, and each round gives a paired ratio),
 *    the loop's total time divided by the runs, median of the rounds. Each
 *    round is also measured in CPU time: the probe's workerd process and this
 *    Node process (all threads, /proc/<pid>/task/<tid>/schedstat) over the
 *    very same loops. On a shared 2-core machine wall time also counts the
 *    time another process held the core; CPU time does not, so the paired
 *    CPU-time ratio is the steadier figure of what a run costs. The
 *    probe times the service's own `run` (tensor creation and output checks
 *    included), so the Worker side is, if anything, charged more.
 *    Two reference rows say where the gap comes from: onnxruntime-web's wasm
 *    in Node (same wasm, Node's V8, which guards wasm memory with guard
 *    pages and a trap handler), and a diagnosis-only probe run with V8's
 *    wasm bounds checks switched off (MINIFLARE_WORKERD_V8_FLAGS; unsafe,
 *    not available in production, never the result). Local workerd runs
 *    wasm with explicit bounds checks on every memory access (forcing them
 *    on changes nothing there, switching them off removes most of the gap),
 *    and tree traversal is almost all dependent loads.
 *    Steps 3's steady state runs for both bundled models: the weather-only
 *    model (aqi-1.0.0, 100 rows x 14 columns) and the recent-reading model
 *    (aqi-reading-1.2.0, 100 rows with readings x 16 columns; its `run`
 *    includes turning z into AQI in JavaScript, which onnxruntime-node does
 *    not do, so the Worker side carries that work), and the recent-hours
 *    model (aqi-history-1.0.0, 100 rows with recent_hours x 74 columns; its
 *    `run` includes turning z into AQI the same way). The autocannon table has
 *    a batch of 100 rows with readings and one with recent_hours too, and
 *    single requests of both; the recent_hours routes are read against their
 *    recent_aqi twins measured in the same run (run one after the other): a
 *    batch of 100 rows with recent_hours at least half the requests per
 *    second of one with recent_aqi, a single recent_hours prediction at most
 *    1.5 times a recent_aqi one (time per request and p50 latency). Those
 *    four routes are measured again for the comparison in rounds, each pair
 *    one right after the other in alternating order, and the ratio is the
 *    median of the paired (same-round) ratios, as for inference: load from
 *    elsewhere on the shared machine drifts between rounds more than within
 *    one, so it falls on both sides of a round's ratio alike.
 * 4. Cold session creation: what the service's isolate measured when it
 *    created its session (GET /v1/model/info `session_create_ms`), what the
 *    probe's fresh isolate measured, and onnxruntime-node's creation time.
 *
 * Environment: BENCH_SECONDS (per autocannon run, default 10),
 * BENCH_CONNECTIONS (default 20), BENCH_SAMPLES (timing samples, default 1000),
 * BENCH_PROBE_ITERATIONS (runs per steady-state round, default 1000),
 * BENCH_ROUNDS (interleaved steady-state rounds, default 11), BENCH_PAIR_ROUNDS and
 * BENCH_PAIR_SECONDS (the recent_hours comparisons: paired rounds, default 5,
 * of 4 s per route),
 * BENCH_DIAGNOSE=0 (skip the diagnosis-only probe). With `--markdown` the
 * summary also goes into docs/benchmarks.md (bench/lib/benchmarks-doc.ts).
 */
import { spawnSync } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
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
  encodeReadingBatch,
  type FeatureInput,
  type PreprocessingSpec,
} from "../workers/aqi/src/domain/features.ts";
import { encodeHistoryBatch } from "../workers/aqi/src/domain/history.ts";

type Variant = "weather-only" | "recent-reading" | "recent-hours";

import { autocannon } from "./lib/autocannon.ts";
import {
  atLeast,
  atMost,
  type BenchmarkRow,
  count,
  startBenchmarkReport,
  times,
  verdict as verdictOf,
} from "./lib/benchmarks-doc.ts";
import { quantile, table } from "./lib/report.ts";

const SECONDS = Number(process.env.BENCH_SECONDS ?? 10);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 20);
const SAMPLES = Number(process.env.BENCH_SAMPLES ?? 1000);
const PROBE_ITERATIONS = Number(process.env.BENCH_PROBE_ITERATIONS ?? 1000);
const WARM_UP = 50;
/** Short rounds, many of them: load from elsewhere drifts between rounds more than within one. */
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 11);
/** Set BENCH_DIAGNOSE=0 to skip the diagnosis-only probe (bounds checks off). */
const DIAGNOSE = process.env.BENCH_DIAGNOSE !== "0";
const UNLIMITED = "1000000000";
/** Inference in workerd as a ratio of onnxruntime-node (1 thread) on the same rows. */
const INFERENCE_TARGET = 1.5;
/** A 100-row batch with recent_hours, in requests/s, as a ratio of one with recent_aqi. */
const HISTORY_BATCH_TARGET = 0.5;
/** A single recent_hours prediction's time per request and p50 latency, as a ratio of a recent_aqi one's. */
const HISTORY_SINGLE_TARGET = 1.5;
const PAIR_ROUNDS = Number(process.env.BENCH_PAIR_ROUNDS ?? 5);
const PAIR_SECONDS = Number(process.env.BENCH_PAIR_SECONDS ?? 4);

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

async function load(
  name: string,
  url: string,
  init: { method?: "GET" | "POST"; body?: string; manyClients?: boolean; seconds?: number } = {},
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
    duration: init.seconds ?? SECONDS,
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

function fixed(value: number, digits = 2): string {
  return Number.isFinite(value) ? value.toFixed(digits) : "n/a";
}

/**
 * Source of the probe Worker: the service's model code, timed inside workerd.
 * Two requests per round: `prepare` (a fresh ModelHost, session creation
 * timed, warm-up, encoding timed) and `run` (only the back-to-back runs), so
 * that the probe process's CPU time over the `run` request is the runs' cost.
 */
function probeSource(): string {
  const inference = path.join(ROOT, "workers/aqi/src/inference");
  return `
import { ModelHost } from ${JSON.stringify(path.join(inference, "model-host.ts"))};
import { shippedHistoryModel, shippedModel, shippedReadingModel } from ${JSON.stringify(path.join(inference, "shipped-model.ts"))};

let prepared = null;

export default {
  async fetch(request) {
    const { op, rows, iterations, variant } = await request.json();
    if (op === "prepare") {
      const host = new ModelHost(
        variant === "recent-hours" ? shippedHistoryModel : variant === "recent-reading" ? shippedReadingModel : shippedModel,
      );
      const created = performance.now();
      const state = await host.state();
      const sessionCreateMs = performance.now() - created;
      if (state.status !== "ready") return Response.json(state, { status: 503 });
      const model = state.model;
      const data = model.encode(rows);
      for (let i = 0; i < ${WARM_UP}; i += 1) await model.run(data, rows.length);
      const encodeStarted = performance.now();
      for (let i = 0; i < iterations; i += 1) model.encode(rows);
      const encodeMs = (performance.now() - encodeStarted) / iterations;
      prepared = { model, data, rows: rows.length };
      return Response.json({ sessionCreateMs, encodeMs });
    }
    const { model, data } = prepared;
    const runStarted = performance.now();
    for (let i = 0; i < iterations; i += 1) await model.run(data, prepared.rows);
    const runMs = (performance.now() - runStarted) / iterations;
    return Response.json({ runMs, iterations });
  },
};
`;
}

/**
 * CPU time of a process in nanoseconds: the sum over its threads of the time
 * they spent on a CPU (/proc/<pid>/task/<tid>/schedstat, first field). Unlike
 * wall time it does not grow when other processes on the shared machine take
 * the cores, so a paired CPU-time ratio is what the runs cost, not who else
 * was running. Linux only; NaN elsewhere.
 */
function cpuNs(pid: number): number {
  try {
    let total = 0;
    for (const task of readdirSync(`/proc/${pid}/task`)) {
      total += Number(readFileSync(`/proc/${pid}/task/${task}/schedstat`, "utf8").split(" ")[0]);
    }
    return total;
  } catch {
    return Number.NaN;
  }
}

/** Child processes of this Node process named `workerd` (the probe's runtime). */
function workerdChildren(): Set<number> {
  const found = new Set<number>();
  try {
    for (const entry of readdirSync("/proc")) {
      if (!/^\d+$/.test(entry)) continue;
      try {
        const stat = readFileSync(`/proc/${entry}/stat`, "utf8");
        const name = stat.slice(stat.indexOf("(") + 1, stat.lastIndexOf(")"));
        const parent = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
        if (name === "workerd" && parent === process.pid) found.add(Number(entry));
      } catch {
        // the process ended while listing
      }
    }
  } catch {
    // no /proc
  }
  return found;
}

/**
 * Whether a binary carries the code that turns V8's wasm trap handler on.
 * An embedder calls `V8::EnableWebAssemblyTrapHandler`, which links in
 * `trap_handler::EnableTrapHandler` (and V8's default signal handler); with
 * the handler on, out-of-bounds wasm accesses fault into guard pages, and
 * without it V8 compiles an explicit bounds check into every wasm load and
 * store. Read from the binary's symbol names; undefined if it cannot be read.
 */
function trapHandlerLinked(binary: string): boolean | undefined {
  try {
    return readFileSync(binary).includes("_ZN2v88internal12trap_handler17EnableTrapHandlerEb");
  } catch {
    return undefined;
  }
}

/** The wasm trap handler as V8 reports it in this Node (`%IsWasmTrapHandlerEnabled()`). */
function nodeTrapHandlerEnabled(): string {
  const probe = spawnSync(
    process.execPath,
    ["--allow-natives-syntax", "-p", "%IsWasmTrapHandlerEnabled()"],
    { encoding: "utf8" },
  );
  return probe.status === 0 ? probe.stdout.trim() : "unknown";
}

/** workerd's binary, as the `workerd` package (miniflare's) names it. */
function workerdBinary(): string | undefined {
  try {
    return (createRequire(import.meta.url)("workerd") as { default: string }).default;
  } catch {
    return undefined;
  }
}

interface ProbeResult {
  sessionCreateMs: number;
  /** Wall time per run, from performance.now() inside workerd. */
  runMs: number;
  /** CPU time of the probe's workerd process per run (all its threads), NaN if unknown. */
  cpuMs: number;
  encodeMs: number;
  iterations: number;
}

interface ProbeHandle {
  /** One request: a fresh ModelHost (session creation timed), warm-up, then `iterations` runs. */
  round(rows: FeatureInput[], iterations: number, variant: Variant): Promise<ProbeResult>;
  stop(): Promise<void>;
}

/**
 * Starts the probe Worker. `v8Flags`, when given, start its workerd with
 * those V8 flags (miniflare reads MINIFLARE_WORKERD_V8_FLAGS whenever it
 * (re)builds workerd's config, so the variable stays set until the probe
 * stops): for diagnosis only.
 */
async function startProbe(v8Flags?: string): Promise<ProbeHandle> {
  const dir = mkdtempSync(path.join(tmpdir(), "aqi-ort-probe-"));
  const script = path.join(dir, "probe.ts");
  writeFileSync(script, probeSource());
  const previousFlags = process.env.MINIFLARE_WORKERD_V8_FLAGS;
  const restore = () => {
    if (previousFlags === undefined) delete process.env.MINIFLARE_WORKERD_V8_FLAGS;
    else process.env.MINIFLARE_WORKERD_V8_FLAGS = previousFlags;
    rmSync(dir, { recursive: true, force: true });
  };
  if (v8Flags) process.env.MINIFLARE_WORKERD_V8_FLAGS = v8Flags;
  else delete process.env.MINIFLARE_WORKERD_V8_FLAGS;
  let worker: Awaited<ReturnType<typeof unstable_dev>>;
  const before = workerdChildren();
  try {
    worker = await unstable_dev(script, {
      compatibilityDate: "2026-11-01",
      rules: [
        { type: "Data", globs: ["**/*.onnx"], fallthrough: true },
        { type: "CompiledWasm", globs: ["**/*.wasm"], fallthrough: true },
      ],
      logLevel: "warn",
      experimental: { disableExperimentalWarning: true },
    });
  } catch (error) {
    restore();
    throw error;
  }
  // wrangler starts more than one workerd process for a dev session, and not all at once: they are
  // looked up at each measurement; the idle ones add next to nothing.
  const probeCpuNs = () => {
    const pids = [...workerdChildren()].filter((pid) => !before.has(pid));
    return pids.length === 0 ? Number.NaN : pids.reduce((total, pid) => total + cpuNs(pid), 0);
  };
  const call = async (body: object) => {
    const response = await worker.fetch("http://probe/", {
      method: "POST",
      body: JSON.stringify(body),
    });
    if (response.status !== 200)
      throw new Error(`probe answered ${response.status}: ${await response.text()}`);
    return response.json();
  };
  return {
    async round(rows, iterations, variant) {
      const prepared = (await call({ op: "prepare", rows, iterations, variant })) as {
        sessionCreateMs: number;
        encodeMs: number;
      };
      const cpuBefore = probeCpuNs();
      const run = (await call({ op: "run", iterations })) as { runMs: number };
      const cpuMs = (probeCpuNs() - cpuBefore) / 1e6 / iterations;
      return { ...prepared, runMs: run.runMs, cpuMs, iterations };
    },
    async stop() {
      try {
        await worker.stop();
      } finally {
        restore();
      }
    },
  };
}

/** A session in Node timed with the probe's protocol (warm-up once, then rounds of back-to-back runs). */
interface SteadySession {
  readonly createMs: number;
  /** One round: PROBE_ITERATIONS back-to-back runs; milliseconds per run (wall). */
  round(): Promise<number>;
  /** CPU time of this Node process per run in the last round (all threads), NaN if unknown. */
  lastCpuMs(): number;
  release(): Promise<void>;
}

async function steadySession(
  createMs: number,
  run: () => Promise<unknown>,
  release: () => Promise<void>,
): Promise<SteadySession> {
  for (let warm = 0; warm < WARM_UP; warm += 1) await run();
  let cpuMs = Number.NaN;
  return {
    createMs,
    async round() {
      const cpuBefore = cpuNs(process.pid);
      const started = performance.now();
      for (let i = 0; i < PROBE_ITERATIONS; i += 1) await run();
      const wall = (performance.now() - started) / PROBE_ITERATIONS;
      cpuMs = (cpuNs(process.pid) - cpuBefore) / 1e6 / PROBE_ITERATIONS;
      return wall;
    },
    lastCpuMs: () => cpuMs,
    release,
  };
}

/** onnxruntime-node on the same file and rows; `threads` undefined = its default thread pool. */
async function nodeSession(
  modelBytes: Uint8Array,
  tensorData: Float32Array,
  rows: number,
  threads: number | undefined,
): Promise<SteadySession & { singleRuns(samples: number): Promise<number[]> }> {
  const columns = tensorData.length / rows;
  const created = performance.now();
  const session = await ortNode.InferenceSession.create(modelBytes, {
    executionProviders: ["cpu"],
    graphOptimizationLevel: "all",
    ...(threads ? { intraOpNumThreads: threads, interOpNumThreads: 1 } : {}),
  });
  const createMs = performance.now() - created;
  const feeds = { input: new ortNode.Tensor("float32", tensorData, [rows, columns]) };
  const run = () => session.run(feeds);
  const steady = await steadySession(createMs, run, () => session.release());
  return {
    ...steady,
    // Single runs, each timed, for the spread.
    async singleRuns(samples) {
      const times: number[] = [];
      for (let sample = 0; sample < samples; sample += 1) {
        const started = performance.now();
        await run();
        times.push(performance.now() - started);
      }
      return times;
    },
  };
}

/**
 * onnxruntime-web's CPU/wasm build, the very wasm the Worker runs, loaded in
 * Node (numThreads 1, no proxy). Node's V8 guards wasm memory with guard
 * pages and a trap handler, so this shows what the wasm build costs apart
 * from workerd.
 */
async function webInNodeSession(
  modelBytes: Uint8Array,
  tensorData: Float32Array,
  rows: number,
): Promise<SteadySession> {
  const ortWeb = await import("onnxruntime-web/wasm");
  ortWeb.env.wasm.numThreads = 1;
  ortWeb.env.wasm.proxy = false;
  ortWeb.env.wasm.wasmBinary = readFileSync(
    createRequire(import.meta.url).resolve("onnxruntime-web/ort-wasm-simd-threaded.wasm"),
  );
  ortWeb.env.logLevel = "error";
  const created = performance.now();
  const session = await ortWeb.InferenceSession.create(modelBytes, {
    executionProviders: ["wasm"],
    graphOptimizationLevel: "all",
  });
  const createMs = performance.now() - created;
  const feeds = {
    input: new ortWeb.Tensor("float32", tensorData, [rows, tensorData.length / rows]),
  };
  return steadySession(
    createMs,
    () => session.run(feeds),
    () => session.release(),
  );
}

/** The bundled recent-reading model's holdout rows (requests with readings). */
const READING_HOLDOUT = "aqi-reading-1.2.0.holdout.json";
/** The bundled recent-hours model's holdout rows (requests with recent_hours). */
const HISTORY_HOLDOUT = "aqi-history-1.0.0.holdout.json";

/**
 * Steady state of one model: the probe in workerd, onnxruntime-node (1 thread
 * and default threads) and onnxruntime-web in Node on the same file and the
 * same 100 encoded rows, ROUNDS rounds interleaved; then, for diagnosis, the
 * probe with wasm bounds checks off.
 */
async function compareSteady(
  variant: Variant,
  modelBytes: Uint8Array,
  rows: FeatureInput[],
  tensorData: Float32Array,
) {
  log(
    `steady state (${variant}): ${ROUNDS} rounds of ${PROBE_ITERATIONS} back-to-back runs, interleaved: probe in workerd, onnxruntime-node, onnxruntime-web in Node`,
  );
  // Interleaved round by round, so that load from elsewhere on the machine
  // falls on all sides alike; each round also yields a paired ratio.
  const probe = await startProbe();
  const nodeOneThread = await nodeSession(modelBytes, tensorData, rows.length, 1);
  const webInNode = await webInNodeSession(modelBytes, tensorData, rows.length);
  const probeRounds: ProbeResult[] = [];
  const nodeRounds: number[] = [];
  const nodeCpuRounds: number[] = [];
  const webRounds: number[] = [];
  try {
    for (let round = 0; round < ROUNDS; round += 1) {
      probeRounds.push(await probe.round(rows, PROBE_ITERATIONS, variant));
      nodeRounds.push(await nodeOneThread.round());
      nodeCpuRounds.push(nodeOneThread.lastCpuMs());
      webRounds.push(await webInNode.round());
    }
  } finally {
    await probe.stop();
    await webInNode.release();
  }
  const nodeSingleRuns = await nodeOneThread.singleRuns(SAMPLES);
  await nodeOneThread.release();
  const nodeDefault = await nodeSession(modelBytes, tensorData, rows.length, undefined);
  const nodeDefaultRounds: number[] = [];
  for (let round = 0; round < ROUNDS; round += 1) nodeDefaultRounds.push(await nodeDefault.round());
  await nodeDefault.release();
  let unguardedRunMs = Number.NaN;
  if (DIAGNOSE) {
    log(`diagnosis only (${variant}): the same probe with V8's wasm bounds checks off`);
    const unguarded = await startProbe("--no-wasm-bounds-checks");
    const unguardedRounds: number[] = [];
    try {
      for (let round = 0; round < ROUNDS; round += 1) {
        unguardedRounds.push((await unguarded.round(rows, PROBE_ITERATIONS, variant)).runMs);
      }
    } finally {
      await unguarded.stop();
    }
    unguardedRunMs = quantile(unguardedRounds, 0.5);
  }
  return {
    probeRounds,
    nodeRounds,
    nodeCpuRounds,
    webRounds,
    nodeSingleRuns,
    nodeDefaultRounds,
    unguardedRunMs,
    nodeOneThread,
    webInNode,
  };
}

async function main(): Promise<void> {
  const report = startBenchmarkReport("aqi");
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
    const readingHoldout = JSON.parse(
      readFileSync(path.join(ROOT, "models", READING_HOLDOUT), "utf8"),
    ) as { onnx: string; modelVersion: string; rows: { request: FeatureInput }[] };
    const readingRows = Array.from(
      { length: 100 },
      (_, index) => readingHoldout.rows[index % readingHoldout.rows.length]!.request,
    );
    const readingBatch = JSON.stringify({ requests: readingRows });
    const readingSingle = JSON.stringify(readingRows[0]);
    const historyHoldout = JSON.parse(
      readFileSync(path.join(ROOT, "models", HISTORY_HOLDOUT), "utf8"),
    ) as { onnx: string; modelVersion: string; rows: { request: FeatureInput }[] };
    const historyRows = Array.from(
      { length: 100 },
      (_, index) => historyHoldout.rows[index % historyHoldout.rows.length]!.request,
    );
    const historyBatch = JSON.stringify({ requests: historyRows });
    const historySingle = JSON.stringify(historyRows[0]);

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
    const post = (name: string, route: string, body: string) =>
      load(name, `${base}${route}`, { method: "POST", body });
    const results = [
      { rows: 1, ...(await load("GET /v1/health (baseline, no I/O)", `${base}/v1/health`)) },
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
        rows: 1,
        ...(await post(
          "POST /v1/predict (1 row with readings), one client",
          "/v1/predict",
          readingSingle,
        )),
      },
      {
        rows: 1,
        ...(await post(
          "POST /v1/predict (1 row with recent_hours), one client",
          "/v1/predict",
          historySingle,
        )),
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
          "POST /v1/predict/batch (100 rows with readings), one client",
          `${base}/v1/predict/batch`,
          { method: "POST", body: readingBatch },
        )),
      },
      {
        rows: 100,
        ...(await load(
          "POST /v1/predict/batch (100 rows with recent_hours), one client",
          `${base}/v1/predict/batch`,
          { method: "POST", body: historyBatch },
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

    log(
      `recent_hours against recent_aqi: ${PAIR_ROUNDS} paired rounds of ${PAIR_SECONDS} s per route`,
    );
    // Each comparison is a pair of routes measured one right after the other,
    // in alternating order from round to round (recent_aqi first, then
    // recent_hours first), so that load from elsewhere, which drifts between
    // rounds more than within one, falls on both sides of a round's ratio.
    const pairs = {
      batch: { reading: readingBatch, history: historyBatch, route: "/v1/predict/batch" },
      single: { reading: readingSingle, history: historySingle, route: "/v1/predict" },
    } as const;
    const pairRounds = {
      batch: { reading: [] as LoadResult[], history: [] as LoadResult[] },
      single: { reading: [] as LoadResult[], history: [] as LoadResult[] },
    };
    for (let round = 0; round < PAIR_ROUNDS; round += 1) {
      for (const [name, pair] of Object.entries(pairs) as [
        keyof typeof pairs,
        (typeof pairs)[keyof typeof pairs],
      ][]) {
        const sides =
          round % 2 === 0 ? (["reading", "history"] as const) : (["history", "reading"] as const);
        for (const side of sides) {
          pairRounds[name][side].push(
            await load(`${name} ${side}`, `${base}${pair.route}`, {
              method: "POST",
              body: pair[side],
              seconds: PAIR_SECONDS,
            }),
          );
        }
      }
    }
    const failedPairs = Object.values(pairRounds)
      .flatMap((pair) => [...pair.reading, ...pair.history])
      .reduce((sum, round) => sum + round.non2xx + round.errors, 0);
    if (failedPairs > 0) throw new Error(`${failedPairs} comparison requests failed`);
    const median = (values: number[]) => quantile(values, 0.5);
    const overRounds = (rounds: LoadResult[]) => ({
      rps: rounds.reduce((sum, round) => sum + round.rps, 0) / rounds.length,
      p50: median(rounds.map((round) => round.p50)),
    });
    const historyRoutes = {
      batch: overRounds(pairRounds.batch.history),
      readingBatch: overRounds(pairRounds.batch.reading),
      single: overRounds(pairRounds.single.history),
      readingSingle: overRounds(pairRounds.single.reading),
    };
    // Per round: higher is better for the batch (throughput), lower for the single request (time).
    const roundRatios = {
      batch: pairRounds.batch.history.map(
        (round, index) => round.rps / pairRounds.batch.reading[index]!.rps,
      ),
      singleTime: pairRounds.single.history.map(
        (round, index) => pairRounds.single.reading[index]!.rps / round.rps,
      ),
      singleP50: pairRounds.single.history.map(
        (round, index) => round.p50 / pairRounds.single.reading[index]!.p50,
      ),
    };
    // The headline is the median of the paired (same-round) ratios, as for inference below.
    const historyRatios = {
      batch: median(roundRatios.batch),
      singleTime: median(roundRatios.singleTime),
      singleP50: median(roundRatios.singleP50),
    };
    // The same ratios of the figures over all rounds, for comparison.
    const allRoundRatios = {
      batch: historyRoutes.batch.rps / historyRoutes.readingBatch.rps,
      singleTime: historyRoutes.readingSingle.rps / historyRoutes.single.rps,
      singleP50: historyRoutes.single.p50 / historyRoutes.readingSingle.p50,
    };

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

    log("in-Worker timing: the same with the recent-reading model (100 rows with readings)");
    const readingInference: number[] = [];
    for (let sample = 0; sample < SAMPLES; sample += 1) {
      const response = await fetch(`${base}/v1/predict/batch`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: readingBatch,
      });
      await response.arrayBuffer();
      const run = /inference;dur=([\d.]+)/.exec(response.headers.get("server-timing") ?? "");
      if (response.status !== 200 || !run)
        throw new Error(`reading sample ${sample}: ${response.status}`);
      readingInference.push(Number(run[1]));
    }

    log("in-Worker timing: the same with the recent-hours model (100 rows with recent_hours)");
    const historyInference: number[] = [];
    for (let sample = 0; sample < SAMPLES; sample += 1) {
      const response = await fetch(`${base}/v1/predict/batch`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: historyBatch,
      });
      await response.arrayBuffer();
      const run = /inference;dur=([\d.]+)/.exec(response.headers.get("server-timing") ?? "");
      if (response.status !== 200 || !run)
        throw new Error(`recent-hours sample ${sample}: ${response.status}`);
      historyInference.push(Number(run[1]));
    }

    log("stopping the stack, so the probe and onnxruntime-node have the machine to themselves");
    await stack.stop();
    const weatherOnly = await compareSteady(
      "weather-only",
      readFileSync(path.join(ROOT, info.model_path)),
      rows,
      encodeBatch(rows, card.preprocessing),
    );
    const reading = await compareSteady(
      "recent-reading",
      readFileSync(path.join(ROOT, "models", readingHoldout.onnx)),
      readingRows,
      encodeReadingBatch(readingRows, card.preprocessing),
    );
    const history = await compareSteady(
      "recent-hours",
      readFileSync(path.join(ROOT, "models", historyHoldout.onnx)),
      historyRows,
      encodeHistoryBatch(historyRows, card.preprocessing),
    );
    const { probeRounds, nodeRounds, webRounds, nodeOneThread, webInNode } = weatherOnly;
    const nodeSingleRuns = weatherOnly.nodeSingleRuns;
    const nodeDefaultRounds = weatherOnly.nodeDefaultRounds;
    const probeRunMs = median(probeRounds.map((round) => round.runMs));
    const probeEncodeMs = median(probeRounds.map((round) => round.encodeMs));
    const nodeSteady = median(nodeRounds);
    const webSteady = median(webRounds);
    const pairedRatios = probeRounds.map((round, index) => round.runMs / nodeRounds[index]!);
    const pairedCpuRatios = probeRounds.map(
      (round, index) => round.cpuMs / weatherOnly.nodeCpuRounds[index]!,
    );
    const unguardedRunMs = weatherOnly.unguardedRunMs;

    const workerdPath = workerdBinary();
    const workerdLinked = workerdPath === undefined ? undefined : trapHandlerLinked(workerdPath);
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
    const list = (values: number[], digits = 2) =>
      values.map((value) => fixed(value, digits)).join(", ");
    process.stdout.write(
      `recent_hours against recent_aqi, same run, ${PAIR_ROUNDS} paired rounds of ${PAIR_SECONDS} s per route (median of the paired round ratios; over all rounds in brackets):\n` +
        `  batch of 100 rows: ${fixed(historyRoutes.batch.rps, 1)} vs ${fixed(historyRoutes.readingBatch.rps, 1)} req/s (p50 ${historyRoutes.batch.p50} vs ${historyRoutes.readingBatch.p50} ms), ratio ${fixed(historyRatios.batch, 2)} [${fixed(allRoundRatios.batch, 2)}] (target >= ${HISTORY_BATCH_TARGET}: ${verdictOf(atLeast(historyRatios.batch, HISTORY_BATCH_TARGET))}); rounds ${list(roundRatios.batch)}\n` +
        `  single request: ${fixed(historyRoutes.single.rps, 1)} vs ${fixed(historyRoutes.readingSingle.rps, 1)} req/s, time per request ratio ${fixed(historyRatios.singleTime, 2)} [${fixed(allRoundRatios.singleTime, 2)}] (target <= ${HISTORY_SINGLE_TARGET}: ${verdictOf(atMost(historyRatios.singleTime, HISTORY_SINGLE_TARGET))}); rounds ${list(roundRatios.singleTime)}\n` +
        `  single request p50: ${historyRoutes.single.p50} vs ${historyRoutes.readingSingle.p50} ms, ratio ${fixed(historyRatios.singleP50, 2)} [${fixed(allRoundRatios.singleP50, 2)}] (target <= ${HISTORY_SINGLE_TARGET}: ${verdictOf(atMost(historyRatios.singleP50, HISTORY_SINGLE_TARGET))}); rounds ${list(roundRatios.singleP50)}\n\n`,
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
    const steadyRow = (name: string, value: number) => [
      `${name}, ${PROBE_ITERATIONS} runs x ${ROUNDS}, median round`,
      fixed(value, 3),
      "",
      "",
      PROBE_ITERATIONS * ROUNDS,
    ];
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
          steadyRow("onnxruntime-web in workerd, steady state (probe)", probeRunMs),
          steadyRow("onnxruntime-node, 1 thread, steady state (same protocol)", nodeSteady),
          timingRow("onnxruntime-node, 1 thread, single runs timed", nodeSingleRuns),
          steadyRow("onnxruntime-node, default threads, steady state", median(nodeDefaultRounds)),
          steadyRow(
            "reference: onnxruntime-web wasm in Node (trap handler), steady state",
            webSteady,
          ),
          steadyRow(
            "diagnosis only: probe in workerd with wasm bounds checks OFF (unsafe)",
            unguardedRunMs,
          ),
          timingRow("feature encoding in workerd, per request (Server-Timing)", encode),
          steadyRow("feature encoding in workerd, steady state (probe)", probeEncodeMs),
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
            fixed(probeRounds[0]!.sessionCreateMs, 1),
          ],
          [
            "onnxruntime-web, probe, further sessions (runtime already up)",
            probeRounds
              .slice(1)
              .map((round) => fixed(round.sessionCreateMs, 1))
              .join(", "),
          ],
          ["onnxruntime-node, 1 thread", fixed(nodeOneThread.createMs, 1)],
          ["onnxruntime-web wasm in Node (incl. wasm compilation)", fixed(webInNode.createMs, 1)],
        ],
      )}\n\n`,
    );
    // The headline is the median of the paired (same-round) ratios: load from
    // elsewhere on the machine drifts between rounds, not within one.
    const steady = median(pairedRatios);
    const perRequest = workerMean / nodeSteady;
    const verdict = (ratio: number) => (atMost(ratio, INFERENCE_TARGET).met ? "met" : "NOT met");
    process.stdout.write(
      `in-Worker / onnxruntime-node (1 thread), 100 rows, target <= 1.5:\n` +
        `  steady state (same protocol, rounds interleaved; median of the paired ratios): ${fixed(steady, 2)} (${verdict(steady)})\n` +
        `    ratio of the medians: ${fixed(probeRunMs / nodeSteady, 2)}\n` +
        `    paired ratio per round: ${list(pairedRatios, 2)}; workerd ms/run ${list(
          probeRounds.map((round) => round.runMs),
          3,
        )}; node ms/run ${list(nodeRounds, 3)}\n` +
        `  steady state in CPU time (each process's CPU time over the same rounds, all threads; not inflated by other load on the machine): ${fixed(median(pairedCpuRatios), 2)} (${verdict(median(pairedCpuRatios))})\n` +
        `    paired CPU ratio per round: ${list(pairedCpuRatios, 2)}; workerd CPU ms/run ${list(
          probeRounds.map((round) => round.cpuMs),
          3,
        )}; node CPU ms/run ${list(weatherOnly.nodeCpuRounds, 3)}\n` +
        `  per request (one run per HTTP request, mean of Server-Timing, over the node steady state): ${fixed(perRequest, 2)} (${verdict(perRequest)})\n` +
        `    (each request's run starts with caches cooled by the HTTP, JSON and validation work around it; the node loop's never are)\n` +
        `where the gap comes from (same file, same rows, over the node steady state):\n` +
        `  onnxruntime-web wasm in Node (V8 trap handler): ${fixed(webSteady / nodeSteady, 2)}; rounds ${list(webRounds, 3)} ms\n` +
        `  V8's wasm trap handler: Node ${process.version} enabled = ${nodeTrapHandlerEnabled()}; workerd ${workerdLinked === undefined ? "(binary not found)" : workerdLinked ? "links the code that enables it" : "does not link the code that enables it (no trap_handler::EnableTrapHandler in the binary), so every wasm load and store carries an explicit bounds check"}\n` +
        (DIAGNOSE
          ? `  workerd with wasm bounds checks off (diagnosis only, unsafe, not a result): ${fixed(unguardedRunMs / nodeSteady, 2)}\n`
          : ""),
    );
    const readingProbeMs = median(reading.probeRounds.map((round) => round.runMs));
    const readingNodeMs = median(reading.nodeRounds);
    const readingPaired = reading.probeRounds.map(
      (round, index) => round.runMs / reading.nodeRounds[index]!,
    );
    const readingSteady = median(readingPaired);
    const readingCpuPaired = reading.probeRounds.map(
      (round, index) => round.cpuMs / reading.nodeCpuRounds[index]!,
    );
    const readingPerRequest = mean(readingInference) / readingNodeMs;
    process.stdout.write(
      `\nrecent-reading model (${readingHoldout.modelVersion}), 100 rows with readings, in-Worker / onnxruntime-node (1 thread), target <= 1.5:\n` +
        `  steady state (median of the paired ratios): ${fixed(readingSteady, 2)} (${verdict(readingSteady)})\n` +
        `    workerd ms/run ${list(
          reading.probeRounds.map((round) => round.runMs),
          3,
        )} (median ${fixed(readingProbeMs, 3)}); node ms/run ${list(reading.nodeRounds, 3)} (median ${fixed(readingNodeMs, 3)}); paired ${list(readingPaired, 2)}\n` +
        `  steady state in CPU time (median of the paired ratios): ${fixed(median(readingCpuPaired), 2)} (${verdict(median(readingCpuPaired))})\n` +
        `    workerd CPU ms/run ${list(
          reading.probeRounds.map((round) => round.cpuMs),
          3,
        )}; node CPU ms/run ${list(reading.nodeCpuRounds, 3)}; paired ${list(readingCpuPaired, 2)}\n` +
        `  per request (mean of Server-Timing over ${readingInference.length} requests, over the node steady state): ${fixed(mean(readingInference), 3)} ms, ratio ${fixed(readingPerRequest, 2)} (${verdict(readingPerRequest)})\n` +
        `  onnxruntime-node default threads ${fixed(median(reading.nodeDefaultRounds), 3)} ms; onnxruntime-web wasm in Node ${fixed(median(reading.webRounds), 3)} ms (${fixed(median(reading.webRounds) / readingNodeMs, 2)})\n` +
        (DIAGNOSE
          ? `  workerd with wasm bounds checks off (diagnosis only): ${fixed(reading.unguardedRunMs / readingNodeMs, 2)}\n`
          : "") +
        `  weather-only model for comparison (steady, paired): ${fixed(steady, 2)}\n`,
    );
    const historyNodeMs = median(history.nodeRounds);
    const historyPaired = history.probeRounds.map(
      (round, index) => round.runMs / history.nodeRounds[index]!,
    );
    const historyCpuPaired = history.probeRounds.map(
      (round, index) => round.cpuMs / history.nodeCpuRounds[index]!,
    );
    const historyWebPaired = history.probeRounds.map(
      (round, index) => round.runMs / history.webRounds[index]!,
    );
    const historyPerRequest = mean(historyInference) / historyNodeMs;
    process.stdout.write(
      `\nrecent-hours model (${historyHoldout.modelVersion}), 100 rows with recent_hours, in-Worker / onnxruntime-node (1 thread), target <= 1.5:\n` +
        `  steady state (median of the paired ratios): ${fixed(median(historyPaired), 2)} (${verdict(median(historyPaired))})\n` +
        `    workerd ms/run ${list(
          history.probeRounds.map((round) => round.runMs),
          3,
        )} (median ${fixed(median(history.probeRounds.map((round) => round.runMs)), 3)}); node ms/run ${list(history.nodeRounds, 3)} (median ${fixed(historyNodeMs, 3)}); paired ${list(historyPaired, 2)}\n` +
        `  steady state in CPU time (median of the paired ratios): ${fixed(median(historyCpuPaired), 2)} (${verdict(median(historyCpuPaired))})\n` +
        `  in-Worker / the same wasm in Node (onnxruntime-web), paired: ${fixed(median(historyWebPaired), 2)}\n` +
        `  per request (mean of Server-Timing over ${historyInference.length} requests, over the node steady state): ${fixed(mean(historyInference), 3)} ms, ratio ${fixed(historyPerRequest, 2)} (${verdict(historyPerRequest)})\n` +
        `  onnxruntime-node default threads ${fixed(median(history.nodeDefaultRounds), 3)} ms; onnxruntime-web wasm in Node ${fixed(median(history.webRounds), 3)} ms (${fixed(median(history.webRounds) / historyNodeMs, 2)})\n` +
        (DIAGNOSE
          ? `  workerd with wasm bounds checks off (diagnosis only): ${fixed(history.unguardedRunMs / historyNodeMs, 2)}\n`
          : ""),
    );

    const healthBaseline = `\`GET /v1/health\` (no I/O), ${count(trivial.rps)} req/s`;
    const nodeBaseline = (ms: number) =>
      `onnxruntime-node, 1 thread, same file and rows: ${fixed(ms, 3)} ms`;
    const inferenceRows = (
      model: string,
      workerdMs: number,
      nodeMs: number,
      wall: number,
      cpu: { workerdMs: number; nodeMs: number; ratio: number },
      perRequestMs: number,
    ): BenchmarkRow[] => [
      {
        benchmark: `inference, 100 rows, ${model}: steady state in workerd`,
        figure: `${fixed(workerdMs, 3)} ms per run`,
        ratio: times(wall),
        baseline: nodeBaseline(nodeMs),
        target: atMost(wall, INFERENCE_TARGET),
      },
      {
        benchmark: `inference, 100 rows, ${model}: the same in CPU time`,
        figure: `${fixed(cpu.workerdMs, 3)} ms of CPU per run`,
        ratio: times(cpu.ratio),
        baseline: `onnxruntime-node over the same rounds: ${fixed(cpu.nodeMs, 3)} ms of CPU`,
        target: atMost(cpu.ratio, INFERENCE_TARGET),
      },
      {
        benchmark: `inference, 100 rows, ${model}: one run per HTTP request`,
        figure: `${fixed(perRequestMs, 3)} ms (mean of Server-Timing)`,
        ratio: times(perRequestMs / nodeMs),
        baseline: nodeBaseline(nodeMs),
        target: atMost(perRequestMs / nodeMs, INFERENCE_TARGET),
      },
    ];
    report.record({
      title: "AQI: prediction",
      method:
        `One stack (rate limits raised), autocannon with ${CONNECTIONS} connections for ${SECONDS} s per route. ` +
        `recent_hours against recent_aqi (readings): each pair of routes again in ${PAIR_ROUNDS} ${PAIR_ROUNDS === 1 ? "round" : "rounds"} of ${PAIR_SECONDS} s per route, the two one right after the other, in alternating order; the ratio is the median of the paired (same-round) ratios, the figures are over all rounds (latency: the median of the rounds' p50). ` +
        `Inference: the service's own model code in a probe Worker in workerd, onnxruntime-node (1 thread) and onnxruntime-web's wasm in Node on the same ONNX file and the same 100 encoded rows, ` +
        `${WARM_UP} warm-up runs, then ${ROUNDS} interleaved ${ROUNDS === 1 ? "round" : "rounds"} of ${count(PROBE_ITERATIONS)} back-to-back runs each; ` +
        "the ratio is the median of the paired (same-round) ratios, in wall time and in CPU time (each process's own, not inflated by other load). " +
        `Per request: the mean of the worker's \`Server-Timing\` over ${count(SAMPLES)} sequential requests (workerd's clock ticks in whole milliseconds, so only the mean is unbiased).`,
      rows: [
        {
          benchmark: "`GET /v1/health` (baseline: no I/O)",
          figure: `${count(trivial.rps)} req/s; p50 ${trivial.p50} ms, p99 ${trivial.p99} ms`,
        },
        ...results.slice(1).map(
          (result): BenchmarkRow => ({
            benchmark: result.name.replace(/^(GET|POST) (\S+)/, "`$1 $2`"),
            figure:
              `${count(result.rps)} req/s${result.rows > 1 ? ` = ${count(result.rps * result.rows)} rows/s` : ""}; ` +
              `p50 ${result.p50} ms, p99 ${result.p99} ms${result.non2xx + result.errors > 0 ? `; ${result.non2xx} non-2xx, ${result.errors} errors` : ""}`,
            ratio: times(result.rps / trivial.rps),
            baseline: healthBaseline,
          }),
        ),
        {
          benchmark:
            "`POST /v1/predict/batch`: 100 rows with recent_hours against 100 rows with readings (req/s, paired rounds)",
          figure: `${count(historyRoutes.batch.rps)} vs ${count(historyRoutes.readingBatch.rps)} req/s; p50 ${historyRoutes.batch.p50} ms vs ${historyRoutes.readingBatch.p50} ms`,
          ratio: times(historyRatios.batch),
          baseline: `100 rows with readings (recent_aqi), ${count(historyRoutes.readingBatch.rps)} req/s`,
          target: atLeast(historyRatios.batch, HISTORY_BATCH_TARGET),
        },
        {
          benchmark:
            "`POST /v1/predict`: 1 row with recent_hours against 1 row with readings (time per request, the inverse of req/s, paired rounds)",
          figure: `${count(historyRoutes.single.rps)} vs ${count(historyRoutes.readingSingle.rps)} req/s`,
          ratio: times(historyRatios.singleTime),
          baseline: `1 row with readings (recent_aqi), ${count(historyRoutes.readingSingle.rps)} req/s`,
          target: atMost(historyRatios.singleTime, HISTORY_SINGLE_TARGET),
        },
        {
          benchmark:
            "`POST /v1/predict`: 1 row with recent_hours against 1 row with readings (p50 latency, paired rounds)",
          figure: `p50 ${historyRoutes.single.p50} ms vs ${historyRoutes.readingSingle.p50} ms`,
          ratio: times(historyRatios.singleP50),
          baseline: `1 row with readings (recent_aqi), p50 ${historyRoutes.readingSingle.p50} ms`,
          target: atMost(historyRatios.singleP50, HISTORY_SINGLE_TARGET),
        },
        ...inferenceRows(
          `weather-only model ${info.model_version}`,
          probeRunMs,
          nodeSteady,
          steady,
          {
            workerdMs: median(probeRounds.map((round) => round.cpuMs)),
            nodeMs: median(weatherOnly.nodeCpuRounds),
            ratio: median(pairedCpuRatios),
          },
          workerMean,
        ),
        ...inferenceRows(
          `recent-reading model ${readingHoldout.modelVersion}`,
          readingProbeMs,
          readingNodeMs,
          readingSteady,
          {
            workerdMs: median(reading.probeRounds.map((round) => round.cpuMs)),
            nodeMs: median(reading.nodeCpuRounds),
            ratio: median(readingCpuPaired),
          },
          mean(readingInference),
        ),
        ...inferenceRows(
          `recent-hours model ${historyHoldout.modelVersion}`,
          median(history.probeRounds.map((round) => round.runMs)),
          historyNodeMs,
          median(historyPaired),
          {
            workerdMs: median(history.probeRounds.map((round) => round.cpuMs)),
            nodeMs: median(history.nodeCpuRounds),
            ratio: median(historyCpuPaired),
          },
          mean(historyInference),
        ),
        {
          benchmark: "cold session creation, once per isolate",
          figure: `${count(info.session_create_ms, 1)} ms in the service's isolate`,
          ratio: times(info.session_create_ms / nodeOneThread.createMs, 1),
          baseline: `onnxruntime-node: ${count(nodeOneThread.createMs, 1)} ms`,
        },
      ],
      notes: [
        `recent_hours against readings, round by round: batch ${list(roundRatios.batch)}; single request, time per request ${list(roundRatios.singleTime)}, p50 ${list(roundRatios.singleP50)}. Over all rounds instead of round by round: ${times(allRoundRatios.batch)}, ${times(allRoundRatios.singleTime)} and ${times(allRoundRatios.singleP50)}.`,
        `Where the inference gap comes from: the same onnxruntime-web wasm in Node runs at ${times(webSteady / nodeSteady)} onnxruntime-node (weather-only model); the recent-hours model in workerd runs at ${times(median(historyWebPaired))} that wasm in Node (paired rounds). ` +
          `V8's wasm trap handler (guard pages instead of bounds checks) is enabled in Node: ${nodeTrapHandlerEnabled()}; local workerd ${workerdLinked === undefined ? "(binary not found)" : workerdLinked ? "links the code that enables it" : "does not link the code that enables it, so every wasm load and store carries an explicit bounds check"}.` +
          (DIAGNOSE
            ? ` With bounds checks switched off (diagnosis only, unsafe, never a result) the probe runs at ${times(unguardedRunMs / nodeSteady)} (weather-only), ${times(reading.unguardedRunMs / readingNodeMs)} (recent-reading) and ${times(history.unguardedRunMs / historyNodeMs)} (recent-hours).`
            : ""),
      ],
    });
  } finally {
    log("stopping the stack");
    await stack.stop();
  }
}

main().catch((error: unknown) => {
  const cause = error instanceof Error && error.cause ? `\ncaused by: ${String(error.cause)}` : "";
  process.stderr.write(
    `[bench:aqi] failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}${cause}\n`,
  );
  process.exitCode = 1;
});
