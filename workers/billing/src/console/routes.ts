import type { Context } from "hono";
import { Hono } from "hono";
import { html } from "hono/html";
import type { ApiFetch } from "./api-client.ts";
import { CONSOLE_CSS, CONSOLE_JS } from "./assets.ts";
import { checkCsrf, sameOriginRequest } from "./csrf.ts";
import { shell } from "./layout.ts";
import { registerOperatorPages } from "./pages-operator.ts";
import { registerTenantPages } from "./pages-tenant.ts";
import { type ConsoleEnv, chooseTenant, endSession, readSession, startSession } from "./session.ts";
import { type ConsoleView, formOf, loadView } from "./view.ts";

/**
 * Everything in the page comes from this origin: the stylesheet, the one
 * script and the SVG charts are the Worker's own.
 */
const CONTENT_SECURITY_POLICY = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "form-action 'self'",
  "base-uri 'none'",
  "frame-ancestors 'none'",
].join("; ");

export type PageHandler = (c: Context<ConsoleEnv>, view: ConsoleView) => Promise<Response>;

/** Runs `handler` for a signed-in user; sends anyone else to sign-in. */
export function signedIn(fetchApi: ApiFetch, handler: PageHandler) {
  return async (c: Context<ConsoleEnv>) => {
    const view = await loadView(c, fetchApi);
    if (view instanceof Response) return view;
    return handler(c, view);
  };
}

function bare(
  c: Context<ConsoleEnv>,
  title: string,
  body: ReturnType<typeof html>,
  status = 200,
  error?: string,
) {
  return c.html(
    shell(
      {
        title,
        current: "",
        csrfToken: undefined,
        user: null,
        tenants: [],
        tenantId: undefined,
        tenantNav: [],
        operatorNav: [],
        error,
      },
      body,
    ),
    status as 200,
  );
}

function loginPage(
  c: Context<ConsoleEnv>,
  options: { error?: string; email?: string; status?: number } = {},
) {
  const next = safeNext(c.req.query("next"));
  return bare(
    c,
    "Sign in",
    html`<form method="post" action="/console/login" class="stack panel">
  <input type="hidden" name="next" value="${next}" />
  <div class="field"><label for="email">Email</label><input id="email" name="email" type="email" autocomplete="username" required value="${options.email ?? ""}" /></div>
  <div class="field"><label for="password">Password</label><input id="password" name="password" type="password" autocomplete="current-password" required /></div>
  <div><button type="submit">Sign in</button></div>
  <p class="hint">Use the account you use with the API. The session is kept in a cookie no script can read, and ends when you sign out.</p>
</form>`,
    options.status ?? 200,
    options.error,
  );
}

/** Only a console path: never a redirect to another site. */
function safeNext(next: string | undefined): string {
  return next?.startsWith("/console/") && !next.startsWith("//") ? next : "/console/overview";
}

export function consoleRoutes(fetchApi: ApiFetch) {
  const app = new Hono<ConsoleEnv>();

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

  app.use("*", async (c, next) => {
    c.set("session", readSession(c, fetchApi));
    await next();
    c.header("content-security-policy", CONTENT_SECURITY_POLICY);
    c.header("cache-control", c.res.headers.get("cache-control") ?? "no-store");
    c.header("referrer-policy", "same-origin");
  });

  // Every state-changing request: same origin, and (once signed in) the session's form token.
  app.use("*", async (c, next) => {
    if (c.req.method === "GET" || c.req.method === "HEAD") return next();
    const headers = {
      origin: c.req.header("origin"),
      secFetchSite: c.req.header("sec-fetch-site"),
    };
    const origin = new URL(c.req.url).origin;
    const verdict =
      c.req.path === "/console/login"
        ? sameOriginRequest(headers, origin)
        : checkCsrf(headers, origin, c.var.session.csrfToken, (await formOf(c))._csrf);
    if (!verdict.ok) {
      return bare(
        c,
        "Request refused",
        html`<p>${verdict.reason}, so nothing was changed. Go back, reload the page and try again.</p><p><a href="/console/overview">Back to the console</a></p>`,
        403,
      );
    }
    await next();
  });

  app.get("/", (c) => c.redirect("/console/overview", 303));
  app.get("/login", (c) => loginPage(c));

  app.post("/login", async (c) => {
    const form = await formOf(c);
    const origin = new URL(c.req.url).origin;
    const response = await fetchApi(
      new Request(`${origin}/api/v1/auth/login`, {
        method: "POST",
        headers: {
          "content-type": "application/json",
          "cf-connecting-ip": c.req.header("cf-connecting-ip") ?? "",
          "user-agent": c.req.header("user-agent") ?? "",
        },
        body: JSON.stringify({ email: form.email ?? "", password: form.password ?? "" }),
      }),
      c.env,
      c.executionCtx,
    );
    const body = (await response.json()) as { accessToken?: string; refreshToken?: string };
    if (!response.ok || !body.accessToken || !body.refreshToken) {
      const message =
        response.status === 429
          ? "Too many sign-in attempts: wait a minute and try again."
          : response.status === 400
            ? "Enter an email address and a password."
            : "The email or password is not right.";
      return loginPage(c, { error: message, email: form.email, status: response.status });
    }
    startSession(c, { accessToken: body.accessToken, refreshToken: body.refreshToken });
    return c.redirect(safeNext(form.next), 303);
  });

  app.post("/logout", async (c) => {
    const session = c.var.session;
    if (session.refreshToken) {
      const origin = new URL(c.req.url).origin;
      // Revokes the refresh token (the access token dies with the cookie and its 15 minutes).
      const revoke = () =>
        fetchApi(
          new Request(`${origin}/api/v1/auth/logout`, {
            method: "POST",
            headers: {
              "content-type": "application/json",
              authorization: `Bearer ${session.accessToken ?? ""}`,
            },
            body: JSON.stringify({ refreshToken: session.refreshToken }),
          }),
          c.env,
          c.executionCtx,
        );
      const first = await revoke();
      if (first.status === 401 && (await session.refresh())) await revoke();
    }
    endSession(c);
    return bare(
      c,
      "Signed out",
      html`<p role="status">You are signed out, and this session cannot be used again.</p><p><a href="/console/login">Sign in again</a></p>`,
    );
  });

  app.post(
    "/tenant",
    signedIn(fetchApi, async (c, view) => {
      const { tenantId } = await formOf(c);
      if (!view.tenants.some((t) => t.id === tenantId)) {
        return c.redirect("/console/overview", 303);
      }
      chooseTenant(c, tenantId as string);
      const back = c.req.header("referer");
      const path = back ? new URL(back).pathname : "/console/overview";
      // Pages of one tenant's object (an invoice) make no sense for the next one.
      const target =
        path.split("/").length > 3 ? `/${path.split("/").slice(1, 3).join("/")}` : path;
      return c.redirect(
        `${target.startsWith("/console/") ? target : "/console/overview"}?notice=tenant-switched`,
        303,
      );
    }),
  );

  registerTenantPages(app, fetchApi);
  registerOperatorPages(app, fetchApi);

  app.all("*", (c) =>
    bare(
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
    return bare(
      c,
      "Something went wrong",
      html`<p>The page could not be shown because of an error on our side. Reload to try again; if it keeps happening, tell the operator the time it happened.</p>`,
      500,
    );
  });

  return app;
}
