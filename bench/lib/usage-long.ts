/**
 * The usage benchmark's long mode (bench/usage.ts with BENCH_STORED_EVENTS=N):
 * whether ingestion holds its rate as the stored log grows, in raw events/s
 * at each point of the fill.
 *
 * After the first burst (on the fresh stack, measured by bench/usage.ts), the
 * clients post back to back until the warm point (250,000 events stored,
 * less for a small N: see `fillPlan`), the pipeline drains, and a burst of
 * the same length as the first is measured there, once the archive files the
 * fill left are written (ARCHIVE_QUIET_SECONDS: each burst measures
 * ingestion at its stored count, not the archive catching up with the load
 * before it; the fill's segments carry the archive's steady work, and start
 * after its lead-in, LEAD_IN_SECONDS). Then the clients fill on
 * to N without a pause, the time at which each segment boundary is passed
 * recorded, so each segment's rate is the events it took over the seconds
 * it took; the pipeline drains and the totals are checked; the external
 * baseline is measured again; and after the same quiet wait a last burst of
 * the same length is measured after N stored.
 *
 * Judged in raw events/s, never divided by a baseline: the burst after N
 * against the warm burst (at least 0.9x), and each fill segment against the
 * first (at least 0.85x). The external baseline (a no-I/O Node server in a
 * process of its own, bench/lib/external-baseline.ts), measured at the start
 * and before the last burst, is printed beside them: it shows how the
 * machine's speed drifted meanwhile, outside the process under test.
 */
import { performance } from "node:perf_hooks";
import {
  atLeast,
  type BenchmarkRow,
  condition,
  count,
  type Target,
  times,
} from "./benchmarks-doc.ts";
import { EXTERNAL_BASELINE_NAME, type ExternalBaseline } from "./external-baseline.ts";
import { table } from "./report.ts";
import {
  aggregatedUnits,
  type BurstResult,
  drained,
  type LoadShape,
  measuredBurst,
  postBatch,
} from "./usage-load.ts";

export const LONG_TARGETS = {
  /** The burst after N stored against the warm burst, raw events/s. */
  afterStored: 0.9,
  /** Each fill segment against the first, raw events/s. */
  segment: 0.85,
};

/**
 * Seconds without load before each measured burst: the files the load left
 * come due as their events settle (60 s after they finished), and a shard's
 * alarm that found no full file waits that long again before it looks, so
 * the last of them are written up to two settle times after the load
 * stopped; then a margin for the writes.
 */
export const ARCHIVE_QUIET_SECONDS = 150;

/**
 * Seconds of the fill after the warm burst before its first segment
 * starts: the archive files of the fill's first events come due a settle
 * time (60 s) after they finished, so until then the stack does less work
 * per event than for the rest of the fill. Posted, printed, not judged.
 */
export const LEAD_IN_SECONDS = 90;

/** Where the warm burst is measured, unless N is under twice as many. */
export const WARM_STORED = 250_000;
/** Segment sizes, largest first: the first that gives MIN_SEGMENTS is used. */
export const SEGMENT_SIZES = [500_000, 250_000, 100_000, 50_000, 25_000, 10_000];
export const MIN_SEGMENTS = 4;

export interface FillPlan {
  /** Events stored when the warm burst starts (at least; more if the first burst already stored more). */
  warmStored: number;
  /** The fill's segment boundaries are the multiples of this between the warm burst and N. */
  segmentSize: number;
}

/**
 * The warm point and the segment size for N stored. The warm point is
 * 250,000, or half of N (rounded down to 10,000, at least 10,000) when N
 * is under 500,000. The segment size is the largest of 500,000, 250,000,
 * 100,000, 50,000, 25,000 and 10,000 that cuts the fill from the warm
 * point to N into at least four segments: 500,000 from N = 2,000,000 up
 * (3,000,000: 0.25M -> 0.5M, -> 1.0M, ... -> 3.0M), 250,000 at 1,500,000,
 * 100,000 for 600,000 to 1,000,000, 25,000 at 300,000.
 */
export function fillPlan(target: number): FillPlan {
  const half = Math.floor(target / 2 / 10_000) * 10_000;
  const warmStored = Math.max(10_000, Math.min(WARM_STORED, half));
  const segmentSize =
    SEGMENT_SIZES.find((size) => segmentEnds(warmStored, target, size).length >= MIN_SEGMENTS) ??
    SEGMENT_SIZES[SEGMENT_SIZES.length - 1]!;
  return { warmStored, segmentSize };
}

/**
 * The ends of the fill's segments from `start` stored: each multiple of
 * `size` above `start` and below `target`, then `target`. A first segment
 * shorter than a quarter of `size` (the warm burst ended just before a
 * boundary) is joined to the next. None when `start` is already `target`.
 */
export function segmentEnds(start: number, target: number, size: number): number[] {
  if (start >= target) return [];
  const ends: number[] = [];
  for (let end = (Math.floor(start / size) + 1) * size; end < target; end += size) ends.push(end);
  ends.push(target);
  if (ends.length > 1 && ends[0]! - start < size / 4) ends.shift();
  return ends;
}

/** The moment a segment boundary was passed: `stored` is the count then (a batch may pass `end`). */
export interface FillMark {
  end: number;
  stored: number;
  /** performance.now(), ms. */
  at: number;
}

export interface FillSegment {
  /** The boundaries, as planned (the labels). */
  from: number;
  to: number;
  /** Events accepted between the two marks, and the seconds between them. */
  events: number;
  seconds: number;
  eventsPerSecond: number;
}

/** One segment per pair of consecutive marks (the first mark is the fill's start). */
export function segmentRates(marks: FillMark[]): FillSegment[] {
  return marks.slice(1).map((mark, index) => {
    const previous = marks[index]!;
    const seconds = (mark.at - previous.at) / 1000;
    const events = mark.stored - previous.stored;
    return {
      from: previous.end,
      to: mark.end,
      events,
      seconds,
      eventsPerSecond: seconds > 0 ? events / seconds : Number.NaN,
    };
  });
}

export interface LongJudgment {
  /** The burst after N over the warm burst, raw events/s. */
  afterStoredRatio: number;
  afterStored: Target;
  /** Each segment over the first (the first's is 1). */
  segmentRatios: number[];
  segments: Target;
  /** The index of the lowest ratio (-1 with no segment). */
  lowest: number;
}

/** The long run's two rate targets, in raw events/s. */
export function judgeLongRun(rates: {
  warmBurst: number;
  afterStored: number;
  segments: number[];
}): LongJudgment {
  const afterStoredRatio = rates.afterStored / rates.warmBurst;
  const first = rates.segments[0] ?? Number.NaN;
  const segmentRatios = rates.segments.map((rate) => rate / first);
  let lowest = -1;
  segmentRatios.forEach((ratio, index) => {
    if (lowest === -1 || !(ratio >= segmentRatios[lowest]!)) lowest = index;
  });
  return {
    afterStoredRatio,
    afterStored: atLeast(afterStoredRatio, LONG_TARGETS.afterStored),
    segmentRatios,
    segments: condition(
      `each >= ${LONG_TARGETS.segment}× the first`,
      segmentRatios.length > 0 && segmentRatios.every((ratio) => ratio >= LONG_TARGETS.segment),
    ),
    lowest,
  };
}

export interface LongContext {
  base: string;
  keys: string[];
  /** N: events stored before the last burst. */
  target: number;
  /** Each burst's length (the first burst's too). */
  burstSeconds: number;
  /** The bursts' and the fill's load. */
  load: LoadShape;
  log: (line: string) => void;
  /** The external baseline, measured anew. */
  baseline: () => Promise<ExternalBaseline>;
  /** Seconds without load before each measured burst (ARCHIVE_QUIET_SECONDS unless given). */
  quietSeconds?: number;
  /** Seconds of the fill before its first segment (LEAD_IN_SECONDS unless given). */
  leadInSeconds?: number;
}

export interface FillResult {
  marks: FillMark[];
  /** The fill's first seconds, before the segments: posted, not judged (see LEAD_IN_SECONDS). */
  leadIn?: { events: number; seconds: number };
  accepted: number;
  failures: number;
  seconds: number;
  exact: boolean;
  drainSeconds: number;
}

/** A burst measured at `stored` events stored: what it took and where it started. */
export interface StoredBurst {
  stored: number;
  burst: BurstResult;
}

export interface LongRun {
  plan: FillPlan;
  /** The fill up to the warm point (none when the first burst already passed it). */
  toWarm?: FillResult;
  warm: StoredBurst;
  fill?: FillResult;
  segments: FillSegment[];
  baselineAgain: ExternalBaseline;
  afterStored: StoredBurst;
  /** Events stored after the last burst. */
  storedAfter: number;
  exact: boolean;
}

/** Prints the rate every 30 s of the fill (progress only; the segments are the figures). */
function progressLog(log: (line: string) => void, start: number, stored: number) {
  let mark = { at: start, stored };
  return (now: number, storedNow: number) => {
    if (now - mark.at < 30_000) return;
    const rate = ((storedNow - mark.stored) * 1000) / (now - mark.at);
    log(
      `stored ${storedNow}: ${rate.toFixed(0)} events/s over the last ${((now - mark.at) / 1000).toFixed(0)} s`,
    );
    mark = { at: now, stored: storedNow };
  };
}

/**
 * The clients post back to back, with no pause, from `start` stored until
 * the last of `ends` is; each end is marked when an answer takes the count
 * past it. With `leadIn`, the marks start only after that many seconds
 * (ends passed by then, and one closer than `leadIn.minFirst` events, are
 * dropped), so the first segment runs from there. Batches are claimed
 * before they are sent, so the fill stops within one batch of the target
 * whatever the number of clients. Then the pipeline drains and the
 * aggregates are checked against the units accepted.
 */
async function fill(
  context: LongContext,
  start: number,
  ends: number[],
  leadIn?: { seconds: number; minFirst: number },
): Promise<FillResult> {
  const { base, keys, load, log } = context;
  const before = await Promise.all(keys.map((key) => aggregatedUnits(base, key)));
  const need = ends[ends.length - 1]! - start;
  const units = keys.map(() => 0);
  const begun = performance.now();
  const marks: FillMark[] = [{ end: start, stored: start, at: begun }];
  const pending = [...ends];
  const progress = progressLog(log, begun, start);
  let leading = leadIn !== undefined && leadIn.seconds > 0;
  let leadInDone: FillResult["leadIn"];
  let claimed = 0;
  let accepted = 0;
  let failures = 0;
  log(
    `fill: ${keys.length} clients posting back to back from ${start} until ${need + start} events are stored`,
  );
  const mark = (now: number) => {
    const stored = start + accepted;
    if (leading && leadIn) {
      if (now - begun < leadIn.seconds * 1000) return;
      leading = false;
      marks[0] = { end: stored, stored, at: now };
      while (pending.length > 1 && pending[0]! - stored < leadIn.minFirst) pending.shift();
      leadInDone = { events: stored - start, seconds: (now - begun) / 1000 };
      log(`fill: lead-in of ${leadIn.seconds} s done at ${stored} stored; the segments start here`);
      return;
    }
    while (pending.length > 0 && stored >= pending[0]!) {
      marks.push({ end: pending.shift()!, stored, at: now });
      const [segment] = segmentRates(marks.slice(-2));
      log(
        `fill ${segment!.from} -> ${segment!.to}: ${segment!.eventsPerSecond.toFixed(0)} events/s over ${segment!.seconds.toFixed(1)} s`,
      );
    }
  };
  await Promise.all(
    keys.map(async (key, client) => {
      while (claimed < need) {
        const batch = load.batch();
        claimed += batch.length;
        const result = await postBatch(base, key, batch);
        if (result.status !== 202) {
          claimed -= batch.length;
          if (++failures > 100) throw new Error(`fill: ${failures} failed requests`);
          continue;
        }
        accepted += result.accepted;
        units[client] = (units[client] ?? 0) + batch.reduce((sum, e) => sum + load.units(e), 0);
        const now = performance.now();
        mark(now);
        progress(now, start + accepted);
      }
    }),
  );
  const seconds = (performance.now() - begun) / 1000;
  log(`fill: ${start + accepted} stored after ${seconds.toFixed(0)} s; draining`);
  const drainStart = performance.now();
  const exact = await drained(base, keys, before, units, "api_calls", 600_000);
  const drainSeconds = (performance.now() - drainStart) / 1000;
  return {
    marks,
    ...(leadInDone ? { leadIn: leadInDone } : {}),
    accepted,
    failures,
    seconds,
    exact,
    drainSeconds,
  };
}

/** Waits without load for the archive files the last load left to be written. */
async function archiveQuiet(context: LongContext, stored: number): Promise<void> {
  const quiet = context.quietSeconds ?? ARCHIVE_QUIET_SECONDS;
  context.log(`at ${stored} stored: ${quiet} s without load, for the archive to settle`);
  await new Promise((resolve) => setTimeout(resolve, quiet * 1000));
}

async function burstAt(context: LongContext, stored: number): Promise<StoredBurst> {
  const { base, keys, burstSeconds, load, log } = context;
  log(`burst at ${stored} stored: ${keys.length} clients for ${burstSeconds} s, then draining`);
  const burst = await measuredBurst(base, keys, burstSeconds, load);
  log(
    `burst at ${stored} stored: ${burst.eventsPerSecond.toFixed(0)} events/s, ${burst.exact ? "exact" : "NOT exact"}`,
  );
  return { stored, burst };
}

/** The long run after the first burst; `stored` is the count it left. */
export async function runLongMode(context: LongContext, stored: number): Promise<LongRun> {
  const plan = fillPlan(context.target);
  context.log(
    `long mode: the warm burst at ${plan.warmStored} stored, then segments of ${plan.segmentSize} to ${context.target}`,
  );
  let now = stored;
  const toWarm = now < plan.warmStored ? await fill(context, now, [plan.warmStored]) : undefined;
  now += toWarm?.accepted ?? 0;
  await archiveQuiet(context, now);
  const warm = await burstAt(context, now);
  now += warm.burst.accepted;
  const ends = segmentEnds(now, context.target, plan.segmentSize);
  if (ends.length === 0)
    context.log(`long mode: ${now} stored already, no fill segment to ${context.target}`);
  const leadIn = {
    seconds: context.leadInSeconds ?? LEAD_IN_SECONDS,
    minFirst: plan.segmentSize / 4,
  };
  const filled = ends.length > 0 ? await fill(context, now, ends, leadIn) : undefined;
  now += filled?.accepted ?? 0;
  await archiveQuiet(context, now);
  context.log("long mode: the external baseline again");
  const baselineAgain = await context.baseline();
  const afterStored = await burstAt(context, now);
  return {
    plan,
    ...(toWarm ? { toWarm } : {}),
    warm,
    ...(filled ? { fill: filled } : {}),
    segments: segmentRates(filled?.marks ?? []),
    baselineAgain,
    afterStored,
    storedAfter: now + afterStored.burst.accepted,
    exact:
      [toWarm, filled].every((result) => result?.exact ?? true) &&
      warm.burst.exact &&
      afterStored.burst.exact,
  };
}

export interface LongReportInput {
  run: LongRun;
  /** The first burst (bench/usage.ts), at the count it started from. */
  first: StoredBurst;
  /** Its name in the table ("first 10-s burst, fresh stack"). */
  firstName: string;
  /** Its target, as the short run judges it (events/s). */
  firstTarget?: Target;
  burstSeconds: number;
  target: number;
  baselineStart: ExternalBaseline;
}

/** One row of the long run's table: a burst or a fill segment, in raw events/s. */
export interface LongPoint {
  name: string;
  from: number;
  to: number;
  seconds: number;
  eventsPerSecond: number;
  ratio?: number;
  /** What the ratio is of, with its figure (or, for a reference itself, what it is the reference of). */
  reference?: string;
  target?: Target;
}

function burstPoint(name: string, { stored, burst }: StoredBurst): LongPoint {
  return {
    name,
    from: stored,
    to: stored + burst.accepted,
    seconds: burst.ingestSeconds,
    eventsPerSecond: burst.eventsPerSecond,
  };
}

/** The table's rows: first burst, warm burst, each fill segment, the burst after N. */
export function longPoints(input: LongReportInput): {
  points: LongPoint[];
  judgment: LongJudgment;
} {
  const { run, burstSeconds } = input;
  const warmRate = run.warm.burst.eventsPerSecond;
  const judgment = judgeLongRun({
    warmBurst: warmRate,
    afterStored: run.afterStored.burst.eventsPerSecond,
    segments: run.segments.map((segment) => segment.eventsPerSecond),
  });
  const firstSegment = run.segments[0];
  const segments = run.segments.map(
    (segment, index): LongPoint => ({
      name: `fill ${count(segment.from)} -> ${count(segment.to)}`,
      from: segment.from,
      to: segment.to,
      seconds: segment.seconds,
      eventsPerSecond: segment.eventsPerSecond,
      ...(index === 0
        ? { reference: "the reference of the segments" }
        : {
            ratio: judgment.segmentRatios[index]!,
            reference: `the first segment, ${count(firstSegment?.eventsPerSecond ?? Number.NaN)} events/s`,
            target: atLeast(judgment.segmentRatios[index]!, LONG_TARGETS.segment),
          }),
    }),
  );
  const points: LongPoint[] = [
    {
      ...burstPoint(input.firstName, input.first),
      ...(input.firstTarget ? { target: input.firstTarget } : {}),
    },
    {
      ...burstPoint(`${burstSeconds}-s burst after ${count(run.warm.stored)} stored`, run.warm),
      reference: "the reference of the last burst",
    },
    ...segments,
    {
      ...burstPoint(
        `${burstSeconds}-s burst after ${count(run.afterStored.stored)} stored`,
        run.afterStored,
      ),
      ratio: judgment.afterStoredRatio,
      reference: `the burst after ${count(run.warm.stored)} stored, ${count(warmRate)} events/s`,
      target: judgment.afterStored,
    },
  ];
  return { points, judgment };
}

function baselineFigure(baseline: ExternalBaseline): string {
  return `${count(baseline.rps)} req/s (p50 ${baseline.p50} ms, p99 ${baseline.p99} ms)`;
}

/** The bursts per external-baseline request, each against the baseline nearest it: shown, never judged. */
function perBaselineRequest(input: LongReportInput): string {
  const warm = input.run.warm.burst.eventsPerSecond / input.baselineStart.rps;
  const after = input.run.afterStored.burst.eventsPerSecond / input.run.baselineAgain.rps;
  return `per external-baseline request (shown, not judged): the warm burst ${warm.toFixed(3)} events (the baseline at the start), the burst after ${count(input.run.afterStored.stored)} stored ${after.toFixed(3)} (the baseline just before it) = ${times(after / warm)}`;
}

function baselineLine(input: LongReportInput): string {
  const { baselineStart: start, run } = input;
  return `external baseline (${EXTERNAL_BASELINE_NAME}; ${start.connections} connections, ${start.seconds} s): ${baselineFigure(start)} at the start, ${baselineFigure(run.baselineAgain)} before the last burst = ${times(run.baselineAgain.rps / start.rps)} (the machine's drift; the figures above are raw)`;
}

function longCriteria(input: LongReportInput, points: LongPoint[], judgment: LongJudgment) {
  const { run } = input;
  const segments = points.filter((point) => point.name.startsWith("fill "));
  const lowest = segments[judgment.lowest];
  const criteria: [string, boolean, string][] = [
    [
      `burst after ${count(input.target)} stored >= ${LONG_TARGETS.afterStored}x the burst after ${count(run.plan.warmStored)} stored (raw events/s)`,
      judgment.afterStored.met,
      `${count(run.afterStored.burst.eventsPerSecond)} events/s after ${count(run.afterStored.stored)} stored = ${times(judgment.afterStoredRatio)} the ${count(run.warm.burst.eventsPerSecond)} events/s after ${count(run.warm.stored)}; external baseline ${count(input.baselineStart.rps)} -> ${count(run.baselineAgain.rps)} req/s (${times(run.baselineAgain.rps / input.baselineStart.rps)})`,
    ],
    [
      `fill segments of ${count(run.plan.segmentSize)} each >= ${LONG_TARGETS.segment}x the first (raw events/s)`,
      judgment.segments.met,
      segments.length === 0
        ? `no segment: ${count(run.warm.stored + run.warm.burst.accepted)} were stored after the warm burst`
        : `${segments.map((point) => count(point.eventsPerSecond)).join(", ")} events/s = ${judgment.segmentRatios.map((ratio) => ratio.toFixed(2)).join(", ")}x the first; lowest ${times(judgment.segmentRatios[judgment.lowest] ?? Number.NaN)} (${lowest?.name ?? "none"})`,
    ],
  ];
  return criteria;
}

function pointRow(point: LongPoint): BenchmarkRow {
  return {
    benchmark: point.name,
    figure: `${count(point.eventsPerSecond)} events/s over ${point.seconds.toFixed(1)} s; ${count(point.from)} -> ${count(point.to)} stored`,
    ...(point.ratio === undefined ? {} : { ratio: times(point.ratio) }),
    ...(point.reference ? { baseline: point.reference } : {}),
    ...(point.target ? { target: point.target } : {}),
  };
}

function longRows(input: LongReportInput, points: LongPoint[]): BenchmarkRow[] {
  const { baselineStart: start, run } = input;
  return [
    {
      benchmark: `external baseline at the start: ${EXTERNAL_BASELINE_NAME}`,
      figure: `${baselineFigure(start)}; ${start.connections} connections, ${start.seconds} s`,
    },
    ...points.map(pointRow),
    {
      benchmark: "external baseline again, before the last burst",
      figure: baselineFigure(run.baselineAgain),
      ratio: times(run.baselineAgain.rps / start.rps),
      baseline: `the same server at the start, ${count(start.rps)} req/s (the machine's drift, not divided into any figure)`,
    },
  ];
}

/** The console table, the doc's rows, the two verdict lines and the notes of a long run. */
export function longModeReport(input: LongReportInput) {
  const { run } = input;
  const { points, judgment } = longPoints(input);
  const ratioText = (point: LongPoint) =>
    point.ratio === undefined
      ? point.reference
        ? `(${point.reference})`
        : ""
      : `${times(point.ratio)} ${point.name.startsWith("fill ") ? "the first segment" : "the warm burst"}`;
  const text =
    `long mode       raw events/s at each point; fill segments of ${count(run.plan.segmentSize)} stored events, the warm burst at ${count(run.plan.warmStored)}\n\n` +
    table(
      ["point", "events stored", "seconds", "events/s", "ratio", "target", "met"],
      points.map((point) => [
        point.name,
        `${count(point.from)} -> ${count(point.to)}`,
        point.seconds.toFixed(1),
        count(point.eventsPerSecond),
        ratioText(point),
        point.target?.label ?? "",
        point.target ? (point.target.met ? "met" : "NOT met") : "",
      ]),
    ) +
    `\n\n                ${baselineLine(input)}\n` +
    `                ${perBaselineRequest(input)}\n` +
    (run.toWarm
      ? `                before the warm burst: ${count(run.toWarm.accepted)} events posted back to back in ${run.toWarm.seconds.toFixed(0)} s (${count(run.toWarm.accepted / run.toWarm.seconds)} events/s)\n`
      : "") +
    (run.fill?.leadIn
      ? `                the fill's lead-in (not judged: its first events' archive files are not due yet): ${count(run.fill.leadIn.events)} events in ${run.fill.leadIn.seconds.toFixed(0)} s (${count(run.fill.leadIn.events / run.fill.leadIn.seconds)} events/s)\n`
      : "") +
    (run.fill
      ? `                the fill: ${count(run.fill.accepted)} events in ${run.fill.seconds.toFixed(0)} s, ${run.fill.failures} failed requests; the pipeline caught up ${run.fill.drainSeconds.toFixed(1)} s after it, ${run.fill.exact ? "exact" : "NOT exact"}\n`
      : "");
  return {
    text,
    rows: longRows(input, points),
    criteria: longCriteria(input, points, judgment),
    notes: [
      `Long mode: the fill's segment boundaries are the multiples of ${count(run.plan.segmentSize)} between the warm burst and ${count(input.target)} stored (the largest of ${SEGMENT_SIZES.map((size) => count(size)).join(", ")} giving at least ${MIN_SEGMENTS} segments; a first segment under a quarter of that joins the next); the first segment starts after the fill's first ${LEAD_IN_SECONDS} s (its lead-in, printed, not judged). All rates are raw events/s; the external baseline only shows the machine's drift.`,
      `${perBaselineRequest(input).replace(/^per/, "Per")}.`,
    ],
  };
}

/** The method's long-mode sentences, in this run's settings. */
export function longModeMethod(input: {
  burstSeconds: number;
  target: number;
  connections: number;
}): string {
  const plan = fillPlan(input.target);
  return (
    `Long mode (${count(input.target)} events stored): the first ${input.burstSeconds}-s burst on the fresh stack; the clients post back to back until ${count(plan.warmStored)} events are stored, the pipeline drains and a ${input.burstSeconds}-s burst is measured there, after ${ARCHIVE_QUIET_SECONDS} s without load for the archive files the fill left to be written; they post on to ${count(input.target)} without a pause, each segment of ${count(plan.segmentSize)} stored events timed between the answers that took the count past its boundaries (the first from the end of the fill's first ${LEAD_IN_SECONDS} s, its lead-in: the fill's first archive files come due a settle time after its first events, so until then each event costs less than for the rest of the fill); the pipeline drains and the totals are checked; then, after the same quiet wait, a ${input.burstSeconds}-s burst after ${count(input.target)} stored. ` +
    `Every rate is raw events/s. External baseline: ${EXTERNAL_BASELINE_NAME}, autocannon with ${input.connections} connections for ${input.burstSeconds} s, at the start and again before the last burst. `
  );
}
