import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { DEMO_TENANT_ID } from "../scripts/demo-data.ts";
import { type RunningStack, startStack } from "../scripts/lib/stack.ts";
import { usageEventsInFlight } from "../scripts/lib/usage-backlog.ts";
import { devAdminCredentials } from "./lib/billing-api.ts";
import { apiCallEvents } from "./lib/usage-events.ts";

// Nothing accepted is ever stranded: accept EVENTS usage events, stop the
// whole stack right after the last 202 (Ctrl-C, or kill -9 of every
// process), start it again on the same state, and the counts converge to
// exactly the accepted events. The local queues hold their messages in
// memory, so what a stop leaves in flight is re-driven from the tenant's
// usage log by its alarm (workers/billing/src/usage/log/usage-log.ts) once
// its bound (USAGE_REDRIVE_AFTER_SECONDS, 20 s in .dev.vars.example) has
// passed.
// These tests start their own stacks (scripts/dev.ts, as a developer does).

// The demo tenant's log has four shards (four usage-raw queues), and its
// counting four counter shards until the first stop: the stack comes back
// with one (the count changes in the middle of the load), and stays so.
const FOUR_COUNTER_SHARDS = 4;
const ONE_COUNTER_SHARD = { shards: 1, previous: 4 };
const shardsOf = (counterShards: unknown) => ({
  USAGE_LOG_TENANT_SHARDS: JSON.stringify({ [DEMO_TENANT_ID]: 4 }),
  USAGE_COUNTER_TENANT_SHARDS: JSON.stringify({ [DEMO_TENANT_ID]: counterShards }),
});

const BATCHES = 5;
const BATCH = 1000;
const EVENTS = BATCHES * BATCH;
/** After the restarted stack is ready: the re-drive bound (20 s) plus sweeps and the pipeline. */
const CONVERGENCE_BOUND_MS = 60_000;
/** Counts must stay put this long once they matched (nothing counted twice). */
const SETTLE_CHECK_MS = 8_000;

// biome-ignore lint/suspicious/noExplicitAny: JSON bodies are asserted field by field
type Json = any;

async function call(
  base: string,
  route: string,
  options: { body?: unknown; token?: string; tenant?: string } = {},
): Promise<{ status: number; body: Json }> {
  const headers: Record<string, string> = {};
  if (options.body !== undefined) headers["content-type"] = "application/json";
  if (options.token) headers.authorization = `Bearer ${options.token}`;
  if (options.tenant) headers["x-tenant-id"] = options.tenant;
  const response = await fetch(`${base}/api/v1${route}`, {
    method: options.body === undefined ? "GET" : "POST",
    headers,
    ...(options.body !== undefined ? { body: JSON.stringify(options.body) } : {}),
  });
  return { status: response.status, body: await response.json() };
}

async function demoApiKey(base: string): Promise<string> {
  const login = await call(base, "/auth/login", { body: devAdminCredentials() });
  expect(login.status).toBe(200);
  const token = login.body.accessToken as string;
  const tenants = await call(base, "/tenants", { token });
  const acme = tenants.body.data.find((t: { slug: string }) => t.slug === "acme");
  const key = await call(base, "/api-keys", {
    token,
    tenant: acme.id,
    body: { name: "restart e2e" },
  });
  expect(key.status).toBe(201);
  return key.body.key as string;
}

async function counted(base: string, apiKey: string) {
  const [aggregates, check] = await Promise.all([
    call(base, "/usage/aggregates?feature=api_calls", { token: apiKey }),
    call(base, "/entitlements/api_calls/check", { token: apiKey }),
  ]);
  const aggregated = (aggregates.body.data as { amount: number }[]).reduce(
    (sum, row) => sum + row.amount,
    0,
  );
  return { aggregated, used: check.body.used as number };
}

// One state directory for both tests: the Ctrl-C test leaves its restarted
// stack running and the kill -9 test goes on from there (three stack starts
// instead of four); each test starts what it needs if it runs alone.
let stateDir: string | undefined;
let running: { stack: RunningStack; apiKey: string; units: number } | undefined;

afterAll(async () => {
  await running?.stack.stop();
  if (stateDir) rmSync(stateDir, { recursive: true, force: true });
});

async function acceptThenStopAndRestart(stop: "interrupt" | "crash") {
  stateDir ??= mkdtempSync(path.join(tmpdir(), "edge-restart-"));
  if (!running) {
    const stack = await startStack({
      stateDir,
      logLevel: "warn",
      timeoutMs: 150_000,
      billingVars: shardsOf(FOUR_COUNTER_SHARDS),
    });
    running = { stack, apiKey: await demoApiKey(stack.billingUrl), units: 0 };
  }
  const { stack: first, apiKey } = running;
  const before = running.units;
  expect(await counted(first.billingUrl, apiKey)).toEqual({ aggregated: before, used: before });

  const sent = Array.from({ length: BATCHES }, () => apiCallEvents(BATCH));
  const answers = await Promise.all(
    sent.map((events) =>
      call(first.billingUrl, "/usage/events", { token: apiKey, body: { events } }),
    ),
  );
  // Right after the last 202.
  await (stop === "interrupt" ? first.interrupt() : first.crash());
  running = undefined;

  for (const answer of answers) {
    expect(answer.status).toBe(202);
    expect(answer.body.accepted).toBe(BATCH);
  }
  const acceptedUnits = before + sent.flat().reduce((sum, e) => sum + e.amount, 0);
  const stopLine = first
    .output()
    .split("\n")
    .find((line) => /usage (events still in flight|pipeline drained)/.test(line));
  // What the stop left unfinished, read from the stopped stack's usage-log files.
  const stranded = usageEventsInFlight(path.join(stateDir, "billing"));

  // The reconciler starts with the first request (the start's own health
  // checks), so convergence is timed from the restart, and from ready.
  const restartBegan = Date.now();
  const second = await startStack({
    stateDir,
    logLevel: "warn",
    timeoutMs: 150_000,
    billingVars: shardsOf(ONE_COUNTER_SHARD),
  });
  running = { stack: second, apiKey, units: before };
  const restartedAt = Date.now();
  let now = await counted(second.billingUrl, apiKey);
  while (
    (now.aggregated !== acceptedUnits || now.used !== acceptedUnits) &&
    Date.now() - restartedAt < CONVERGENCE_BOUND_MS
  ) {
    expect(now.aggregated).toBeLessThanOrEqual(acceptedUnits);
    await new Promise((resolve) => setTimeout(resolve, 500));
    now = await counted(second.billingUrl, apiKey);
  }
  const convergedMs = Date.now() - restartedAt;
  console.log(
    `[e2e] ${stop}: ${EVENTS} events accepted; at the stop: ${stopLine?.trim() ?? (stop === "crash" ? "killed" : "nothing in flight")}; ` +
      `${stranded} events left PENDING or VALIDATED; ` +
      `converged ${((restartedAt + convergedMs - restartBegan) / 1000).toFixed(1)} s after the restart began, ` +
      `${(convergedMs / 1000).toFixed(1)} s after it was ready (ready took ${((restartedAt - restartBegan) / 1000).toFixed(1)} s)`,
  );
  expect(now).toEqual({ aggregated: acceptedUnits, used: acceptedUnits });

  // Nothing counted twice: later sweeps and redeliveries change nothing.
  await new Promise((resolve) => setTimeout(resolve, SETTLE_CHECK_MS));
  expect(await counted(second.billingUrl, apiKey)).toEqual({
    aggregated: acceptedUnits,
    used: acceptedUnits,
  });
  const sample = sent.flat().filter((_, i) => i % 250 === 0);
  const statuses = await Promise.all(
    sample.map(
      async (e) =>
        (await call(second.billingUrl, `/usage/events/${e.eventId}`, { token: apiKey })).body
          .status,
    ),
  );
  expect(new Set(statuses)).toEqual(new Set(["AGGREGATED"]));
  running.units = acceptedUnits;
}

describe("usage pipeline across a stop and restart", () => {
  it(
    `Ctrl-C right after the last 202: ${EVENTS} events converge to exactly the accepted after the restart`,
    () => acceptThenStopAndRestart("interrupt"),
    400_000,
  );

  it(
    `kill -9 of the whole stack right after the last 202: ${EVENTS} events converge to exactly the accepted`,
    () => acceptThenStopAndRestart("crash"),
    400_000,
  );
});
