/**
 * `npm run dev`: the whole platform locally, offline.
 *
 * 1. applies the local D1 migrations (billing and portfolio databases),
 * 2. loads the demo data (idempotent),
 * 3. starts billing + usage-consumer in one `wrangler dev` process (queues
 *    only connect within a process), and aqi and portfolio in their own,
 * 4. waits for every health endpoint and prints the URLs.
 * Ctrl-C (or SIGTERM) stops everything it started, gracefully: it first
 * waits up to DEV_DRAIN_SECONDS (default 10) for the usage events in flight
 * to finish, since the local queues hold their messages in memory; a second
 * Ctrl-C stops at once. Whatever a stop still leaves unfinished is re-driven
 * from D1 after the next start (workers/billing/src/usage/log/usage-log.ts).
 * 5. runs the Workers' Cron Triggers on their schedule, as production does
 *    (`wrangler dev` never fires them by itself): every matching whole
 *    minute, one run at a time, one `[cron]` line per run saying what it did
 *    (scripts/lib/scheduled-work.ts). DEV_CRON=off turns this off;
 *    `npm run cron` runs the scheduled work once (scripts/cron.ts).
 *
 * Environment: BILLING_PORT, AQI_PORT, PORTFOLIO_PORT (8787, 8788, 8789);
 * STATE_DIR for the local databases (.wrangler/state); DEV_LOG_LEVEL for
 * wrangler's --log-level; DEV_DRAIN_SECONDS; DEV_CRON (on by default);
 * BILLING_VARS_FILE, a .env file whose variables override the billing
 * worker's (e.g. USAGE_ARCHIVE_FILE_EVENTS=200 for small archive files).
 */
import type { ChildProcess } from "node:child_process";
import path from "node:path";
import { loadDemoData } from "./demo-data.ts";
import { writeDocsAssets } from "./docs-assets.ts";
import { devServices, devStateDir, localWorkerProcesses } from "./lib/dev-services.ts";
import { devVarsFile, readDevVars } from "./lib/dev-vars.ts";
import {
  appendRunRecord,
  CronRunner,
  type CronTrigger,
  cronTriggersOf,
  describeRun,
  devCronEnabled,
  fireTrigger,
  RUN_LOG_FILE,
  RunRecords,
  startRunLog,
} from "./lib/scheduled-work.ts";
import { freePort } from "./lib/stack.ts";
import { usageEventsInFlight } from "./lib/usage-backlog.ts";
import { applyLocalMigrations, ROOT, startWrangler } from "./lib/wrangler.ts";

const READY_TIMEOUT_MS = 120_000;

function log(line: string) {
  process.stdout.write(`[dev] ${line}\n`);
}

const stateDir = devStateDir();
const logLevel = process.env.DEV_LOG_LEVEL;
const cronEnabled = (() => {
  try {
    return devCronEnabled(process.env.DEV_CRON);
  } catch (error) {
    log(`failed: ${error instanceof Error ? error.message : String(error)}`);
    process.exit(1);
  }
})();
const services = devServices();
/** After a run's answer, how long its summary line may take to show in the output. */
const RUN_RECORD_WAIT_MS = 3000;
/** Longer than any run: a Cron Trigger's handler gets at most 15 minutes of wall time. */
const RUN_LIMIT_MS = 15 * 60_000;

const drainSeconds = Number(process.env.DEV_DRAIN_SECONDS ?? 10);
const billingVarsFile = process.env.BILLING_VARS_FILE;
/** Give up waiting when the in-flight count has not gone down for this long. */
const DRAIN_STALL_MS = 5000;

const children = new Map<string, ChildProcess>();
const runRecords = new RunRecords();
const runLog = path.join(stateDir, RUN_LOG_FILE);
let cronRunner: CronRunner | undefined;
let stopping = false;
let draining = false;
let ready = false;

/**
 * Waits while usage events are in flight and the count keeps going down,
 * at most DEV_DRAIN_SECONDS; returns early when a second signal comes.
 */
async function drainUsagePipeline(): Promise<void> {
  const billing = services[0];
  let inFlight = usageEventsInFlight(billing.persistTo);
  if (!ready || !inFlight || !(drainSeconds > 0)) return;
  log(
    `waiting up to ${drainSeconds} s for ${inFlight} usage events in flight (Ctrl-C again to stop now)`,
  );
  const deadline = Date.now() + drainSeconds * 1000;
  let lastProgress = Date.now();
  while (draining && Date.now() < deadline && Date.now() - lastProgress < DRAIN_STALL_MS) {
    await new Promise((resolve) => setTimeout(resolve, 200));
    const now = usageEventsInFlight(billing.persistTo);
    if (now === undefined || now === 0) {
      inFlight = 0;
      break;
    }
    if (now < (inFlight ?? Number.POSITIVE_INFINITY)) lastProgress = Date.now();
    inFlight = now;
  }
  log(
    inFlight === 0
      ? "usage pipeline drained"
      : `${inFlight} usage events still in flight; they are re-driven after the next start`,
  );
}

function requestStop(exitCode: number): void {
  if (stopping) return;
  if (draining) {
    draining = false;
    return;
  }
  draining = true;
  // No new runs; one under way finishes while the usage pipeline drains.
  void cronRunner?.stop();
  drainUsagePipeline()
    .catch(() => undefined)
    .finally(() => stopAll(exitCode));
}

function stopAll(exitCode: number): void {
  if (stopping) return;
  stopping = true;
  draining = false;
  void cronRunner?.stop();
  log("stopping...");
  for (const child of children.values()) {
    if (child.pid && child.exitCode === null) {
      try {
        process.kill(-child.pid, "SIGTERM");
      } catch {
        // already gone
      }
    }
  }
  const deadline = setTimeout(() => {
    for (const child of children.values()) {
      if (child.pid && child.exitCode === null) {
        try {
          process.kill(-child.pid, "SIGKILL");
        } catch {
          // already gone
        }
      }
    }
    process.exit(exitCode);
  }, 5000);
  deadline.unref();
  Promise.all(
    [...children.values()].map(
      (child) =>
        new Promise<void>((resolve) =>
          child.exitCode !== null ? resolve() : child.once("exit", () => resolve()),
        ),
    ),
  ).then(() => process.exit(exitCode));
}

process.on("SIGINT", () => requestStop(0));
process.on("SIGTERM", () => requestStop(0));

/** The lines of wrangler's notice that it does not fire Cron Triggers: true of wrangler, not of this stack. */
const UNFIRED_CRONS_NOTICE = [
  "Scheduled Workers are not automatically triggered",
  "To manually trigger a scheduled event",
  "/cdn-cgi/local/scheduled",
  "#test-cron-triggers-locally",
];

/**
 * A scheduled run's summary line becomes one `[cron]` line (and goes to the
 * run log `npm run cron` reads), whoever fired the run.
 */
function writeLine(line: string, prefix: string, out: NodeJS.WriteStream) {
  const record = runRecords.see(line);
  if (record) {
    process.stdout.write(`[cron] ${prefix} ${describeRun(record)}\n`);
    try {
      appendRunRecord(runLog, record);
    } catch {
      // the state directory is gone (stopping): the line above is what counts
    }
    return;
  }
  if (cronEnabled && UNFIRED_CRONS_NOTICE.some((notice) => line.includes(notice))) return;
  out.write(`[${prefix}] ${line}\n`);
}

function pipeWithPrefix(
  stream: NodeJS.ReadableStream | null,
  prefix: string,
  out: NodeJS.WriteStream,
) {
  if (!stream) return;
  let buffered = "";
  stream.setEncoding("utf8");
  stream.on("data", (chunk: string) => {
    buffered += chunk;
    const lines = buffered.split("\n");
    buffered = lines.pop() ?? "";
    for (const line of lines) if (line.trim()) writeLine(line, prefix, out);
  });
}

/** Fires the Cron Triggers on their schedule, until the stack stops. */
async function startCronRunner(triggersRead: Promise<CronTrigger[]>): Promise<void> {
  if (!cronEnabled) {
    log("Cron Triggers off (DEV_CRON=off): `npm run cron` runs the scheduled work once");
    return;
  }
  let triggers: CronTrigger[];
  try {
    triggers = await triggersRead;
  } catch (error) {
    log(
      `Cron Triggers NOT running: ${error instanceof Error ? error.message : String(error)} (\`npm run cron\` reports the same)`,
    );
    return;
  }
  if (stopping || draining || triggers.length === 0) return;
  cronRunner = new CronRunner({
    triggers,
    log: (line) => process.stdout.write(`[cron] ${line}\n`),
    fire: async (trigger, at) => {
      // Listening before firing: the summary line can come before the answer.
      const recorded = runRecords.waitFor(trigger.cron, at, RUN_LIMIT_MS);
      await fireTrigger(trigger, at);
      const record = await Promise.race([
        recorded,
        new Promise<undefined>((resolve) =>
          setTimeout(() => resolve(undefined), RUN_RECORD_WAIT_MS),
        ),
      ]);
      if (!record)
        process.stdout.write(
          `[cron] ${trigger.worker} ${at.toISOString()} "${trigger.cron}" ran (it logged no run summary)\n`,
        );
    },
  });
  cronRunner.start();
  const list = triggers.map((trigger) => `"${trigger.cron}" (${trigger.worker})`).join(", ");
  log(`Cron Triggers ${list} fire on their schedule (UTC); DEV_CRON=off turns them off`);
}

async function waitUntilHealthy(url: string, child: ChildProcess): Promise<void> {
  const started = Date.now();
  while (Date.now() - started < READY_TIMEOUT_MS) {
    if (child.exitCode !== null)
      throw new Error(`exited with code ${child.exitCode} before ${url} answered`);
    try {
      const response = await fetch(url, { signal: AbortSignal.timeout(2000) });
      if (response.status < 500) return;
    } catch {
      // not listening yet
    }
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  throw new Error(`${url} did not answer within ${READY_TIMEOUT_MS / 1000} s`);
}

async function main() {
  const started = Date.now();
  // Read while the stack starts (loading wrangler's config reader takes a moment).
  const triggersRead = cronEnabled
    ? cronTriggersOf(localWorkerProcesses(services))
    : Promise.resolve([]);
  triggersRead.catch(() => undefined);
  log(`state in ${path.relative(ROOT, stateDir) || stateDir}`);
  writeDocsAssets();
  startRunLog(runLog);
  log("applying D1 migrations (billing database)");
  try {
    applyLocalMigrations("wrangler.toml", services[0].persistTo);
  } catch (error) {
    // State from an earlier release whose D1 usage log still holds events:
    // the migration that drops it waits (it refuses while rows remain) and
    // the Cron Trigger moves them into the usage log meanwhile.
    if (!String(error).includes("usage_log_drain_check")) throw error;
    log(
      "the D1 usage log of an earlier release still holds events: the Cron Trigger moves them into the usage log, and the migration that drops it applies at a later start",
    );
  }
  log("applying D1 migrations (portfolio database)");
  applyLocalMigrations("workers/portfolio/wrangler.toml", services[2].persistTo);
  log("loading demo data");
  await loadDemoData(services[0].persistTo);

  for (const service of services) {
    const args = ["dev", ...service.configs.flatMap((config) => ["-c", config])];
    args.push("--port", String(service.port), "--ip", "127.0.0.1");
    args.push("--persist-to", service.persistTo, "--env-file", devVarsFile(service.varsDir));
    // A later --env-file wins: BILLING_VARS_FILE overrides the billing worker's variables.
    if (service.name === "billing" && billingVarsFile) args.push("--env-file", billingVarsFile);
    args.push("--inspector-port", String(await freePort()), "--show-interactive-dev-session=false");
    if (logLevel) args.push("--log-level", logLevel);
    const child = startWrangler(args);
    children.set(service.name, child);
    pipeWithPrefix(child.stdout, service.name, process.stdout);
    pipeWithPrefix(child.stderr, service.name, process.stderr);
    child.once("exit", (code, signal) => {
      if (!stopping) {
        log(`${service.name} exited (${signal ?? code}); stopping the rest`);
        stopAll(1);
      }
    });
  }

  await Promise.all(
    services.map((service) =>
      waitUntilHealthy(
        `http://127.0.0.1:${service.port}${service.health}`,
        children.get(service.name)!,
      ),
    ),
  );
  ready = true;
  await startCronRunner(triggersRead);
  const lines = services.map(
    (service) =>
      `  ${service.name.padEnd(10)} ${service.links.map((link) => `http://localhost:${service.port}${link}`).join("  ")}`,
  );
  const billingVars = readDevVars(devVarsFile(ROOT));
  const signIn = billingVars.DEV_ADMIN_PASSWORD
    ? `[dev] console sign-in: ${billingVars.DEV_ADMIN_EMAIL ?? "admin@example.dev"} / ${billingVars.DEV_ADMIN_PASSWORD} (the demo administrator, from ${path.basename(devVarsFile(ROOT))})\n`
    : "";
  process.stdout.write(
    `\n[dev] ready in ${((Date.now() - started) / 1000).toFixed(1)} s:\n${lines.join("\n")}\n${signIn}[dev] Ctrl-C stops everything.\n\n`,
  );
}

main().catch((error: unknown) => {
  log(`failed: ${error instanceof Error ? error.message : String(error)}`);
  stopAll(1);
});
