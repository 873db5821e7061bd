/**
 * Starts the same local stack as `npm run dev` (scripts/dev.ts) on free
 * ports with a throw-away state directory, waits until it reports ready,
 * and stops it again. Used by the end-to-end suite and the benchmarks.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { ROOT } from "./wrangler.ts";

export interface RunningStack {
  billingUrl: string;
  aqiUrl: string;
  portfolioUrl: string;
  /** Everything the stack printed so far (for diagnosing failures). */
  output(): string;
  stop(): Promise<void>;
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

export async function startStack(
  options: { timeoutMs?: number; logLevel?: string; env?: Record<string, string> } = {},
): Promise<RunningStack> {
  const [billingPort, aqiPort, portfolioPort] = [
    await freePort(),
    await freePort(),
    await freePort(),
  ];
  const stateDir = mkdtempSync(path.join(tmpdir(), "edge-stack-"));
  let output = "";
  const child: ChildProcess = spawn(
    process.execPath,
    ["--experimental-strip-types", "--disable-warning=ExperimentalWarning", "scripts/dev.ts"],
    {
      cwd: ROOT,
      env: {
        ...process.env,
        ...options.env,
        BILLING_PORT: String(billingPort),
        AQI_PORT: String(aqiPort),
        PORTFOLIO_PORT: String(portfolioPort),
        STATE_DIR: stateDir,
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
  const stop = async () => {
    if (child.exitCode === null) child.kill("SIGTERM");
    await Promise.race([exited, new Promise((resolve) => setTimeout(resolve, 10_000))]);
    if (child.exitCode === null) child.kill("SIGKILL");
    rmSync(stateDir, { recursive: true, force: true });
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
    output: () => output,
    stop,
  };
}
