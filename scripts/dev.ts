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
 * from D1 after the next start (workers/billing/src/services/usage-redrive.ts).
 *
 * Environment: BILLING_PORT, AQI_PORT, PORTFOLIO_PORT (8787, 8788, 8789);
 * STATE_DIR for the local databases (.wrangler/state); DEV_LOG_LEVEL for
 * wrangler's --log-level; DEV_DRAIN_SECONDS.
 */
import type { ChildProcess } from "node:child_process";
import path from "node:path";
import { loadDemoData } from "./demo-data.ts";
import { writeDocsAssets } from "./docs-assets.ts";
import { devVarsFile } from "./lib/dev-vars.ts";
import { freePort } from "./lib/stack.ts";
import { usageEventsInFlight } from "./lib/usage-backlog.ts";
import { applyLocalMigrations, ROOT, startWrangler } from "./lib/wrangler.ts";

const READY_TIMEOUT_MS = 120_000;

function port(name: string, fallback: number): number {
  const value = Number(process.env[name] ?? fallback);
  if (!Number.isInteger(value) || value < 1 || value > 65535)
    throw new Error(`${name} must be a TCP port`);
  return value;
}

function log(line: string) {
  process.stdout.write(`[dev] ${line}\n`);
}

const stateDir = path.resolve(ROOT, process.env.STATE_DIR ?? ".wrangler/state");
const logLevel = process.env.DEV_LOG_LEVEL;

const services = [
  {
    name: "billing",
    port: port("BILLING_PORT", 8787),
    configs: ["wrangler.toml", "workers/usage-consumer/wrangler.toml"],
    varsDir: ROOT,
    persistTo: path.join(stateDir, "billing"),
    health: "/health",
    links: ["/health", "/api/v1", "/api/docs"],
  },
  {
    name: "aqi",
    port: port("AQI_PORT", 8788),
    configs: ["workers/aqi/wrangler.toml"],
    varsDir: path.join(ROOT, "workers/aqi"),
    persistTo: path.join(stateDir, "aqi"),
    health: "/v1/health",
    links: ["/v1/health", "/docs", "/redoc"],
  },
  {
    name: "portfolio",
    port: port("PORTFOLIO_PORT", 8789),
    configs: ["workers/portfolio/wrangler.toml"],
    varsDir: path.join(ROOT, "workers/portfolio"),
    persistTo: path.join(stateDir, "portfolio"),
    health: "/v1/health",
    links: ["/", "/v1/health", "/docs"],
  },
] as const;

const drainSeconds = Number(process.env.DEV_DRAIN_SECONDS ?? 10);
/** Give up waiting when the in-flight count has not gone down for this long. */
const DRAIN_STALL_MS = 5000;

const children = new Map<string, ChildProcess>();
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
  drainUsagePipeline()
    .catch(() => undefined)
    .finally(() => stopAll(exitCode));
}

function stopAll(exitCode: number): void {
  if (stopping) return;
  stopping = true;
  draining = false;
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
    for (const line of lines) if (line.trim()) out.write(`[${prefix}] ${line}\n`);
  });
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
  log(`state in ${path.relative(ROOT, stateDir) || stateDir}`);
  writeDocsAssets();
  log("applying D1 migrations (billing database)");
  applyLocalMigrations("wrangler.toml", services[0].persistTo);
  log("applying D1 migrations (portfolio database)");
  applyLocalMigrations("workers/portfolio/wrangler.toml", services[2].persistTo);
  log("loading demo data");
  await loadDemoData(services[0].persistTo);

  for (const service of services) {
    const args = ["dev", ...service.configs.flatMap((config) => ["-c", config])];
    args.push("--port", String(service.port), "--ip", "127.0.0.1");
    args.push("--persist-to", service.persistTo, "--env-file", devVarsFile(service.varsDir));
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
  const lines = services.map(
    (service) =>
      `  ${service.name.padEnd(10)} ${service.links.map((link) => `http://localhost:${service.port}${link}`).join("  ")}`,
  );
  process.stdout.write(
    `\n[dev] ready in ${((Date.now() - started) / 1000).toFixed(1)} s:\n${lines.join("\n")}\n[dev] Ctrl-C stops everything.\n\n`,
  );
}

main().catch((error: unknown) => {
  log(`failed: ${error instanceof Error ? error.message : String(error)}`);
  stopAll(1);
});
