/**
 * A baseline measured outside the process a benchmark measures: the no-I/O
 * server of bench/lib/baseline-server.ts, started in a child process of its
 * own, driven by autocannon. Measured at the start of a long run and again
 * before its last measurement, it shows how the machine's speed drifted
 * meanwhile, independently of the stack under test.
 */
import { spawn } from "node:child_process";
import path from "node:path";
import { autocannon } from "./autocannon.ts";

export interface ExternalBaseline {
  /** Requests per second over the measured seconds. */
  rps: number;
  p50: number;
  p99: number;
  seconds: number;
  connections: number;
}

/** What the baseline is, as the reports name it. */
export const EXTERNAL_BASELINE_NAME =
  'a `node:http` server answering 200 "ok" with no I/O, in a process of its own';

const SERVER = path.join(import.meta.dirname, "baseline-server.ts");
const START_TIMEOUT_MS = 10_000;

/** Starts the server; resolves with its port and a function that stops it. */
async function startServer(): Promise<{ port: number; stop: () => Promise<void> }> {
  const child = spawn(
    process.execPath,
    ["--experimental-strip-types", "--disable-warning=ExperimentalWarning", SERVER],
    { stdio: ["pipe", "pipe", "inherit"] },
  );
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGTERM");
    await exited;
  };
  try {
    const port = await new Promise<number>((resolve, reject) => {
      let output = "";
      const timer = setTimeout(
        () => reject(new Error("baseline server: no port within 10 s")),
        START_TIMEOUT_MS,
      );
      child.stdout?.on("data", (chunk: Buffer) => {
        output += chunk.toString();
        if (!output.includes("\n")) return;
        clearTimeout(timer);
        resolve(Number(output.trim()));
      });
      child.once("exit", (code) => {
        clearTimeout(timer);
        reject(new Error(`baseline server exited with ${code} before it listened`));
      });
    });
    return { port, stop };
  } catch (error) {
    await stop();
    throw error;
  }
}

/**
 * The server, started anew, warmed up for `warmUpSeconds`, then measured
 * with `connections` connections for `seconds`; stopped again before this
 * returns.
 */
export async function measureExternalBaseline(options: {
  seconds: number;
  connections: number;
  warmUpSeconds?: number;
}): Promise<ExternalBaseline> {
  const server = await startServer();
  try {
    const url = `http://127.0.0.1:${server.port}/`;
    await autocannon({
      url,
      connections: options.connections,
      duration: options.warmUpSeconds ?? 2,
    });
    const result = await autocannon({
      url,
      connections: options.connections,
      duration: options.seconds,
    });
    return {
      rps: result.requests.total / options.seconds,
      p50: result.latency.p50,
      p99: result.latency.p99,
      seconds: options.seconds,
      connections: options.connections,
    };
  } finally {
    await server.stop();
  }
}
