import type { Context } from "hono";

/** A ReDoc page for an OpenAPI document served by the same worker. */
export function redocPage(specUrl: string, title: string) {
  const html = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${title}</title>
</head>
<body>
<redoc spec-url="${specUrl}"></redoc>
<script src="https://cdn.jsdelivr.net/npm/redoc@2/bundles/redoc.standalone.js"></script>
</body>
</html>`;
  return (c: Context) => c.html(html);
}
