/**
 * Starts the portfolio worker alone under `wrangler dev` (local D1 with the
 * migrations applied, the committed development vars) on a free port with a
 * throw-away state directory. Used by the Chromium page test.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { freePort } from "../../../../scripts/lib/stack.ts";
import { applyLocalMigrations, ROOT, startWrangler } from "../../../../scripts/lib/wrangler.ts";

export interface LocalWorker {
  url: string;
  output(): string;
  stop(): Promise<void>;
}

const CONFIG = "workers/portfolio/wrangler.toml";

export async function startPortfolioWorker(timeoutMs = 90_000): Promise<LocalWorker> {
  const stateDir = mkdtempSync(path.join(tmpdir(), "portfolio-page-"));
  applyLocalMigrations(CONFIG, stateDir);
  const port = await freePort();
  const child = startWrangler([
    "dev",
    "-c",
    CONFIG,
    "--port",
    String(port),
    "--ip",
    "127.0.0.1",
    "--persist-to",
    stateDir,
    "--env-file",
    path.join(ROOT, "workers/portfolio/.dev.vars.example"),
    "--inspector-port",
    String(await freePort()),
    "--show-interactive-dev-session=false",
    "--log-level",
    "warn",
  ]);
  let output = "";
  child.stdout?.on("data", (chunk: Buffer) => (output += chunk.toString()));
  child.stderr?.on("data", (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  const stop = async () => {
    if (child.pid && child.exitCode === null) {
      try {
        process.kill(-child.pid, "SIGTERM");
      } catch {
        // already gone
      }
      await Promise.race([exited, new Promise((resolve) => setTimeout(resolve, 5000))]);
      if (child.exitCode === null) {
        try {
          process.kill(-child.pid, "SIGKILL");
        } catch {
          // already gone
        }
      }
    }
    rmSync(stateDir, { recursive: true, force: true });
  };
  const url = `http://127.0.0.1:${port}`;
  const started = Date.now();
  while (Date.now() - started < timeoutMs) {
    if (child.exitCode !== null) {
      await stop();
      throw new Error(`wrangler dev exited early:\n${output}`);
    }
    try {
      const response = await fetch(`${url}/v1/health`, { signal: AbortSignal.timeout(2000) });
      if (response.ok) return { url, output: () => output, stop };
    } catch {
      // not listening yet
    }
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  await stop();
  throw new Error(`portfolio worker not ready after ${timeoutMs} ms:\n${output}`);
}
