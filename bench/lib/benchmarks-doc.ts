/**
 * The current figures of each benchmark, in docs/benchmarks.md.
 *
 * A script calls `startBenchmarkReport(service)` when it starts (the clock
 * and the load average at the start), builds its summary rows from the very
 * values it prints, and calls `report.record(...)` at the end: that prints
 * the summary table, and with `--markdown` on the command line (run.ts
 * forwards it) replaces that service's section of docs/benchmarks.md, between
 * `<!-- bench:<service> -->` and `<!-- /bench:<service> -->`, leaving every
 * other section as it was. So each section shows the latest run of its own
 * script, and the history of the figures is the file's git history.
 */
import { readFileSync, renameSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { table } from "./report.ts";

/** A target and whether this run met it; scripts print the same `met` they record. */
export interface Target {
  label: string;
  met: boolean;
}

export interface BenchmarkRow {
  /** What was measured. */
  benchmark: string;
  /** The figure itself, with its unit ("6,130 events/s", "p99 808 ms"). */
  figure: string;
  /** The figure as a ratio of the baseline, when there is one ("0.62×"). */
  ratio?: string;
  /** What the ratio is of, measured in the same run ("GET /health/live, 556 req/s"). */
  baseline?: string;
  target?: Target;
}

export interface BenchmarkSection {
  /** The section's heading. */
  title: string;
  /** How the figures were measured, in this run's settings. */
  method: string;
  rows: BenchmarkRow[];
  /** Sentences printed under the table (what a figure means, reference measurements). */
  notes?: string[];
}

export interface MachineSnapshot {
  cpu: string;
  cores: number;
  memoryBytes: number;
  node: string;
  platform: string;
  loadStart: number[];
  loadEnd: number[];
}

export const DOC_PATH = path.join(import.meta.dirname, "..", "..", "docs", "benchmarks.md");

const openMarker = (service: string) => `<!-- bench:${service} -->`;
const closeMarker = (service: string) => `<!-- /bench:${service} -->`;

/** `>= bound`: a ratio (×) by default, or a figure with its unit. */
export function atLeast(value: number, bound: number, unit = "×"): Target {
  return { label: `>= ${formatBound(bound, unit)}`, met: value >= bound };
}

/** `<= bound`. */
export function atMost(value: number, bound: number, unit = "×"): Target {
  return { label: `<= ${formatBound(bound, unit)}`, met: value <= bound };
}

/** `< bound`. */
export function below(value: number, bound: number, unit = "×"): Target {
  return { label: `< ${formatBound(bound, unit)}`, met: value < bound };
}

/** A target that is a condition rather than a bound ("exact", "not growing"). */
export function condition(label: string, met: boolean): Target {
  return { label, met };
}

function formatBound(bound: number, unit: string): string {
  return unit === "×" ? `${bound}×` : `${count(bound)}${unit}`;
}

/** A ratio as the docs write it: two decimals and ×; "n/a" when it is not a number. */
export function times(ratio: number, digits = 2): string {
  return Number.isFinite(ratio) ? `${ratio.toFixed(digits)}×` : "n/a";
}

/** A figure with thousands separators and a fixed number of decimals. */
export function count(value: number, digits = 0): string {
  if (!Number.isFinite(value)) return "n/a";
  return value.toLocaleString("en-US", {
    minimumFractionDigits: digits,
    maximumFractionDigits: digits,
  });
}

/** What `met` prints as in the console and in the table. */
export function verdict(target: Target | undefined): string {
  if (!target) return "";
  return target.met ? "met" : "NOT met";
}

/** One table cell: pipes escaped, line breaks folded, so a value can never break the table. */
export function cell(text: string): string {
  return text.replace(/\r?\n/g, " ").replace(/\|/g, "\\|").trim();
}

/** The markdown table of a section: one row per benchmark. */
export function markdownTable(rows: BenchmarkRow[]): string {
  const header = "| benchmark | figure | ratio | baseline (same run) | target | met |";
  const rule = "|---|---|---|---|---|---|";
  const lines = rows.map((row) => {
    const met = row.target ? (row.target.met ? "**met**" : "**not met**") : "";
    return `| ${[
      cell(row.benchmark),
      cell(row.figure),
      row.ratio ? `**${cell(row.ratio)}**` : "",
      cell(row.baseline ?? ""),
      cell(row.target?.label ?? ""),
      met,
    ].join(" | ")} |`;
  });
  return [header, rule, ...lines].join("\n");
}

function loadText(load: number[]): string {
  return load.map((value) => value.toFixed(2)).join(" / ");
}

/** The machine line of a section. */
export function machineText(machine: MachineSnapshot): string {
  const gib = machine.memoryBytes / 1024 ** 3;
  return (
    `${machine.cpu}, ${machine.cores} ${machine.cores === 1 ? "core" : "cores"}, ` +
    `${gib.toFixed(1)} GiB memory; ${machine.platform}, Node ${machine.node}; ` +
    `load average (1 / 5 / 15 min) ${loadText(machine.loadStart)} at the start, ` +
    `${loadText(machine.loadEnd)} at the end`
  );
}

/** A section's body: heading, when, where, the command, the method, the table, the notes. */
export function renderSection(
  section: BenchmarkSection,
  run: { finishedAt: Date; command: string; machine: MachineSnapshot },
): string {
  const stamp = `${run.finishedAt.toISOString().slice(0, 16).replace("T", " ")} UTC`;
  const parts = [
    `## ${section.title}`,
    `Measured ${stamp} on ${machineText(run.machine)}.`,
    `Reproduce: \`${run.command}\``,
    section.method.trim(),
    markdownTable(section.rows),
  ];
  if (section.notes && section.notes.length > 0) {
    parts.push(section.notes.map((note) => `- ${note.trim()}`).join("\n"));
  }
  return parts.join("\n\n");
}

/**
 * The document with `service`'s section replaced by `body` (markers kept).
 * A service with no markers yet gets its section appended at the end; a
 * marker that is unpaired, repeated or out of order is an error, so that a
 * damaged file is never rewritten.
 */
export function replaceSection(document: string, service: string, body: string): string {
  const open = openMarker(service);
  const close = closeMarker(service);
  const opens = occurrences(document, open);
  const closes = occurrences(document, close);
  const block = `${open}\n${body.trim()}\n${close}`;
  if (opens.length === 0 && closes.length === 0) {
    return `${document.replace(/\s*$/, "")}\n\n${block}\n`;
  }
  if (opens.length !== 1 || closes.length !== 1) {
    throw new Error(
      `docs/benchmarks.md: expected one ${open} and one ${close}, found ${opens.length} and ${closes.length}`,
    );
  }
  const start = opens[0]!;
  const end = closes[0]!;
  if (end < start) throw new Error(`docs/benchmarks.md: ${close} comes before ${open}`);
  return document.slice(0, start) + block + document.slice(end + close.length);
}

function occurrences(text: string, needle: string): number[] {
  const found: number[] = [];
  for (let at = text.indexOf(needle); at !== -1; at = text.indexOf(needle, at + needle.length)) {
    found.push(at);
  }
  return found;
}

/**
 * The command that reproduces a run of one service: the BENCH_* settings it
 * ran with, then `npm run bench -- <service> --markdown`.
 */
export function reproduceCommand(service: string, env: NodeJS.ProcessEnv = process.env): string {
  const settings = Object.keys(env)
    .filter((name) => name.startsWith("BENCH_") && env[name] !== undefined && env[name] !== "")
    .sort()
    .map((name) => `${name}=${shellWord(env[name]!)}`);
  return [...settings, `npm run bench -- ${service} --markdown`].join(" ");
}

function shellWord(value: string): string {
  return /^[\w.,:/=@%+-]+$/.test(value) ? value : `'${value.replace(/'/g, `'\\''`)}'`;
}

function machineNow(loadStart: number[]): MachineSnapshot {
  const cpus = os.cpus();
  return {
    cpu: cpus[0]?.model.trim() || os.arch(),
    cores: cpus.length,
    memoryBytes: os.totalmem(),
    node: process.version,
    platform: `${os.platform()} ${os.arch()}`,
    loadStart,
    loadEnd: os.loadavg(),
  };
}

export interface BenchmarkReport {
  /**
   * Prints the summary table; with `--markdown`, also writes the section
   * into docs/benchmarks.md.
   */
  record(section: BenchmarkSection): void;
}

/** Call when the benchmark starts: the load average is read now and again at `record`. */
export function startBenchmarkReport(
  service: string,
  options: { argv?: string[]; docPath?: string; out?: (text: string) => void } = {},
): BenchmarkReport {
  const loadStart = os.loadavg();
  const writeMarkdown = (options.argv ?? process.argv).includes("--markdown");
  const docPath = options.docPath ?? DOC_PATH;
  const out = options.out ?? ((text: string) => process.stdout.write(text));
  return {
    record(section) {
      out(
        `\nSummary (${section.title}):\n\n${table(
          ["benchmark", "figure", "ratio", "baseline (same run)", "target", "met"],
          section.rows.map((row) => [
            row.benchmark,
            row.figure,
            row.ratio ?? "",
            row.baseline ?? "",
            row.target?.label ?? "",
            verdict(row.target),
          ]),
          "text",
        )}\n`,
      );
      if (!writeMarkdown) return;
      const body = renderSection(section, {
        finishedAt: new Date(),
        command: reproduceCommand(service),
        machine: machineNow(loadStart),
      });
      const updated = replaceSection(readFileSync(docPath, "utf8"), service, body);
      const temporary = `${docPath}.${process.pid}.tmp`;
      writeFileSync(temporary, updated);
      renameSync(temporary, docPath);
      out(`\n${path.relative(process.cwd(), docPath)}: the ${service} section is updated\n`);
    },
  };
}
