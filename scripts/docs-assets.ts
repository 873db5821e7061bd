/**
 * Copies the Swagger UI and ReDoc files the documentation pages load
 * (shared/src/http/docs-pages.ts) from their npm packages into
 * `.docs-assets/docs-assets/`, the Workers Static Assets directory of the
 * billing, aqi and portfolio workers. Generated, not committed: runs in the
 * root `postinstall` and before `npm run dev` and `npm run build`.
 *
 * One change to a vendored file: ReDoc's side menu shows Redocly's logo from
 * their CDN; the copy loads nothing instead (ReDoc then hides the image and
 * keeps the "API docs by Redocly" link), so the page makes no request to an
 * outside host. The copy fails when a new ReDoc release moves the URL.
 */
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { DOCS_ASSET_FILES, DOCS_ASSETS_PATH } from "../shared/src/http/docs-pages.ts";

const ROOT = path.resolve(import.meta.dirname, "..");
export const DOCS_ASSETS_DIR = path.join(ROOT, ".docs-assets");

/** Edits to a vendored file: each `from` must occur exactly once. */
const PATCHES: Partial<Record<keyof typeof DOCS_ASSET_FILES, { from: string; to: string }[]>> = {
  "redoc.standalone.js": [{ from: '"https://cdn.redoc.ly/redoc/logo-mini.svg"', to: '""' }],
};

export function writeDocsAssets(): void {
  const require = createRequire(path.join(ROOT, "shared", "package.json"));
  const target = path.join(DOCS_ASSETS_DIR, DOCS_ASSETS_PATH);
  mkdirSync(target, { recursive: true });
  for (const [name, source] of Object.entries(DOCS_ASSET_FILES)) {
    let text = readFileSync(require.resolve(source), "utf8");
    for (const { from, to } of PATCHES[name as keyof typeof DOCS_ASSET_FILES] ?? []) {
      const occurrences = text.split(from).length - 1;
      if (occurrences !== 1)
        throw new Error(`${source}: expected ${from} once, found it ${occurrences} times`);
      text = text.replace(from, to);
    }
    writeFileSync(path.join(target, name), text);
  }
}

if (import.meta.main) writeDocsAssets();
