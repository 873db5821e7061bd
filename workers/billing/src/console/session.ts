import type { Context } from "hono";
import { deleteCookie, getCookie, setCookie } from "hono/cookie";
import type { CookieOptions } from "hono/utils/cookie";
import type { AppVariables } from "../platform/index.ts";
import { randomToken } from "../platform/index.ts";
import type { ApiFetch } from "./api-fetch.ts";

/*
 * The console's session lives in cookies only the server reads: HttpOnly
 * (no script can read a token), Secure, SameSite=Strict (never sent on a
 * request another site starts), Path=/console (never sent to the API). It
 * holds the API's own token pair, so signing out revokes the refresh token
 * through POST /auth/logout like any client, plus the CSRF token the forms
 * carry and the tenant being looked at.
 */

export const COOKIE = {
  access: "console_access",
  refresh: "console_refresh",
  csrf: "console_csrf",
  tenant: "console_tenant",
} as const;

const ACCESS_MAX_AGE = 15 * 60;
const SESSION_MAX_AGE = 7 * 24 * 60 * 60;

export const cookieOptions = (maxAge: number): CookieOptions => ({
  path: "/console",
  httpOnly: true,
  secure: true,
  sameSite: "Strict",
  maxAge,
});

export interface ConsoleSession {
  accessToken: string | undefined;
  refreshToken: string | undefined;
  csrfToken: string | undefined;
  tenantId: string | undefined;
  /** Trades the refresh token for a new pair (kept in the cookies); false when the session is over. */
  refresh(): Promise<boolean>;
}

export type ConsoleEnv = {
  Bindings: Env;
  Variables: AppVariables & { session: ConsoleSession };
};

export function readSession(c: Context<ConsoleEnv>, fetchApi: ApiFetch): ConsoleSession {
  const session: ConsoleSession = {
    accessToken: getCookie(c, COOKIE.access),
    refreshToken: getCookie(c, COOKIE.refresh),
    csrfToken: getCookie(c, COOKIE.csrf),
    tenantId: getCookie(c, COOKIE.tenant),
    async refresh() {
      if (!session.refreshToken) return false;
      const origin = new URL(c.req.url).origin;
      const response = await fetchApi(
        new Request(`${origin}/api/v1/auth/refresh`, {
          method: "POST",
          headers: {
            "content-type": "application/json",
            "cf-connecting-ip": c.req.header("cf-connecting-ip") ?? "",
          },
          body: JSON.stringify({ refreshToken: session.refreshToken }),
        }),
        c.env,
        c.executionCtx,
      );
      if (!response.ok) {
        session.accessToken = undefined;
        session.refreshToken = undefined;
        return false;
      }
      const pair = (await response.json()) as { accessToken: string; refreshToken: string };
      storeTokens(c, pair);
      session.accessToken = pair.accessToken;
      session.refreshToken = pair.refreshToken;
      return true;
    },
  };
  return session;
}

export function storeTokens(
  c: Context<ConsoleEnv>,
  pair: { accessToken: string; refreshToken: string },
): void {
  setCookie(c, COOKIE.access, pair.accessToken, cookieOptions(ACCESS_MAX_AGE));
  setCookie(c, COOKIE.refresh, pair.refreshToken, cookieOptions(SESSION_MAX_AGE));
}

/** A fresh session after sign-in: the token pair, a new CSRF token, no tenant chosen yet. */
export function startSession(
  c: Context<ConsoleEnv>,
  pair: { accessToken: string; refreshToken: string },
): void {
  storeTokens(c, pair);
  setCookie(c, COOKIE.csrf, randomToken(32), cookieOptions(SESSION_MAX_AGE));
  deleteCookie(c, COOKIE.tenant, { path: "/console", secure: true });
}

export function chooseTenant(c: Context<ConsoleEnv>, tenantId: string): void {
  setCookie(c, COOKIE.tenant, tenantId, cookieOptions(SESSION_MAX_AGE));
}

export function endSession(c: Context<ConsoleEnv>): void {
  for (const name of Object.values(COOKIE)) {
    deleteCookie(c, name, { path: "/console", secure: true, httpOnly: true, sameSite: "Strict" });
  }
}
