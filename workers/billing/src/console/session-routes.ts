import type { Context, Hono } from "hono";
import { html } from "hono/html";
import type { ApiFetch } from "./api-fetch.ts";
import { barePage } from "./bare-page.ts";
import { type ConsoleEnv, chooseTenant, endSession, startSession } from "./session.ts";
import { type PageHandler, signedIn } from "./signed-in.ts";
import { formOf } from "./view.ts";

function loginPage(
  c: Context<ConsoleEnv>,
  options: { error?: string; email?: string; status?: number } = {},
) {
  const next = safeNext(c.req.query("next"));
  return barePage(
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

function signIn(fetchApi: ApiFetch) {
  return async (c: Context<ConsoleEnv>) => {
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
  };
}

function signOut(fetchApi: ApiFetch) {
  return async (c: Context<ConsoleEnv>) => {
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
    return barePage(
      c,
      "Signed out",
      html`<p role="status">You are signed out, and this session cannot be used again.</p><p><a href="/console/login">Sign in again</a></p>`,
    );
  };
}

const switchTenant: PageHandler = async (c, view) => {
  const { tenantId } = await formOf(c);
  if (!view.tenants.some((t) => t.id === tenantId)) {
    return c.redirect("/console/overview", 303);
  }
  chooseTenant(c, tenantId as string);
  const back = c.req.header("referer");
  const path = back ? new URL(back).pathname : "/console/overview";
  // Pages of one tenant's object (an invoice) make no sense for the next one.
  const target = path.split("/").length > 3 ? `/${path.split("/").slice(1, 3).join("/")}` : path;
  return c.redirect(
    `${target.startsWith("/console/") ? target : "/console/overview"}?notice=tenant-switched`,
    303,
  );
};

/** Signing in and out, and choosing the tenant to look at. */
export function registerSessionRoutes(app: Hono<ConsoleEnv>, fetchApi: ApiFetch) {
  app.get("/", (c) => c.redirect("/console/overview", 303));
  app.get("/login", (c) => loginPage(c));
  app.post("/login", signIn(fetchApi));
  app.post("/logout", signOut(fetchApi));
  app.post("/tenant", signedIn(fetchApi, switchTenant));
}
