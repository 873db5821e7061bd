/**
 * The README's quick start on a fresh machine: a clean `git clone` of the
 * committed HEAD, run with the machine's own Node (no node_modules/.bin of
 * this checkout on the PATH), executes the README's first command exactly,
 * `npm install && npm run dev`, on free ports, gets the three health
 * endpoints, sees the stack run its scheduled work by itself (a plan
 * change's final invoice, issued by the Cron Trigger that `npm run dev`
 * fires every minute, with no call to the scheduled endpoint from here),
 * stops it with SIGINT (Ctrl-C) and leaves no process behind.
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
import {
  type Caller,
  createApiKey,
  createFeature,
  createPlanWithPrice,
  createTenant,
  grantEntitlement,
  loginDevAdmin,
  ok,
  sendTo,
  subscribe,
} from "../lib/billing-api.ts";
import { eventually } from "../lib/eventually.ts";

/** The Cron Trigger fires at the next whole minute; its run takes seconds. */
const FINAL_INVOICE_WITHIN_MS = 120_000;

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
  let exited: Promise<string> | undefined;
  let billingUrl = "";
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

  it("`npm install && npm run dev` serves all three services", async () => {
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
    exited = new Promise<string>((resolve) =>
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
      exited?.then((code) =>
        reject(new Error(`exited with ${code} before the stack was ready:\n${output}`)),
      );
    });
    console.log(
      `[quick-start] npm install ${((installedAt - started) / 1000).toFixed(1)} s, stack ready ${((Date.now() - installedAt) / 1000).toFixed(1)} s later`,
    );

    billingUrl = `http://127.0.0.1:${billingPort}`;
    const billing = await fetch(`${billingUrl}/health`);
    expect(billing.status).toBe(200);
    expect(await billing.json()).toMatchObject({ status: "ok" });
    // The banner says where the console is and how to sign in; the bare origin leads there.
    expect(output).toContain(`http://localhost:${billingPort}/console`);
    expect(output).toMatch(/\[dev\] console sign-in: admin@example\.dev \/ \S+/);
    const root = await fetch(`${billingUrl}/`, { redirect: "manual" });
    expect(root.status).toBe(302);
    expect(root.headers.get("location")).toBe("/console");
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
  });

  it("runs the scheduled work by itself: a plan change's final invoice within two minutes, its usage billed once", async () => {
    expect(billingUrl, "the stack is running").not.toBe("");
    expect(output).toMatch(
      /\[dev\] Cron Triggers "\* \* \* \* \*" \(billing\) fire on their schedule/,
    );
    expect(output).not.toContain("Scheduled Workers are not automatically triggered");

    const apiUrl = `${billingUrl}/api/v1`;
    const admin: Caller = { token: await loginDevAdmin(apiUrl), apiUrl };
    const tag = Date.now().toString(36);
    const calls = await createFeature(admin, {
      name: "Calls",
      lookupKey: `qs_calls_${tag}`,
      type: "METERED",
      unit: "call",
    });
    // 100 micro-cents a call, none included: 40 calls are 40 cents.
    const plan = async (name: string, amount: number) => {
      const created = await createPlanWithPrice(
        admin,
        { name, slug: `qs-${name}-${tag}` },
        { interval: "MONTHLY", amount },
      );
      await grantEntitlement(admin, created.plan.id, calls.id, {
        includedAmount: 0,
        overagePrice: 100,
        resetPeriod: "MONTHLY",
      });
      return { planId: created.plan.id as string, priceId: created.price.id as string };
    };
    const starter = await plan("starter", 2900);
    const pro = await plan("pro", 4900);
    const tenant = await createTenant(admin, `Quick start ${tag}`);
    const customer: Caller = { ...admin, tenantId: tenant.id };
    const first = await subscribe(customer, starter);
    const key = await createApiKey(customer, "server");

    // 40 calls on the first plan, through the usage pipeline, counted before the change.
    const events = [10, 10, 10, 10].map((amount) => ({
      eventId: crypto.randomUUID(),
      feature: calls.lookupKey,
      amount,
      timestamp: new Date().toISOString(),
    }));
    ok(await sendTo(apiUrl, "/usage/events", { token: key, body: { events } }), 202, "usage");
    await eventually(
      async () => {
        const check = await sendTo(apiUrl, `/entitlements/${calls.lookupKey}/check`, {
          token: key,
        });
        return check.body.used === 40 ? true : undefined;
      },
      "the 40 calls counted",
      30_000,
    );

    // The plan change ends the first subscription inside its period.
    const changedAt = Date.now();
    const second = await subscribe(customer, pro);
    expect(second.id).not.toBe(first.id);
    const invoices = async () =>
      ok(
        await sendTo(apiUrl, "/invoices", { token: admin.token, tenant: tenant.id }),
        200,
        "GET /invoices",
      ).data as {
        id: string;
        subscriptionId: string;
        kind: string;
        status: string;
        lineItems: {
          kind: string;
          featureLookupKey: string | null;
          quantity: number;
          amount: number;
        }[];
      }[];
    // No call to the scheduled endpoint here: the stack's own Cron Trigger issues it.
    const final = await eventually(
      async () =>
        (await invoices()).find(
          (invoice) => invoice.subscriptionId === first.id && invoice.kind === "PRORATION",
        ),
      "the ended subscription's final invoice",
      FINAL_INVOICE_WITHIN_MS,
    );
    const waited = Date.now() - changedAt;
    console.log(
      `[quick-start] final invoice ${(waited / 1000).toFixed(1)} s after the plan change`,
    );
    expect(final.status).not.toBe("DRAFT");
    const usageLines = (lines: typeof final.lineItems) =>
      lines.filter((line) => line.kind === "USAGE" && line.featureLookupKey === calls.lookupKey);
    expect(usageLines(final.lineItems)).toEqual([
      expect.objectContaining({ quantity: 40, amount: 40 }),
    ]);
    // Billed once: no other invoice, and not the new plan's upcoming one, bills these calls.
    const all = await invoices();
    expect(
      all.filter((invoice) => invoice.id !== final.id).flatMap((i) => usageLines(i.lineItems)),
    ).toEqual([]);
    const upcoming = ok(
      await sendTo(apiUrl, "/invoices/upcoming", { token: admin.token, tenant: tenant.id }),
      200,
      "GET /invoices/upcoming",
    );
    expect(upcoming.subscriptionId).toBe(second.id);
    expect(usageLines(upcoming.lineItems).reduce((sum, line) => sum + line.quantity, 0)).toBe(0);
    // The run that issued it said so in the stack's output.
    await eventually(
      () =>
        /\[cron\] billing \S+ "\* \* \* \* \*" in \d+ ms: periods closed \d+, final invoices [1-9]/.test(
          output,
        )
          ? true
          : undefined,
      "the [cron] line of the run",
      5_000,
    );
  });

  it("Ctrl-C stops everything and leaves no process behind", async () => {
    expect(child?.pid, "the stack is running").toBeDefined();
    // Ctrl-C: the whole foreground process group gets SIGINT.
    process.kill(-child!.pid!, "SIGINT");
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
