/**
 * What the usage benchmark's scenarios share: requests to the API, the
 * tenants and their keys, batches posted back to back by one client per
 * tenant, and the wait until the pipeline has counted them
 * (bench/usage.ts; its long mode in bench/lib/usage-long.ts; the metered scenario in
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

let orderedSequence = 0;

/** A UUID v7-shaped id: milliseconds first, then a sequence, so ids sort by time. */
function orderedEventId(): string {
  const ms = Date.now().toString(16).padStart(12, "0");
  const sequence = (orderedSequence++).toString(16).padStart(18, "0");
  return `${ms.slice(0, 8)}-${ms.slice(8)}-7${sequence.slice(0, 3)}-8${sequence.slice(3, 6)}-${sequence.slice(6)}`;
}

/**
 * Makes `count` events of `feature` (fresh eventIds: random UUID v4, or
 * time-ordered ones with `ordered`), amounts by index (1 unless given), all
 * with one timestamp.
 */
export function eventMaker(ordered: boolean) {
  return (
    count: number,
    amount: (i: number) => number = () => 1,
    feature = "api_calls",
    properties?: (i: number) => Record<string, string | number>,
  ): UsageEvent[] => {
    const timestamp = new Date().toISOString();
    return Array.from({ length: count }, (_, i) => ({
      eventId: ordered ? orderedEventId() : crypto.randomUUID(),
      feature,
      amount: amount(i),
      timestamp,
      ...(properties ? { properties: properties(i) } : {}),
    }));
  };
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

async function mapLimit<T, R>(items: T[], limit: number, fn: (item: T) => Promise<R>) {
  const results: R[] = new Array(items.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(limit, items.length) }, async () => {
      while (next < items.length) {
        const index = next++;
        results[index] = await fn(items[index] as T);
      }
    }),
  );
  return results;
}

/**
 * `count` tenants subscribed to the plan, each with its own API key. One
 * owner registers (registration is rate-limited per address) and creates
 * the others, as an agency running many customers' accounts would.
 */
export async function tenantKeys(
  base: string,
  run: string,
  count: number,
  subscription: { planId: string; priceId: string },
): Promise<string[]> {
  const owner = await send(base, "/auth/register", {
    body: {
      email: `usage-bench-${run}@example.com`,
      password: "BenchPassw0rd",
      firstName: "Bench",
      lastName: "Usage",
      tenantName: `Usage bench ${run} 0`,
    },
  });
  const token = owner.accessToken as string;
  const tenantIds: string[] = [owner.tenant.id];
  for (let i = 1; i < count; i++) {
    tenantIds.push(
      (await send(base, "/tenants", { token, body: { name: `Usage bench ${run} ${i}` } })).id,
    );
  }
  return mapLimit(tenantIds, 5, async (tenant) => {
    await send(base, "/subscriptions", { token, tenant, body: subscription });
    return (await send(base, "/api-keys", { token, tenant, body: { name: "bench" } }))
      .key as string;
  });
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
 * Waits (up to `timeoutMs`, 300 s unless given) until each tenant's
 * aggregates of `feature` are `before` plus `units`; whether they got there.
 */
export async function drained(
  base: string,
  keys: string[],
  before: number[],
  units: number[],
  feature = "api_calls",
  timeoutMs = 300_000,
) {
  const start = performance.now();
  while (performance.now() - start < timeoutMs) {
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

/** An event whose 202 was received at `acceptedAt` (Date.now()) by the client with `key`. */
export interface LatencySample {
  eventId: string;
  key: string;
  acceptedAt: number;
}

/**
 * 202 -> AGGREGATED: at most `max` of the samples, evenly spaced, read back
 * 20 at a time; each latency is the server's aggregatedAt minus the moment
 * the client got the 202 (one machine, one clock).
 */
export async function readBackLatency(base: string, samples: LatencySample[], max: number) {
  const endToEnd: number[] = [];
  let notAggregated = 0;
  const step = Math.max(1, samples.length / max);
  const readBack = Array.from(
    { length: Math.min(samples.length, max) },
    (_, index) => samples[Math.floor(index * step)]!,
  );
  for (let start = 0; start < readBack.length; start += 20) {
    await Promise.all(
      readBack.slice(start, start + 20).map(async (sample) => {
        const view = await send(base, `/usage/events/${sample.eventId}`, { token: sample.key });
        if (view.status !== "AGGREGATED") {
          notAggregated++;
          return;
        }
        endToEnd.push(Date.parse(view.aggregatedAt) - sample.acceptedAt);
      }),
    );
  }
  return { endToEnd, notAggregated };
}
