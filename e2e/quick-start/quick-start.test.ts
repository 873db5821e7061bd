/**
 * The README's quick start on a fresh machine: a clean `git clone` of the
 * committed HEAD, run with the machine's own Node (no node_modules/.bin of
 * this checkout on the PATH), executes the README's first command exactly,
 * `npm install && npm run dev`, on free ports, gets the three health
 * endpoints, stops it with SIGINT (Ctrl-C) and leaves no process behind.
 *
 * npm settings that only make it faster (the local cache first, no audit, no
 * funding notice) go through npm_config_* variables, so the command itself
 * stays the README's.
 */
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync } from "node:fs";
import { rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freePort } from "../../scripts/lib/stack.ts";
import { ROOT } from "../../scripts/lib/wrangler.ts";

/** The commands in the README's quick start block, without their comments. */
function quickStartCommands(): string[] {
  const readme = readFileSync(path.join(ROOT, "README.md"), "utf8");
  const section = readme.split("\n## Quick start\n")[1]?.split("\n## ")[0] ?? "";
  const block = /```sh\n([\s\S]*?)```/.exec(section)?.[1] ?? "";
  return block
    .split("\n")
    .map((line) => line.replace(/#.*$/, "").trim())
    .filter(Boolean);
}

/** The environment of a shell on this machine: no npm script context, no project bin. */
function userShellEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [key, value] of Object.entries(process.env)) {
    if (key.startsWith("npm_") || key === "INIT_CWD" || key === "NODE") continue;
    env[key] = value;
  }
  env.PATH = (process.env.PATH ?? "")
    .split(path.delimiter)
    .filter((dir) => !dir.includes(`${path.sep}node_modules${path.sep}`))
    .join(path.delimiter);
  return env;
}

/** Processes whose command line names the given directory (workerd, wrangler, node). */
function processesUnder(dir: string): string[] {
  const found: string[] = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry) || Number(entry) === process.pid) continue;
    try {
      const cmdline = readFileSync(`/proc/${entry}/cmdline`, "utf8").replaceAll("\0", " ");
      if (cmdline.includes(dir)) found.push(`${entry}: ${cmdline.slice(0, 160)}`);
    } catch {
      // exited meanwhile
    }
  }
  return found;
}

describe("README quick start on a fresh clone with the machine's Node", () => {
  let cloneDir: string;
  let child: ChildProcess | undefined;
  let output = "";

  beforeAll(() => {
    cloneDir = mkdtempSync(path.join(tmpdir(), "edge-quick-start-"));
    const head = spawnSync("git", ["rev-parse", "HEAD"], { cwd: ROOT, encoding: "utf8" });
    expect(head.status).toBe(0);
    for (const args of [
      ["clone", "--quiet", ROOT, cloneDir],
      ["-C", cloneDir, "checkout", "--quiet", "--detach", head.stdout.trim()],
    ]) {
      const git = spawnSync("git", args, { encoding: "utf8" });
      expect(git.status, git.stderr).toBe(0);
    }
  });

  afterAll(async () => {
    if (child?.pid && child.exitCode === null) {
      try {
        process.kill(-child.pid, "SIGKILL");
      } catch {
        // already gone
      }
    }
    for (const line of processesUnder(cloneDir)) {
      try {
        process.kill(Number(line.split(":")[0]), "SIGKILL");
      } catch {
        // already gone
      }
    }
    // A whole node_modules (Node and workerd binaries included): slow on a busy disk.
    await rm(cloneDir, { recursive: true, force: true });
  });

  it("`npm install && npm run dev` serves all three services and stops cleanly", async () => {
    const commands = quickStartCommands();
    expect(commands).toEqual(["npm install && npm run dev", "npm test"]);

    const env = userShellEnv();
    const systemNode = spawnSync("sh", ["-c", "command -v node && node --version"], {
      env,
      encoding: "utf8",
    });
    expect(systemNode.status).toBe(0);
    const [nodePath, nodeVersion] = systemNode.stdout.trim().split("\n");
    expect(nodePath?.startsWith(ROOT)).toBe(false);
    console.log(`[quick-start] system node ${nodeVersion} at ${nodePath}`);

    const [billingPort, aqiPort, portfolioPort] = [
      await freePort(),
      await freePort(),
      await freePort(),
    ];
    const started = Date.now();
    let installedAt = 0;
    child = spawn("sh", ["-c", commands[0]!], {
      cwd: cloneDir,
      env: {
        ...env,
        npm_config_prefer_offline: "true",
        npm_config_audit: "false",
        npm_config_fund: "false",
        npm_config_update_notifier: "false",
        BILLING_PORT: String(billingPort),
        AQI_PORT: String(aqiPort),
        PORTFOLIO_PORT: String(portfolioPort),
      },
      stdio: ["ignore", "pipe", "pipe"],
      detached: true,
    });
    const exited = new Promise<string>((resolve) =>
      child!.once("exit", (code, signal) => resolve(String(signal ?? code))),
    );
    await new Promise<void>((resolve, reject) => {
      const onData = (chunk: Buffer) => {
        output += chunk.toString();
        if (!installedAt && output.includes("[dev] state in")) installedAt = Date.now();
        if (output.includes("[dev] ready in")) resolve();
      };
      child!.stdout?.on("data", onData);
      child!.stderr?.on("data", onData);
      exited.then((code) =>
        reject(new Error(`exited with ${code} before the stack was ready:\n${output}`)),
      );
    });
    console.log(
      `[quick-start] npm install ${((installedAt - started) / 1000).toFixed(1)} s, stack ready ${((Date.now() - installedAt) / 1000).toFixed(1)} s later`,
    );

    const billing = await fetch(`http://127.0.0.1:${billingPort}/health`);
    expect(billing.status).toBe(200);
    expect(await billing.json()).toMatchObject({ status: "ok" });
    const aqi = await fetch(`http://127.0.0.1:${aqiPort}/v1/health`);
    expect(aqi.status).toBe(200);
    expect(await aqi.json()).toMatchObject({ status: "healthy", model_loaded: true });
    const portfolio = await fetch(`http://127.0.0.1:${portfolioPort}/v1/health`);
    expect(portfolio.status).toBe(200);
    expect(await portfolio.json()).toMatchObject({ status: "healthy" });

    // The scripts ran on the project's Node, not the machine's.
    const projectNode = spawnSync(path.join(cloneDir, "node_modules/.bin/node"), ["--version"], {
      encoding: "utf8",
    });
    expect(projectNode.stdout.trim()).toMatch(/^v24\./);

    // Ctrl-C: the whole foreground process group gets SIGINT.
    process.kill(-child.pid!, "SIGINT");
    const ended = await Promise.race([
      exited,
      new Promise<string>((resolve) => setTimeout(() => resolve("still running"), 30_000)),
    ]);
    expect(ended, output).not.toBe("still running");
    let left = processesUnder(cloneDir);
    for (let waited = 0; left.length > 0 && waited < 10_000; waited += 250) {
      await new Promise((resolve) => setTimeout(resolve, 250));
      left = processesUnder(cloneDir);
    }
    expect(left).toEqual([]);
  });
});
