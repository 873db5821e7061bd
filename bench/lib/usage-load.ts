/**
 * What the usage benchmark's scenarios share: requests to the API, batches
 * posted back to back by one client per tenant, and the wait until the
 * pipeline has counted them (bench/usage.ts; the metered scenario in
 * bench/lib/metered-usage.ts runs the plain load and its own through the
 * same functions, so the two differ only in their events).
 */
import { performance } from "node:perf_hooks";

/** Setup responses are read field by field. */
// biome-ignore lint/suspicious/noExplicitAny: JSON bodies of the API
export type Json = any;

export interface UsageEvent {
  eventId: string;
  feature: string;
  amount: number;
  timestamp: string;
  properties?: Record<string, string | number>;
}

/** One load: how a client's next batch is made and how many units each accepted event adds. */
export interface LoadShape {
  batch: () => UsageEvent[];
  units: (event: UsageEvent) => number;
  /** Called with each batch answered 202 (the metered scenario keeps its groups' totals). */
  onAccepted?: (client: number, batch: UsageEvent[]) => void;
}

export async function send(
  base: string,
  path: string,
  options: { body?: unknown; token?: string; tenant?: string } = {},
): Promise<Json> {
  const headers: Record<string, string> = {};
  if (options.body !== undefined) headers["content-type"] = "application/json";
  if (options.token) headers.authorization = `Bearer ${options.token}`;
  if (options.tenant) headers["x-tenant-id"] = options.tenant;
  const response = await fetch(`${base}/api/v1${path}`, {
    method: options.body === undefined ? "GET" : "POST",
    headers,
    ...(options.body !== undefined ? { body: JSON.stringify(options.body) } : {}),
  });
  const body = await response.json();
  if (response.status >= 300)
    throw new Error(`${path} answered ${response.status}: ${JSON.stringify(body)}`);
  return body;
}

export async function postBatch(base: string, key: string, batch: unknown[]) {
  const started = performance.now();
  const response = await fetch(`${base}/api/v1/usage/events`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${key}` },
    body: JSON.stringify({ events: batch }),
  });
  const body = (await response.json()) as { accepted?: number };
  return { status: response.status, accepted: body.accepted ?? 0, ms: performance.now() - started };
}

/** A tenant's aggregated amount of `feature` over all its windows (a meter's quantity for a metered one). */
export async function aggregatedUnits(
  base: string,
  key: string,
  feature = "api_calls",
): Promise<number> {
  const rows = (await send(base, `/usage/aggregates?feature=${feature}`, { token: key })).data as {
    amount: number;
  }[];
  return rows.reduce((sum, row) => sum + row.amount, 0);
}

/**
 * One client per key posts `shape`'s batches back to back for `seconds`:
 * what each got accepted, in events and units.
 */
export async function postBackToBack(
  base: string,
  keys: string[],
  seconds: number,
  shape: LoadShape,
) {
  const latencies: number[] = [];
  const acceptedPerClient = keys.map(() => 0);
  const unitsPerClient = keys.map(() => 0);
  let failures = 0;
  const start = performance.now();
  const deadline = start + seconds * 1000;
  await Promise.all(
    keys.map(async (key, client) => {
      while (performance.now() < deadline) {
        const batch = shape.batch();
        const result = await postBatch(base, key, batch);
        latencies.push(result.ms);
        if (result.status === 202) {
          acceptedPerClient[client] = (acceptedPerClient[client] ?? 0) + result.accepted;
          unitsPerClient[client] =
            (unitsPerClient[client] ?? 0) + batch.reduce((s, e) => s + shape.units(e), 0);
          shape.onAccepted?.(client, batch);
        } else failures++;
      }
    }),
  );
  return {
    latencies,
    failures,
    unitsPerClient,
    accepted: acceptedPerClient.reduce((a, b) => a + b, 0),
    seconds: (performance.now() - start) / 1000,
  };
}

/**
 * Waits (up to 300 s) until each tenant's aggregates of `feature` are
 * `before` plus `units`; whether they got there.
 */
export async function drained(
  base: string,
  keys: string[],
  before: number[],
  units: number[],
  feature = "api_calls",
) {
  const start = performance.now();
  while (performance.now() - start < 300_000) {
    const now = await Promise.all(keys.map((key) => aggregatedUnits(base, key, feature)));
    if (now.every((value, i) => value - (before[i] ?? 0) === units[i])) return true;
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
  return false;
}

export interface BurstResult {
  latencies: number[];
  failures: number;
  ingestSeconds: number;
  accepted: number;
  eventsPerSecond: number;
  batchRps: number;
  exact: boolean;
  drainSeconds: number;
  /** Events accepted over the time from the burst's start until the pipeline had counted them all. */
  pipelineRate: number;
}

/**
 * One burst: the clients post `shape`'s batches back to back for
 * `seconds`, then the pipeline is drained and `feature`'s aggregates are
 * checked exactly against the units accepted.
 */
export async function measuredBurst(
  base: string,
  keys: string[],
  seconds: number,
  shape: LoadShape,
  feature = "api_calls",
): Promise<BurstResult> {
  const before = await Promise.all(keys.map((key) => aggregatedUnits(base, key, feature)));
  const load = await postBackToBack(base, keys, seconds, shape);
  const drainStart = performance.now();
  const exact = await drained(base, keys, before, load.unitsPerClient, feature);
  const drainSeconds = (performance.now() - drainStart) / 1000;
  return {
    latencies: load.latencies,
    failures: load.failures,
    ingestSeconds: load.seconds,
    accepted: load.accepted,
    eventsPerSecond: load.accepted / load.seconds,
    batchRps: load.latencies.length / load.seconds,
    exact,
    drainSeconds,
    pipelineRate: load.accepted / (load.seconds + drainSeconds),
  };
}
