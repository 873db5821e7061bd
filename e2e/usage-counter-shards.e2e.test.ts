import { mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { DEMO_TENANT_ID } from "../scripts/demo-data.ts";
import { type RunningStack, startStack } from "../scripts/lib/stack.ts";
import {
  type Caller,
  createFeature,
  createPlanWithPrice,
  grantEntitlement,
  loginDevAdmin,
  ok,
  type Sent,
  sendTo,
  subscribe,
} from "./lib/billing-api.ts";
import { apiCallEvents } from "./lib/usage-events.ts";

// One tenant's counting spread over four counter shards and its usage log
// over four shards (so its events travel four usage-raw queues), driven
// through the HTTP API of a stack of its own: the demo tenant, whose id is
// fixed, is named in USAGE_COUNTER_TENANT_SHARDS and USAGE_LOG_TENANT_SHARDS.
// A change of the count in the middle of a load, across a stop and restart,
// is in usage-restart.e2e.test.ts.

const FOUR = JSON.stringify({ [DEMO_TENANT_ID]: 4 });
const BATCHES = 4;
const BATCH = 1000;
/** Sweeps and the pipeline. */
const CONVERGENCE_BOUND_MS = 60_000;

let stateDir: string | undefined;
let stack: RunningStack | undefined;

afterAll(async () => {
  await stack?.stop();
  if (stateDir) rmSync(stateDir, { recursive: true, force: true });
});

function start(): Promise<RunningStack> {
  stateDir ??= mkdtempSync(path.join(tmpdir(), "edge-counter-shards-"));
  return startStack({
    stateDir,
    logLevel: "warn",
    timeoutMs: 150_000,
    billingVars: { USAGE_LOG_TENANT_SHARDS: FOUR, USAGE_COUNTER_TENANT_SHARDS: FOUR },
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

/**
 * Moves the demo tenant to a plan with HARD quotas `seats` (100) and `tokens`
 * (1,000), new features of this run, and the demo METERED `api_calls`.
 */
async function hardQuotaPlan(apiUrl: string) {
  const admin: Caller = { token: await loginDevAdmin(apiUrl), apiUrl };
  const run = Date.now().toString(36);
  const features = await sendTo(apiUrl, "/features", { token: admin.token });
  const apiCalls = (
    ok(features, 200, "GET /features").data as { id: string; lookupKey: string }[]
  ).find((feature) => feature.lookupKey === "api_calls");
  const { plan, price } = await createPlanWithPrice(
    admin,
    { name: `Shards ${run}`, slug: `shards-${run}` },
    { interval: "MONTHLY", amount: 0 },
  );
  const keys = { seats: `seats_${run}`, tokens: `tokens_${run}` };
  for (const [lookupKey, limit] of [
    [keys.seats, 100],
    [keys.tokens, 1_000],
  ] as const) {
    const feature = await createFeature(admin, {
      name: lookupKey,
      lookupKey,
      type: "QUOTA",
      unit: "unit",
    });
    await grantEntitlement(admin, plan.id, feature.id, {
      limit,
      limitBehavior: "HARD",
      resetPeriod: "MONTHLY",
    });
  }
  await grantEntitlement(admin, plan.id, apiCalls?.id ?? "", {
    includedAmount: 1_000_000,
    overagePrice: 1,
    resetPeriod: "MONTHLY",
  });
  await subscribe({ ...admin, tenantId: DEMO_TENANT_ID }, { planId: plan.id, priceId: price.id });
  return keys;
}

const consumeOn = (apiUrl: string, apiKey: string, key: string, amount: number) =>
  sendTo(apiUrl, `/entitlements/${key}/consume`, { token: apiKey, body: { amount } });

/** A refusal's "used" and "requested", from its message. */
function refusalFigures(answer: Sent): { used: number; requested: number } {
  const match = /used (\d+), requested (\d+)/.exec(String(answer.body.message));
  return { used: Number(match?.[1]), requested: Number(match?.[2]) };
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
  let quotas = { seats: "", tokens: "" };

  it("counts a burst spread over four usage-raw queues and four counter shards exactly once", async () => {
    stack = await start();
    apiKey = await demoApiKey(api(stack));
    const before = counterObjects(stack);
    units += await burst(api(stack), apiKey);
    await converge(api(stack), apiKey, units);
    // Each of the four log shards' events reached its own counter shard.
    expect(counterObjects(stack) - before).toBe(4);
  }, 200_000);

  it("admits exactly the HARD limit when consumes race over the shards: 25 of 100, then 100 of 300", async () => {
    const apiUrl = api(stack as RunningStack);
    // The demo tenant's Pro plan: projects, HARD 25, never reset.
    const answers = await Promise.all(
      Array.from({ length: 100 }, () => consumeOn(apiUrl, apiKey, "projects", 1)),
    );
    expect(answers.filter((answer) => answer.status === 200)).toHaveLength(25);
    const refused = answers.filter((answer) => answer.status === 403);
    expect(refused).toHaveLength(75);
    for (const answer of refused) {
      expect(answer.body.message).toMatch(/^Quota exceeded for "projects": limit is 25, used 25,/);
    }
    // A plan of HARD 100 and HARD 1,000: 300 racing consumes of 1 admit exactly 100.
    quotas = await hardQuotaPlan(apiUrl);
    const seats = await Promise.all(
      Array.from({ length: 300 }, () => consumeOn(apiUrl, apiKey, quotas.seats, 1)),
    );
    expect(seats.filter((answer) => answer.status === 200)).toHaveLength(100);
    expect(seats.filter((answer) => answer.status === 403)).toHaveLength(200);
  }, 200_000);

  it("1,000 racing consumes of 1-5 never pass HARD 1,000, refused only when used + amount > limit", async () => {
    const apiUrl = api(stack as RunningStack);
    const sizes = Array.from({ length: 1_000 }, () => 1 + Math.floor(Math.random() * 5));
    const answers = await Promise.all(
      sizes.map((amount) => consumeOn(apiUrl, apiKey, quotas.tokens, amount)),
    );
    const taken = answers
      .filter((answer) => answer.status === 200)
      .reduce((sum, answer) => sum + (answer.body.consumed as number), 0);
    expect(taken).toBeLessThanOrEqual(1_000);
    const refused = answers.filter((answer) => answer.status === 403).map(refusalFigures);
    expect(refused.length).toBeGreaterThan(0);
    for (const { used, requested } of refused) {
      expect(used + requested).toBeGreaterThan(1_000);
      expect(taken + requested).toBeGreaterThan(1_000);
    }
    // Every consume answered, and each admitted unit counted once (any shard's view, a lease interval on).
    expect(answers.every((answer) => answer.status === 200 || answer.status === 403)).toBe(true);
    await new Promise((resolve) => setTimeout(resolve, 1_100));
    const check = await sendTo(apiUrl, `/entitlements/${quotas.tokens}/check`, { token: apiKey });
    expect(ok(check, 200, "GET check").used).toBe(taken);
  }, 200_000);
});
