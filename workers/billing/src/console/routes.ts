import { Hono } from "hono";
import { html } from "hono/html";
import type { ApiFetch } from "./api-fetch.ts";
import { CONSOLE_CSS, CONSOLE_JS } from "./assets.ts";
import { barePage } from "./bare-page.ts";
import { registerOperatorPages } from "./operator/operator-pages.ts";
import { sameOriginWrites, sessionAndSecurityHeaders } from "./request-guards.ts";
import type { ConsoleEnv } from "./session.ts";
import { registerSessionRoutes } from "./session-routes.ts";
import { registerTenantPages } from "./tenant/tenant-pages.ts";

export function consoleRoutes(fetchApi: ApiFetch) {
  const app = new Hono<ConsoleEnv>();

  // Ahead of the middleware: the stylesheet and script need no session and are cached publicly.
  app.get("/assets/console.css", (c) =>
    c.body(CONSOLE_CSS, 200, {
      "content-type": "text/css; charset=utf-8",
      "cache-control": "public, max-age=300",
    }),
  );
  app.get("/assets/console.js", (c) =>
    c.body(CONSOLE_JS, 200, {
      "content-type": "text/javascript; charset=utf-8",
      "cache-control": "public, max-age=300",
    }),
  );

  app.use("*", sessionAndSecurityHeaders(fetchApi));
  app.use("*", sameOriginWrites);

  registerSessionRoutes(app, fetchApi);
  registerTenantPages(app, fetchApi);
  registerOperatorPages(app, fetchApi);

  app.all("*", (c) =>
    barePage(
      c,
      "Page not found",
      html`<p>There is no console page at this address.</p><p><a href="/console/overview">Go to the overview</a></p>`,
      404,
    ),
  );

  app.onError((error, c) => {
    console.error(
      JSON.stringify({
        level: "error",
        msg: "console page failed",
        path: c.req.path,
        error: String(error),
      }),
    );
    return barePage(
      c,
      "Something went wrong",
      html`<p>The page could not be shown because of an error on our side. Reload to try again; if it keeps happening, tell the operator the time it happened.</p>`,
      500,
    );
  });

  return app;
}
