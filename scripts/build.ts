/**
 * `npm run build`: `wrangler deploy --dry-run` for all four workers (the
 * configuration that would be deployed: portfolio with its production
 * environment), printing each bundle's size raw and gzipped. Fails if any
 * worker does not bundle.
 */
import { readdirSync, readFileSync, rmSync, statSync } from "node:fs";
import path from "node:path";
import { gzipSync } from "node:zlib";
import { writeDocsAssets } from "./docs-assets.ts";
import { ROOT, runWrangler } from "./lib/wrangler.ts";

const workers = [
  { name: "billing", args: ["-c", "wrangler.toml"] },
  { name: "usage-consumer", args: ["-c", "workers/usage-consumer/wrangler.toml"] },
  { name: "aqi", args: ["-c", "workers/aqi/wrangler.toml"] },
  { name: "portfolio", args: ["-c", "workers/portfolio/wrangler.toml", "--env", "production"] },
];

function filesUnder(dir: string): string[] {
  return readdirSync(dir).flatMap((entry) => {
    const full = path.join(dir, entry);
    return statSync(full).isDirectory() ? filesUnder(full) : [full];
  });
}

const kib = (bytes: number) => `${(bytes / 1024).toFixed(1)} KiB`.padStart(12);

writeDocsAssets();
const outRoot = path.join(ROOT, "dist");
rmSync(outRoot, { recursive: true, force: true });
console.log(
  `${"worker".padEnd(16)}${"files".padStart(6)}${"raw".padStart(12)}${"gzip".padStart(12)}`,
);
for (const worker of workers) {
  const outdir = path.join(outRoot, worker.name);
  runWrangler(["deploy", "--dry-run", "--outdir", outdir, ...worker.args]);
  const files = filesUnder(outdir).filter(
    (file) => !file.endsWith(".map") && !file.endsWith("README.md"),
  );
  let raw = 0;
  let gzip = 0;
  for (const file of files) {
    const bytes = readFileSync(file);
    raw += bytes.length;
    gzip += gzipSync(bytes).length;
  }
  console.log(
    `${worker.name.padEnd(16)}${String(files.length).padStart(6)}${kib(raw)}${kib(gzip)}`,
  );
}
