/**
 * `npm run train:aqi`: the whole AQI training pipeline in one command.
 *
 *   1. prepare.ts (Node): target, data quality, shared-preprocessing features -> work dir
 *      prepare-daily.ts: the 8-station daily file as daily AQI (leave-one-station-out evaluation)
 *   2. fit.py (Python: numpy, scikit-learn, onnx): the weather-only model: CV, fit, ONNX export, model card
 *   3. forecast.py: the recent-reading model, the rolling-origin evaluation of both variants, leave one
 *      station out, ONNX export, model card and MAE-by-horizon plot -> models/aqi-reading-<version>.*
 *   4. prepare-history.ts + history.py: the recent-hours model (the station's last hourly readings),
 *      its rolling-origin evaluation on the frozen test months, ONNX export, model card and plot
 *      -> models/aqi-history-<version>.*
 *   5. verify-onnx.ts: the written ONNX in onnxruntime (if installed) against the trainer's predictions
 *
 * Options: --seed 42  --version 1.0.0  --reading-version 1.2.0  --history-version 1.0.0
 *          --kaggle-csv <path>  --models-dir models  --work-dir <dir>  --python /usr/bin/python3 (or AQI_PYTHON)
 *          --keep-work  --only weather-only|reading|history (one stage 2/3/4 only; the reading stage reads
 *          the weather-only version it names from --version)
 * Deterministic for a given seed: the same inputs give byte-identical ONNX.
 */

import { spawn, spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { createInterface } from "node:readline";
import { parseArgs } from "node:util";
import { DEFAULT_DATA_DIR, prepare, REPO_ROOT } from "./prepare.ts";
import { prepareDaily } from "./prepare-daily.ts";
import { prepareHistory } from "./prepare-history.ts";
import { verifyHistoryOnnx, verifyOnnx } from "./verify-onnx.ts";

export const MODEL_VERSION = "1.0.0";
export const READING_MODEL_VERSION = "1.2.0";
export const HISTORY_MODEL_VERSION = "1.0.0";
const PREPARE_STEPS = 5;

/** One progress bar over both stages; redraws in place on a terminal, prints lines otherwise (CI logs). */
class ProgressDisplay {
  private readonly started = Date.now();
  private lastLine = "";
  private readonly total: number;
  constructor(total: number) {
    this.total = total;
  }

  update(done: number, message: string): void {
    const width = 28;
    const filled = Math.round((Math.min(done, this.total) / this.total) * width);
    const seconds = ((Date.now() - this.started) / 1000).toFixed(0).padStart(4);
    const line = `[${"#".repeat(filled)}${"-".repeat(width - filled)}] ${String(done).padStart(2)}/${this.total} ${seconds}s  ${message}`;
    if (process.stdout.isTTY) {
      const columns = process.stdout.columns ?? 120;
      process.stdout.write(
        `\r${line.slice(0, columns - 1).padEnd(Math.min(this.lastLine.length, columns - 1))}`,
      );
    } else {
      console.log(line);
    }
    this.lastLine = line;
  }

  log(message: string): void {
    if (process.stdout.isTTY) process.stdout.write("\n");
    console.log(message);
  }

  finish(): void {
    if (process.stdout.isTTY) process.stdout.write("\n");
  }
}

function checkPython(python: string): void {
  const probe = spawnSync(
    python,
    ["-c", "import numpy, sklearn, onnx; print(sklearn.__version__, onnx.__version__)"],
    {
      encoding: "utf8",
    },
  );
  if (probe.status !== 0) {
    console.error(
      `${python} cannot import numpy, scikit-learn and onnx.\n` +
        "Install them (Debian/Ubuntu, as root): apt-get update && apt-get install -y python3-sklearn python3-onnx python3-matplotlib\n" +
        "and run with that interpreter (--python /usr/bin/python3 or AQI_PYTHON=/usr/bin/python3).\n" +
        (probe.stderr ?? ""),
    );
    process.exit(1);
  }
}

async function runFit(
  python: string,
  args: string[],
  display: ProgressDisplay,
  script = "fit.py",
  stepOffset = PREPARE_STEPS,
): Promise<unknown> {
  const child = spawn(python, [join(import.meta.dirname, script), ...args], {
    stdio: ["ignore", "pipe", "pipe"],
    // One OpenMP thread: on a shared 2-core machine scikit-learn's spin-waiting threads made one
    // gradient-boosting fit 30 times slower (197 s against 6.7 s, measured under load).
    env: { ...process.env, OMP_NUM_THREADS: process.env.OMP_NUM_THREADS ?? "1" },
  });
  let summary: unknown = null;
  const stderr: string[] = [];
  createInterface({ input: child.stdout }).on("line", (line) => {
    const progress = /^PROGRESS (\d+)\/(\d+) (.*)$/.exec(line);
    if (progress) {
      display.update(stepOffset + Number(progress[1]), progress[3] ?? "");
    } else if (line.startsWith('{"summary"')) {
      summary = (JSON.parse(line) as { summary: unknown }).summary;
    } else if (line.trim() !== "") {
      display.log(`${script}: ${line}`);
    }
  });
  createInterface({ input: child.stderr }).on("line", (line) => stderr.push(line));
  const code: number = await new Promise((resolveExit) =>
    child.on("close", (exitCode) => resolveExit(exitCode ?? 1)),
  );
  if (code !== 0) {
    display.finish();
    console.error(stderr.join("\n"));
    throw new Error(`${script} exited with code ${code}`);
  }
  return summary;
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      seed: { type: "string", default: "42" },
      version: { type: "string", default: MODEL_VERSION },
      "reading-version": { type: "string", default: READING_MODEL_VERSION },
      "history-version": { type: "string", default: HISTORY_MODEL_VERSION },
      only: { type: "string" },
      "kaggle-csv": { type: "string" },
      "data-dir": { type: "string", default: DEFAULT_DATA_DIR },
      "models-dir": { type: "string", default: join(REPO_ROOT, "models") },
      "work-dir": { type: "string" },
      python: { type: "string", default: process.env.AQI_PYTHON ?? "/usr/bin/python3" },
      "keep-work": { type: "boolean", default: false },
    },
  });
  const seed = Number(values.seed);
  if (!Number.isInteger(seed)) throw new Error(`--seed must be an integer, got ${values.seed}`);
  const python = values.python;
  checkPython(python);
  const workDir = values["work-dir"]
    ? resolve(values["work-dir"])
    : mkdtempSync(join(tmpdir(), "aqi-training-"));
  const modelsDir = resolve(values["models-dir"]);
  const only = values.only;
  if (only !== undefined && only !== "weather-only" && only !== "reading" && only !== "history") {
    throw new Error(`--only must be weather-only, reading or history, got ${only}`);
  }
  // fit.py reports steps 0..(blocks + 7), forecast.py about 20 (one per rolling origin and 4),
  // history.py about 21 (selection months, rolling origins, 2).
  const display = new ProgressDisplay(PREPARE_STEPS + 17 + 20 + 21);

  let prepareStep = 0;
  const prepared = prepare({
    seed,
    workDir,
    dataDir: resolve(values["data-dir"]),
    kaggleCsv: values["kaggle-csv"] ?? null,
    onProgress: (message) => display.update(prepareStep++, message),
  });
  display.update(PREPARE_STEPS, `prepared ${prepared.rows} station-hours`);

  // The reading stage needs the CPCB hourly series (gap-free station-hours) and the daily file.
  const runReading = (only === undefined || only === "reading") && !values["kaggle-csv"];
  const runHistory = (only === undefined || only === "history") && !values["kaggle-csv"];
  if (runReading) {
    const daily = prepareDaily(resolve(values["data-dir"]), workDir);
    display.log(
      `daily file: ${daily.rows} station-days, ${daily.stations.length} stations (left out, no coordinates: ${daily.skippedStations.join(", ") || "none"})`,
    );
  }

  const summary = (
    only === "reading" || only === "history"
      ? null
      : await runFit(
          python,
          [
            "--work-dir",
            workDir,
            "--models-dir",
            modelsDir,
            "--version",
            values.version,
            "--seed",
            String(seed),
          ],
          display,
        )
  ) as {
    blockedCv: Record<string, { mae: number; rmse: number; r2: number }>;
    interval: { coverage: number };
    acceptance: Record<string, boolean>;
  } | null;
  const readingSummary = runReading
    ? await runFit(
        python,
        [
          "--work-dir",
          workDir,
          "--models-dir",
          modelsDir,
          "--version",
          values["reading-version"],
          "--weather-only-version",
          values.version,
          "--seed",
          String(seed),
        ],
        display,
        "forecast.py",
        PREPARE_STEPS + 17,
      )
    : null;
  let historySummary: unknown = null;
  if (runHistory) {
    const history = prepareHistory(resolve(values["data-dir"]), workDir, seed);
    display.log(
      `recent-hours rows: ${history.rows} (${history.evaluationRows} at the evaluation horizons)`,
    );
    historySummary = await runFit(
      python,
      [
        "--work-dir",
        workDir,
        "--models-dir",
        modelsDir,
        "--version",
        values["history-version"],
        "--reading-version",
        values["reading-version"],
        "--seed",
        String(seed),
      ],
      display,
      "history.py",
      PREPARE_STEPS + 17 + 20,
    );
  }
  display.finish();
  if (historySummary) {
    console.log(`\nrecent-hours model and rolling origin: ${JSON.stringify(historySummary)}`);
  }
  if (readingSummary) {
    console.log(`\nrecent-reading model and rolling origin: ${JSON.stringify(readingSummary)}`);
  }
  if (!values["keep-work"] && !values["work-dir"])
    rmSync(workDir, { recursive: true, force: true });

  if (summary) {
    console.log("\nblocked CV (pooled out-of-fold):");
    for (const predictor of ["model", "climatology", "trainingMean"]) {
      const result = summary.blockedCv[predictor];
      if (result === undefined) continue;
      console.log(
        `  ${predictor.padEnd(13)} MAE ${result.mae}  RMSE ${result.rmse}  R2 ${result.r2}`,
      );
    }
    console.log(`  80% interval coverage ${summary.interval.coverage}`);
    console.log(`  acceptance ${JSON.stringify(summary.acceptance)}`);
  }

  try {
    const report = await verifyOnnx(modelsDir, values.version);
    console.log(
      `onnx check (${report.runtime}): ${report.rows} holdout rows + ${report.missingValueRows} rows with missing weather, ` +
        `feature mismatches ${report.featureMismatches}, max |diff| ${JSON.stringify(report.maxAbsDifference)} -> ${report.passed ? "ok" : "FAILED"}`,
    );
    if (!report.passed) process.exit(1);
  } catch (error) {
    if ((error as { code?: string }).code === "ERR_MODULE_NOT_FOUND") {
      console.log(
        "onnx runtime check skipped: onnxruntime-node is not installed (fit.py already re-evaluated the graph independently)",
      );
    } else {
      throw error;
    }
  }
  if (runHistory) {
    try {
      const report = await verifyHistoryOnnx(modelsDir, values["history-version"]);
      console.log(
        `recent-hours onnx check (${report.runtime}): ${report.rows} holdout requests, feature mismatches ${report.featureMismatches}, ` +
          `max |diff| ${JSON.stringify(report.maxAbsDifference)} -> ${report.passed ? "ok" : "FAILED"}`,
      );
      if (!report.passed) process.exit(1);
    } catch (error) {
      if ((error as { code?: string }).code !== "ERR_MODULE_NOT_FOUND") throw error;
      console.log("recent-hours onnx check skipped: onnxruntime-node is not installed");
    }
  }
  console.log(
    `artifacts in ${modelsDir}: aqi-${values.version}.{onnx,json,md,holdout.json} and aqi-${values.version}-cv.png`,
  );
  if (summary && Object.values(summary.acceptance).some((passed) => !passed)) {
    console.error("acceptance criteria not met (see the model card)");
    process.exit(2);
  }
}

await main();
