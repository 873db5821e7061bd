/**
 * The usage benchmark's metered scenario: the plain burst's load (the same
 * tenants, clients, batch size and duration, posted back to back), but
 * every event carries three properties (`model`, one of four; `direction`,
 * input or output; `tokens`, a whole number) and reports a feature whose
 * meter is SUM of `tokens` grouped by model and direction, so the tenant's
 * counter folds each event into one of eight groups and its flush writes
 * them to D1 (`usage_meter_groups`). Ingestion and aggregation are each
 * compared with the plain load's in the same run (target >= 0.9x).
 */
import { atLeast, type BenchmarkRow, condition, count, times, verdict } from "./benchmarks-doc.ts";
import { send as adminSend, adminToken } from "./billing-setup.ts";
import { quantile } from "./report.ts";

const median = (values: readonly number[]) => quantile([...values], 0.5);

import {
  type BurstResult,
  drained,
  type LoadShape,
  measuredBurst,
  send,
  type UsageEvent,
} from "./usage-load.ts";

export const METER_MODELS = ["small", "medium", "large", "xlarge"] as const;
export const METER_DIRECTIONS = ["input", "output"] as const;
export const TOKENS_METER = {
  aggregation: "SUM",
  property: "tokens",
  groupBy: ["model", "direction"],
} as const;
/** Metered events/s (ingestion and aggregation) as a ratio of the plain load's in the same run. */
export const METERED_TARGET = 0.9;

export type Scenario = "plain" | "metered";

/**
 * The properties of a batch's `index`-th event: the eight groups in turn,
 * tokens a whole number from 1 to 997 (a SUM of whole numbers is exact, so
 * the counter's `used` and the aggregates can be compared with what was sent).
 */
export function meteredProperties(index: number): {
  model: string;
  direction: string;
  tokens: number;
} {
  const models = METER_MODELS.length;
  return {
    model: METER_MODELS[index % models]!,
    direction: METER_DIRECTIONS[Math.floor(index / models) % METER_DIRECTIONS.length]!,
    tokens: 1 + ((index * 37) % 997),
  };
}

/** A group's key as this module writes it: `model/direction`. */
export function groupKey(dimensions: Record<string, unknown> | null | undefined): string {
  return `${String(dimensions?.model ?? "")}/${String(dimensions?.direction ?? "")}`;
}

/** Adds each event's tokens to its group's total. */
export function addGroupTokens(totals: Map<string, number>, events: UsageEvent[]): void {
  for (const event of events) {
    const tokens = Number(event.properties?.tokens ?? 0);
    const key = groupKey(event.properties);
    totals.set(key, (totals.get(key) ?? 0) + tokens);
  }
}

/**
 * Where the aggregates split by model and direction differ from the tokens
 * sent: one line per group ("small/input: 120 of 130"), none when equal.
 * Rows of several windows of a group add up.
 */
export function groupMismatches(
  expected: ReadonlyMap<string, number>,
  rows: { dimensions: Record<string, unknown> | null; amount: number }[],
): string[] {
  const counted = new Map<string, number>();
  for (const row of rows) {
    const key = groupKey(row.dimensions);
    counted.set(key, (counted.get(key) ?? 0) + row.amount);
  }
  const keys = [...new Set([...expected.keys(), ...counted.keys()])].sort();
  return keys
    .filter((key) => (counted.get(key) ?? 0) !== (expected.get(key) ?? 0))
    .map((key) => `${key}: ${counted.get(key) ?? 0} of ${expected.get(key) ?? 0}`);
}

/**
 * The order of the bursts: plain, metered, then metered, plain, and so on
 * (ABBA). Every burst adds to the stored log, and ingestion slows a little
 * as it grows; in this order both scenarios sit at the same mean position,
 * so a steady drift falls on both alike.
 */
export function pairedOrder(rounds: number): Scenario[] {
  return Array.from({ length: Math.max(0, rounds) }, (_, round): Scenario[] =>
    round % 2 === 0 ? ["plain", "metered"] : ["metered", "plain"],
  ).flat();
}

/** Events per second over several bursts: all their events over all their time. */
export function overallRate(
  results: readonly Pick<BurstResult, "accepted" | "ingestSeconds" | "drainSeconds">[],
  measure: "ingestion" | "pipeline",
): number {
  const events = results.reduce((sum, result) => sum + result.accepted, 0);
  const seconds = results.reduce(
    (sum, result) =>
      sum + result.ingestSeconds + (measure === "pipeline" ? result.drainSeconds : 0),
    0,
  );
  return seconds > 0 ? events / seconds : Number.NaN;
}

/**
 * The metered feature, granted to `planId` with the plain feature's terms
 * (so the two differ in their meter only). Before the tenants subscribe:
 * a subscription keeps the entitlements its plan had when it started.
 */
export async function grantMeteredFeature(
  base: string,
  planId: string,
  run: string,
  terms: Record<string, unknown>,
): Promise<string> {
  const admin = await adminToken(base);
  const lookupKey = `bench_tokens_${run}`;
  const feature = await adminSend(base, "/features", {
    token: admin,
    body: { name: "Bench tokens", lookupKey, type: "METERED", unit: "token", meter: TOKENS_METER },
  });
  await adminSend(base, `/plans/${planId}/entitlements`, {
    token: admin,
    body: { featureId: feature.id, ...terms },
  });
  return lookupKey;
}

/** The metered load on `feature`, keeping each client's total per group of what was accepted. */
export function meteredLoad(
  feature: string,
  clients: number,
  batch: (feature: string) => UsageEvent[],
) {
  const totals = Array.from({ length: clients }, () => new Map<string, number>());
  const shape: LoadShape = {
    batch: () => batch(feature),
    units: (event) => Number(event.properties?.tokens ?? 0),
    onAccepted: (client, events) => addGroupTokens(totals[client]!, events),
  };
  const sum = (client: number) => [...(totals[client]?.values() ?? [])].reduce((a, b) => a + b, 0);
  return { feature, shape, totals, sum };
}

export type MeteredLoad = ReturnType<typeof meteredLoad>;

export interface MeteredComparison {
  plain: BurstResult[];
  metered: BurstResult[];
  /** Per pair of bursts (one round), metered events/s over plain. */
  pairRatios: number[];
  /** The same of the pipeline's rate (ingestion to aggregates). */
  pipelinePairRatios: number[];
  /** Groups whose aggregates differ from the tokens sent, per tenant ("tenant 2, small/input: ..."). */
  groupProblems: string[];
  /** Tenants whose counter `used` differs from the tokens sent. */
  counterProblems: string[];
}

/**
 * `rounds` pairs of bursts, plain and metered in ABBA order, each drained
 * and checked before the next; then each tenant's aggregates split by
 * model and direction and its counter's `used` against the tokens sent.
 */
export async function compareMetered(options: {
  base: string;
  keys: string[];
  seconds: number;
  rounds: number;
  plain: LoadShape;
  metered: MeteredLoad;
  log: (line: string) => void;
  /** Quiet seconds before the first pair: the work a load before leaves behind (archive files) settles. */
  settleSeconds?: number;
}): Promise<MeteredComparison> {
  const { base, keys, seconds, metered, log } = options;
  if (options.settleSeconds) {
    log(
      `metered: waiting ${options.settleSeconds} s for the earlier load's archive work to settle`,
    );
    await new Promise((resolve) => setTimeout(resolve, (options.settleSeconds ?? 0) * 1000));
  }
  // The warm-up's metered batches must be counted before the first burst reads its starting point.
  const warmed = keys.map((_, client) => metered.sum(client));
  if (
    !(await drained(
      base,
      keys,
      keys.map(() => 0),
      warmed,
      metered.feature,
    ))
  ) {
    throw new Error("metered warm-up: the pipeline did not count it within 300 s");
  }
  const results: Record<Scenario, BurstResult[]> = { plain: [], metered: [] };
  for (const scenario of pairedOrder(options.rounds)) {
    const result =
      scenario === "plain"
        ? await measuredBurst(base, keys, seconds, options.plain)
        : await measuredBurst(base, keys, seconds, metered.shape, metered.feature);
    results[scenario].push(result);
    log(
      `${scenario} burst: ${result.eventsPerSecond.toFixed(0)} events/s, pipeline caught up ${result.drainSeconds.toFixed(1)} s after it, ${result.exact ? "exact" : "NOT exact"}`,
    );
  }
  const pairRatios = results.metered.map(
    (result, round) =>
      result.eventsPerSecond / (results.plain[round]?.eventsPerSecond ?? Number.NaN),
  );
  const pipelinePairRatios = results.metered.map(
    (result, round) => result.pipelineRate / (results.plain[round]?.pipelineRate ?? Number.NaN),
  );
  const groupProblems: string[] = [];
  const counterProblems: string[] = [];
  await Promise.all(
    keys.map(async (key, client) => {
      const rows = (
        await send(base, `/usage/aggregates?feature=${metered.feature}&groupBy=model,direction`, {
          token: key,
        })
      ).data;
      for (const line of groupMismatches(metered.totals[client]!, rows)) {
        groupProblems.push(`tenant ${client + 1}, ${line}`);
      }
      const used = (await send(base, `/entitlements/${metered.feature}/check`, { token: key }))
        .used as number;
      if (used !== metered.sum(client)) {
        counterProblems.push(`tenant ${client + 1}: used ${used} of ${metered.sum(client)} tokens`);
      }
    }),
  );
  return { ...results, pairRatios, pipelinePairRatios, groupProblems, counterProblems };
}

/** What the run prints and records of the comparison: console lines and the doc's rows. */
export function meteredSummary(
  comparison: MeteredComparison,
  load: { clients: number; batch: number; seconds: number },
) {
  const plainRate = overallRate(comparison.plain, "ingestion");
  const meteredRate = overallRate(comparison.metered, "ingestion");
  const plainPipeline = overallRate(comparison.plain, "pipeline");
  const meteredPipeline = overallRate(comparison.metered, "pipeline");
  // The median of the pairs' ratios: one burst disturbed by something else
  // (a GC, an archive run) moves it less than it moves the totals.
  const ingestionRatio = median(comparison.pairRatios);
  const aggregationRatio = median(comparison.pipelinePairRatios);
  const ingestion = atLeast(ingestionRatio, METERED_TARGET);
  const aggregation = atLeast(aggregationRatio, METERED_TARGET);
  const bursts = comparison.plain.length + comparison.metered.length;
  const exact =
    [...comparison.plain, ...comparison.metered].every((result) => result.exact) &&
    comparison.groupProblems.length === 0 &&
    comparison.counterProblems.length === 0;
  const failures = [...comparison.plain, ...comparison.metered].reduce(
    (sum, result) => sum + result.failures,
    0,
  );
  const shape = `${load.clients} clients x ${count(load.batch)}-event batches, ${comparison.metered.length} x ${load.seconds} s each, ABBA order`;
  const problems = [...comparison.groupProblems, ...comparison.counterProblems];
  const latencies = comparison.metered.flatMap((result) => result.latencies);
  const text =
    `metered         ${shape}: ${count(meteredRate)} events/s accepted with 3 properties (SUM of tokens by model, direction) vs ${count(plainRate)} plain; median of the pairs ${ingestionRatio.toFixed(2)} x (target ${ingestion.label}: ${verdict(ingestion)}); per pair ${comparison.pairRatios.map((ratio) => ratio.toFixed(2)).join(", ")}\n` +
    `                aggregation (ingestion to aggregates): ${count(meteredPipeline)} vs ${count(plainPipeline)} events/s; median of the pairs ${aggregationRatio.toFixed(2)} x (per pair ${comparison.pipelinePairRatios.map((ratio) => ratio.toFixed(2)).join(", ")}; target ${aggregation.label}: ${verdict(aggregation)}); ${failures} failed requests over ${bursts} bursts\n` +
    `                totals: ${exact ? "exact" : "NOT exact"} (aggregates per burst; per model and direction; the counter's used = tokens sent)${problems.length > 0 ? `: ${problems.slice(0, 8).join("; ")}` : ""}\n`;
  const plainBaseline = (rate: number) =>
    `plain events (no properties, SUM of amount), same tenants, ${count(rate)} events/s`;
  const rows: BenchmarkRow[] = [
    {
      benchmark: `metered ingestion: the burst's load with 3 properties per event on a SUM-of-tokens meter grouped by model and direction (${shape})`,
      figure: `${count(meteredRate)} events/s; request p50 ${count(quantile(latencies, 0.5))} ms, p99 ${count(quantile(latencies, 0.99))} ms`,
      ratio: times(ingestionRatio),
      baseline: `${plainBaseline(plainRate)}; the median of the pairs' ratios (${comparison.pairRatios.map((ratio) => ratio.toFixed(2)).join(", ")})`,
      target: ingestion,
    },
    {
      benchmark: "metered aggregation (ingestion to aggregates, end to end)",
      figure: `${count(meteredPipeline)} events/s; caught up within ${Math.max(...comparison.metered.map((result) => result.drainSeconds)).toFixed(1)} s of each burst`,
      ratio: times(aggregationRatio),
      baseline: `${plainBaseline(plainPipeline)}; the median of the pairs' ratios (${comparison.pipelinePairRatios.map((ratio) => ratio.toFixed(2)).join(", ")})`,
      target: aggregation,
    },
    {
      benchmark: "metered totals: aggregates, per model and direction, and the counter's `used`",
      figure: exact ? "equal to the tokens accepted" : `NOT equal: ${problems.length} differences`,
      target: condition("exact", exact),
    },
  ];
  return { text, rows, exact };
}
