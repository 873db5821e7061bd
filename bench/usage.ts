/**
 * Usage pipeline benchmark: `node --experimental-strip-types bench/usage.ts`
 * (or `npm run bench usage`).
 *
 * 1. Starts the local stack (scripts/dev.ts via startStack, log level warn):
 *    billing and usage-consumer in one wrangler dev process, real D1,
 *    queues and Durable Objects.
 * 2. Sets up BENCH_TENANTS tenants (one owner, who creates them) on the
 *    demo Pro plan, each with its own API key: one client per tenant, all
 *    sending at once (BENCH_TENANTS=50 is the many-tenants run).
 * 3. Baseline: autocannon GET /health/live (the worker answers, no I/O) for
 *    BENCH_SECONDS, the machine's baseline in this run; then GET /health
 *    (readiness: D1 and a Durable Object) as a second reference row. In
 *    long mode the baseline is outside the stack's process instead (below).
 * 4. Ingestion throughput: each client posts 1000-event batches (fresh
 *    eventIds) back to back for BENCH_SECONDS; events accepted per second,
 *    request p50/p99, and the ratio of batch requests per second to the
 *    baseline's. Then the pipeline is drained and checked exactly: the
 *    tenants' aggregates must equal the accepted amounts.
 *    Metered (bench/lib/metered-usage.ts; run after the sustained window of
 *    step 5, so its events do not change the log that window measures):
 *    BENCH_METERED_ROUNDS pairs of bursts by the same clients, one of the plain load and one of the same
 *    load whose events each carry `model`, `direction` and `tokens` for a
 *    feature (on Pro, with api_calls' terms) metered as SUM of `tokens`
 *    grouped by model and direction; in ABBA order, each drained and
 *    checked; then the aggregates per group and the counter's `used` must
 *    equal the tokens sent. Metered events/s over plain, for ingestion and
 *    for aggregation (target at least 0.9x each).
 * 5. Sustained: the ingestion rate itself for BENCH_SUSTAIN_SECONDS
 *    (default 60; 300 in long mode): the burst's clients post 1000-event
 *    batches back to back (each sends its next batch as soon as the last is
 *    answered), so what is offered is exactly what ingestion accepts, for
 *    the whole window, while the pipeline runs. Every 5 s the events
 *    accepted and aggregated so far are sampled (from the aggregates): the
 *    backlog's last third must not exceed its first third by more than a
 *    second of load, and the per-interval rates show ingestion and
 *    aggregation side by side as the tables grow. Afterwards a sample of
 *    events (every 20th, at most 5,000 of them evenly spaced) is read back
 *    and its latency is the server's aggregatedAt minus the moment the
 *    client got the 202 (same machine, same clock): p50/p99/max. The
 *    sustained rate is printed against the burst's, to show whether
 *    ingestion slows as the stored log grows under random client ids (see
 *    docs/capacity.md).
 *    With BENCH_RATE the load is open-loop instead: that rate on a fixed
 *    schedule, each batch sent on time whether or not earlier ones were
 *    answered (at most twice the burst's concurrency in flight).
 * Long mode (BENCH_STORED_EVENTS=N, e.g. 3000000; bench/lib/usage-long.ts):
 *    how ingestion holds its rate as the stored log grows, in raw events/s
 *    at each point. The baseline is a no-I/O `node:http` server that the
 *    bench starts in a process of its own (bench/lib/baseline-server.ts),
 *    measured with autocannon like the short run's at the start and again
 *    before the last burst: a slowdown of the whole stack process shows
 *    against it, and its two figures show the machine's drift. Points: the
 *    first burst on the fresh stack; the clients post back to back until
 *    250,000 events are stored (less for a small N), the pipeline drains,
 *    and a burst of the same length is measured there, the archive writing
 *    its files; they post on to N without a pause, each segment timed by
 *    the answers that pass its boundaries (segments of 500,000 stored
 *    events for N from 2,000,000, smaller ones giving at least four
 *    segments below: 100,000 for N = 600,000); the pipeline drains and the
 *    totals are checked; the baseline again; a burst after N stored. The
 *    burst after N must take at least 0.9x the warm burst's events/s and
 *    each segment at least 0.85x the first's, in raw events/s (the figures
 *    per baseline request are printed beside them, not judged). Then the
 *    sustained window (five minutes) measures aggregation, the backlog and
 *    202 -> AGGREGATED after N stored, as in the short run.
 * 6. The verdict: each criterion of "the pipeline keeps up at the ingestion
 *    rate" (ingestion saturated for the whole window, every event accepted,
 *    aggregation >= 0.95x the ingestion rate while ingesting, backlog not
 *    growing, p99 < 2 s, exact totals; in long mode also the burst after N
 *    and the fill segments), PASS or FAIL, and whether it holds in this run
 *    (exit code 1 when it does not).
 *
 * Environment: BENCH_SECONDS (default 10: the baselines and every burst,
 * the long mode's three too), BENCH_TENANTS (default 4;
 * BENCH_CLIENTS is the same setting's older name), BENCH_STORED_EVENTS
 * (default: none, no long mode), BENCH_WARMUP_SECONDS (the burst's load
 * before the first burst, default 0),
 * BENCH_BURSTS (step 4 repeated, default 1: the first burst is the measured
 * rate, the others show it as the tables grow), BENCH_EVENT_IDS=ordered
 * (time-ordered eventIds instead of random ones),
 * BENCH_RATE (default: none, the saturated load), BENCH_SUSTAIN_SECONDS
 * (default 60, in long mode 300), BENCH_METERED_ROUNDS (pairs of plain and
 * metered bursts, default 2; 0 skips the metered scenario),
 * BENCH_METERED_SECONDS (each of those bursts, default BENCH_SECONDS, at
 * most 10). With `--markdown` the summary also goes
 * into docs/benchmarks.md (bench/lib/benchmarks-doc.ts).
 */
import { performance } from "node:perf_hooks";
import { DEMO_PLANS } from "../scripts/demo-catalog.ts";
import { startStack } from "../scripts/lib/stack.ts";
import { autocannon } from "./lib/autocannon.ts";
import {
  atLeast,
  type BenchmarkRow,
  below,
  condition,
  count,
  startBenchmarkReport,
  times,
  verdict,
} from "./lib/benchmarks-doc.ts";
import { type ExternalBaseline, measureExternalBaseline } from "./lib/external-baseline.ts";
import {
  inProcessBaseline,
  inProcessBurstText,
  inProcessRows,
  inProcessText,
} from "./lib/in-process-baseline.ts";
import {
  compareMetered,
  grantMeteredFeature,
  type MeteredComparison,
  meteredLoad,
  meteredProperties,
  meteredSummary,
} from "./lib/metered-usage.ts";
import { quantile } from "./lib/report.ts";
import {
  aggregatedUnits,
  type BurstResult,
  drained,
  eventMaker,
  type LoadShape,
  measuredBurst,
  postBackToBack,
  postBatch,
  readBackLatency,
  tenantKeys,
} from "./lib/usage-load.ts";
import { type LongRun, longModeMethod, longModeReport, runLongMode } from "./lib/usage-long.ts";

/**
 * The sustained window. A long run's is five minutes: its archive writes a
 * file per tenant shard every 10,000 events, and tenants sending alike
 * write theirs in the same few seconds every two or three minutes, so a
 * single minute lands on such a moment or misses it by chance; five
 * minutes hold two or three of them, as every stretch of the real load does.
 */
const SUSTAIN_SECONDS = Number(
  process.env.BENCH_SUSTAIN_SECONDS ?? (process.env.BENCH_STORED_EVENTS ? 300 : 60),
);
/**
 * The baselines' and each burst's length. In long mode every burst (the
 * first, the warm one and the one after N) lasts as long, so that they are
 * the same measurement; a longer one moves the warm burst's end further
 * into the fill's first segment.
 */
const SECONDS = Number(process.env.BENCH_SECONDS ?? 10);
/** Tenants sending at once, one client (and API key) each. */
const CLIENTS = Number(process.env.BENCH_TENANTS ?? process.env.BENCH_CLIENTS ?? 4);
/** Long mode: events stored before the last burst and the sustained window (none: the window follows the bursts). */
const STORED_EVENTS = process.env.BENCH_STORED_EVENTS
  ? Number(process.env.BENCH_STORED_EVENTS)
  : undefined;
const FIXED_RATE = process.env.BENCH_RATE ? Number(process.env.BENCH_RATE) : undefined;
/**
 * Ingestion before the baseline and the first burst (none unless set): the
 * first burst then no longer runs on a fresh stack. Long mode measures its
 * steady state at the warm burst instead (bench/lib/usage-long.ts).
 */
const WARMUP_SECONDS = Number(process.env.BENCH_WARMUP_SECONDS ?? 0);
const BATCH = 1000;
/** Sampled events read back for 202 -> AGGREGATED. */
const MAX_READ_BACK = 5000;
/** Bursts before the sustained window: more than one shows the ingestion rate as the tables grow. */
const BURSTS = Math.max(1, Number(process.env.BENCH_BURSTS ?? 1));
/**
 * Pairs of bursts comparing the metered load with the plain one (0: none).
 * Two pairs in ABBA order (plain, metered, metered, plain) put both at the
 * same mean position in the run.
 */
const METERED_ROUNDS = Math.max(0, Number(process.env.BENCH_METERED_ROUNDS ?? 2));
/**
 * Each of those bursts' length: the burst's, at most 10 s unless set (a long
 * run's 300-s burst would make the comparison twenty minutes).
 */
const METERED_SECONDS = Number(process.env.BENCH_METERED_SECONDS ?? Math.min(SECONDS, 10));
/** `ordered` sends time-ordered eventIds (UUID v7 shape) instead of random ones (v4). */
const ORDERED_IDS = process.env.BENCH_EVENT_IDS === "ordered";
/** Aggregation is a ratio of the ingestion rate in the same run. */
const TARGETS = { eventsPerSecond: 5000, p99Ms: 2000, aggregation: 0.95 };
/** The baselines' autocannon connections. */
const BASELINE_CONNECTIONS = 20;

function log(line: string): void {
  process.stderr.write(`[bench:usage] ${line}\n`);
}

const events = eventMaker(ORDERED_IDS);

/** The burst's load: plain events of the Pro plan's `api_calls`, amounts 1-3. */
const plainLoad: LoadShape = {
  batch: () => events(BATCH, (i) => (i % 3) + 1),
  units: (event) => event.amount,
};

/**
 * BENCH_WARMUP_SECONDS of the burst's load, then a drained pipeline.
 * Returns the events stored.
 */
async function warmUp(base: string, keys: string[]): Promise<number> {
  if (WARMUP_SECONDS <= 0) return 0;
  log(`warm-up: ${keys.length} clients posting ${BATCH}-event batches for ${WARMUP_SECONDS} s`);
  const load = await postBackToBack(base, keys, WARMUP_SECONDS, plainLoad);
  // The tenants are new: each has the one batch of the warm-up before (amount 1 per event).
  const before = keys.map(() => BATCH);
  if (!(await drained(base, keys, before, load.unitsPerClient))) {
    throw new Error("warm-up: the pipeline did not drain within 300 s");
  }
  return load.accepted;
}

/** The long run's reference, outside the stack's process: measured anew each time. */
function externalBaseline(): Promise<ExternalBaseline> {
  log(
    `external baseline: a no-I/O node:http server in its own process, autocannon ${BASELINE_CONNECTIONS} connections, ${SECONDS} s`,
  );
  return measureExternalBaseline({ seconds: SECONDS, connections: BASELINE_CONNECTIONS });
}

async function main(): Promise<void> {
  const report = startBenchmarkReport("usage");
  log("starting the local stack");
  const stack = await startStack({ logLevel: "warn" });
  try {
    const base = stack.billingUrl;
    const pro = DEMO_PLANS.find((plan) => plan.slug === "pro");
    const price = pro?.prices.find((p) => p.interval === "MONTHLY");
    if (!pro || !price) throw new Error("demo Pro plan missing");
    const run = Date.now().toString(36);
    // The metered scenario's feature joins Pro (in this run's throw-away
    // state) with api_calls' terms, so the same tenants send both loads.
    const metered = meteredLoad(
      await grantMeteredFeature(base, pro.id, run, pro.entitlements.api_calls),
      CLIENTS,
      (feature) => events(BATCH, (i) => (i % 3) + 1, feature, meteredProperties),
    );
    log(`setting up ${CLIENTS} tenants`);
    const keys = await tenantKeys(base, run, CLIENTS, { planId: pro.id, priceId: price.id });

    log("warm-up");
    if (STORED_EVENTS === undefined) {
      await autocannon({ url: `${base}/health/live`, connections: 20, duration: 2 });
      await autocannon({ url: `${base}/health`, connections: 20, duration: 2 });
    }
    // Events stored so far (plain and metered alike: one log).
    let stored = 0;
    for (const key of keys) stored += (await postBatch(base, key, events(BATCH))).accepted;
    if (METERED_ROUNDS > 0) {
      for (const [client, key] of keys.entries()) {
        const batch = metered.shape.batch();
        const result = await postBatch(base, key, batch);
        if (result.status !== 202) continue;
        stored += result.accepted;
        metered.shape.onAccepted?.(client, batch);
      }
    }
    stored += await warmUp(base, keys);
    // The short run's reference is the worker's own no-I/O route; the long
    // run's is a server outside the stack's process (bench/lib/external-baseline.ts).
    const reference =
      STORED_EVENTS === undefined
        ? await inProcessBaseline(base, {
            seconds: SECONDS,
            connections: BASELINE_CONNECTIONS,
            log,
          })
        : undefined;
    const baselineStart = STORED_EVENTS === undefined ? undefined : await externalBaseline();

    // One burst: the clients post back to back for SECONDS, then the
    // pipeline is drained and checked exactly against what was accepted.
    const burst = () => {
      log(
        `ingestion: ${CLIENTS} clients posting ${BATCH}-event batches for ${SECONDS} s, then draining the pipeline`,
      );
      return measuredBurst(base, keys, SECONDS, plainLoad);
    };
    const bursts: BurstResult[] = [];
    for (let round = 0; round < BURSTS; round++) {
      const result = await burst();
      bursts.push(result);
      if (BURSTS > 1) {
        log(
          `burst ${round + 1} of ${BURSTS}: ${result.eventsPerSecond.toFixed(0)} events/s, request p50 ${quantile(result.latencies, 0.5).toFixed(0)} ms, pipeline caught up ${result.drainSeconds.toFixed(1)} s after it (${(result.pipelineRate / result.eventsPerSecond).toFixed(2)}x), ${result.exact ? "exact" : "NOT exact"}`,
        );
      }
    }
    // The first burst, on an empty log, is the measured ingestion rate.
    const first = bursts[0]!;
    const { latencies, ingestSeconds, accepted, eventsPerSecond } = first;
    const firstStored = stored;
    stored += bursts.reduce((sum, result) => sum + result.accepted, 0);

    const aggregatedNow = async () =>
      (await Promise.all(keys.map((key) => aggregatedUnits(base, key)))).reduce((a, b) => a + b, 0);
    // Long mode: the warm burst, the fill in segments to N, the external
    // baseline again and the burst after N (bench/lib/usage-long.ts).
    const long: LongRun | undefined =
      STORED_EVENTS === undefined
        ? undefined
        : await runLongMode(
            {
              base,
              keys,
              target: STORED_EVENTS,
              burstSeconds: SECONDS,
              load: plainLoad,
              log,
              baseline: externalBaseline,
            },
            stored,
          );
    const exact = bursts.every((result) => result.exact) && (long?.exact ?? true);
    const baseUnits = await aggregatedNow();
    const samples: { eventId: string; key: string; acceptedAt: number }[] = [];
    const backlog: { second: number; accepted: number; aggregated: number; events: number }[] = [];
    const sustainedLatencies: number[] = [];
    let acceptedUnits = 0;
    let offeredEvents = 0;
    let sustainedFailures = 0;
    const storedAtStart = long?.storedAfter ?? stored;
    const onAnswer = (
      key: string,
      batch: ReturnType<typeof events>,
      result: Awaited<ReturnType<typeof postBatch>>,
    ) => {
      const acceptedAt = Date.now();
      sustainedLatencies.push(result.ms);
      if (result.status !== 202) {
        sustainedFailures++;
        return;
      }
      acceptedUnits += result.accepted;
      batch.forEach((e, i) => {
        if (i % 20 === 0) samples.push({ eventId: e.eventId, key, acceptedAt });
      });
    };
    const latencyStart = Date.now();
    // The backlog is sampled on its own loop, so that sampling never delays a batch.
    let offering = true;
    const sampler = (async () => {
      let next = latencyStart + 5000;
      while (offering) {
        await new Promise((resolve) => setTimeout(resolve, Math.max(0, next - Date.now())));
        if (!offering) break;
        next += 5000;
        // Aggregates first, then the client's count: an answer that lands
        // while the aggregates are read counts as backlog, never the reverse.
        const units = (await aggregatedNow()) - baseUnits;
        const acceptedSoFar = acceptedUnits;
        backlog.push({
          second: Math.round((Date.now() - latencyStart) / 1000),
          accepted: acceptedSoFar,
          aggregated: units,
          events: acceptedSoFar - units,
        });
      }
    })();
    let shape: string;
    let RATE: number;
    if (FIXED_RATE === undefined) {
      // The ingestion rate itself, for SUSTAIN_SECONDS: the burst's clients
      // post back to back (each sends its next batch when the last one is
      // answered), so what is offered is exactly what ingestion accepts.
      log(
        `sustained: ${CLIENTS} clients posting ${BATCH}-event batches back to back for ${SUSTAIN_SECONDS} s (ingestion saturated)`,
      );
      const sustainDeadline = latencyStart + SUSTAIN_SECONDS * 1000;
      await Promise.all(
        keys.map(async (key) => {
          while (Date.now() < sustainDeadline) {
            const batch = events(BATCH);
            offeredEvents += batch.length;
            onAnswer(key, batch, await postBatch(base, key, batch));
          }
        }),
      );
      RATE = acceptedUnits / ((Date.now() - latencyStart) / 1000);
      shape = `${CLIENTS} clients x ${BATCH}-event batches back to back (ingestion saturated)`;
    } else {
      RATE = Math.max(10, Math.round(FIXED_RATE));
      // BENCH_RATE: an open-loop load at a fixed rate, in the measured load's
      // shape: batches of 1,000 events (one every 1000/RATE s; smaller below
      // 2,000 events/s), round robin over the tenants, each request sent on
      // time whether or not the one before has been answered, with at most
      // twice the burst's concurrency in flight (a server that answers too
      // slowly is offered less rather than buried under open requests).
      const perBatch = Math.max(1, Math.min(BATCH, Math.round(RATE / 2)));
      const intervalMs = (perBatch / RATE) * 1000;
      const batches = Math.max(1, Math.round((SUSTAIN_SECONDS * 1000) / intervalMs));
      log(
        `sustained: ${RATE} events/s for ${SUSTAIN_SECONDS} s (${batches} batches of ${perBatch}, one every ${intervalMs.toFixed(0)} ms)`,
      );
      const maxInFlight = CLIENTS * 2;
      const sends: Promise<void>[] = [];
      let inFlight = 0;
      let heldBack = 0;
      let late = 0;
      let slotFreed: (() => void) | undefined;
      for (let tick = 0; tick < batches; tick++) {
        const due = latencyStart + tick * intervalMs;
        const wait = due - Date.now();
        if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
        else if (wait < -50) late++;
        if (inFlight >= maxInFlight) {
          heldBack++;
          while (inFlight >= maxInFlight) {
            await new Promise<void>((resolve) => {
              slotFreed = resolve;
            });
          }
        }
        const key = keys[tick % keys.length] as string;
        const batch = events(perBatch);
        offeredEvents += batch.length;
        inFlight++;
        sends.push(
          postBatch(base, key, batch).then((result) => {
            inFlight--;
            slotFreed?.();
            onAnswer(key, batch, result);
          }),
        );
      }
      await Promise.all(sends);
      shape = `BENCH_RATE=${RATE}: ${batches} batches of ${perBatch} on a fixed schedule (${late} sent late, ${heldBack} held back at ${maxInFlight} in flight)`;
    }
    offering = false;
    await sampler;
    const answeredSeconds = (Date.now() - latencyStart) / 1000;
    const aggregatedAtEnd = (await aggregatedNow()) - baseUnits;
    const offered = offeredEvents / answeredSeconds;
    const tailStart = performance.now();
    let aggregatedFinal = aggregatedAtEnd;
    while (performance.now() - tailStart < 120_000) {
      aggregatedFinal = (await aggregatedNow()) - baseUnits;
      if (aggregatedFinal >= acceptedUnits) break;
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
    const tailSeconds = (performance.now() - tailStart) / 1000;
    const third = Math.max(1, Math.floor(backlog.length / 3));
    const meanOf = (rows: { events: number }[]) =>
      rows.reduce((sum, row) => sum + row.events, 0) / Math.max(1, rows.length);
    const earlyBacklog = meanOf(backlog.slice(0, third));
    const lateBacklog = meanOf(backlog.slice(-third));
    // Not growing: the last third's backlog within a second of events of the first third's.
    const growing = lateBacklog > earlyBacklog + RATE;
    // What the pipeline finished while the load was offered (until the last answer), per second.
    const aggregationRate = aggregatedAtEnd / answeredSeconds;
    // Every 20th event is a sample; at most MAX_READ_BACK of them, evenly
    // spaced over the window, are read back (a five-minute window's archived
    // events would otherwise take longer to read than the run).
    const { endToEnd, notAggregated } = await readBackLatency(base, samples, MAX_READ_BACK);
    const p50 = quantile(endToEnd, 0.5);
    const p99 = quantile(endToEnd, 0.99);

    // Events per second in each 5-s sampling interval, so that the ingestion
    // rate and the pipeline's can be read side by side as the tables grow.
    const perInterval = (value: (row: (typeof backlog)[number]) => number) =>
      backlog
        .map((row, index) => {
          const previous = index === 0 ? 0 : value(backlog[index - 1]!);
          const seconds = row.second - (index === 0 ? 0 : backlog[index - 1]!.second);
          return ((value(row) - previous) / Math.max(1, seconds)).toFixed(0);
        })
        .join(", ");

    const ingestionTarget = atLeast(eventsPerSecond, TARGETS.eventsPerSecond, " events/s");
    const aggregationTarget = atLeast(aggregationRate / offered, TARGETS.aggregation);
    const p99Target = below(
      notAggregated === 0 ? p99 : Number.POSITIVE_INFINITY,
      TARGETS.p99Ms,
      " ms",
    );
    const backlogTarget = condition("not growing", !growing);
    const exactTarget = condition("exact", exact && aggregatedFinal === acceptedUnits);
    // "The pipeline keeps up at the ingestion rate", criterion by criterion.
    const criteria: [string, boolean, string][] = [
      FIXED_RATE === undefined
        ? [
            `ingestion saturated for ${SUSTAIN_SECONDS} s (offered = what ingestion accepts)`,
            answeredSeconds >= SUSTAIN_SECONDS && sustainedFailures === 0,
            `${offered.toFixed(0)} events/s for ${answeredSeconds.toFixed(1)} s, ${sustainedFailures} failed requests; ${(offered / eventsPerSecond).toFixed(2)}x the ${SECONDS}-s burst's rate, with ${storedAtStart} -> ${storedAtStart + acceptedUnits} events stored`,
          ]
        : [
            `offered BENCH_RATE=${RATE} events/s`,
            offered >= 0.95 * RATE,
            `${offered.toFixed(0)} events/s (${(offered / RATE).toFixed(2)}x)`,
          ],
      [
        "every offered event accepted",
        acceptedUnits === offeredEvents,
        `${acceptedUnits} of ${offeredEvents}`,
      ],
      [
        `aggregation keeps up with ingestion (${aggregationTarget.label})`,
        aggregationTarget.met,
        `${aggregationRate.toFixed(0)} events/s = ${(aggregationRate / offered).toFixed(2)}x the ingestion rate while ingesting; caught up ${tailSeconds.toFixed(1)} s after the last answer`,
      ],
      [
        "backlog not growing",
        backlogTarget.met,
        `first third ${earlyBacklog.toFixed(0)}, last third ${lateBacklog.toFixed(0)} events`,
      ],
      [
        `202 -> AGGREGATED p99 < ${TARGETS.p99Ms} ms`,
        p99Target.met,
        `p99 ${p99.toFixed(0)} ms over ${endToEnd.length} sampled events, ${notAggregated} not aggregated`,
      ],
      [
        "aggregates exactly equal the accepted units",
        exactTarget.met,
        `${aggregatedFinal} of ${acceptedUnits} units after the sustained load; bursts${long ? " and fill" : ""} ${exact ? "exact" : "NOT exact"}`,
      ],
    ];
    // Long mode: raw events/s at each point, judged burst against burst and
    // segment against segment, the external baseline printed beside them.
    const longReport =
      long && baselineStart
        ? longModeReport({
            run: long,
            first: { stored: firstStored, burst: first },
            firstName: `first ${SECONDS}-s burst, ${WARMUP_SECONDS > 0 ? `after a ${WARMUP_SECONDS}-s warm-up` : "fresh stack"}`,
            firstTarget: ingestionTarget,
            burstSeconds: SECONDS,
            target: STORED_EVENTS ?? 0,
            baselineStart,
          })
        : undefined;
    criteria.push(...(longReport?.criteria ?? []));
    // The metered scenario against the plain load: after the sustained
    // window, so that its bursts' events do not change the log the
    // sustained figures (and their latency target) are measured on.
    let comparison: MeteredComparison | undefined;
    if (METERED_ROUNDS > 0) {
      log(
        `metered: ${METERED_ROUNDS} pairs of ${METERED_SECONDS}-s bursts, plain and metered (3 properties, SUM of tokens by model and direction), ABBA order`,
      );
      comparison = await compareMetered({
        base,
        keys,
        seconds: METERED_SECONDS,
        rounds: METERED_ROUNDS,
        plain: plainLoad,
        metered,
        log,
        settleSeconds: 75,
      });
    }
    const holds = criteria.every(([, ok]) => ok);
    const meteredReport = comparison
      ? meteredSummary(comparison, { clients: CLIENTS, batch: BATCH, seconds: METERED_SECONDS })
      : undefined;

    const ms = (value: number) => `${value.toFixed(0)} ms`;
    process.stdout.write(
      `\nUsage pipeline benchmark (${process.arch}, Node ${process.version}; one stack, one run)\n\n` +
        (reference ? inProcessText(reference) : "") +
        `ingestion       ${CLIENTS} clients x ${BATCH}-event batches, ${ingestSeconds.toFixed(1)} s, pipeline running: ${accepted} events accepted, ${first.failures} failed requests\n` +
        `                ${eventsPerSecond.toFixed(0)} events/s accepted (target ${ingestionTarget.label}: ${verdict(ingestionTarget)})\n` +
        (reference ? inProcessBurstText(reference, first) : "") +
        `                request p50 ${ms(quantile(latencies, 0.5))}, p99 ${ms(quantile(latencies, 0.99))}\n` +
        `drain           pipeline caught up ${first.drainSeconds.toFixed(1)} s after the last batch; aggregates ${exact ? "exactly equal" : "DO NOT equal"} the accepted units; pipeline ~${first.pipelineRate.toFixed(0)} events/s end to end = ${(first.pipelineRate / eventsPerSecond).toFixed(2)} x ingestion\n` +
        (meteredReport?.text ?? "") +
        (BURSTS > 1
          ? `bursts          ${BURSTS} x ${SECONDS} s, ${ORDERED_IDS ? "time-ordered" : "random"} eventIds, events/s as the tables grow: ${bursts.map((result) => result.eventsPerSecond.toFixed(0)).join(", ")} (pipeline caught up within ${Math.max(...bursts.map((result) => result.drainSeconds)).toFixed(1)} s of each)\n`
          : "") +
        (longReport?.text ?? "") +
        `sustained       ${shape}, ${SUSTAIN_SECONDS} s, pipeline running: ${offered.toFixed(0)} events/s accepted (${(offered / eventsPerSecond).toFixed(2)} x the burst${reference ? `; ${(offered / reference.liveRps).toFixed(2)} events per baseline request` : ""}); ${acceptedUnits} accepted, ${sustainedFailures} failed requests; request p50 ${ms(quantile(sustainedLatencies, 0.5))}, p99 ${ms(quantile(sustainedLatencies, 0.99))}\n` +
        `                events stored before / after: ${storedAtStart} / ${storedAtStart + acceptedUnits}\n` +
        `                per 5 s, accepted: ${perInterval((row) => row.accepted)}\n` +
        `                per 5 s, aggregated: ${perInterval((row) => row.aggregated)}\n` +
        `                backlog (accepted, not yet aggregated) every 5 s: ${backlog.map((row) => row.events).join(", ")}\n` +
        `                first third mean ${earlyBacklog.toFixed(0)}, last third mean ${lateBacklog.toFixed(0)}: ${growing ? "GROWING" : "not growing"}\n` +
        `                aggregated while offered: ${aggregationRate.toFixed(0)} events/s = ${(aggregationRate / offered).toFixed(2)} x offered; the rest caught up ${tailSeconds.toFixed(1)} s after the last answer\n` +
        `                202 -> AGGREGATED p50 ${ms(p50)}, p99 ${ms(p99)}, max ${ms(Math.max(...endToEnd))} over ${endToEnd.length} sampled events, ${notAggregated} not aggregated\n` +
        `\nverdict (the pipeline keeps up at the ingestion rate)\n` +
        criteria
          .map(
            ([name, ok, detail]) =>
              `  ${ok ? "PASS" : "FAIL"}  ${name}${detail ? `: ${detail}` : ""}\n`,
          )
          .join("") +
        (FIXED_RATE === undefined
          ? `  => ${holds ? "HOLDS" : "DOES NOT HOLD"} in this run\n`
          : `  => ${holds ? "holds" : "does NOT hold"} at BENCH_RATE=${FIXED_RATE}; the acceptance point is judged at the measured rate (run without BENCH_RATE)\n`),
    );
    const sustainedBaseline = `the sustained ingestion rate, ${count(offered)} events/s`;
    const [sustainedName, sustainedOk] = criteria[0]!;
    const rows: BenchmarkRow[] = [
      ...(reference
        ? inProcessRows(
            reference,
            first,
            `ingestion burst: ${CLIENTS} clients posting ${count(BATCH)}-event batches for ${SECONDS} s`,
            ingestionTarget,
          )
        : []),
      ...(longReport?.rows ?? []),
      {
        benchmark: "pipeline after the burst (ingestion to aggregates, end to end)",
        figure: `${count(first.pipelineRate)} events/s; caught up ${first.drainSeconds.toFixed(1)} s after the last batch`,
        ratio: times(first.pipelineRate / eventsPerSecond),
        baseline: `the burst's ingestion rate, ${count(eventsPerSecond)} events/s`,
      },
      ...(meteredReport?.rows ?? []),
      {
        benchmark: `sustained: ${shape}, ${SUSTAIN_SECONDS} s`,
        figure: `${count(offered)} events/s accepted, ${count(acceptedUnits)} of ${count(offeredEvents)} offered events; ${sustainedFailures} failed requests`,
        ratio: times(offered / eventsPerSecond),
        baseline: `the burst's ingestion rate, ${count(eventsPerSecond)} events/s`,
        target: condition(
          FIXED_RATE === undefined
            ? "saturated for the whole run, no failed request"
            : sustainedName,
          sustainedOk && acceptedUnits === offeredEvents,
        ),
      },
      {
        benchmark: "aggregation while ingesting (sustained)",
        figure: `${count(aggregationRate)} events/s; caught up ${tailSeconds.toFixed(1)} s after the last answer`,
        ratio: times(aggregationRate / offered),
        baseline: sustainedBaseline,
        target: aggregationTarget,
      },
      {
        benchmark: "backlog (accepted, not yet aggregated), sampled every 5 s",
        figure: `first third ${count(earlyBacklog)}, last third ${count(lateBacklog)} events`,
        target: backlogTarget,
      },
      {
        benchmark: "202 -> AGGREGATED, every 20th event (sustained)",
        figure: `p50 ${count(p50)} ms, p99 ${count(p99)} ms over ${count(endToEnd.length)} events; ${notAggregated} not aggregated`,
        target: p99Target,
      },
      {
        benchmark: "aggregates against accepted units",
        figure: `${count(aggregatedFinal)} of ${count(acceptedUnits)} units (sustained); bursts${long ? " and fill" : ""} ${exact ? "exact" : "NOT exact"}`,
        target: exactTarget,
      },
    ];
    report.record({
      title: "Usage: ingestion and aggregation",
      method:
        "One stack (billing and usage-consumer in one `wrangler dev`, real D1, Queues and Durable Objects, log level warn), " +
        `${CLIENTS} tenants on the Pro plan, one client each. ` +
        (STORED_EVENTS === undefined
          ? `Baseline: autocannon, ${BASELINE_CONNECTIONS} connections, ${SECONDS} s. `
          : longModeMethod({
              burstSeconds: SECONDS,
              target: STORED_EVENTS,
              connections: BASELINE_CONNECTIONS,
            })) +
        `Burst: the clients post ${count(BATCH)}-event batches back to back for ${SECONDS} s${BURSTS > 1 ? ` (${BURSTS} bursts; the first is the figure)` : ""}, then the pipeline drains and the aggregates are compared with what was accepted. ` +
        (comparison
          ? `Metered, after the sustained window and 75 s for its archive work to settle: ${METERED_ROUNDS} pairs of ${METERED_SECONDS}-s bursts of the same load by the same clients, one plain (as the burst) and one whose events each carry \`model\` (4 values), \`direction\` (input, output) and \`tokens\` (a whole number) for a feature on Pro with api_calls' terms whose meter is SUM of \`tokens\` grouped by model and direction; plain, metered, metered, plain (so the log's growth falls on both alike), each drained and checked, then the aggregates per group and the counter's \`used\` against the tokens sent; the ratio is the median of the pairs' ratios. `
          : "") +
        `Sustained: ${FIXED_RATE === undefined ? "the same clients post back to back" : `BENCH_RATE=${RATE} events/s on a fixed schedule`} for ${SUSTAIN_SECONDS} s while the pipeline runs; the backlog is sampled every 5 s; ` +
        "latency is the server's `aggregatedAt` minus the moment the client received the 202 (one machine, one clock). " +
        `${ORDERED_IDS ? "Time-ordered" : "Random (UUID v4)"} eventIds.`,
      rows,
      notes: [
        `Events stored before / after the sustained load: ${count(storedAtStart)} / ${count(storedAtStart + acceptedUnits)}; the sustained rate against the burst's shows whether ingestion slows as the log grows under random ids (see [capacity](capacity.md)).`,
        `The pipeline ${holds ? "keeps" : "does NOT keep"} up at the ingestion rate in this run${FIXED_RATE === undefined ? "" : ` at BENCH_RATE=${FIXED_RATE}`}: the sustained, aggregation, backlog, latency and exact-totals targets${longReport ? " and the long run's rate targets" : ""} are ${holds ? "all met" : "not all met"}.`,
        ...(longReport?.notes ?? []),
      ],
    });
    // The ratios are targets; metered totals that differ are a failure like the plain ones.
    if (!holds || meteredReport?.exact === false) process.exitCode = 1;
  } catch (error) {
    // What the stack printed last usually says why a request failed.
    process.stderr.write(
      `[bench:usage] the stack's last output:\n${stack.output().slice(-4000)}\n`,
    );
    throw error;
  } finally {
    log("stopping the stack");
    await stack.stop();
  }
}

main().catch((error: unknown) => {
  process.stderr.write(
    `[bench:usage] failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
  );
  process.exitCode = 1;
});
