/**
 * Starts the same local stack as `npm run dev` (scripts/dev.ts) on free
 * ports with a throw-away state directory, waits until it reports ready,
 * and stops it again. Used by the end-to-end suite and the benchmarks.
 */
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { devServices } from "./dev-services.ts";
import { ROOT } from "./wrangler.ts";

export interface RunningStack {
  billingUrl: string;
  aqiUrl: string;
  portfolioUrl: string;
  /** Where the billing worker keeps its local state (`wrangler dev --persist-to`): its D1, Durable Objects and R2. */
  billingPersistTo: string;
  /** Everything the stack printed so far (for diagnosing failures). */
  output(): string;
  /** Stops it the way Ctrl-C does (graceful), then removes its state unless the caller owns it. */
  stop(): Promise<void>;
  /** SIGINT to `npm run dev`, as a developer's Ctrl-C; resolves when it has exited. */
  interrupt(): Promise<void>;
  /** SIGKILL to `npm run dev` and every process under it at once (a crash); resolves when gone. */
  crash(): Promise<void>;
}

/** Every process below `root` (children, their children, ...), from `ps`. */
function descendants(root: number): number[] {
  const table = execFileSync("ps", ["-e", "-o", "pid=,ppid="], { encoding: "utf8" })
    .trim()
    .split("\n")
    .map((line) => line.trim().split(/\s+/).map(Number));
  const found: number[] = [];
  const queue = [root];
  while (queue.length > 0) {
    const parent = queue.shift();
    for (const [pid, ppid] of table) {
      if (ppid === parent && pid !== undefined && !found.includes(pid)) {
        found.push(pid);
        queue.push(pid);
      }
    }
  }
  return found;
}

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      server.close(() =>
        typeof address === "object" && address
          ? resolve(address.port)
          : reject(new Error("no port")),
      );
    });
  });
}

export interface StackOptions {
  timeoutMs?: number;
  logLevel?: string;
  env?: Record<string, string>;
  /** Local state to use and keep (a restart on the same state); a fresh temporary one otherwise. */
  stateDir?: string;
  /** Billing worker variables that override its configured ones (written to a BILLING_VARS_FILE). */
  billingVars?: Record<string, string>;
}

/**
 * Ports are picked free here but bound later by workerd, so a stack starting
 * in parallel (e2e files with their own stacks, a restart) can take one in
 * between: such a start is tried again on new ports.
 */
const PORT_RACE_ATTEMPTS = 3;

export async function startStack(options: StackOptions = {}): Promise<RunningStack> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await startStackOnce(options);
    } catch (error) {
      if (attempt >= PORT_RACE_ATTEMPTS || !String(error).includes("Address already in use"))
        throw error;
      console.log(
        `[stack] a port was taken before the stack bound it; starting again (${attempt})`,
      );
    }
  }
}

async function startStackOnce(options: StackOptions): Promise<RunningStack> {
  const [billingPort, aqiPort, portfolioPort] = [
    await freePort(),
    await freePort(),
    await freePort(),
  ];
  const ownsState = options.stateDir === undefined;
  const stateDir = options.stateDir ?? mkdtempSync(path.join(tmpdir(), "edge-stack-"));
  let billingVarsFile: string | undefined;
  if (options.billingVars) {
    billingVarsFile = path.join(stateDir, "billing-overrides.env");
    writeFileSync(
      billingVarsFile,
      Object.entries(options.billingVars)
        .map(([name, value]) => `${name}=${value}\n`)
        .join(""),
    );
  }
  let output = "";
  const child: ChildProcess = spawn(
    process.execPath,
    ["--experimental-strip-types", "--disable-warning=ExperimentalWarning", "scripts/dev.ts"],
    {
      cwd: ROOT,
      env: {
        ...process.env,
        // The suites and benchmarks drive the scheduled work themselves, at the
        // times they choose; options.env can turn the per-minute runner back on.
        DEV_CRON: "off",
        ...options.env,
        BILLING_PORT: String(billingPort),
        AQI_PORT: String(aqiPort),
        PORTFOLIO_PORT: String(portfolioPort),
        STATE_DIR: stateDir,
        ...(billingVarsFile ? { BILLING_VARS_FILE: billingVarsFile } : {}),
        ...(options.logLevel ? { DEV_LOG_LEVEL: options.logLevel } : {}),
      },
      stdio: ["ignore", "pipe", "pipe"],
    },
  );
  const ready = new Promise<void>((resolve, reject) => {
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      if (output.includes("[dev] ready in")) resolve();
    };
    child.stdout?.on("data", onData);
    child.stderr?.on("data", onData);
    child.once("exit", (code) =>
      reject(new Error(`dev stack exited with ${code} before it was ready:\n${output}`)),
    );
  });
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  const gone = () => child.exitCode !== null || child.signalCode !== null;
  const stop = async () => {
    // Up to DEV_DRAIN_SECONDS draining, then up to 5 s stopping (scripts/dev.ts).
    if (!gone()) child.kill("SIGTERM");
    // Cleared once the stack is gone: a pending timer would keep the caller's
    // process (vitest's, after its global teardown) alive for the rest of it.
    let waited: NodeJS.Timeout | undefined;
    await Promise.race([
      exited,
      new Promise((resolve) => {
        waited = setTimeout(resolve, 20_000);
      }),
    ]);
    clearTimeout(waited);
    if (!gone()) await crash();
    if (ownsState) rmSync(stateDir, { recursive: true, force: true });
  };
  const interrupt = async () => {
    if (!gone()) child.kill("SIGINT");
    await exited;
  };
  const crash = async () => {
    if (gone()) return;
    const pids = [...descendants(child.pid ?? -1), child.pid ?? -1];
    for (const pid of pids) {
      try {
        process.kill(pid, "SIGKILL");
      } catch {
        // already gone
      }
    }
    await exited;
  };
  const timeoutMs = options.timeoutMs ?? 120_000;
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([
      ready,
      new Promise((_, reject) => {
        timer = setTimeout(
          () => reject(new Error(`dev stack not ready after ${timeoutMs} ms:\n${output}`)),
          timeoutMs,
        );
      }),
    ]);
  } catch (error) {
    await stop();
    throw error;
  } finally {
    clearTimeout(timer);
  }
  return {
    billingUrl: `http://127.0.0.1:${billingPort}`,
    aqiUrl: `http://127.0.0.1:${aqiPort}`,
    portfolioUrl: `http://127.0.0.1:${portfolioPort}`,
    billingPersistTo: devServices({ STATE_DIR: stateDir })[0].persistTo,
    output: () => output,
    stop,
    interrupt,
    crash,
  };
}
