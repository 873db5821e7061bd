/**
 * Where the time of an entitlement check goes, step by step:
 * `node --experimental-strip-types bench/billing-steps.ts` (or
 * `npm run bench billing-steps`).
 *
 * Each route below adds one step to the one before it, so the difference
 * between two neighbours is that step's cost:
 *   GET /health/live                 the worker itself (routing, middleware, JSON)
 *   GET /api-keys/current            + API-key authentication
 *   GET /entitlements/:key/check     + the counter call of a check
 *   POST /entitlements/:key/consume  + a counted consume (HARD quota)
 *   the same with an Idempotency-Key + the key's record
 * Two measures per route, in interleaved rounds: the median latency of
 * requests sent one at a time (what a single caller waits), and the CPU
 * time the local stack (workerd and wrangler, every process under this
 * one) spends per request while BENCH_LOADED requests arrive on
 * BENCH_CONNECTIONS connections: what each step costs the worker's
 * throughput. CPU time, unlike requests per second, hardly moves when
 * other programs load the machine.
 *
 * Environment: BENCH_ROUNDS (default 3), BENCH_CONNECTIONS (default 20),
 * BENCH_SEQUENTIAL (requests sent one at a time per route and round,
 * default 200), BENCH_LOADED (requests under load per route and round,
 * default 2000).
 */
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { startStack } from "../scripts/lib/stack.ts";
import { autocannon } from "./lib/autocannon.ts";
import { adminToken, measuredPlan, median, subscribedTenantWithKey } from "./lib/billing-setup.ts";
import { table } from "./lib/report.ts";

const LOADED = Number(process.env.BENCH_LOADED ?? 2000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 20);
const SEQUENTIAL = Number(process.env.BENCH_SEQUENTIAL ?? 200);

interface Step {
  name: string;
  url: string;
  method?: "GET" | "POST";
  body?: string;
  headers?: Record<string, string>;
  freshIdempotencyKeys?: boolean;
}

interface Sample {
  p50: number;
  cpuMsPerRequest: number;
  non2xx: number;
}

const TICKS_PER_SECOND = Number(execFileSync("getconf", ["CLK_TCK"], { encoding: "utf8" }).trim());

/** CPU milliseconds (user + system) used so far by every process below this one: the stack. */
function stackCpuMs(): number {
  const children = new Map<number, number[]>();
  for (const line of execFileSync("ps", ["-e", "-o", "pid=,ppid="], { encoding: "utf8" })
    .trim()
    .split("\n")) {
    const [pid, ppid] = line.trim().split(/\s+/).map(Number) as [number, number];
    children.set(ppid, [...(children.get(ppid) ?? []), pid]);
  }
  let ticks = 0;
  const pending = [...(children.get(process.pid) ?? [])];
  while (pending.length > 0) {
    const pid = pending.pop() as number;
    pending.push(...(children.get(pid) ?? []));
    try {
      // Fields after the command's closing parenthesis: utime and stime are the 12th and 13th.
      const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
      const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      ticks += Number(fields[11]) + Number(fields[12]);
    } catch {
      // Gone meanwhile.
    }
  }
  return (ticks * 1000) / TICKS_PER_SECOND;
}

function log(line: string): void {
  process.stderr.write(`[bench:billing-steps] ${line}\n`);
}

let keysSent = 0;

function options(step: Step) {
  return {
    url: step.url,
    method: step.method ?? "GET",
    body: step.body,
    headers: { ...(step.body ? { "content-type": "application/json" } : {}), ...step.headers },
    ...(step.freshIdempotencyKeys
      ? {
          requests: [
            {
              setupRequest: (request: { headers: Record<string, string> }) => {
                keysSent++;
                request.headers = {
                  ...request.headers,
                  "idempotency-key": `steps-${process.pid}-${Date.now()}-${keysSent}`,
                };
                return request;
              },
            },
          ],
        }
      : {}),
  };
}

async function measure(step: Step): Promise<Sample> {
  const alone = await autocannon({ ...options(step), connections: 1, amount: SEQUENTIAL });
  const cpuBefore = stackCpuMs();
  const loaded = await autocannon({ ...options(step), connections: CONNECTIONS, amount: LOADED });
  const cpuMs = stackCpuMs() - cpuBefore;
  return {
    p50: alone.latency.p50,
    cpuMsPerRequest: cpuMs / Math.max(1, loaded.requests.total),
    non2xx: alone.non2xx + loaded.non2xx,
  };
}

async function main(): Promise<void> {
  log("starting the local stack");
  const stack = await startStack({ logLevel: "warn" });
  try {
    const base = stack.billingUrl;
    const admin = await adminToken(base);
    const run = Date.now().toString(36);
    const { quota, metered, plan, price } = await measuredPlan(base, admin, `steps_${run}`);
    const { apiKey } = await subscribedTenantWithKey(base, `steps-${run}`, {
      planId: plan.id,
      priceId: price.id,
    });
    const auth = { authorization: `Bearer ${apiKey}` };
    const steps: Step[] = [
      { name: "GET /health/live (the worker, no I/O)", url: `${base}/health/live` },
      {
        name: "GET /api-keys/current (+ API-key auth)",
        url: `${base}/api/v1/api-keys/current`,
        headers: auth,
      },
      {
        name: "GET /entitlements/:key/check (+ counter check)",
        url: `${base}/api/v1/entitlements/${quota.lookupKey}/check`,
        headers: auth,
      },
      {
        name: "POST /entitlements/:key/consume HARD (+ counted consume)",
        url: `${base}/api/v1/entitlements/${quota.lookupKey}/consume`,
        method: "POST",
        body: JSON.stringify({ amount: 1 }),
        headers: auth,
      },
      {
        name: "POST .../consume METERED + Idempotency-Key (+ key record)",
        url: `${base}/api/v1/entitlements/${metered.lookupKey}/consume`,
        method: "POST",
        body: JSON.stringify({ amount: 1 }),
        headers: auth,
        freshIdempotencyKeys: true,
      },
    ];
    log("warm-up");
    for (const step of steps) {
      await autocannon({ ...options(step), connections: CONNECTIONS, duration: 1 });
    }
    log(
      `${ROUNDS} rounds: ${SEQUENTIAL} requests one at a time, then ${LOADED} on ${CONNECTIONS} connections, per route`,
    );
    const samples: Sample[][] = steps.map(() => []);
    for (let round = 0; round < ROUNDS; round++) {
      for (const [index, step] of steps.entries()) samples[index]?.push(await measure(step));
    }
    const rows = steps.map((step, index) => {
      const mine = samples[index] ?? [];
      return {
        name: step.name,
        p50: median(mine.map((sample) => sample.p50)),
        ms: median(mine.map((sample) => sample.cpuMsPerRequest)),
        non2xx: mine.reduce((sum, sample) => sum + sample.non2xx, 0),
      };
    });
    process.stdout.write(
      `\nEntitlement check, step by step (${ROUNDS} rounds; ${SEQUENTIAL} sequential requests, then ${LOADED} on ${CONNECTIONS} connections, per route and round; medians over rounds; ${process.arch}, Node ${process.version})\n\n`,
    );
    process.stdout.write(
      `${table(
        [
          "route",
          "p50 alone ms",
          "step alone ms",
          "stack CPU ms/request",
          "step CPU ms",
          "x baseline (CPU)",
          "non-2xx",
        ],
        rows.map((row, index) => {
          const previous = index > 0 ? rows[index - 1] : undefined;
          const baseline = rows[0]?.ms ?? Number.NaN;
          return [
            row.name,
            row.p50.toFixed(1),
            previous ? (row.p50 - previous.p50).toFixed(1) : "-",
            row.ms.toFixed(2),
            previous ? (row.ms - previous.ms).toFixed(2) : "-",
            (baseline / row.ms).toFixed(2),
            row.non2xx,
          ];
        }),
      )}\n`,
    );
  } finally {
    log("stopping the stack");
    await stack.stop();
  }
}

main().catch((error: unknown) => {
  process.stderr.write(
    `[bench:billing-steps] failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
  );
  process.exitCode = 1;
});
