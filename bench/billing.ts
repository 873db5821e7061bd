/**
 * Billing entitlements benchmark: `node --experimental-strip-types bench/billing.ts`
 * (or `npm run bench billing`).
 *
 * 1. Starts the local stack (scripts/dev.ts via startStack, log level warn).
 * 2. As the demo platform admin, builds a plan whose QUOTA and METERED
 *    features never refuse during the run; registers a tenant, subscribes it
 *    and creates its API key (a server-to-server caller).
 * 3. autocannon in the same run, after a short warm-up, in interleaved
 *    rounds (so that a change in the machine's load hits every route alike):
 *    GET /health/live (the baseline: the worker answers with no I/O),
 *    GET /health (readiness: one D1 read and one Durable Object ping),
 *    GET /api/v1/entitlements/:key/check and POST .../consume with the API
 *    key, consume on a UNIQUE_COUNT quota (distinct `user_id` under a HARD
 *    limit of 10^9: BENCH_UNIQUE_POOL values are counted before the run,
 *    and 9 in 10 requests repeat one of them, admitted with no change,
 *    while 1 in 10 is a new value that takes a unit; bench/lib/unique-count.ts),
 *    and the same METERED consume with a fresh Idempotency-Key on
 *    every request (the cost of the key's claim and stored answer), and
 *    consume on a prepaid price (a METERED feature whose every unit is paid
 *    from a credit balance in the tenant's counter), and
 *    consume on a METERED feature with BENCH_ALERTS usage alerts (default
 *    10, half units and half percent, all out of the run's reach, so each
 *    consume checks them all and none fires) next to the same consume on an
 *    identical feature with none (the cost of the alert check);
 *    throughput over all rounds, median p50/p99 of the rounds, every ratio
 *    against the no-I/O baseline (overall and per round), and the ratio of
 *    consume with a key to consume without one. Targets, against the
 *    no-I/O baseline: check >= 0.6x, consume on a HARD quota >= 0.5x,
 *    consume with an Idempotency-Key >= 0.45x; consume on a prepaid price
 *    >= 0.95x consume on the HARD quota (no more costly, within noise),
 *    consume on the UNIQUE_COUNT quota >= 0.9x consume on the HARD quota;
 *    the same HARD consume by the demo tenant, whose counting is spread over
 *    BENCH_COUNTER_SHARDS (default 4) counter shards with quota leases
 *    (USAGE_COUNTER_TENANT_SHARDS names its fixed id), >= 0.95x the
 *    one-shard tenant's (one local workerd thread: no faster, no slower),
 *    judged on the median of BENCH_SHARD_PAIRS back-to-back pairs.
 * 4. Integrity under the same load: exactly BENCH_EXACT (default 2000)
 *    consumes at the same concurrency, then the counter must have grown by
 *    exactly the number of 2xx answers. (The timed runs cannot be compared
 *    this way: requests still in flight when autocannon stops are served but
 *    not counted by it.) Then exactly BENCH_EXACT UNIQUE_COUNT consumes: the
 *    counter must have grown by exactly the new values among them.
 *
 * Environment: BENCH_SECONDS (per route and round, default 5), BENCH_ROUNDS
 * (default 3), BENCH_CONNECTIONS (default 20), BENCH_EXACT (default 2000),
 * BENCH_ALERTS (default 10), BENCH_UNIQUE_POOL (default 1000). With
 * `--markdown` the summary also goes into docs/benchmarks.md
 * (bench/lib/benchmarks-doc.ts).
 */
import { DEMO_TENANT_ID } from "../scripts/demo-data.ts";
import { startStack } from "../scripts/lib/stack.ts";
import {
  reachedAlertEvents,
  type UsageAlertTerms,
} from "../workers/billing/src/notifications/domain/usage-alerts.ts";
import { autocannon } from "./lib/autocannon.ts";
import {
  atLeast,
  type BenchmarkRow,
  condition,
  count,
  startBenchmarkReport,
  times,
  verdict,
} from "./lib/benchmarks-doc.ts";
import {
  adminToken,
  demoTenantWithKey,
  measuredPlan,
  median,
  prepaidTenant,
  send,
  subscribedTenantWithKey,
} from "./lib/billing-setup.ts";
import { table } from "./lib/report.ts";
import {
  exactUniqueConsumes,
  grantUniqueCountFeature,
  NEW_EVERY,
  seedPool,
  uniqueConsumeBody,
  userIdDraws,
} from "./lib/unique-count.ts";

const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 20);
const EXACT = Number(process.env.BENCH_EXACT ?? 2000);
const ALERTS = Number(process.env.BENCH_ALERTS ?? 10);
/** user_id values counted before the UNIQUE_COUNT consume is measured (its draws mostly repeat them). */
const UNIQUE_POOL = Number(process.env.BENCH_UNIQUE_POOL ?? 1000);
/** Counter shards of the tenant whose HARD consume is measured against the one-shard tenant's. */
const COUNTER_SHARDS = Number(process.env.BENCH_COUNTER_SHARDS ?? 4);
/**
 * Pairs of back-to-back runs (one shard, then several; BENCH_SHARD_SECONDS
 * each) that judge the counter shards: the median of the pairs' ratios,
 * so the machine's drift between rounds weighs on both sides alike.
 */
const SHARD_PAIRS = Number(process.env.BENCH_SHARD_PAIRS ?? 8);
const SHARD_SECONDS = Number(process.env.BENCH_SHARD_SECONDS ?? 3);
/**
 * Throughput as a ratio of GET /health/live (no I/O) in the same run; the
 * prepaid and UNIQUE_COUNT consumes as a ratio of the HARD consume.
 */
const TARGETS = {
  check: 0.6,
  consume: 0.5,
  keyedConsume: 0.45,
  /** A tenant on several counter shards: one local workerd thread, so no faster, but no slower (within noise). */
  shardedVsHard: 0.95,
  prepaidVsHard: 0.95,
  uniqueVsHard: 0.9,
};

interface Route {
  name: string;
  url: string;
  method?: "GET" | "POST";
  body?: string;
  headers?: Record<string, string>;
  /** Sends a fresh Idempotency-Key with every request (each one is a first request). */
  freshIdempotencyKeys?: boolean;
  /** Each request's body, made when autocannon builds it (the UNIQUE_COUNT consume's user_id). */
  bodyPerRequest?: () => string;
}

let idempotencyKeysSent = 0;

interface LoadResult {
  requests: number;
  non2xx: number;
  errors: number;
  rps: number;
  p50: number;
  p99: number;
}

interface Combined {
  name: string;
  requests: number;
  non2xx: number;
  errors: number;
  /** Requests over the whole measured time of the route. */
  rps: number;
  /** Medians over the rounds. */
  p50: number;
  p99: number;
  roundRps: number[];
}

function log(line: string): void {
  process.stderr.write(`[bench:billing] ${line}\n`);
}

async function load(route: Route, seconds: number): Promise<LoadResult> {
  const result = await autocannon({
    url: route.url,
    method: route.method ?? "GET",
    body: route.body,
    headers: {
      ...(route.body ? { "content-type": "application/json" } : {}),
      ...route.headers,
    },
    connections: CONNECTIONS,
    duration: seconds,
    ...(route.freshIdempotencyKeys || route.bodyPerRequest
      ? { requests: [{ setupRequest: (request) => perRequest(route, request) }] }
      : {}),
  });
  return {
    requests: result.requests.total,
    non2xx: result.non2xx,
    errors: result.errors + result.timeouts,
    rps: result.requests.total / seconds,
    p50: result.latency.p50,
    p99: result.latency.p99,
  };
}

/** What changes from one request to the next: a fresh Idempotency-Key, or the body. */
function perRequest(route: Route, request: { headers: Record<string, string>; body?: string }) {
  if (route.freshIdempotencyKeys) {
    idempotencyKeysSent++;
    request.headers = {
      ...request.headers,
      "idempotency-key": `bench-${process.pid}-${Date.now()}-${idempotencyKeysSent}`,
    };
  }
  if (route.bodyPerRequest) request.body = route.bodyPerRequest();
  return request;
}

function combine(name: string, rounds: LoadResult[]): Combined {
  const requests = rounds.reduce((sum, round) => sum + round.requests, 0);
  return {
    name,
    requests,
    non2xx: rounds.reduce((sum, round) => sum + round.non2xx, 0),
    errors: rounds.reduce((sum, round) => sum + round.errors, 0),
    rps: requests / (SECONDS * rounds.length),
    p50: median(rounds.map((round) => round.p50)),
    p99: median(rounds.map((round) => round.p99)),
    roundRps: rounds.map((round) => round.rps),
  };
}

/**
 * The alert check itself, in process: what the counter runs per consume on
 * a watched feature (`reachedAlertEvents` over ALERTS alerts none of which
 * is reached), against the same call with no alerts. Microseconds per call.
 */
function alertCheckMicros(): { withAlerts: number; without: number } {
  const terms = {
    featureLookupKey: "bench",
    featureType: "METERED",
    value: null,
    limit: null,
    limitBehavior: null,
    overagePrice: 1,
    includedAmount: 1_000_000_000,
    resetPeriod: "MONTHLY",
    pricing: null,
  } as const;
  const alerts: UsageAlertTerms[] = Array.from({ length: ALERTS }, (_, index) => ({
    id: `alert-${index}`,
    featureLookupKey: "bench",
    threshold:
      index % 2 === 0
        ? { type: "units", value: 100_000_000_000 + index }
        : { type: "percent", value: 100 + index },
  }));
  const window = { featureKey: "bench", windowKey: "w", windowStart: "w", windowEnd: null };
  const now = new Date();
  const time = (set: UsageAlertTerms[]) => {
    const calls = 200_000;
    let reached = 0;
    const start = performance.now();
    for (let used = 0; used < calls; used++) {
      reached += reachedAlertEvents("tenant", set, terms, window, used, now).length;
    }
    if (reached !== 0) throw new Error("a bench alert was reached");
    return ((performance.now() - start) * 1000) / calls;
  };
  time(alerts);
  return { withAlerts: time(alerts), without: time([]) };
}

async function main(): Promise<void> {
  const report = startBenchmarkReport("billing");
  const micros = alertCheckMicros();
  log("starting the local stack");
  // The demo tenant's id is fixed: its counter shards are set before it exists.
  const stack = await startStack({
    logLevel: "warn",
    billingVars: {
      USAGE_COUNTER_TENANT_SHARDS: JSON.stringify({ [DEMO_TENANT_ID]: COUNTER_SHARDS }),
    },
  });
  try {
    const base = stack.billingUrl;
    const admin = await adminToken(base);

    const run = Date.now().toString(36);
    const { quota, metered, plan, price } = await measuredPlan(base, admin, `bench_${run}`);
    const users = await grantUniqueCountFeature(base, admin, plan.id, `bench_${run}`);
    // Two identical METERED features: one will carry the tenant's alerts.
    const [plain, alerted] = [
      await send(base, "/features", {
        token: admin,
        body: { name: "Bench plain", lookupKey: `bench_plain_${run}`, type: "METERED", unit: "op" },
      }),
      await send(base, "/features", {
        token: admin,
        body: {
          name: "Bench alerted",
          lookupKey: `bench_alerted_${run}`,
          type: "METERED",
          unit: "op",
        },
      }),
    ];
    for (const feature of [plain, alerted]) {
      await send(base, `/plans/${plan.id}/entitlements`, {
        token: admin,
        body: {
          featureId: feature.id,
          includedAmount: 1_000_000_000,
          overagePrice: 1,
          resetPeriod: "MONTHLY",
        },
      });
    }
    const owner = await subscribedTenantWithKey(base, `bench-${run}`, {
      planId: plan.id,
      priceId: price.id,
    });
    const { apiKey } = owner;
    const auth = { authorization: `Bearer ${apiKey}` };
    // Thresholds the run cannot reach (units from 10^11; 100% and more of 10^9
    // is reached only after 10^9 units): every consume checks them, none fires.
    for (let index = 0; index < ALERTS; index++) {
      await send(base, "/usage-alerts", {
        token: owner.accessToken,
        tenant: owner.tenantId,
        body: {
          featureLookupKey: alerted.lookupKey,
          threshold:
            index % 2 === 0
              ? { type: "units", value: 100_000_000_000 + index }
              : { type: "percent", value: 100 + index },
        },
      });
    }
    const prepaid = await prepaidTenant(base, admin, `bench_${run}`);
    const sharded = await demoTenantWithKey(base, admin, DEMO_TENANT_ID, {
      planId: plan.id,
      priceId: price.id,
    });
    const draws = userIdDraws(UNIQUE_POOL, `u-${run}`);
    log(`UNIQUE_COUNT: counting ${UNIQUE_POOL} user_id values before the run`);
    await seedPool(base, users.lookupKey, apiKey, draws.pool);
    const warm = await send(base, `/entitlements/${quota.lookupKey}/check`, { token: apiKey });
    if (warm.allowed !== true) throw new Error(`warm-up check refused: ${JSON.stringify(warm)}`);

    const hardConsume: Route = {
      name: "POST /entitlements/:key/consume (API key, HARD)",
      url: `${base}/api/v1/entitlements/${quota.lookupKey}/consume`,
      method: "POST",
      body: JSON.stringify({ amount: 1 }),
      headers: auth,
    };
    const shardedConsume: Route = {
      ...hardConsume,
      name: `POST /entitlements/:key/consume (API key, HARD, tenant on ${COUNTER_SHARDS} counter shards)`,
      headers: { authorization: `Bearer ${sharded.apiKey}` },
    };
    const routes: Route[] = [
      { name: "GET /health/live (baseline, no I/O)", url: `${base}/health/live` },
      { name: "GET /health (readiness: D1 + DO)", url: `${base}/health` },
      {
        name: "GET /entitlements/:key/check (API key)",
        url: `${base}/api/v1/entitlements/${quota.lookupKey}/check`,
        headers: auth,
      },
      hardConsume,
      {
        name: `POST /entitlements/:key/consume (API key, UNIQUE_COUNT user_id, HARD; 1 in ${NEW_EVERY} new)`,
        url: `${base}/api/v1/entitlements/${users.lookupKey}/consume`,
        method: "POST",
        body: uniqueConsumeBody(draws.pool[0] ?? "u"),
        headers: auth,
        bodyPerRequest: () => uniqueConsumeBody(draws.next()),
      },
      {
        name: "POST /entitlements/:key/consume (API key, METERED)",
        url: `${base}/api/v1/entitlements/${metered.lookupKey}/consume`,
        method: "POST",
        body: JSON.stringify({ amount: 1 }),
        headers: auth,
      },
      {
        name: "POST /entitlements/:key/consume (API key, METERED, Idempotency-Key)",
        url: `${base}/api/v1/entitlements/${metered.lookupKey}/consume`,
        method: "POST",
        body: JSON.stringify({ amount: 1 }),
        headers: auth,
        freshIdempotencyKeys: true,
      },
      {
        name: "POST /entitlements/:key/consume (API key, METERED, no alerts)",
        url: `${base}/api/v1/entitlements/${plain.lookupKey}/consume`,
        method: "POST",
        body: JSON.stringify({ amount: 1 }),
        headers: auth,
      },
      {
        name: `POST /entitlements/:key/consume (API key, METERED, ${ALERTS} alerts)`,
        url: `${base}/api/v1/entitlements/${alerted.lookupKey}/consume`,
        method: "POST",
        body: JSON.stringify({ amount: 1 }),
        headers: auth,
      },
      {
        name: "POST /entitlements/:key/consume (API key, prepaid: 1 cent drawn from credit)",
        url: `${base}/api/v1/entitlements/${prepaid.feature.lookupKey}/consume`,
        method: "POST",
        body: JSON.stringify({ amount: 1 }),
        headers: { authorization: `Bearer ${prepaid.tenant.apiKey}` },
      },
      shardedConsume,
    ];
    log("warm-up: 2 s per route");
    for (const route of routes) await load(route, 2);
    // Rounds interleave the routes, so a change in the machine's load (other
    // processes) during the run hits every route alike rather than one.
    log(`autocannon: ${CONNECTIONS} connections, ${ROUNDS} rounds of ${SECONDS} s per route`);
    const samples: LoadResult[][] = routes.map(() => []);
    for (let round = 0; round < ROUNDS; round++) {
      for (const [index, route] of routes.entries())
        samples[index]?.push(await load(route, SECONDS));
    }
    const [
      live,
      health,
      check,
      consume,
      consumeUnique,
      consumeMetered,
      consumeKeyed,
      unwatched,
      watched,
      consumePrepaid,
      consumeSharded,
    ] = samples.map((rounds, index) => combine(routes[index]?.name ?? "", rounds)) as [
      Combined,
      Combined,
      Combined,
      Combined,
      Combined,
      Combined,
      Combined,
      Combined,
      Combined,
      Combined,
      Combined,
    ];

    log(
      `counter shards: ${SHARD_PAIRS} pairs of ${SHARD_SECONDS}-s runs, 1 shard then ${COUNTER_SHARDS}`,
    );
    const pairRatios: number[] = [];
    for (let pair = 0; pair < SHARD_PAIRS; pair++) {
      const one = await load(hardConsume, SHARD_SECONDS);
      const several = await load(shardedConsume, SHARD_SECONDS);
      pairRatios.push(several.rps / one.rps);
    }
    log(`integrity: exactly ${EXACT} consumes at ${CONNECTIONS} connections`);
    // Let requests left in flight by the timed run finish before the baseline.
    const usedNow = async () =>
      (await send(base, `/entitlements/${metered.lookupKey}/check`, { token: apiKey }))
        .used as number;
    let before = await usedNow();
    for (let settled = false; !settled; ) {
      await new Promise((resolve) => setTimeout(resolve, 1000));
      const again = await usedNow();
      settled = again === before;
      before = again;
    }
    const exact = await autocannon({
      url: `${base}/api/v1/entitlements/${metered.lookupKey}/consume`,
      method: "POST",
      body: JSON.stringify({ amount: 1 }),
      headers: { "content-type": "application/json", ...auth },
      connections: CONNECTIONS,
      amount: EXACT,
    });
    const after = await usedNow();
    log(`integrity: exactly ${EXACT} UNIQUE_COUNT consumes at ${CONNECTIONS} connections`);
    const uniqueExact = await exactUniqueConsumes({
      base,
      lookupKey: users.lookupKey,
      apiKey,
      draws,
      amount: EXACT,
      connections: CONNECTIONS,
    });
    const results = [
      live,
      health,
      check,
      consume,
      consumeUnique,
      consumeMetered,
      consumeKeyed,
      unwatched,
      watched,
      consumePrepaid,
      consumeSharded,
    ];
    process.stdout.write(
      `\nBilling entitlements benchmark (${CONNECTIONS} connections; ${ROUNDS} interleaved rounds of ${SECONDS} s per route, one stack, one run; ${process.arch}, Node ${process.version})\n\n`,
    );
    process.stdout.write(
      `${table(
        [
          "route",
          "req/s",
          "x baseline",
          "x baseline per round",
          "p50 ms",
          "p99 ms",
          "requests",
          "non-2xx",
          "errors",
        ],
        results.map((result) => [
          result.name,
          result.rps.toFixed(0),
          (result.rps / live.rps).toFixed(2),
          result.roundRps
            .map((rps, round) => (rps / (live.roundRps[round] ?? Number.NaN)).toFixed(2))
            .join(" "),
          result.p50,
          result.p99,
          result.requests,
          result.non2xx,
          result.errors,
        ]),
      )}\n\n`,
    );
    const checkRatio = check.rps / live.rps;
    const consumeRatio = consume.rps / live.rps;
    const keyedBaselineRatio = consumeKeyed.rps / live.rps;
    const checkTarget = atLeast(checkRatio, TARGETS.check);
    const consumeTarget = atLeast(consumeRatio, TARGETS.consume);
    const keyedTarget = atLeast(keyedBaselineRatio, TARGETS.keyedConsume);
    process.stdout.write(
      `check / baseline = ${checkRatio.toFixed(2)} (target ${checkTarget.label}: ${verdict(checkTarget)}; ${(check.rps / health.rps).toFixed(2)}x GET /health)\n`,
    );
    process.stdout.write(
      `consume / baseline = ${consumeRatio.toFixed(2)} (target ${consumeTarget.label}: ${verdict(consumeTarget)}; ${(consume.rps / health.rps).toFixed(2)}x GET /health)\n`,
    );
    process.stdout.write(
      `consume with Idempotency-Key / baseline = ${keyedBaselineRatio.toFixed(2)} (target ${keyedTarget.label}: ${verdict(keyedTarget)})\n`,
    );
    // The idempotency check's cost: the same consume with and without a key, same run.
    const keyedRatio = consumeKeyed.rps / consumeMetered.rps;
    const perRound = consumeKeyed.roundRps
      .map((rps, round) => (rps / (consumeMetered.roundRps[round] ?? Number.NaN)).toFixed(2))
      .join(" ");
    process.stdout.write(
      `consume with Idempotency-Key / without = ${keyedRatio.toFixed(2)} req/s (per round ${perRound}); p50 ${consumeKeyed.p50} ms vs ${consumeMetered.p50} ms\n`,
    );
    // The alert check's cost: the same consume on a feature with and without alerts, same run.
    const alertRatio = watched.rps / unwatched.rps;
    const alertPerRound = watched.roundRps
      .map((rps, round) => (rps / (unwatched.roundRps[round] ?? Number.NaN)).toFixed(2))
      .join(" ");
    process.stdout.write(
      `consume with ${ALERTS} alerts / without = ${alertRatio.toFixed(2)} req/s (per round ${alertPerRound}); p50 ${watched.p50} ms vs ${unwatched.p50} ms; non-2xx ${watched.non2xx} vs ${unwatched.non2xx}\n`,
    );
    process.stdout.write(
      `alert check in process: ${micros.withAlerts.toFixed(3)} us per consume with ${ALERTS} alerts, ${micros.without.toFixed(3)} us with none\n`,
    );
    // The balance's cost: a prepaid consume (cost priced, balance drawn) against the HARD one, same run.
    const prepaidRatio = consumePrepaid.rps / consume.rps;
    const prepaidTarget = atLeast(prepaidRatio, TARGETS.prepaidVsHard);
    const prepaidPerRound = consumePrepaid.roundRps
      .map((rps, round) => (rps / (consume.roundRps[round] ?? Number.NaN)).toFixed(2))
      .join(" ");
    process.stdout.write(
      `prepaid consume / HARD consume = ${prepaidRatio.toFixed(2)} req/s (per round ${prepaidPerRound}; target ${prepaidTarget.label}: ${verdict(prepaidTarget)}); p50 ${consumePrepaid.p50} ms vs ${consume.p50} ms; non-2xx ${consumePrepaid.non2xx}\n`,
    );
    // The distinct-value check's cost: the same HARD limit check, same run, interleaved.
    const uniqueRatio = consumeUnique.rps / consume.rps;
    const uniqueTarget = atLeast(uniqueRatio, TARGETS.uniqueVsHard);
    const uniquePerRound = consumeUnique.roundRps
      .map((rps, round) => (rps / (consume.roundRps[round] ?? Number.NaN)).toFixed(2))
      .join(" ");
    process.stdout.write(
      `UNIQUE_COUNT consume / HARD consume = ${uniqueRatio.toFixed(2)} req/s (${consumeUnique.rps.toFixed(0)} vs ${consume.rps.toFixed(0)}; per round ${uniquePerRound}; target ${uniqueTarget.label}: ${verdict(uniqueTarget)}); p50 ${consumeUnique.p50} ms vs ${consume.p50} ms; non-2xx ${consumeUnique.non2xx}; ${UNIQUE_POOL} values counted before, ${draws.newDrawn()} new drawn in all\n`,
    );
    // Counter shards: the same HARD consume, one tenant's counting over several objects, in back-to-back pairs.
    const shardedRatio = median(pairRatios);
    const shardedTarget = atLeast(shardedRatio, TARGETS.shardedVsHard);
    const shardedPerRound = consumeSharded.roundRps
      .map((rps, round) => (rps / (consume.roundRps[round] ?? Number.NaN)).toFixed(2))
      .join(" ");
    process.stdout.write(
      `HARD consume on ${COUNTER_SHARDS} counter shards / on 1 = ${shardedRatio.toFixed(2)}, the median of ${SHARD_PAIRS} back-to-back pairs (${pairRatios.map((ratio) => ratio.toFixed(2)).join(" ")}; target ${shardedTarget.label}: ${verdict(shardedTarget)}); in the rounds ${(consumeSharded.rps / consume.rps).toFixed(2)} (${consumeSharded.rps.toFixed(0)} vs ${consume.rps.toFixed(0)} req/s; per round ${shardedPerRound}); p50 ${consumeSharded.p50} ms vs ${consume.p50} ms; non-2xx ${consumeSharded.non2xx}\n`,
    );
    const counted = after - before;
    const intact = counted === EXACT && exact["2xx"] === EXACT;
    process.stdout.write(
      `integrity: ${EXACT} consumes sent, ${exact["2xx"]} answered 2xx, counter grew by ${counted} (${intact ? "exact" : "MISMATCH"})\n`,
    );
    process.stdout.write(
      `integrity, UNIQUE_COUNT: ${EXACT} consumes sent (${uniqueExact.fresh} new values), ${uniqueExact.answered2xx} answered 2xx, counter grew by ${uniqueExact.grew} (${uniqueExact.intact ? "exact" : "MISMATCH"})\n`,
    );

    const speed = (result: Combined) =>
      `${count(result.rps)} req/s; p50 ${result.p50} ms, p99 ${result.p99} ms`;
    const liveBaseline = `\`GET /health/live\` (no I/O), ${count(live.rps)} req/s`;
    const againstLive = (
      benchmark: string,
      result: Combined,
      target?: ReturnType<typeof atLeast>,
    ): BenchmarkRow => ({
      benchmark,
      figure: speed(result),
      ratio: times(result.rps / live.rps),
      baseline: liveBaseline,
      ...(target ? { target } : {}),
    });
    report.record({
      title: "Billing: entitlements",
      method:
        `One stack (billing and usage-consumer in one \`wrangler dev\`, log level warn), an API key of a tenant subscribed to a plan whose limits the run cannot reach. ` +
        `autocannon with ${CONNECTIONS} connections, ${ROUNDS} interleaved ${ROUNDS === 1 ? "round" : "rounds"} of ${SECONDS} s per route after a 2-s warm-up of each; ` +
        "throughput over all rounds, latency the median of the rounds' p50 and p99. " +
        `UNIQUE_COUNT consume: a QUOTA feature counting distinct \`user_id\`s under a HARD limit of 10^9, ${count(UNIQUE_POOL)} values counted before the run; ${NEW_EVERY - 1} in ${NEW_EVERY} requests repeat one (admitted, no change), 1 in ${NEW_EVERY} sends a new one (a unit taken), set per request. ` +
        `Then exactly ${count(EXACT)} consumes at the same concurrency, and the counter must have grown by exactly that; and exactly ${count(EXACT)} UNIQUE_COUNT consumes, the counter growing by exactly the new values among them.`,
      rows: [
        {
          benchmark: "`GET /health/live` (baseline: the worker answers with no I/O)",
          figure: speed(live),
        },
        againstLive("`GET /health` (readiness: a D1 read and a Durable Object call)", health),
        againstLive("entitlement check (API key)", check, checkTarget),
        againstLive("consume on a HARD quota (API key)", consume, consumeTarget),
        againstLive("consume on a METERED feature (API key)", consumeMetered),
        againstLive("consume with a fresh Idempotency-Key", consumeKeyed, keyedTarget),
        {
          benchmark: "consume with an Idempotency-Key vs without",
          figure: `${count(consumeKeyed.rps)} vs ${count(consumeMetered.rps)} req/s; p50 ${consumeKeyed.p50} ms vs ${consumeMetered.p50} ms`,
          ratio: times(keyedRatio),
          baseline: `METERED consume without a key, ${count(consumeMetered.rps)} req/s`,
        },
        {
          benchmark: `consume on a feature with ${ALERTS} usage alerts vs one with none`,
          figure: `${count(watched.rps)} req/s; p50 ${watched.p50} ms vs ${unwatched.p50} ms`,
          ratio: times(alertRatio),
          baseline: `the same consume with no alerts, ${count(unwatched.rps)} req/s`,
        },
        {
          benchmark: "consume on a prepaid price (credit drawn in the counter) vs a HARD quota",
          figure: `${count(consumePrepaid.rps)} vs ${count(consume.rps)} req/s; p50 ${consumePrepaid.p50} ms vs ${consume.p50} ms`,
          ratio: times(prepaidRatio),
          baseline: `HARD consume, ${count(consume.rps)} req/s`,
          target: prepaidTarget,
        },
        {
          benchmark: `consume on a UNIQUE_COUNT quota (distinct \`user_id\`, HARD; ${NEW_EVERY - 1} in ${NEW_EVERY} values already counted) vs a HARD quota`,
          figure: `${count(consumeUnique.rps)} vs ${count(consume.rps)} req/s; p50 ${consumeUnique.p50} ms vs ${consume.p50} ms, p99 ${consumeUnique.p99} ms`,
          ratio: times(uniqueRatio),
          baseline: `HARD consume, ${count(consume.rps)} req/s`,
          target: uniqueTarget,
        },
        {
          benchmark: `HARD consume of a tenant on ${COUNTER_SHARDS} counter shards (quota leases) vs one`,
          figure: `median of ${SHARD_PAIRS} back-to-back ${SHARD_SECONDS}-s pairs (${pairRatios.map((ratio) => ratio.toFixed(2)).join(", ")}); in the rounds ${count(consumeSharded.rps)} vs ${count(consume.rps)} req/s, p50 ${consumeSharded.p50} ms vs ${consume.p50} ms`,
          ratio: times(shardedRatio),
          baseline: `HARD consume on one counter, run just before each`,
          target: shardedTarget,
        },
        {
          benchmark: `usage-alert check per consume, in process (${ALERTS} alerts)`,
          figure: `${micros.withAlerts.toFixed(3)} µs (${micros.without.toFixed(3)} µs with none)`,
        },
        {
          benchmark: `integrity: exactly ${count(EXACT)} consumes`,
          figure: `${count(exact["2xx"])} answered 2xx, counter grew by ${count(counted)}`,
          target: condition("every consume counted once", intact),
        },
        {
          benchmark: `integrity: exactly ${count(EXACT)} UNIQUE_COUNT consumes`,
          figure: `${count(uniqueExact.answered2xx)} answered 2xx, ${count(uniqueExact.fresh)} new values, counter grew by ${count(uniqueExact.grew)}`,
          target: condition("every new value counted once", uniqueExact.intact),
        },
      ],
      notes: [
        ...(ROUNDS > 1
          ? [
              `Ratios to the baseline round by round: ${(
                [
                  ["check", check],
                  ["HARD consume", consume],
                  ["UNIQUE_COUNT consume", consumeUnique],
                  ["consume with an Idempotency-Key", consumeKeyed],
                ] as const
              )
                .map(
                  ([label, result]) =>
                    `${label} ${result.roundRps
                      .map((rps, round) => (rps / (live.roundRps[round] ?? Number.NaN)).toFixed(2))
                      .join(", ")}`,
                )
                .join("; ")}.`,
            ]
          : []),
        `Against \`GET /health\` (${count(health.rps)} req/s): check ${times(check.rps / health.rps)}, HARD consume ${times(consume.rps / health.rps)}.`,
      ],
    });
    if (!intact || !uniqueExact.intact) process.exitCode = 1;
  } finally {
    log("stopping the stack");
    await stack.stop();
  }
}

main().catch((error: unknown) => {
  process.stderr.write(
    `[bench:billing] failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
  );
  process.exitCode = 1;
});
