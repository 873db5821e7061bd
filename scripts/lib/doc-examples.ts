/**
 * The runnable examples of the documentation pages: every fenced block whose
 * info string is `sh` (optionally `sh status=NNN` for an example that shows
 * an error) is a shell example that works against `npm run dev` as written.
 * The end-to-end suite runs a page's blocks in order in one shell against
 * its own stack, with the local ports rewritten to the stack's.
 */

export interface ShellExample {
  /** 1-based line of the opening fence, for error messages. */
  line: number;
  code: string;
  /** The status every request of the block must answer; null: any 2xx or 3xx. */
  expectedStatus: number | null;
}

const FENCE = /^```sh(?:\s+status=(\d{3}))?\s*$/;
// A closing fence carries no info string (CommonMark).
const CLOSING = /^```\s*$/;

function closingLine(lines: string[], opening: number): number {
  return lines.findIndex((line, at) => at > opening && CLOSING.test(line));
}

export function shellExamples(markdown: string): ShellExample[] {
  const lines = markdown.split("\n");
  const examples: ShellExample[] = [];
  for (let index = 0; index < lines.length; index++) {
    const opening = FENCE.exec(lines[index] ?? "");
    if (!opening) {
      // Skip other fenced blocks whole, so a fence inside them is not read as ours.
      if (lines[index]?.startsWith("```")) {
        const close = closingLine(lines, index);
        index = close === -1 ? lines.length : close;
      }
      continue;
    }
    const close = closingLine(lines, index);
    if (close === -1) throw new Error(`line ${index + 1}: a sh block is never closed`);
    examples.push({
      line: index + 1,
      code: lines.slice(index + 1, close).join("\n"),
      expectedStatus: opening[1] ? Number(opening[1]) : null,
    });
    index = close;
  }
  return examples;
}

/** The local stack's ports as the documentation writes them, and where a test stack has them. */
export interface PortMap {
  billing: string;
  aqi: string;
  portfolio: string;
}

export const DOCUMENTED_HOSTS: PortMap = {
  billing: "localhost:8787",
  aqi: "localhost:8788",
  portfolio: "localhost:8789",
};

const BLOCK_MARK = "@@example";
const STATUS_MARK = "@@status";

/**
 * One bash script for a page's examples. `curl` is wrapped so that each
 * request reports its status on stderr after a mark of the block it belongs
 * to; the examples' own output stays as the reader would see it.
 */
export function examplesScript(examples: ShellExample[], hosts: PortMap): string {
  const rewrite = (code: string) =>
    (Object.keys(DOCUMENTED_HOSTS) as (keyof PortMap)[]).reduce(
      (text, service) => text.replaceAll(DOCUMENTED_HOSTS[service], hosts[service]),
      code,
    );
  return [
    "set -euo pipefail",
    `curl() { command curl -w '%{stderr}${STATUS_MARK} %{http_code}\\n' "$@"; }`,
    ...examples.flatMap((example, index) => [
      `echo '${BLOCK_MARK} ${index}' >&2`,
      rewrite(example.code),
    ]),
    "",
  ].join("\n");
}

export interface ExampleOutcome {
  example: ShellExample;
  statuses: number[];
  /** Why the block failed, or null when every request answered as expected. */
  problem: string | null;
}

/** Judges each block from the marks the script wrote on stderr. */
export function judgeExamples(examples: ShellExample[], stderr: string): ExampleOutcome[] {
  const statuses = examples.map(() => [] as number[]);
  const reached = new Set<number>();
  let current = -1;
  for (const line of stderr.split("\n")) {
    if (line.startsWith(BLOCK_MARK)) {
      current = Number(line.slice(BLOCK_MARK.length));
      reached.add(current);
    } else if (line.startsWith(STATUS_MARK) && current >= 0) {
      statuses[current]?.push(Number(line.slice(STATUS_MARK.length)));
    }
  }
  return examples.map((example, index) => {
    const answered = statuses[index] ?? [];
    const ok = (status: number) =>
      example.expectedStatus === null
        ? status >= 200 && status < 400
        : status === example.expectedStatus;
    let problem: string | null = null;
    if (!reached.has(index)) problem = "never ran (an earlier command failed)";
    else if (answered.length === 0) problem = "made no request";
    else if (!answered.every(ok))
      problem = `answered ${answered.join(", ")}; expected ${example.expectedStatus ?? "2xx/3xx"}`;
    return { example, statuses: answered, problem };
  });
}
