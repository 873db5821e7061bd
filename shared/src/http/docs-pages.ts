import type { Context } from "hono";
import { FAVICON_LINK } from "./favicon.ts";

/**
 * Documentation pages that work offline: Swagger UI and ReDoc come from
 * their npm packages (`swagger-ui-dist`, `redoc`), which `scripts/docs-assets.ts`
 * copies into `.docs-assets/` for each worker's Workers Static Assets, so
 * every file a page loads is served by the worker itself under
 * DOCS_ASSETS_PATH.
 */
export const DOCS_ASSETS_PATH = "/docs-assets";

/** The files each page loads, as published by their packages. */
export const DOCS_ASSET_FILES = {
  "swagger-ui.css": "swagger-ui-dist/swagger-ui.css",
  "swagger-ui-bundle.js": "swagger-ui-dist/swagger-ui-bundle.js",
  "redoc.standalone.js": "redoc/bundles/redoc.standalone.js",
} as const;

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (char) => `&#${char.charCodeAt(0)};`);
}

/** A Swagger UI page for an OpenAPI document served by the same worker. */
export function swaggerUiPage(specUrl: string, title: string) {
  // validatorUrl: null, or Swagger UI sends the document to validator.swagger.io.
  const options = JSON.stringify({ url: specUrl, dom_id: "#swagger-ui", validatorUrl: null });
  const html = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(title)}</title>
${FAVICON_LINK}
<link rel="stylesheet" href="${DOCS_ASSETS_PATH}/swagger-ui.css">
</head>
<body>
<div id="swagger-ui"></div>
<script src="${DOCS_ASSETS_PATH}/swagger-ui-bundle.js"></script>
<script>window.ui = SwaggerUIBundle(${options.replaceAll("<", "\\u003c")});</script>
</body>
</html>`;
  return (c: Context) => c.html(html);
}

/** A ReDoc page for an OpenAPI document served by the same worker. */
export function redocPage(specUrl: string, title: string) {
  const html = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(title)}</title>
${FAVICON_LINK}
</head>
<body>
<redoc spec-url="${escapeHtml(specUrl)}"></redoc>
<script src="${DOCS_ASSETS_PATH}/redoc.standalone.js"></script>
</body>
</html>`;
  return (c: Context) => c.html(html);
}
