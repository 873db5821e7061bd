/**
 * The usage benchmark's short-run reference (bench/usage.ts): GET
 * /health/live (the worker answers, no I/O) and GET /health (readiness: a
 * D1 read and a Durable Object call), measured on the stack itself, and the
 * burst's figures against them. The long run uses a baseline outside the
 * stack's process instead (bench/lib/external-baseline.ts).
 */
import { type AutocannonResult, autocannon } from "./autocannon.ts";
import { type BenchmarkRow, count, type Target, times } from "./benchmarks-doc.ts";
import { quantile } from "./report.ts";
import type { BurstResult } from "./usage-load.ts";

export interface InProcessBaseline {
  live: AutocannonResult;
  liveRps: number;
  health: AutocannonResult;
  healthRps: number;
  connections: number;
}

/** GET /health/live, then GET /health, each with `connections` for `seconds`. */
export async function inProcessBaseline(
  base: string,
  options: { seconds: number; connections: number; log: (line: string) => void },
): Promise<InProcessBaseline> {
  const { seconds, connections } = options;
  options.log(
    `baseline: autocannon GET /health/live, then GET /health, ${connections} connections, ${seconds} s`,
  );
  const live = await autocannon({ url: `${base}/health/live`, connections, duration: seconds });
  const health = await autocannon({ url: `${base}/health`, connections, duration: seconds });
  return {
    live,
    liveRps: live.requests.total / seconds,
    health,
    healthRps: health.requests.total / seconds,
    connections,
  };
}

/** The console lines of the two references. */
export function inProcessText({
  live,
  liveRps,
  health,
  healthRps,
  connections,
}: InProcessBaseline) {
  return (
    `baseline        GET /health/live (no I/O): ${liveRps.toFixed(0)} req/s (p50 ${live.latency.p50} ms, p99 ${live.latency.p99} ms, ${connections} connections)\n` +
    `readiness       GET /health (D1 + DO): ${healthRps.toFixed(0)} req/s = ${(healthRps / liveRps).toFixed(2)} x baseline (p50 ${health.latency.p50} ms, p99 ${health.latency.p99} ms)\n`
  );
}

/** The burst against the reference, as the console prints it. */
export function inProcessBurstText(reference: InProcessBaseline, first: BurstResult): string {
  const { liveRps, healthRps } = reference;
  return `                ${first.batchRps.toFixed(1)} batch requests/s = ${(first.batchRps / liveRps).toFixed(4)} x baseline req/s; ${(first.eventsPerSecond / liveRps).toFixed(2)} events per baseline request (${(first.eventsPerSecond / healthRps).toFixed(2)} per GET /health)\n`;
}

/** The doc's rows: the two references and the burst (`burstName`) against the first. */
export function inProcessRows(
  { live, liveRps, healthRps }: InProcessBaseline,
  first: BurstResult,
  burstName: string,
  target: Target,
): BenchmarkRow[] {
  const liveBaseline = `\`GET /health/live\` (no I/O), ${count(liveRps)} req/s`;
  return [
    {
      benchmark: "`GET /health/live` (baseline: the worker answers with no I/O)",
      figure: `${count(liveRps)} req/s; p50 ${live.latency.p50} ms, p99 ${live.latency.p99} ms`,
    },
    {
      benchmark: "`GET /health` (readiness: a D1 read and a Durable Object call)",
      figure: `${count(healthRps)} req/s`,
      ratio: times(healthRps / liveRps),
      baseline: liveBaseline,
    },
    {
      benchmark: burstName,
      figure: `${count(first.eventsPerSecond)} events/s; request p50 ${count(quantile(first.latencies, 0.5))} ms, p99 ${count(quantile(first.latencies, 0.99))} ms`,
      ratio: `${(first.eventsPerSecond / liveRps).toFixed(1)} events per baseline request`,
      baseline: liveBaseline,
      target,
    },
  ];
}
