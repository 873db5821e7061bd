import { readFileSync } from "node:fs";

/**
 * The `[vars]` table of a wrangler.toml: `NAME = "value"` lines (strings,
 * numbers and booleans as text) up to the next table header. Enough for the
 * project's own configuration, which keeps every var on one line.
 */
export function readWranglerVars(file: string): Record<string, string> {
  const vars: Record<string, string> = {};
  let inVars = false;
  for (const raw of readFileSync(file, "utf8").split("\n")) {
    const line = raw.trim();
    if (line.startsWith("[")) {
      inVars = line === "[vars]";
      continue;
    }
    if (!inVars || line === "" || line.startsWith("#")) continue;
    const match =
      /^([A-Za-z_][A-Za-z0-9_]*)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|'([^']*)'|([^#\s]+))/.exec(line);
    if (match?.[1]) vars[match[1]] = match[2] ?? match[3] ?? match[4] ?? "";
  }
  return vars;
}
