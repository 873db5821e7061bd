import { existsSync, readFileSync } from "node:fs";
import path from "node:path";

/** `.dev.vars` beside a config when the developer made one, else the committed example. */
export function devVarsFile(configDir: string): string {
  const own = path.join(configDir, ".dev.vars");
  return existsSync(own) ? own : path.join(configDir, ".dev.vars.example");
}

/** Parses the dotenv subset the .dev.vars files use (KEY=value, # comments, optional quotes). */
export function readDevVars(file: string): Record<string, string> {
  const vars: Record<string, string> = {};
  for (const line of readFileSync(file, "utf8").split(/\r?\n/)) {
    const match = /^\s*([A-Za-z_][A-Za-z0-9_]*)\s*=\s*(.*?)\s*$/.exec(line);
    if (!match || line.trimStart().startsWith("#")) continue;
    let value = match[2] ?? "";
    if (/^(["']).*\1$/.test(value)) value = value.slice(1, -1);
    vars[match[1]!] = value;
  }
  return vars;
}
