import { mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { DEMO_TENANT_ID } from "../scripts/demo-data.ts";
import { type RunningStack, startStack } from "../scripts/lib/stack.ts";
import { loginDevAdmin, ok, sendTo } from "./lib/billing-api.ts";
import { apiCallEvents } from "./lib/usage-events.ts";

// One tenant's counting spread over four counter shards and its usage log
// over four shards (so its events travel four usage-raw queues), driven
// through the HTTP API of a stack of its own: the demo tenant, whose id is
// fixed, is named in USAGE_COUNTER_TENANT_SHARDS and USAGE_LOG_TENANT_SHARDS.
// Then the stack stops right after a burst's last 202 and starts again on
// the same state with one counter shard: nothing lost, nothing counted twice.

const FOUR = JSON.stringify({ [DEMO_TENANT_ID]: 4 });
const ONE = JSON.stringify({ [DEMO_TENANT_ID]: { shards: 1, previous: 4 } });
const BATCHES = 4;
const BATCH = 1000;
/** The re-drive bound of .dev.vars.example (20 s), sweeps and the pipeline. */
const CONVERGENCE_BOUND_MS = 90_000;

let stateDir: string | undefined;
let stack: RunningStack | undefined;

afterAll(async () => {
  await stack?.stop();
  if (stateDir) rmSync(stateDir, { recursive: true, force: true });
});

function start(counterShards: string): Promise<RunningStack> {
  stateDir ??= mkdtempSync(path.join(tmpdir(), "edge-counter-shards-"));
  return startStack({
    stateDir,
    logLevel: "warn",
    timeoutMs: 150_000,
    billingVars: { USAGE_LOG_TENANT_SHARDS: FOUR, USAGE_COUNTER_TENANT_SHARDS: counterShards },
  });
}

const api = (running: RunningStack) => `${running.billingUrl}/api/v1`;

/** The EntitlementCounter objects the stack's local state holds (one file each). */
function counterObjects(running: RunningStack): number {
  const dir = path.join(running.billingPersistTo, "v3/do/billing-EntitlementCounter");
  try {
    return readdirSync(dir).filter((file) => file.endsWith(".sqlite")).length;
  } catch {
    return 0;
  }
}

async function demoApiKey(apiUrl: string): Promise<string> {
  const admin = await loginDevAdmin(apiUrl);
  const key = await sendTo(apiUrl, "/api-keys", {
    token: admin,
    tenant: DEMO_TENANT_ID,
    body: { name: "counter shards e2e" },
  });
  return ok(key, 201, "POST /api-keys").key as string;
}

/** BATCHES x BATCH events sent at once; the units they carry. */
async function burst(apiUrl: string, apiKey: string): Promise<number> {
  const batches = Array.from({ length: BATCHES }, () => apiCallEvents(BATCH));
  const answers = await Promise.all(
    batches.map((events) => sendTo(apiUrl, "/usage/events", { token: apiKey, body: { events } })),
  );
  for (const answer of answers) expect(ok(answer, 202, "POST /usage/events").accepted).toBe(BATCH);
  return batches.flat().reduce((sum, event) => sum + event.amount, 0);
}

/** api_calls in the aggregates, and in a check (any counter shard's view). */
async function counted(apiUrl: string, apiKey: string) {
  const [aggregates, check] = await Promise.all([
    sendTo(apiUrl, "/usage/aggregates?feature=api_calls", { token: apiKey }),
    sendTo(apiUrl, "/entitlements/api_calls/check", { token: apiKey }),
  ]);
  const rows = ok(aggregates, 200, "GET /usage/aggregates").data as { amount: number }[];
  return {
    aggregated: rows.reduce((sum, row) => sum + row.amount, 0),
    used: ok(check, 200, "GET check").used as number,
  };
}

async function converge(apiUrl: string, apiKey: string, units: number) {
  const began = Date.now();
  let now = await counted(apiUrl, apiKey);
  while (
    (now.aggregated !== units || now.used !== units) &&
    Date.now() - began < CONVERGENCE_BOUND_MS
  ) {
    expect(now.aggregated).toBeLessThanOrEqual(units);
    await new Promise((resolve) => setTimeout(resolve, 500));
    now = await counted(apiUrl, apiKey);
  }
  expect(now).toEqual({ aggregated: units, used: units });
}

describe("a tenant on four counter shards, through the API", () => {
  let apiKey = "";
  let units = 0;

  it("counts a burst spread over four usage-raw queues and four counter shards exactly once", async () => {
    stack = await start(FOUR);
    apiKey = await demoApiKey(api(stack));
    const before = counterObjects(stack);
    units += await burst(api(stack), apiKey);
    await converge(api(stack), apiKey, units);
    // Each of the four log shards' events reached its own counter shard.
    expect(counterObjects(stack) - before).toBe(4);
  }, 200_000);

  it("admits exactly the HARD limit of 100 racing consumes spread over the shards", async () => {
    // The demo tenant's Pro plan: projects, HARD 25, never reset.
    const answers = await Promise.all(
      Array.from({ length: 100 }, () =>
        sendTo(api(stack as RunningStack), "/entitlements/projects/consume", {
          token: apiKey,
          body: { amount: 1 },
        }),
      ),
    );
    expect(answers.filter((answer) => answer.status === 200)).toHaveLength(25);
    const refused = answers.filter((answer) => answer.status === 403);
    expect(refused).toHaveLength(75);
    for (const answer of refused) {
      expect(answer.body.message).toMatch(/^Quota exceeded for "projects": limit is 25, used 25,/);
    }
  }, 200_000);

  it("loses and double-counts nothing when the tenant goes back to one counter shard in the middle of a burst", async () => {
    const running = stack as RunningStack;
    units += await burst(api(running), apiKey);
    // Right after the last 202: what is in flight is finished by the restarted stack.
    await running.interrupt();
    stack = await start(ONE);
    units += await burst(api(stack), apiKey);
    await converge(api(stack), apiKey, units);
    // Later sweeps and redeliveries change nothing.
    await new Promise((resolve) => setTimeout(resolve, 5_000));
    expect(await counted(api(stack), apiKey)).toEqual({ aggregated: units, used: units });
  }, 400_000);
});
