/**
 * `npm run check:size`: fails when a source file of the billing worker is over
 * MAX_FILE_LINES lines or a function in one is over MAX_FUNCTION_LINES lines.
 * Test files (`*.test.ts`) are not measured.
 *
 * Lines are counted as an editor shows them: blank lines, comments and the
 * lines inside template literals (SQL, HTML) all count. A function runs from
 * the line where it starts (`function`, a method's name or modifiers, an
 * arrow's parameters) to the line where it ends, nested functions included.
 *
 * Biome's parser finds the functions: a GritQL plugin run on a copy of the
 * files reports the range of every function, method, accessor and arrow. (The
 * noExcessiveLinesPerFunction rule is not used: it counts only the line breaks
 * between tokens, so lines inside template literals and block comments do not
 * count, and it skips getters and setters.) In the copy, suppression comments
 * are disarmed, so that the lists below are the only way to except code.
 */
import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { ROOT } from "./lib/wrangler.ts";

const MAX_FILE_LINES = 700;
const MAX_FUNCTION_LINES = 80;
const MEASURED_DIRS = ["workers/billing/src"];

/**
 * Files allowed over MAX_FILE_LINES, keyed by path from the repository root;
 * the value says why. Only for data tables and generated code.
 */
const FILE_EXCEPTIONS: Record<string, string> = {};

/**
 * Functions allowed over MAX_FUNCTION_LINES, keyed by "path#name" as this
 * script prints them; the value says why. Only for data tables and generated code.
 */
const FUNCTION_EXCEPTIONS: Record<string, string> = {};

const BIOME_BIN = path.join(ROOT, "node_modules", ".bin", "biome");
const FUNCTION_PLUGIN = `language js

or {
  JsFunctionDeclaration(),
  JsFunctionExportDefaultDeclaration(),
  JsFunctionExpression(),
  JsArrowFunctionExpression(),
  JsMethodClassMember(),
  JsMethodObjectMember(),
  JsConstructorClassMember(),
  JsGetterClassMember(),
  JsSetterClassMember(),
  JsGetterObjectMember(),
  JsSetterObjectMember()
} as $fn where {
  register_diagnostic(span=$fn, message="code-size: function", severity="error")
}
`;
const FUNCTION_MESSAGE = "code-size: function";
/** Functions the plugin must find, as "line:lines", so that a broken run cannot pass. */
const CANARY = "code-size-canary.ts";
const CANARY_SOURCE = [
  "export function canary() {",
  "  return 1;",
  "}",
  "export const html = () => `",
  "`;",
  "export class Canary {",
  "  get value() {",
  "    return 1;",
  "  }",
  "}",
  "",
].join("\n");
const CANARY_SPANS = ["1:3", "4:2", "7:3"];

interface FunctionSpan {
  file: string;
  line: number;
  name: string;
  lines: number;
}

function measuredFiles(): string[] {
  return MEASURED_DIRS.flatMap((dir) =>
    readdirSync(path.join(ROOT, dir), { recursive: true, encoding: "utf8" })
      .filter((file) => file.endsWith(".ts") && !file.endsWith(".test.ts"))
      .map((file) => path.posix.join(dir, file.split(path.sep).join("/"))),
  ).sort();
}

function lineCount(content: string): number {
  if (content === "") return 0;
  const lines = content.split("\n").length;
  return content.endsWith("\n") ? lines - 1 : lines;
}

/** A readable name for the function starting at `line`:`column` (both 1-based). */
function functionName(lines: string[], line: number, column: number): string {
  const text = lines[line - 1] ?? "";
  const at = text.slice(column - 1);
  const before = text.slice(0, column - 1);
  const declared = /^(?:async\s+)?function\s*\*?\s*([\w$]+)/.exec(at);
  if (declared?.[1]) return declared[1];
  if (!/^(?:async\s+)?(?:function\b|\(|<|[\w$]+\s*=>)/.test(at)) {
    const method =
      /^(?:(?:public|private|protected|static|override|readonly|async)\s+)*\*?\s*(#?[\w$]+|\[[^\]]+\])\s*[<(]/.exec(
        at,
      );
    if (method?.[1]) return method[1];
  }
  const lead = before.trim() === "" ? (lines[line - 2] ?? "").trim() : before;
  const assigned = /(#?[\w$]+)\s*(?::[^=]*)?=\s*$|(#?[\w$]+)\s*:\s*$/.exec(lead.trimEnd());
  const assignedName = assigned?.[1] ?? assigned?.[2];
  if (assignedName) return assignedName;
  return `(anonymous, in \`${lead.trim().slice(0, 60)}\`)`;
}

interface RdjsonDiagnostic {
  code?: { value?: string };
  location?: {
    path?: string;
    range?: { start: { line: number; column: number }; end: { line: number } };
  };
  message?: string;
  severity?: string;
}

/** Every function in `files` with its length, found by Biome on a copy of the files. */
function functionSpans(files: string[], contents: Map<string, string>): FunctionSpan[] {
  const dir = mkdtempSync(path.join(tmpdir(), "code-size-"));
  try {
    writeFileSync(path.join(dir, "functions.grit"), FUNCTION_PLUGIN);
    writeFileSync(
      path.join(dir, "biome.json"),
      JSON.stringify({
        vcs: { enabled: false },
        files: { includes: ["**/*.ts"], maxSize: 16 * 1024 * 1024 },
        formatter: { enabled: false },
        assist: { enabled: false },
        plugins: ["./functions.grit"],
        linter: { enabled: true, rules: { preset: "none" } },
      }),
    );
    for (const file of files) {
      mkdirSync(path.dirname(path.join(dir, file)), { recursive: true });
      // Same length, so every position stays where it was.
      const disarmed = (contents.get(file) ?? "").replaceAll("biome-ignore", "biome-ignorX");
      writeFileSync(path.join(dir, file), disarmed);
    }
    // A function Biome must report, so a run that checked nothing cannot pass.
    writeFileSync(path.join(dir, CANARY), CANARY_SOURCE);
    const result = spawnSync(
      BIOME_BIN,
      ["lint", "--config-path=.", "--reporter=rdjson", "--max-diagnostics=none", "."],
      { cwd: dir, encoding: "utf8", maxBuffer: 256 * 1024 * 1024 },
    );
    let diagnostics: RdjsonDiagnostic[];
    try {
      diagnostics = JSON.parse(result.stdout).diagnostics ?? [];
    } catch {
      throw new Error(`biome lint gave no report (exit ${result.status}):\n${result.stderr}`);
    }
    const unexpected = diagnostics.filter((d) => d.message !== FUNCTION_MESSAGE);
    if (unexpected.length > 0) {
      const list = unexpected.map((d) => `${d.location?.path}: ${d.code?.value}: ${d.message}`);
      throw new Error(`biome could not measure every file:\n${list.join("\n")}`);
    }
    const spans = diagnostics.map((d) => {
      const file = (d.location?.path ?? "").split(path.sep).join("/").replace(/^\.\//, "");
      const range = d.location?.range;
      if (!range) throw new Error(`biome reported a function without a range in ${file}`);
      const lines = (file === CANARY ? CANARY_SOURCE : (contents.get(file) ?? "")).split("\n");
      return {
        file,
        line: range.start.line,
        name: functionName(lines, range.start.line, range.start.column),
        lines: range.end.line - range.start.line + 1,
      };
    });
    const canary = spans.filter((span) => span.file === CANARY).map((s) => `${s.line}:${s.lines}`);
    if (canary.sort().join() !== CANARY_SPANS.join()) {
      throw new Error(`biome found the canary's functions at ${canary}; the measurement is broken`);
    }
    return spans.filter((span) => span.file !== CANARY);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const files = measuredFiles();
const contents = new Map(files.map((file) => [file, readFileSync(path.join(ROOT, file), "utf8")]));
const problems: string[] = [];

const longFiles = files
  .map((file) => ({ file, lines: lineCount(contents.get(file) ?? "") }))
  .filter((entry) => entry.lines > MAX_FILE_LINES);
for (const { file, lines } of longFiles) {
  if (!(file in FILE_EXCEPTIONS)) {
    problems.push(`${file}: ${lines} lines (max ${MAX_FILE_LINES})`);
  }
}
for (const file of Object.keys(FILE_EXCEPTIONS)) {
  if (!longFiles.some((entry) => entry.file === file)) {
    problems.push(`${file}: in FILE_EXCEPTIONS but not over ${MAX_FILE_LINES} lines; remove it`);
  }
}

const longFunctions = functionSpans(files, contents)
  .filter((span) => span.lines > MAX_FUNCTION_LINES)
  .sort((a, b) => a.file.localeCompare(b.file) || a.line - b.line);
for (const { file, line, name, lines } of longFunctions) {
  if (!(`${file}#${name}` in FUNCTION_EXCEPTIONS)) {
    problems.push(`${file}:${line}: ${name}: ${lines} lines (max ${MAX_FUNCTION_LINES})`);
  }
}
for (const key of Object.keys(FUNCTION_EXCEPTIONS)) {
  if (!longFunctions.some((span) => `${span.file}#${span.name}` === key)) {
    problems.push(
      `${key}: in FUNCTION_EXCEPTIONS but not over ${MAX_FUNCTION_LINES} lines; remove it`,
    );
  }
}

for (const problem of problems) console.error(problem);
if (problems.length > 0) {
  console.error(
    `\ncode size: ${problems.length} problem(s); split the file or function, or list it ` +
      "with its reason in scripts/code-size.ts if it is a data table or generated code.",
  );
  process.exit(1);
}
console.log(
  `code size: ${files.length} files checked, none over ${MAX_FILE_LINES} lines ` +
    `and no function over ${MAX_FUNCTION_LINES} lines`,
);
