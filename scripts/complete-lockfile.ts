/**
 * The npm registry this project is built against serves only the Linux
 * builds of some platform-specific optional packages (Biome's and workerd's
 * darwin, windows, android and musl binaries). npm then writes a lockfile
 * without them, and `npm ci` rejects that lockfile as out of sync with the
 * packages' declared optionalDependencies. This restores the entries a full
 * registry would have produced: each missing optional dependency is recorded
 * as optional, with the os/cpu/libc its name declares, so npm ci accepts the
 * lockfile and skips them on platforms they do not fit.
 *
 * Runs as the root `postinstall`, so every `npm install` leaves a lockfile
 * that `npm ci` accepts; it writes nothing when the lockfile is complete.
 */
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";

const ROOT = path.resolve(import.meta.dirname, "..");
const lockPath = path.join(ROOT, "package-lock.json");

interface LockEntry {
  version?: string;
  dev?: boolean;
  optional?: boolean;
  os?: string[];
  cpu?: string[];
  libc?: string[];
  optionalDependencies?: Record<string, string>;
  [key: string]: unknown;
}

const lock = JSON.parse(readFileSync(lockPath, "utf8")) as { packages: Record<string, LockEntry> };

function platformOf(name: string): Pick<LockEntry, "os" | "cpu" | "libc"> {
  const os = [
    "darwin",
    "linux",
    "win32",
    "android",
    "freebsd",
    "openbsd",
    "netbsd",
    "sunos",
    "aix",
  ].find((value) => name.includes(value));
  const windows = name.includes("windows") ? "win32" : undefined;
  const cpu = [
    "arm64",
    "x64",
    "arm",
    "ia32",
    "ppc64",
    "s390x",
    "riscv64",
    "loong64",
    "mips64el",
  ].find((value) => new RegExp(`[-_]${value}(?:$|[-_])`).test(name));
  const cpuFromWorkerd = /-64$/.test(name) ? "x64" : undefined;
  return {
    os: [os ?? windows ?? "unknown"],
    cpu: [cpu ?? cpuFromWorkerd ?? "unknown"],
    ...(name.includes("musl") ? { libc: ["musl"] } : {}),
  };
}

let added = 0;
for (const [location, entry] of Object.entries(lock.packages)) {
  if (!location.startsWith("node_modules/")) continue;
  const manifestPath = path.join(ROOT, location, "package.json");
  if (!existsSync(manifestPath)) continue;
  const manifest = JSON.parse(readFileSync(manifestPath, "utf8")) as {
    optionalDependencies?: Record<string, string>;
  };
  const optional = manifest.optionalDependencies;
  if (!optional) continue;
  for (const [dependency, range] of Object.entries(optional)) {
    const nested = `${location}/node_modules/${dependency}`;
    const hoisted = `node_modules/${dependency}`;
    if (lock.packages[nested] || lock.packages[hoisted]) continue;
    // Only exact pins can be restored faithfully (platform packages are pinned).
    if (!/^\d+\.\d+\.\d+/.test(range)) continue;
    lock.packages[hoisted] = {
      version: range,
      ...(entry.dev ? { dev: true } : {}),
      optional: true,
      ...platformOf(dependency),
    };
    added++;
  }
  entry.optionalDependencies = { ...optional };
}

if (added === 0) process.exit(0);
const sorted = Object.fromEntries(
  Object.entries(lock.packages).sort(([a], [b]) =>
    a === "" ? -1 : b === "" ? 1 : a.localeCompare(b),
  ),
);
lock.packages = sorted;
writeFileSync(lockPath, `${JSON.stringify(lock, null, 2)}\n`);
console.log(`lockfile: restored ${added} optional platform entries`);
