import type { Context } from "hono";
import type { html } from "hono/html";
import { shell } from "./layout.ts";
import type { ConsoleEnv } from "./session.ts";

/** A page outside a session (sign-in, refusals, errors): no user, tenants or navigation. */
export function barePage(
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
